"""Upgrades: several `platpay migrate` at once migrate once; a database a newer platpay migrated (stamped
here with a revision this platpay does not know) is refused, naming its revision, by /readyz (503) and by
`migrate`, `serve` and `worker` (one line, exit 1), and nothing of it is changed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine, make_url

from platpay import package_version
from platpay.db import migrate
from tests.install.support import Sql, clean_env, one_error_line, start_serve, wait_exit
from tests.support.processes import PLATPAY, ProcessManager, free_port

pytestmark = pytest.mark.e2e

FUTURE = "9999_from_a_newer_platpay"
BACKENDS = ["sqlite", "postgres"]


def _database(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'var' / 'platpay.db'}"
    return request.getfixturevalue("pg_database")


@pytest.mark.parametrize("backend", BACKENDS)
def test_several_migrate_processes_at_once_bring_the_schema_to_head_once(
    backend: str, processes: ProcessManager, master_key: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _database(backend, tmp_path, request)
    env = clean_env(
        PLATPAY_DATABASE_URL=url,
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        # Each waits for the others (SQLite's busy wait, PostgreSQL's lock): however loaded the machine.
        PLATPAY_DB_STARTUP_TIMEOUT_SECONDS="600",
    )
    started = [processes.start(f"migrate-{n}", [PLATPAY, "migrate"], env=env, cwd=tmp_path) for n in range(4)]
    for process in started:
        assert wait_exit(process, timeout=600) == 0, process.describe()
        assert f"database at {migrate.head_revision()}" in process.stdout(), process.describe()
    sql = Sql(url)
    try:
        assert sql.fetch("SELECT version_num FROM alembic_version") == [(migrate.head_revision(),)]
    finally:
        sql.close()


def test_the_migration_lock_is_held_until_the_migrations_commit(pg_database: str) -> None:
    """The lock is released by the migrations' commit, not before it: a `migrate` waiting for it must find
    the schema the first one committed (CI once saw a waiting one create alembic_version a second time,
    when the lock went before the commit). Checked at the moment of each commit: another session cannot
    take the lock then."""
    # The commit runs inside env.py's event loop: the other session is driven from a thread of its own.
    other = ThreadPoolExecutor(1)
    sql = other.submit(Sql, pg_database).result()
    name = make_url(pg_database).database
    taken_at_commit: list[bool] = []

    def try_lock() -> bool:
        taken = bool(sql.fetch(f"SELECT pg_try_advisory_lock({migrate.MIGRATION_LOCK_ID})")[0][0])
        if taken:
            sql.execute(f"SELECT pg_advisory_unlock({migrate.MIGRATION_LOCK_ID})")
        return taken

    def on_commit(connection: Connection) -> None:
        if connection.engine.url.database == name:
            taken_at_commit.append(other.submit(try_lock).result())

    event.listen(Engine, "commit", on_commit)
    try:
        migrate.upgrade(pg_database)
    finally:
        event.remove(Engine, "commit", on_commit)
        other.submit(sql.close).result()
        other.shutdown()
    assert taken_at_commit == [False], (
        "another session took the migration lock before the migrations committed"
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_database_a_newer_platpay_migrated_is_refused_and_left_as_it_is(
    backend: str, processes: ProcessManager, master_key: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = _database(backend, tmp_path, request)
    env = clean_env(
        PLATPAY_DATABASE_URL=url,
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_DB_STARTUP_TIMEOUT_SECONDS="5",
    )
    server, base_url = start_serve(processes, PLATPAY, env, cwd=tmp_path)  # migrates to head
    sql = Sql(url)
    try:
        sql.execute(f"UPDATE alembic_version SET version_num = '{FUTURE}'")  # what a newer platpay leaves

        ready = httpx.get(f"{base_url}/readyz", trust_env=False, timeout=10)
        assert ready.status_code == 503, ready.text
        body = ready.json()
        assert body["code"] == "SERVICE_UNAVAILABLE"
        assert FUTURE in body["message"] and "newer platpay" in body["message"], body
        assert body["details"] == {
            "dependency": "database",
            "current": FUTURE,
            "head": migrate.head_revision(),
            "version": package_version(),
        }
        server.stop()

        for command in (["migrate"], ["serve", "--port", str(free_port())], ["worker"]):
            process = processes.start(command[0], [PLATPAY, *command], env=env, cwd=tmp_path)
            assert wait_exit(process, timeout=120) == 1, process.describe()
            line = one_error_line(process, process.stderr(), process.stdout())
            assert line == f"platpay {command[0]}: {migrate.newer_schema_message(FUTURE)}", line
        assert sql.fetch("SELECT version_num FROM alembic_version") == [(FUTURE,)]  # nothing changed
    finally:
        sql.close()
