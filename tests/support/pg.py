"""Synchronous PostgreSQL access for synchronous end-to-end tests."""

from __future__ import annotations

import asyncio
from typing import Any

import asyncpg


class PgProbe:
    """Synchronous access to one PostgreSQL database for a synchronous test (its own event loop)."""

    def __init__(self, dsn: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.connection: asyncpg.Connection = self.loop.run_until_complete(asyncpg.connect(dsn))

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return self.run(self.connection.fetch(sql, *args))

    def fetchval(self, sql: str, *args: Any) -> Any:
        return self.run(self.connection.fetchval(sql, *args))

    def execute(self, sql: str, *args: Any) -> str:
        return self.run(self.connection.execute(sql, *args))

    def close(self) -> None:
        try:
            self.run(self.connection.close())
        finally:
            self.loop.close()
