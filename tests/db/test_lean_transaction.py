"""`Database.lean_transaction()`: the unit of work of an operation whose every statement is lean — one commit
on success, a rollback on any exception, the commit hooks after the commit, a connection that comes back
clean or not at all, and DatabaseUnavailable for an outage. A transaction straight on a driver connection (a
`LeanTransaction`, no ORM session): asyncpg's, or SQLite's with BEGIN IMMEDIATE and COMMIT inline while the
write lock is free (on the connection's thread, waiting, while another connection holds it)."""

from __future__ import annotations

import asyncio
import sqlite3
from types import SimpleNamespace
from typing import Any

import asyncpg
import pytest
from sqlalchemy import Float, bindparam, func, literal, select, text, update
from sqlalchemy.exc import IntegrityError

from platpay.db import lean
from platpay.db.faults import DatabaseUnavailable
from platpay.db.lean import Lean, LeanTransaction, Returned
from platpay.db.unit_of_work import Raced
from platpay.events import service as events_service
from platpay.events.models import EventRow
from platpay.tenants import context as tenant_context
from tests.support.lean import count_events, first_tenant_id, new_event

_INSERT_EVENT = Lean(EventRow.__table__.insert())
_SLEEP = Lean(select(func.pg_sleep(bindparam("seconds", type_=Float))))
_BACKEND = Lean(select(func.pg_backend_pid()))


def _postgres_only(db) -> None:
    if db.is_sqlite:
        pytest.skip("PostgreSQL's LeanTransaction: its connection, its lazy BEGIN, its deferred writes")


