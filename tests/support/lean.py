"""Rows and reads the tests of the lean statements (platpay/db/lean.py) share: an event row to insert, the
tenant a fresh platform made, how many events exist."""

from __future__ import annotations

from sqlalchemy import text

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
