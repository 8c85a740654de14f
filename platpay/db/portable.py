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
