"""PostgreSQL's write buffer (platpay/db/lean.py, `defer`): INSERTs nobody reads the result of wait in the
transaction and go with its next statement (as data-modifying CTEs of a lean statement that touches none of
their tables, else on their own before it, and before any statement SQLAlchemy sends, a SAVEPOINT and
COMMIT); a rollback drops them. On SQLite `defer` runs the statement at once: the same outcomes."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, func, select, text
from sqlalchemy.exc import IntegrityError

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.events.models import EventRow
from platpay.tenants.models import TenantRow
from tests.support.lean import count_events, first_tenant_id, new_event

_INSERT_EVENT = Lean(EventRow.__table__.insert())
_COUNT_EVENTS = Lean(select(func.count()).select_from(EventRow.__table__))
_TENANT = Lean(select(TenantRow.__table__.c.id).where(TenantRow.__table__.c.id == bindparam("tenant_id")))


async def test_deferred_writes_commit_with_a_lean_transaction(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.lean_transaction() as session:
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        await lean.defer_many(session, _INSERT_EVENT, [new_event(tenant_id) for _ in range(2)])
    assert await count_events(db) == 3


async def test_a_statement_on_another_table_carries_them_and_one_on_their_table_sees_them(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as session:
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        assert await lean.first(session, _TENANT, {"tenant_id": tenant_id}) == (tenant_id,)  # carries it
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        assert await lean.first(session, _COUNT_EVENTS, {}) == (2,)  # sent first, then counted
    assert await count_events(db) == 2


async def test_an_orm_statement_sees_what_was_deferred_before_it(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as session:
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        assert (await session.execute(text("SELECT count(*) FROM events"))).scalar_one() == 1
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 2


async def test_a_rollback_drops_them(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    with pytest.raises(RuntimeError):
        async with db.transaction() as session:
            await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
            raise RuntimeError("roll back")
    with pytest.raises(RuntimeError):
        async with db.lean_transaction() as session:
            await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
            raise RuntimeError("roll back")
    assert await count_events(db) == 0
    async with db.transaction() as session:  # nothing left over on the pooled connection either
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1


async def test_a_savepoint_rolled_back_drops_only_what_was_deferred_inside_it(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as session:
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                await session.execute(text("SELECT 1"))  # SQLAlchemy sends SAVEPOINT with its first statement
                await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
                raise RuntimeError("roll back to the savepoint")
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 2


async def test_a_deferred_writes_constraint_fails_the_transaction(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    event = new_event(tenant_id)
    with pytest.raises(IntegrityError):
        async with db.transaction() as session:
            await lean.defer(session, _INSERT_EVENT, event)
            await lean.defer(session, _INSERT_EVENT, event)  # the same id twice
    assert await count_events(db) == 0


async def test_a_bulk_write_goes_in_statements_of_bounded_size(db, settings):
    # 6,000 events of 6 parameters each would be one statement of more than PostgreSQL's 32,767
    # parameters (asyncpg refuses it) and 6,000 CTEs: they go in several statements instead.
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as session:
        await lean.defer_many(session, _INSERT_EVENT, [new_event(tenant_id) for _ in range(6000)])
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 6001


async def test_a_lean_write_inside_a_savepoint_rolls_back_with_it(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as session:
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                await lean.execute_many(session, _INSERT_EVENT, [new_event(tenant_id)])
                raise RuntimeError("roll back to the savepoint")
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 2


async def test_a_first_lean_write_inside_a_savepoint_rolls_back_with_it(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    async with db.transaction() as session:
        await session.execute(text("SELECT 1"))  # the transaction has begun, with no lean statement yet
        with pytest.raises(RuntimeError):
            async with session.begin_nested():
                await lean.execute_many(session, _INSERT_EVENT, [new_event(tenant_id)])
                raise RuntimeError("roll back to the savepoint")
        await lean.defer(session, _INSERT_EVENT, new_event(tenant_id))
    assert await count_events(db) == 1
