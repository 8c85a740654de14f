"""Run Alembic from code (CLI `migrate`, `serve`, tests) and read the schema's revision.

The migrations and their `alembic.ini` ship inside the package (`platpay/migrations/`): they are found
beside the installed code, so every command works from any directory after `pip install`, never from the
current directory or a checkout of the repository.
"""

from __future__ import annotations

import asyncio
from functools import cache
from importlib.resources import files
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from platpay import package_version
from platpay.db.faults import unavailable_reason
from platpay.db.startup import StartupFailed

MIGRATIONS_DIR = Path(str(files("platpay") / "migrations"))
ALEMBIC_INI = MIGRATIONS_DIR / "alembic.ini"
# Serializes concurrent `migrate` runs on PostgreSQL (env.py takes it, transaction-scoped).
MIGRATION_LOCK_ID = 7_342_001


class SchemaFromNewerVersion(StartupFailed):
    """The database records a revision this platpay does not know: a newer platpay migrated it. Not
    retried, and nothing is changed: downgrading is not supported."""


def alembic_config(url: str) -> Config:
    config = Config(str(ALEMBIC_INI))
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision`. Safe to call from several processes on PostgreSQL.

    Raises `SchemaFromNewerVersion`, before changing anything, on a database a newer platpay migrated."""
    command.upgrade(alembic_config(url), revision)


async def upgrade_async(url: str, revision: str = "head") -> None:
    # Alembic's env.py runs its own event loop; keep it off ours.
    await asyncio.to_thread(upgrade, url, revision)


@cache
def _scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config("sqlite://"))


@cache
def head_revision() -> str | None:
    return _scripts().get_current_head()


@cache
def known_revisions() -> frozenset[str]:
    return frozenset(script.revision for script in _scripts().walk_revisions())


def newer_schema_message(current: str) -> str:
    """Why this platpay refuses a database at `current`, a revision it does not know, in one line."""
    return (
        f"the database schema is at revision {current}, which platpay {package_version()} does not know "
        f"(its newest is {head_revision()}): a newer platpay migrated this database; run that version or a "
        "later one (downgrading is not supported)"
    )


def check_known(current_heads: tuple[str, ...]) -> None:
    """Refuse a database whose recorded revision this platpay does not know (env.py calls it, under the
    migration lock, before migrating)."""
    for current in current_heads:
        if current not in known_revisions():
            raise SchemaFromNewerVersion(newer_schema_message(current))


async def current_revision(session: AsyncSession) -> str | None:
    try:
        revision: str | None = await session.scalar(text("SELECT version_num FROM alembic_version"))
        return revision
    except DBAPIError as error:
        if unavailable_reason(error) is not None:
            raise  # an outage, not a database without migrations
        return None
