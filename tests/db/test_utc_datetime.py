"""Timestamps (platpay/db/types.py UtcDateTime): any aware value is stored as its instant in UTC and read back
aware, in UTC, through both paths (the ORM's and a lean statement's) on both databases; a naive value is
refused before it reaches the database, whose rows stay as they were."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import bindparam, select, text

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.events.models import EventRow
from tests.support.lean import (
    INSERT_EVENT,
    count_events,
    first_tenant_id,
    new_event,
    read_both_ways,
    write_both_ways,
)

_AFTER = Lean(
    select(EventRow.id)
    .where(EventRow.type == "TEST", EventRow.created_at > bindparam("after"))
    .order_by(EventRow.id)
)

# One instant written three ways: in UTC, in a zone ahead of UTC, in a zone behind it
INSTANT = datetime(2026, 3, 4, 5, 6, 7, 890123, tzinfo=UTC)
SPELLINGS = [
    INSTANT,
    INSTANT.astimezone(timezone(timedelta(hours=5, minutes=30))),
    INSTANT.astimezone(timezone(timedelta(hours=-8))),
]


@pytest.mark.parametrize("written", SPELLINGS, ids=["utc", "plus-0530", "minus-0800"])
async def test_an_instant_reads_back_in_utc_through_both_paths(db, settings, written):
    tenant_id = await first_tenant_id(db, settings)
    lean_event = new_event(tenant_id) | {"created_at": written}
    orm_event = new_event(tenant_id) | {"created_at": written}
    await write_both_ways(db, lean_event, orm_event)
    for event in (lean_event, orm_event):
        for read in await read_both_ways(db, EventRow.created_at, event["id"]):
            assert read == INSTANT
            assert read.tzinfo is UTC  # (not merely equal: the zone the API renders is UTC's)


async def test_comparisons_bind_the_instant_not_the_wall_clock(db, settings):
    """A bound (`created_at > :after`) in another zone compares as its instant: stored UTC text on
    SQLite orders only if every value is converted before it is bound."""
    tenant_id = await first_tenant_id(db, settings)
    early = new_event(tenant_id) | {"created_at": INSTANT - timedelta(minutes=1)}
    late = new_event(tenant_id) | {"created_at": INSTANT + timedelta(minutes=1)}
    async with db.lean_transaction() as session:
        for event in (early, late):
            await lean.rows(session, INSERT_EVENT, event)
    behind = INSTANT.astimezone(timezone(timedelta(hours=-8)))  # its wall clock is hours before both events
    async with db.lean_transaction() as session:
        found = [row[0] for row in await lean.rows(session, _AFTER, {"after": behind})]
    assert found == [late["id"]]


async def test_a_naive_timestamp_is_refused_and_nothing_is_written(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    before = await count_events(db)
    with pytest.raises(ValueError, match="naive datetime"):
        async with db.lean_transaction() as session:
            await lean.rows(
                session, INSERT_EVENT, new_event(tenant_id) | {"created_at": datetime(2026, 1, 1)}
            )
    with pytest.raises(Exception, match="naive datetime"):
        async with db.transaction() as session:
            session.add(EventRow(**new_event(tenant_id) | {"created_at": datetime(2026, 1, 1)}))
    assert await count_events(db) == before
    async with db.read() as session:
        assert (
            await session.execute(text("SELECT count(*) FROM events WHERE type = 'TEST'"))
        ).scalar_one() == 0
