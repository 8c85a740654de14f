"""Statements whose spelling differs between SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession


def insert_ignore(session: AsyncSession, table: Any, values: dict[str, Any] | list[dict[str, Any]]) -> Any:
    """INSERT … ON CONFLICT DO NOTHING for the session's dialect."""
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    module = postgresql if dialect == "postgresql" else sqlite
    return module.insert(table).values(values).on_conflict_do_nothing()


async def insert_ignore_many(session: AsyncSession, table: Any, rows: list[dict[str, Any]]) -> None:
    """INSERT … ON CONFLICT DO NOTHING of many rows as one executemany of one cached statement. (A
    multi-row VALUES has bind parameters in proportion to the rows: it is compiled anew every time, which
    costs more than the insert, and asyncpg refuses it past 32767 parameters.)"""
    if rows:
        dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
        module = postgresql if dialect == "postgresql" else sqlite
        await session.execute(module.insert(table).on_conflict_do_nothing(), rows)
