"""Lean statements run on the driver inside the unit of work: same transaction, same errors, same
identity-map semantics as the ORM statements they replace."""

from __future__ import annotations

import pytest
from sqlalchemy import bindparam, exc, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.events.models import EventRow
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.payments.models import TransactionRow
from tests.support.lean import count_events, first_tenant_id, new_event

_INSERT_EVENT = Lean(EventRow.__table__.insert())
_EVENT_TYPE = Lean(select(EventRow.type).where(EventRow.id == bindparam("id")))


class TestLeanStatements:
    async def test_a_first_statement_is_inside_the_transaction_and_rolls_back_with_it(self, db, settings):
        tenant_id = await first_tenant_id(db, settings)
        with pytest.raises(RuntimeError):
            async with db.transaction() as session:
                await lean.rows(
                    session, _INSERT_EVENT, new_event(tenant_id)
                )  # the transaction's first statement
                raise RuntimeError("roll back")
        assert await count_events(db) == 0

    async def test_values_round_trip_through_the_column_types(self, db, settings):
        tenant_id = await first_tenant_id(db, settings)
        values = new_event(tenant_id)
        async with db.transaction() as session:
            await lean.rows(session, _INSERT_EVENT, values)
        async with db.read() as session:
            row = await session.get(EventRow, values["id"])
        assert row.data == values["data"] and row.created_at == values["created_at"]
        assert row.created_at.tzinfo is not None

    async def test_driver_errors_are_sqlalchemy_errors_and_roll_back(self, db, settings):
        tenant_id = await first_tenant_id(db, settings)
        values = new_event(tenant_id)
        with pytest.raises(exc.IntegrityError):
            async with db.transaction() as session:
                await lean.rows(session, _INSERT_EVENT, values)
                await lean.rows(session, _INSERT_EVENT, values)  # same primary key
        assert await count_events(db) == 0

    async def test_execute_many_writes_every_row(self, db, settings):
        tenant_id = await first_tenant_id(db, settings)
        async with db.transaction() as session:
            await lean.execute_many(session, _INSERT_EVENT, [new_event(tenant_id) for _ in range(3)])
        assert await count_events(db) == 3

    async def test_a_later_transaction_on_the_same_session_gets_a_fresh_driver(self, db, settings):
        tenant_id = await first_tenant_id(db, settings)
        first, second = new_event(tenant_id), new_event(tenant_id)
        async with AsyncSession(db.engine) as session:
            await lean.rows(session, _INSERT_EVENT, first)
            await session.commit()
            await lean.rows(session, _INSERT_EVENT, second)
            assert (await lean.first(session, _EVENT_TYPE, {"id": first["id"]})) == ("TEST",)
            await session.rollback()  # the second transaction's insert only
        assert await count_events(db) == 1


class TestLeanGet:
    async def _transaction_row(self, db, settings) -> TransactionRow:
        tenant_id = await first_tenant_id(db, settings)
        now = clock.now()
        values = {
            "id": new_id("Transaction"),
            "tenant_id": tenant_id,
            "type": "OUTGOING",
            "kind": "TRANSFER_OUT",
            "status": "PENDING",
            "direction": "DEBIT",
            "source": {},
            "destination": {},
            "extra": {},
            "created_at": now,
            "updated_at": now,
        }
        async with db.transaction() as session:
            from platpay.payments import repository

            row = await repository.insert(session, values)
            assert row in session.sync_session  # persistent in the session, as if loaded
            row.status = "PROCESSING"  # attached: flushed as an UPDATE with the unit of work
        return row

    async def test_insert_refuses_an_attribute_the_table_lacks(self, db, settings):
        tenant_id = await first_tenant_id(db, settings)
        async with db.transaction() as session:
            from platpay.payments import repository

            with pytest.raises(TypeError, match="no column attribute"):
                await repository.insert(
                    session, {"id": new_id("Transaction"), "tenant_id": tenant_id, "color": 1}
                )

    async def test_an_inserted_and_attached_row_flushes_later_changes(self, db, settings):
        row = await self._transaction_row(db, settings)
        async with db.read() as session:
            found = await lean.get(session, TransactionRow, id=row.id, tenant_id=row.tenant_id)
        assert found.status == "PROCESSING" and found.fee_amount == 0  # the column's default was applied

    async def test_get_filters_on_every_column_given(self, db, settings):
        row = await self._transaction_row(db, settings)
        async with db.read() as session:
            assert await lean.get(session, TransactionRow, id=row.id, tenant_id="Tenant:other") is None
            assert await lean.get(session, TransactionRow, id=row.id, tenant_id=row.tenant_id, quote_id=None)
            assert (
                await lean.get(session, TransactionRow, id=row.id, tenant_id=row.tenant_id, status="X")
                is None
            )

    async def test_get_returns_the_instance_the_session_holds(self, db, settings):
        row = await self._transaction_row(db, settings)
        async with db.transaction() as session:
            first = await lean.get(session, TransactionRow, id=row.id, tenant_id=row.tenant_id)
            again = await lean.get(session, TransactionRow, id=row.id, tenant_id=row.tenant_id)
            locked = await lean.get(
                session, TransactionRow, id=row.id, tenant_id=row.tenant_id, for_update=True
            )
            assert first is again is locked
            first.description = "changed"
        async with db.read() as session:
            assert (
                await lean.get(session, TransactionRow, id=row.id, tenant_id=row.tenant_id)
            ).description == ("changed")
