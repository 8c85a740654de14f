"""`platpay backup` and `platpay restore` of a SQLite database, through SQLite's online backup API.

A copy of the file (`cp platpay.db`) taken while a server writes is not a database: the WAL file beside it
holds the latest commits, and a copy of the two taken at slightly different moments can be torn. SQLite's
backup API instead reads every page inside one read transaction of the source (`backup(pages=-1)`: one
step), so the copy is the database as of one commit, while the server goes on writing (in WAL mode a reader
blocks no writer). The copy is then switched to a rollback journal, a single self-contained file, checked
(`PRAGMA quick_check`) and renamed into place, so a backup that exists is complete.

A restore writes the backup into the configured database through the same API: into a new file, or over
an existing database only when asked (`--replace`), where SQLite's pager replaces its pages and its WAL
consistently (copying a file over a WAL database would mix the old WAL into the new file). Every platpay
process using that database must be stopped first: SQLite cannot tell an idle reader of a WAL database.

PostgreSQL is backed up with its own tools (`pg_dump`, docs/operations.md "Backups"). Neither copy holds the master key
(PLATPAY_MASTER_KEY or <var_dir>/master.key), which must be kept apart from it.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import make_url

from platpay.db import migrate


class BackupFailed(Exception):
    """Why a backup or restore could not be made, in one line."""


@dataclass(frozen=True)
class Copied:
    source: Path
    target: Path
    bytes: int
    revision: str | None  # the schema's migration in the copy
    seconds: float


def sqlite_path(url: str) -> Path:
    """The file of a SQLite database URL; BackupFailed for PostgreSQL or an in-memory database."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite"):
        raise BackupFailed(
            f"PLATPAY_DATABASE_URL is a {parsed.get_backend_name()} database: back it up with its own tools "
            "(PostgreSQL: pg_dump, docs/operations.md 'Backups'); platpay backup and restore copy SQLite databases"
        )
    if not parsed.database or parsed.database == ":memory:" or parsed.query:
        raise BackupFailed(
            "PLATPAY_DATABASE_URL names no SQLite file (sqlite+aiosqlite:///path/to/platpay.db)"
        )
    return Path(parsed.database)


@contextlib.contextmanager
def _connection(path: Path, *, timeout: float) -> Iterator[sqlite3.Connection]:
    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        yield connection
    finally:
        connection.close()


def _revision(connection: sqlite3.Connection) -> str | None:
    try:
        row = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    except sqlite3.DatabaseError:
        return None
    return row[0] if row else None


def _checked(connection: sqlite3.Connection, what: str) -> None:
    try:
        result = connection.execute("PRAGMA quick_check").fetchone()[0]
    except sqlite3.DatabaseError as error:
        raise BackupFailed(f"{what} is not a SQLite database: {error}") from None
    if result != "ok":
        raise BackupFailed(f"{what} fails SQLite's quick_check: {result}")


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _copy_into_new_file(source: sqlite3.Connection, target: Path, *, timeout: float) -> str | None:
    """`source` as of one commit into a new file at `target` (written beside it, renamed when complete)."""
    partial = target.with_name(f".{target.name}.partial")
    partial.unlink(missing_ok=True)
    try:
        with _connection(partial, timeout=timeout) as copy:
            source.backup(copy)  # pages=-1: every page in one step, one read transaction of the source
            copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
            _checked(copy, f"the copy {partial}")
            revision = _revision(copy)
        _fsync(partial)
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return revision


def backup(url: str, target: Path, *, timeout: float) -> Copied:
    """A consistent copy of the SQLite database at `url` in the new file `target`, while it is in use."""
    started = time.monotonic()
    source_path = sqlite_path(url)
    if not source_path.is_file():
        raise BackupFailed(f"no SQLite database at {source_path} (PLATPAY_DATABASE_URL)")
    if target.exists():
        raise BackupFailed(f"{target} exists: give a new path (a backup never overwrites a file)")
    if target.resolve() == source_path.resolve():
        raise BackupFailed(f"{target} is the database itself")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with _connection(source_path, timeout=timeout) as source:
            revision = _copy_into_new_file(source, target, timeout=timeout)
    except sqlite3.Error as error:
        raise BackupFailed(f"copying {source_path} failed: {type(error).__name__}: {error}") from None
    return Copied(source_path, target, target.stat().st_size, revision, time.monotonic() - started)


def restore(backup_file: Path, url: str, *, replace: bool, timeout: float) -> Copied:
    """The backup `backup_file` as the SQLite database at `url`: a new file, or over an existing database
    with `replace` (every process using it stopped first)."""
    started = time.monotonic()
    target = sqlite_path(url)
    if not backup_file.is_file():
        raise BackupFailed(f"no backup file at {backup_file}")
    exists = target.exists()
    if exists and not replace:
        raise BackupFailed(
            f"a database exists at {target} (PLATPAY_DATABASE_URL): restore into a new path, or stop every "
            "platpay process using it and pass --replace"
        )
    try:
        with _connection(backup_file, timeout=timeout) as source:
            _checked(source, str(backup_file))
            revision = _revision(source)
            if revision is None:
                raise BackupFailed(f"{backup_file} holds no platpay schema (no alembic_version)")
            if revision not in migrate.known_revisions():
                raise BackupFailed(f"{backup_file}: {migrate.newer_schema_message(revision)}")
            if not exists:
                target.parent.mkdir(parents=True, exist_ok=True)
                _copy_into_new_file(source, target, timeout=timeout)
            else:
                with _connection(target, timeout=timeout) as database:
                    source.backup(database)  # through the target's pager: its WAL is replaced too
                    _checked(database, str(target))
    except sqlite3.Error as error:
        raise BackupFailed(f"restoring {backup_file} failed: {type(error).__name__}: {error}") from None
    return Copied(backup_file, target, target.stat().st_size, revision, time.monotonic() - started)
