"""Rows and reads the tests of the lean statements (platpay/db/lean.py) share: an event row to insert, the
tenant a fresh platform made, how many events exist, an event written and read through both paths (a lean
statement's and the ORM's)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import InstrumentedAttribute

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.events.models import EventRow
from platpay.kit import clock
from platpay.kit.ids import new_id
from tests.factories import create_platform


def new_event(tenant_id: str) -> dict:
    return {
        "id": new_id("Event"),
        "tenant_id": tenant_id,
        "type": "TEST",
        "data": {"nested": {"amount": 1, "note": "é"}},
        "created_at": clock.now(),
    }


async def first_tenant_id(db, settings) -> str:
    await create_platform(db, settings)
    async with db.read() as session:
        return (await session.execute(text("SELECT id FROM tenants LIMIT 1"))).scalar_one()


async def count_events(db) -> int:
    async with db.read() as session:
        return (await session.execute(text("SELECT count(*) FROM events"))).scalar_one()


INSERT_EVENT = Lean(EventRow.__table__.insert())  # an event row (new_event) by a lean statement


async def write_both_ways(db, lean_event: dict, orm_event: dict) -> None:
    """`lean_event` inserted by a lean statement, `orm_event` through the ORM, each in its own transaction."""
    async with db.lean_transaction() as session:
        await lean.rows(session, INSERT_EVENT, lean_event)
    async with db.transaction() as session:
        session.add(EventRow(**orm_event))


async def read_both_ways(db, column: InstrumentedAttribute, event_id: str) -> tuple[Any, Any]:
    """An event's `column` as a lean statement reads it and as the ORM does."""
    async with db.lean_transaction() as session:
        (by_lean,) = await lean.first(
            session, Lean(select(column).where(EventRow.id == bindparam("id"))), {"id": event_id}
        )
    async with db.read() as session:
        by_orm = await session.scalar(select(column).where(EventRow.id == event_id))
    return by_lean, by_orm
