"""SQLite's group commit (platpay.db.sqlite_writes): concurrent lean transactions share one COMMIT, each in a
savepoint of its own; a member that fails is rolled back alone; none returns before the COMMIT that holds its
work; a batch SQLite rolled back whole fails every member; an ORM writer commits an open batch first."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest
from sqlalchemy import text

from platpay.db import lean
from platpay.db.faults import DatabaseUnavailable
from platpay.db.lean import Lean
from platpay.events.models import EventRow
from tests.support.lean import count_events, first_tenant_id, new_event

_INSERT_EVENT = Lean(EventRow.__table__.insert())


@pytest.fixture
async def tenant_id(db, settings) -> str:
    if not db.is_sqlite:
        pytest.skip("SQLite's group commit (PostgreSQL commits each transaction: many writers at once)")
    return await first_tenant_id(db, settings)


def _committed_ids(db) -> set[str]:
    """What another connection sees: committed rows only."""
    connection = sqlite3.connect(str(db.engine.url.database))
    try:
        return {row[0] for row in connection.execute("SELECT id FROM events")}
    finally:
        connection.close()


async def test_concurrent_lean_transactions_share_commits_and_each_is_committed(db, tenant_id):
    writes = db._writes
    commits, members = writes.commits, writes.members

    async def one() -> str:
        values = new_event(tenant_id)
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, values)
            await asyncio.sleep(0)  # (the lock is held: the others queue behind it)
        assert values["id"] in _committed_ids(db)  # committed before it returned
        return str(values["id"])

    ids = await asyncio.gather(*(one() for _ in range(20)))
    assert _committed_ids(db) == set(ids)
    assert writes.members - members == 20
    assert 1 <= writes.commits - commits < 20  # shared


async def test_a_member_that_fails_is_rolled_back_alone(db, tenant_id):
    kept: list[str] = []

    async def member(fail: bool) -> None:
        values = new_event(tenant_id)
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, values)
            await asyncio.sleep(0)
            if fail:
                raise RuntimeError("this one fails")
        kept.append(str(values["id"]))

    results = await asyncio.gather(member(False), member(True), member(False), return_exceptions=True)
    assert [type(result) for result in results] == [type(None), RuntimeError, type(None)]
    assert _committed_ids(db) == set(kept) and len(kept) == 2


async def test_no_member_returns_before_the_commit_that_holds_its_work(db, tenant_id):
    first, second = new_event(tenant_id), new_event(tenant_id)
    returned: list[str] = []
    second_started = asyncio.Event()

    async def quick() -> None:
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, first)
            await asyncio.sleep(0)  # the slow one queues behind it: the batch stays open for it
        returned.append("quick")

    async def slow() -> None:
        async with db.lean_transaction() as session:
            second_started.set()
            await lean.rows(session, _INSERT_EVENT, second)
            await asyncio.sleep(0.2)  # still working, in the same batch
            assert returned == []  # the quick one has not returned: its work is not committed yet
            assert _committed_ids(db) == set()
        returned.append("slow")

    await asyncio.gather(quick(), slow())
    assert second_started.is_set() and sorted(returned) == ["quick", "slow"]
    assert _committed_ids(db) == {first["id"], second["id"]}


async def test_a_batch_sqlite_rolled_back_whole_fails_every_member(db, tenant_id):
    async def done_first() -> None:
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            await asyncio.sleep(0)

    async def breaks_it() -> None:
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            # What SQLite does on a full disk or an I/O error: the whole transaction is gone.
            lean.driver_of(session)._conn.execute("ROLLBACK")
            raise sqlite3.OperationalError("database or disk is full")

    results = await asyncio.gather(done_first(), breaks_it(), return_exceptions=True)
    assert isinstance(results[0], DatabaseUnavailable), results  # its work was in the batch: not committed
    assert isinstance(results[1], (sqlite3.OperationalError, DatabaseUnavailable)), results
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # and the next batch is served
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


async def test_an_orm_writer_commits_the_open_batch_before_it_begins(db, tenant_id):
    member_values = new_event(tenant_id)
    seen_by_writer: list[int] = []

    async def member() -> None:
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, member_values)
            await asyncio.sleep(0)  # the ORM writer queues behind it: the batch stays open

    async def writer() -> None:
        await asyncio.sleep(0)
        async with db.transaction() as session:
            seen_by_writer.append(len(_committed_ids(db)))  # the batch was committed before this began
            await session.execute(text("SELECT 1"))

    await asyncio.gather(member(), writer())
    assert seen_by_writer == [1]
    assert _committed_ids(db) == {member_values["id"]}