async def test_it_commits_once_and_runs_the_commit_hooks_with_what_the_transaction_recorded(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    seen: list[object] = []
    db.on_commit(lambda session: seen.append(session.info.get("test.note")))
    async with db.lean_transaction() as session:
        assert isinstance(session, LeanTransaction)
        await lean.execute_many(session, _INSERT_EVENT, [new_event(tenant_id) for _ in range(2)])
        session.info["test.note"] = "queued"
        assert seen == []  # not before the commit
    assert await count_events(db) == 2
    assert seen == ["queued"]


async def test_an_exception_rolls_everything_back(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(RuntimeError):
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            raise RuntimeError("roll back")
    assert await count_events(db) == 0


async def test_an_orm_call_is_refused_by_name_and_nothing_commits(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(TypeError, match="no ORM session: 'execute'"):
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            await session.execute(text("SELECT 1"))
    assert await count_events(db) == 0


async def test_a_refused_statement_rolls_back_and_its_connection_serves_the_next_one(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    values = new_event(tenant_id)
    with pytest.raises(asyncpg.UniqueViolationError):  # the driver's error, as fetch_first raises them
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, values)
            pid = (await lean.first(session, _BACKEND, {}))[0]
            await lean.rows(session, _INSERT_EVENT, values)  # same primary key
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # the same connection, out of its aborted transaction
        assert (await lean.first(session, _BACKEND, {}))[0] == pid
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


async def test_sqlite_a_refused_statement_is_sqlalchemys_error_and_rolls_back(db, settings):
    if not db.is_sqlite:
        pytest.skip("SQLite's errors come back as SQLAlchemy's (PostgreSQL's: asyncpg's, above)")
    tenant_id = await first_tenant_id(db, settings)
    values = new_event(tenant_id)
    with pytest.raises(IntegrityError):
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, values)
            await lean.rows(session, _INSERT_EVENT, values)  # same primary key
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # the write lock came back with the connection
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


def _sqlite_path(db) -> str:
    if not db.is_sqlite:
        pytest.skip("SQLite's write lock, held by another connection")
    return str(db.engine.url.database)


async def test_sqlite_begin_waits_for_another_connections_write_lock_then_commits(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    other = sqlite3.connect(_sqlite_path(db), isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's writer, as SQLite sees it
        loop = asyncio.get_running_loop()
        loop.call_later(0.3, other.execute, "COMMIT")  # the event loop keeps running while BEGIN waits
        started = loop.time()
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
        assert loop.time() - started >= 0.25  # it waited for the lock (on the connection's thread)
    finally:
        other.close()
    assert await count_events(db) == 1


async def test_sqlite_a_caller_cancelled_while_begin_waits_leaves_nothing(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    other = sqlite3.connect(_sqlite_path(db), isolation_level=None)
    waiting = asyncio.Event()

    async def blocked() -> None:
        waiting.set()
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))

    try:
        other.execute("BEGIN IMMEDIATE")
        task = asyncio.create_task(blocked())
        await waiting.wait()
        await asyncio.sleep(0.2)
        task.cancel()
        # The lock comes free after the cancel: the thread's BEGIN IMMEDIATE then succeeds for a caller that
        # is gone, and must be rolled back, not left holding SQLite's write lock.
        asyncio.get_running_loop().call_later(0.2, other.execute, "COMMIT")
        with pytest.raises(asyncio.CancelledError):
            await task
    finally:
        other.close()
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # the process's write lock and the pool are whole
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


async def test_a_cancelled_caller_leaves_nothing_and_its_connection_is_replaced(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    started = asyncio.Event()
    pids: list[int] = []

    async def slow() -> None:
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            pids.append((await lean.first(session, _BACKEND, {}))[0])
            started.set()
            await lean.rows(session, _SLEEP, {"seconds": 30})

    task = asyncio.create_task(slow())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    async with db.lean_transaction() as session:
        assert (await lean.first(session, _BACKEND, {}))[0] != pids[0]  # a new connection
    assert await count_events(db) == 0


async def test_a_connection_the_server_ended_while_idle_is_replaced_at_begin(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    async with db.lean_transaction() as session:
        pid = (await lean.first(session, _BACKEND, {}))[0]
    async with db.read() as session:  # a restart or a failover, as the pooled connection sees it
        await session.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    async with db.lean_transaction() as session:
        assert (await lean.first(session, _BACKEND, {}))[0] != pid
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


async def test_a_connection_lost_mid_transaction_is_an_outage_and_changes_nothing(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(DatabaseUnavailable):
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            pid = (await lean.first(session, _BACKEND, {}))[0]
            async with db.read() as other:
                await other.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # and the next one is served
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


# BEGIN sent lazily, and the writes of a transaction that never needs it as one statement (db/lean.py:
# LeanTransaction, `finish`), their conditions checked by it (`defer_returning`, `expect`, platpay_expect).

_EVENTS = EventRow.__table__
_NO_CONDITION = Lean(select(literal(False)))
_TOUCH = Lean(
    update(_EVENTS)
    .where(_EVENTS.c.id == bindparam("event_id"))
    .values(resource_id=bindparam("resource_id"))
    .returning(_EVENTS.c.id, _EVENTS.c.resource_id)
)
_TOUCHED = Returned.stand_in(_TOUCH)
_COPY = Lean(
    _EVENTS.insert().from_select(
        ["id", "tenant_id", "type", "data", "resource_id", "created_at"],
        select(
            bindparam("id", type_=_EVENTS.c.id.type),
            bindparam("tenant_id", type_=_EVENTS.c.tenant_id.type),
            bindparam("type", type_=_EVENTS.c.type.type),
            bindparam("data", type_=_EVENTS.c.data.type),
            _TOUCHED.c.resource_id,  # what the deferred UPDATE returned
            bindparam("created_at", type_=_EVENTS.c.created_at.type),
        ),
    )
)


async def test_reads_go_before_begin_and_deferred_writes_commit_as_one_statement(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    async with db.lean_transaction() as session:
        await lean.first(session, _BACKEND, {})
        assert not lean.driver_of(session).is_in_transaction()  # a read: no BEGIN
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        await lean.first(session, _BACKEND, {})  # a read of none of their tables: they stay deferred
        assert not lean.driver_of(session).is_in_transaction()
        assert await count_events(db) == 0
    assert await count_events(db) == 2


async def test_a_statement_that_writes_sends_begin_first(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(RuntimeError):
        async with db.lean_transaction() as session:
            await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))
            assert lean.driver_of(session).is_in_transaction()
            raise RuntimeError("roll back")
    assert await count_events(db) == 0


async def test_a_failed_expectation_writes_nothing_and_is_raced(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(Raced):
        async with db.lean_transaction() as session:
            await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
            await lean.expect(session, _NO_CONDITION, {})
            await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # its connection serves the next one
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


async def test_a_deferred_update_that_finds_no_row_writes_nothing_and_is_raced(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(Raced):
        async with db.lean_transaction() as session:
            await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
            touched = await lean.defer_returning(
                session, _TOUCH, {"event_id": "Event:none", "resource_id": "x"}, row="Event:none"
            )
            assert touched is not None
            await lean.defer(session, _COPY, new_event(tenant_id), reading=touched)
    assert await count_events(db) == 0


async def test_a_deferred_write_reads_what_a_deferred_update_returned(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    original = new_event(tenant_id)
    async with db.lean_transaction() as session:
        await lean.rows(session, _INSERT_EVENT, original)
    copy = new_event(tenant_id)
    async with db.lean_transaction() as session:
        params = {"event_id": original["id"], "resource_id": "touched"}
        touched = await lean.defer_returning(session, _TOUCH, params, row=original["id"])
        assert touched is not None
        # the same row again in the same statement: not deferred (PostgreSQL would apply one of the two)
        assert await lean.defer_returning(session, _TOUCH, params, row=original["id"]) is None
        await lean.defer(session, _COPY, copy, reading=touched)
        assert not lean.driver_of(session).is_in_transaction()
    async with db.read() as session:
        found = dict((await session.execute(text("SELECT id, resource_id FROM events"))).all())
    assert found == {original["id"]: "touched", copy["id"]: "touched"}


async def test_an_event_scheduled_to_an_endpoint_since_changed_is_raced(db, settings):
    """The endpoint a request's authentication read is expected unchanged when its deferred event is sent."""
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)  # (its platform has no webhook endpoint)
    stale: Any = SimpleNamespace(id=tenant_id, webhook_endpoint="https://hooks.example/old")
    token = tenant_context.act_for(stale)
    try:
        with pytest.raises(Raced):
            async with db.lean_transaction() as session:
                await events_service.emit(session, tenant_id=tenant_id, type="TEST", resource={"id": "x"})
    finally:
        tenant_context.restore(token)
    assert await count_events(db) == 0
    async with db.lean_transaction() as session:  # read in the transaction instead: none
        await events_service.emit(session, tenant_id=tenant_id, type="TEST", resource={"id": "x"})
        assert not lean.driver_of(session).is_in_transaction()
    assert await count_events(db) == 1


# db/lean.py `prefetch`: a read sent behind rides with the next plain read, and its answer is kept for its ask.
_EVENTS_OF = Lean(
    select(func.count()).select_from(EventRow.__table__).where(EventRow.tenant_id == bindparam("tenant_id"))
)
_NO_EVENT = Lean(select(EventRow.id).where(EventRow.id == bindparam("event_id")))


async def _insert_elsewhere(db, tenant_id: str) -> None:
    async with db.lean_transaction() as other:
        await lean.rows(other, _INSERT_EVENT, new_event(tenant_id))


async def test_a_read_sent_behind_is_answered_from_the_statement_that_carried_it(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    await _insert_elsewhere(db, tenant_id)
    async with db.lean_transaction() as session:
        lean.prefetch(session, _EVENTS_OF, {"tenant_id": tenant_id})
        lean.prefetch(session, _NO_EVENT, {"event_id": "Event:none"})  # one waits at a time: not sent behind
        backend = await lean.first(session, _BACKEND, {})  # carries it
        assert backend is not None and isinstance(backend[0], int)  # the carrying read's own answer
        await _insert_elsewhere(db, tenant_id)  # committed after the carrying read
        assert await lean.first(session, _EVENTS_OF, {"tenant_id": tenant_id}) == (1,)  # as it was read
        assert await lean.first(session, _EVENTS_OF, {"tenant_id": tenant_id}) == (2,)  # kept once: read anew
        assert await lean.first(session, _NO_EVENT, {"event_id": "Event:none"}) is None
        assert not lean.driver_of(session).is_in_transaction()  # reads only: no BEGIN


async def test_a_locking_read_is_not_sent_behind(db, settings):
    _postgres_only(db)
    locking = Lean(select(EventRow.id).where(EventRow.id == bindparam("event_id")).with_for_update())
    async with db.lean_transaction() as session:
        lean.prefetch(session, locking, {"event_id": "Event:none"})
        assert lean._BEHIND not in session.info


async def test_a_read_sent_behind_that_finds_nothing_is_kept_as_nothing(db, settings):
    _postgres_only(db)
    async with db.lean_transaction() as session:
        lean.prefetch(session, _NO_EVENT, {"event_id": "Event:none"})
        await lean.first(session, _BACKEND, {})
        assert await lean.first(session, _NO_EVENT, {"event_id": "Event:none"}) is None


async def test_a_write_before_the_ask_forgets_what_was_read_behind(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    async with db.lean_transaction() as session:
        lean.prefetch(session, _EVENTS_OF, {"tenant_id": tenant_id})
        await lean.first(session, _BACKEND, {})
        await lean.rows(session, _INSERT_EVENT, new_event(tenant_id))  # may change it: read again when asked
        assert await lean.first(session, _EVENTS_OF, {"tenant_id": tenant_id}) == (1,)
    async with db.lean_transaction() as session:
        lean.prefetch(session, _EVENTS_OF, {"tenant_id": tenant_id})
        await lean.first(session, _BACKEND, {})
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))  # deferred: it goes with the ask
        assert await lean.first(session, _EVENTS_OF, {"tenant_id": tenant_id}) == (2,)


async def test_a_read_sent_behind_rides_inside_a_read_sent_ahead(db, settings):
    _postgres_only(db)
    tenant_id = await first_tenant_id(db, settings)
    seen: list[object] = []

    async def check(row: Any) -> None:
        seen.append(row)

    async with db.lean_transaction() as session:
        await lean.ahead(session, _BACKEND, {}, check)  # (a read ahead answers one row)
        lean.prefetch(session, _EVENTS_OF, {"tenant_id": tenant_id})
        assert await lean.first(session, _NO_EVENT, {"event_id": "Event:none"}) is None  # carries both
        assert len(seen) == 1 and isinstance(seen[0], tuple)
        await _insert_elsewhere(db, tenant_id)
        assert await lean.first(session, _EVENTS_OF, {"tenant_id": tenant_id}) == (0,)


async def test_elsewhere_nothing_is_sent_behind(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as orm:  # an ORM session (a careful attempt): read when asked
        lean.prefetch(orm, _EVENTS_OF, {"tenant_id": tenant_id})
        assert lean._BEHIND not in orm.info
        assert await lean.first(orm, _EVENTS_OF, {"tenant_id": tenant_id}) == (0,)
    async with db.lean_transaction() as session:
        lean.prefetch(session, _EVENTS_OF, {"tenant_id": tenant_id})
        assert (lean._BEHIND in session.info) is not db.is_sqlite  # SQLite sends each statement at once
        assert await lean.first(session, _EVENTS_OF, {"tenant_id": tenant_id}) == (0,)
