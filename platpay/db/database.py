"""Engine, sessions and the unit of work.

One `Database` per process holds the engine. Writes go through `transaction()`, reads through `read()`.
On SQLite a write transaction starts with BEGIN IMMEDIATE (so a read never has to be upgraded to a write
lock, which SQLite refuses under contention) and in-process writers queue on an asyncio lock instead of
spinning in SQLite's busy handler; `busy_timeout` still covers other processes (the CLI, a worker).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool

WRITE_OPTION = "platpay_write"


def _sqlite_path(url: str) -> Path | None:
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database)


def build_engine(url: str, *, pool_size: int = 10, null_pool: bool = False) -> AsyncEngine:
    if url.startswith("sqlite"):
        path = _sqlite_path(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_async_engine(url, connect_args={"timeout": 30})

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Take transaction control away from the driver: we emit BEGIN ourselves below.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute("PRAGMA busy_timeout=30000")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(conn: Any) -> None:
            write = conn.get_execution_options().get(WRITE_OPTION)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine

    kwargs: dict[str, Any] = {}
    if null_pool:
        kwargs["poolclass"] = NullPool
    else:
        kwargs.update(pool_size=pool_size, max_overflow=pool_size * 2, pool_pre_ping=False)
    return create_async_engine(url, **kwargs)


class Database:
    def __init__(self, url: str, *, pool_size: int = 10, null_pool: bool = False) -> None:
        self.url = url
        self.engine = build_engine(url, pool_size=pool_size, null_pool=null_pool)
        self.dialect = self.engine.dialect.name
        self.is_sqlite = self.dialect == "sqlite"
        self._write_engine = self.engine.execution_options(**{WRITE_OPTION: True})
        self._read_sessions = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=False)
        self._write_sessions = async_sessionmaker(self._write_engine, expire_on_commit=False, autoflush=False)
        self._write_lock: asyncio.Lock | None = None
        self._after_commit: list[Callable[[AsyncSession], None]] = []

    def on_commit(self, callback: Callable[[AsyncSession], None]) -> None:
        """Run `callback(session)` after every successful write commit (in-process wake-ups only)."""
        self._after_commit.append(callback)

    @contextlib.asynccontextmanager
    async def _sqlite_writer(self) -> AsyncIterator[None]:
        if not self.is_sqlite:
            yield
            return
        if self._write_lock is None:
            self._write_lock = asyncio.Lock()
        async with self._write_lock:
            yield

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """The unit of work: commits once on success, rolls back on any exception."""
        async with self._sqlite_writer():
            session = self._write_sessions()
            try:
                async with session.begin():
                    yield session
            finally:
                await session.close()
        for callback in self._after_commit:
            callback(session)

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read-only session (one snapshot on PostgreSQL's REPEATABLE READ is not needed here)."""
        session = self._read_sessions()
        try:
            async with session.begin():
                yield session
        finally:
            await session.close()

    async def dispose(self) -> None:
        await self.engine.dispose()
