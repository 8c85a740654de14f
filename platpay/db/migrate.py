"""Run Alembic from code (CLI `migrate`, `serve`, tests) and read the schema's revision."""

from __future__ import annotations

import asyncio
from functools import cache
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.faults import unavailable_reason

MIGRATIONS_DIR = Path(__file__).resolve().parents[2] / "migrations"


def alembic_config(url: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return config


def upgrade(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision`. Safe to call from several processes on PostgreSQL."""
    command.upgrade(alembic_config(url), revision)


async def upgrade_async(url: str, revision: str = "head") -> None:
    # Alembic's env.py runs its own event loop; keep it off ours.
    await asyncio.to_thread(upgrade, url, revision)


@cache
def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head()


async def current_revision(session: AsyncSession) -> str | None:
    try:
        return await session.scalar(text("SELECT version_num FROM alembic_version"))
    except DBAPIError as error:
        if unavailable_reason(error) is not None:
            raise  # an outage, not a database without migrations
        return None
