"""SQLite's write transactions run their lean statements, BEGIN IMMEDIATE and COMMIT on the event loop's thread
(platpay.db.sqlite_inline) — and the event loop still never waits on a lock another process holds: a write
that finds the lock taken waits on the connection's thread while the server goes on answering."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy.engine import make_url

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.db import lean
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.sqlite_inline import InlineConnection
from platpay.events.models import EventRow
from tests.support.lean import count_events, first_tenant_id, new_event

_INSERT_EVENT = Lean(EventRow.__table__.insert())


async def _driver(database: Database) -> InlineConnection:
    async with database.engine.connect() as connection:
        driver = (await connection.get_raw_connection()).driver_connection
    assert isinstance(driver, InlineConnection)
    return driver


@pytest.fixture
async def one_connection(settings: Any, db: Database, backend: str) -> AsyncIterator[Database]:
    """A Database used one transaction at a time: its pool only ever opens one connection."""
    if backend != "sqlite":
        pytest.skip("SQLite's connections")
    database = Database(settings.database_url, pool_size=5)
    try:
        yield database
    finally:
        await database.dispose()


class TestInlineWrites:
    async def test_a_write_transaction_of_lean_statements_never_hops_to_the_connection_thread(
        self, one_connection: Database, db: Database, settings: Any
    ) -> None:
        tenant_id = await first_tenant_id(db, settings)
        async with one_connection.transaction() as session:  # opens the connection
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
        driver = await _driver(one_connection)
        assert driver.wal
        queued = driver._queued
        async with one_connection.transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            await lean.execute_many(session, _INSERT_EVENT, [new_event(tenant_id) for _ in range(2)])
        # BEGIN IMMEDIATE, the statements, COMMIT and the pool's reset: none went to the thread.
        assert driver._queued == queued
        assert await count_events(db) == 4

    async def test_a_rolled_back_transaction_leaves_nothing_and_the_next_one_runs_inline_too(
        self, one_connection: Database, db: Database, settings: Any
    ) -> None:
        tenant_id = await first_tenant_id(db, settings)
        with pytest.raises(RuntimeError):
            async with one_connection.transaction() as session:
                await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
                raise RuntimeError("roll back")
        driver = await _driver(one_connection)
        queued = driver._queued
        async with one_connection.transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
        assert driver._queued == queued
        assert await count_events(db) == 1

    async def test_a_call_still_running_on_the_thread_is_never_overtaken_inline(
        self, one_connection: Database, db: Database, settings: Any
    ) -> None:
        tenant_id = await first_tenant_id(db, settings)
        async with one_connection.transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            driver = (await (await session.connection()).get_raw_connection()).driver_connection
            assert isinstance(driver, InlineConnection) and driver.holds_write_lock()
            released = asyncio.Event()
            loop = asyncio.get_running_loop()
            # A caller cancelled while its call runs on the thread (here: one that waits for `released`).
            stuck = asyncio.ensure_future(
                driver._execute(lambda: asyncio.run_coroutine_threadsafe(released.wait(), loop).result())
            )
            await asyncio.sleep(0)
            stuck.cancel()
            assert not driver.idle() and not driver.holds_write_lock()
            # The next statement queues behind it on the thread instead of using the connection at once.
            insert = asyncio.ensure_future(lean.rows(session, _INSERT_EVENT, new_event(tenant_id)))
            await asyncio.sleep(0.05)
            assert not insert.done()
            released.set()
            await insert
        assert await count_events(db) == 2


@pytest.fixture
async def patient(settings: Any, db: Database, backend: str) -> AsyncIterator[httpx.AsyncClient]:
    """An app whose database waits up to 30 s for SQLite's lock: a wait the test ends itself."""
    if backend != "sqlite":
        pytest.skip("SQLite's lock")
    database = Database(settings.database_url, pool_size=5, timeout=30)
    app = create_app(settings, database=database, embedded_worker=False)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
        try:
            yield client
        finally:
            await database.dispose()


class _LockHolder(threading.Thread):
    """Another process's writer (a CLI command, `platpay worker`): holds SQLite's write lock until told to let
    go — or, if the event loop never gets to tell it (frozen in a busy wait), gives up after a while."""

    def __init__(self, path: str) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.holding = threading.Event()
        self.let_go = threading.Event()
        self.gave_up = False

    def run(self) -> None:
        connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            connection.execute("BEGIN IMMEDIATE")
            self.holding.set()
            self.gave_up = not self.let_go.wait(timeout=20)
            connection.execute("ROLLBACK")
        finally:
            connection.close()


class TestAnotherProcessHoldsTheLock:
    async def test_a_waiting_write_leaves_the_server_answering_then_succeeds(
        self, patient: httpx.AsyncClient, auth: Any, settings: Any
    ) -> None:
        holder = _LockHolder(make_url(settings.database_url).database)
        holder.start()
        try:
            assert holder.holding.wait(timeout=20)
            body = {"name": "ci", "permissions": ["VIEW"]}
            write = asyncio.ensure_future(
                patient.post("/tokens", auth=auth, json=body, headers={"Idempotency-Key": "t1"})
            )
            for _ in range(5):  # the event loop is free: reads and the loop's own timers go on
                await asyncio.sleep(0.02)
                assert (await patient.get("/config", auth=auth)).status_code == 200
            assert not write.done()  # still waiting for the lock, on the connection's thread
        finally:
            holder.let_go.set()
            holder.join()
        assert not holder.gave_up  # the loop told it to let go: it was never frozen waiting for the lock
        created = await write
        assert created.status_code == 201, created.text


class TestCheckpoints:
    async def test_the_server_connections_leave_checkpoints_to_the_checkpointer_thread(
        self, one_connection: Database, db: Database, settings: Any
    ) -> None:
        tenant_id = await first_tenant_id(db, settings)
        checkpointer = one_connection._checkpointer
        assert checkpointer is not None
        checkpointer.EVERY_COMMITS = 3
        for _ in range(3):
            async with one_connection.transaction() as session:
                await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
        async with one_connection.engine.connect() as connection:
            driver = (await connection.get_raw_connection()).driver_connection
            automatic = await driver.execute_fetchall("PRAGMA wal_autocheckpoint", [])
        assert automatic == [(0,)]  # SQLite's own, in the COMMIT on the event loop: off
        for _ in range(200):  # the checkpointer's thread was woken by the third commit
            if checkpointer.checkpoints:
                break
            await asyncio.sleep(0.05)
        assert checkpointer.checkpoints >= 1
        assert await count_events(db) == 3
