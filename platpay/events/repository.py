from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, case, event, func, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.portable import insert_ignore, lean_in, only_if
from platpay.db.rows import batch_done, batch_of, get_scoped
from platpay.db.types import UtcDateTime
from platpay.db.unit_of_work import LeanSession
from platpay.events.models import (
    EventRow,
    WebhookAttemptRow,
    WebhookDeliveryRow,
    WebhookEndpointRow,
    WebhookSandboxFaultsRow,
)
from platpay.events.state import DELIVERY, ENDPOINT, DeliveryStatus, EndpointStatus
from platpay.kit.ids import first_at
from platpay.tenants import service as tenants_service

if TYPE_CHECKING:
    pass

# Lean inserts (the only way these two tables are written): events and their deliveries are written on every
# money movement. An event's INSERT returns its tenant's webhook endpoint (the tenants domain's subquery), so
# scheduling its delivery costs no round trip of its own.
_INSERT_EVENT = Lean(
    EventRow.__table__.insert().returning(
        tenants_service.webhook_endpoint_of(bindparam("endpoint_tenant_id")).label("webhook_endpoint")
    )
)
_INSERT_DELIVERY = Lean(WebhookDeliveryRow.__table__.insert())
_INSERT_EVENT_ONLY = Lean(EventRow.__table__.insert())
# session.info: tenant -> its webhook endpoint as the transaction's first event INSERT for it returned it
_ENDPOINTS_READ = "platpay_events_endpoints"
# A transaction whose conditions are checked with its deferred writes (db/lean.py: PostgreSQL's lean
# transactions) defers its first event too: the endpoint it schedules deliveries to is the one the request's
# authentication read (else read here), expected unchanged when the writes are sent.
_ENDPOINT = Lean(select(tenants_service.webhook_endpoint_of(bindparam("tenant_id"))))
_ENDPOINT_IS = Lean(
    select(tenants_service.webhook_endpoint_of(bindparam("tenant_id")).is_not_distinct_from(bindparam("url")))
)
_EVENTS = EventRow.__table__
_FILLED: dict[tuple[Any, ...], Lean] = {}


def _filled_insert(filled: lean.Filled) -> Lean:
    """An event's INSERT whose data takes the values `filled` names from what an earlier deferred write
    returns (PostgreSQL: jsonb_set over the data as rendered, which holds placeholders there)."""
    shape = tuple((path, id(value)) for path, value in filled.paths)
    statement = _FILLED.get(shape)
    if statement is None:
        data: Any = bindparam("data", type_=_EVENTS.c.data.type)
        for path, value in filled.paths:
            # (the paths are the code's own constants, never input: spelled as a text[] literal)
            data = func.jsonb_set(
                data, literal_column(f"'{{{','.join(path)}}}'::text[]"), func.to_jsonb(value)
            )
        columns = [column.name for column in _EVENTS.columns]
        values = [data if name == "data" else bindparam(name, type_=_EVENTS.c[name].type) for name in columns]
        # (FROM the stand-in the values read: db/lean.py names it after the deferred write's CTE)
        statement = _FILLED[shape] = Lean(_EVENTS.insert().from_select(columns, select(*values)))
    return statement


@event.listens_for(Session, "after_transaction_end")
def _forget_endpoints(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(_ENDPOINTS_READ, None)


Filled = lean.Filled  # what a deferred event takes from an earlier deferred write (db/lean.py)
_UNKNOWN: Any = object()


async def insert_event(
    session: LeanSession,
    values: dict[str, Any],
    *,
    endpoint: str | None = _UNKNOWN,
    filled: lean.Filled | None = None,
) -> str | None:
    """Insert an event row (id, tenant_id, type, data, created_at); its tenant's webhook endpoint as of the
    transaction's first event INSERT for that tenant (None when it has none): that one returns it, a later
    one is deferred (PostgreSQL: sent with the transaction's next statement, db/lean.py's write buffer), so
    every event of one transaction goes to the same endpoint. Where a transaction checks its conditions with
    its deferred writes (`lean.defers_checks`), the first is deferred too, to `endpoint` (as the request's
    authentication read it; else read here), expected unchanged then. `filled`: values of the data that an
    earlier deferred write returns (only there)."""
    tenant_id = values["tenant_id"]
    known: dict[str, str | None] | None = session.info.get(_ENDPOINTS_READ)
    if known is not None and tenant_id in known:
        await _defer_event(session, values, filled)
        return known[tenant_id]
    if lean.defers_checks(session):
        if endpoint is _UNKNOWN:
            endpoint = (await lean.first(session, _ENDPOINT, {"tenant_id": tenant_id}) or (None,))[0]
        await lean.expect(session, _ENDPOINT_IS, {"tenant_id": tenant_id, "url": endpoint})
        session.info.setdefault(_ENDPOINTS_READ, {})[tenant_id] = endpoint
        await _defer_event(session, values, filled)
        return endpoint
    assert filled is None, "a filled event exists only where conditions are deferred"
    [(endpoint,)] = await lean.rows(session, _INSERT_EVENT, {**values, "endpoint_tenant_id": tenant_id})
    session.info.setdefault(_ENDPOINTS_READ, {})[tenant_id] = endpoint
    return endpoint


async def endpoint_ahead(session: LeanSession, *, tenant_id: str) -> None:
    """Where a transaction defers its conditions (`lean.defers_checks`), read the tenant's webhook endpoint for
    its events (`insert_event`) with the transaction's next read (db/lean.py `ahead`), expected unchanged by
    the statement that sends its writes: a job's events cost no read of their own (a request's endpoint
    comes from its authentication). Elsewhere nothing: the first event's INSERT returns it."""
    known: dict[str, str | None] | None = session.info.get(_ENDPOINTS_READ)
    if not lean.defers_checks(session) or (known is not None and tenant_id in known):
        return

    async def check(found: tuple[Any, ...] | None) -> None:
        endpoint = None if found is None else found[0]
        await lean.expect(session, _ENDPOINT_IS, {"tenant_id": tenant_id, "url": endpoint})
        session.info.setdefault(_ENDPOINTS_READ, {})[tenant_id] = endpoint

    await lean.ahead(session, _ENDPOINT, {"tenant_id": tenant_id}, check)


async def _defer_event(session: LeanSession, values: dict[str, Any], filled: lean.Filled | None) -> None:
    if filled is None:
        await lean.defer(session, _INSERT_EVENT_ONLY, values)
    else:
        await lean.defer(session, _filled_insert(filled), values, reading=filled.returned)


async def insert_delivery(session: LeanSession, values: dict[str, Any]) -> None:
    await lean.defer(session, _INSERT_DELIVERY, values)  # PostgreSQL: with the next statement (db/lean.py)


async def get_delivery(
    session: AsyncSession, *, delivery_id: str, tenant_id: str | None = None, for_update: bool = False
) -> WebhookDeliveryRow | None:
    return await get_scoped(
        session, WebhookDeliveryRow, id=delivery_id, tenant_id=tenant_id, for_update=for_update
    )


_DELIVERY_COLUMNS, _DELIVERY_KEYS = lean.columns_of(WebhookDeliveryRow)
_EVENT_COLUMNS, _EVENT_KEYS = lean.columns_of(EventRow)
# A chain's deliveries with their events: one statement text whatever the chain's length (the ids bound as
# one list), its rows made read-only snapshots (no identity map, no loading machinery for 2 x 256 rows).
_EVENT_JOIN = WebhookDeliveryRow.__table__.join(
    EventRow.__table__, EventRow.__table__.c.id == WebhookDeliveryRow.__table__.c.event_id
)
_WITH_EVENTS = lean_in(
    lambda picked: select(*_DELIVERY_COLUMNS, *_EVENT_COLUMNS).select_from(_EVENT_JOIN).where(picked),
    WebhookDeliveryRow.__table__.c.id,
    "delivery_ids",
)


async def deliveries_with_events(
    session: LeanSession, *, delivery_ids: list[str]
) -> dict[str, tuple[WebhookDeliveryRow, EventRow]]:
    """A chain of deliveries with their events, in one statement: id -> (delivery, event), read-only
    snapshots (lean)."""
    found = await lean.rows(session, _WITH_EVENTS, {"delivery_ids": list(delivery_ids)})
    width = len(_DELIVERY_KEYS)
    pairs = (
        (
            lean.snapshot(WebhookDeliveryRow, _DELIVERY_KEYS, row[:width]),
            lean.snapshot(EventRow, _EVENT_KEYS, row[width:]),
        )
        for row in found
    )
    return {delivery.id: (delivery, event) for delivery, event in pairs}


async def lock_deliveries(session: AsyncSession, *, delivery_ids: list[str]) -> dict[str, WebhookDeliveryRow]:
    """Deliveries locked for this transaction (their current state, not a copy an earlier read left)."""
    if not delivery_ids:
        return {}
    stmt = (
        select(WebhookDeliveryRow)
        .where(WebhookDeliveryRow.id.in_(delivery_ids))
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    return {row.id: row for row in (await session.scalars(stmt)).all()}


# A chain's successes recorded leanly (delivery.py `deliver_chain`): the deliveries read locked, then each one
# DELIVERED and its attempt stored, each kind in one driver call.
_DELIVERIES = WebhookDeliveryRow.__table__
# (job id, status) of deliveries (a chain's: up to 64), locked in one order by every chain; the ids bound as
# one list: one statement text
_LOCKED_STATES = lean_in(
    lambda picked: (
        select(_DELIVERIES.c.id, _DELIVERIES.c.job_id, _DELIVERIES.c.status)
        .where(picked)
        .order_by(_DELIVERIES.c.id)
        .with_for_update()
    ),
    _DELIVERIES.c.id,
    "delivery_ids",
)
_DELIVERED = Lean(
    update(_DELIVERIES)
    .where(_DELIVERIES.c.id == bindparam("delivery_id"))
    .values(
        status=DELIVERY.move(DeliveryStatus.PENDING, DeliveryStatus.DELIVERED),
        attempt_count=_DELIVERIES.c.attempt_count + 1,
        first_attempt_at=func.coalesce(
            _DELIVERIES.c.first_attempt_at, bindparam("attempted_at", type_=UtcDateTime())
        ),
        last_response_status=bindparam("response_status"),
        last_error=None,
        next_attempt_at=None,
        job_id=None,
        delivered_at=bindparam("now"),
        updated_at=bindparam("now"),
    )
)
_INSERT_ATTEMPT = Lean(WebhookAttemptRow.__table__.insert())


async def delivery_states(
    session: LeanSession, *, delivery_ids: list[str]
) -> dict[str, tuple[str | None, str]]:
    """The deliveries' (job id, status), locked for this transaction (lean)."""
    if not delivery_ids:
        return {}
    found = await lean.rows(session, _LOCKED_STATES, {"delivery_ids": list(delivery_ids)})
    return {delivery_id: (job_id, status) for delivery_id, job_id, status in found}


async def record_delivered(session: LeanSession, *, attempts: list[dict[str, Any]], now: datetime) -> None:
    """Deliveries answered 2xx, each locked PENDING by this transaction: each DELIVERED with its attempt
    stored (`attempts`: webhook_attempts rows), in two driver calls (lean)."""
    await lean.execute_many(
        session,
        _DELIVERED,
        [
            {
                "delivery_id": attempt["delivery_id"],
                "attempted_at": attempt["attempted_at"],
                "response_status": attempt["response_status"],
                "now": now,
            }
            for attempt in attempts
        ],
    )
    await lean.execute_many(session, _INSERT_ATTEMPT, attempts)


async def get_event(session: AsyncSession, event_id: str) -> EventRow | None:
    return await session.get(EventRow, event_id)


async def attempts_of(session: AsyncSession, *, delivery_id: str) -> list[WebhookAttemptRow]:
    stmt = (
        select(WebhookAttemptRow)
        .where(WebhookAttemptRow.delivery_id == delivery_id)
        .order_by(WebhookAttemptRow.id)
    )
    return list((await session.scalars(stmt)).all())


def deliveries_query(
    *,
    tenant_id: str,
    status: str | None,
    event_type: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
) -> Select[Any]:
    stmt = select(WebhookDeliveryRow).where(WebhookDeliveryRow.tenant_id == tenant_id)
    if status is not None:
        stmt = stmt.where(WebhookDeliveryRow.status == status)
    if event_type is not None:
        stmt = stmt.where(WebhookDeliveryRow.event_type == event_type)
    if created_after is not None:
        stmt = stmt.where(WebhookDeliveryRow.created_at >= created_after)
    if created_before is not None:
        stmt = stmt.where(WebhookDeliveryRow.created_at <= created_before)
    return stmt


async def delivery_counts(session: AsyncSession) -> dict[str, int]:
    rows = (
        await session.execute(
            select(WebhookDeliveryRow.status, func.count()).group_by(WebhookDeliveryRow.status)
        )
    ).all()
    return {status: count for status, count in rows}


async def get_endpoint(
    session: AsyncSession, *, endpoint_id: str, for_update: bool = False
) -> WebhookEndpointRow | None:
    stmt = select(WebhookEndpointRow).where(WebhookEndpointRow.id == endpoint_id)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


async def lock_endpoint(
    session: AsyncSession, *, endpoint_id: str, tenant_id: str, url: str, now: datetime
) -> WebhookEndpointRow:
    """The endpoint's row, created ACTIVE if it has none, locked for this transaction."""
    await session.execute(
        insert_ignore(
            session,
            WebhookEndpointRow.__table__,
            {
                "id": endpoint_id,
                "tenant_id": tenant_id,
                "url": url,
                "status": EndpointStatus.ACTIVE,
                "consecutive_failures": 0,
                "probe_round": 0,
                "created_at": now,
                "updated_at": now,
            },
        )
    )
    row = await get_endpoint(session, endpoint_id=endpoint_id, for_update=True)
    assert row is not None
    await session.refresh(row)  # this transaction's locked state, not a copy an earlier read left behind
    return row


_ENDPOINTS = WebhookEndpointRow.__table__
# Lean: read and written by every delivery attempt. Clearing closes a FAILING endpoint's breaker (and resets
# an ACTIVE one's count of failures).
_ENDPOINT_STATE = Lean(
    select(_ENDPOINTS.c.status, _ENDPOINTS.c.probe_job_id).where(_ENDPOINTS.c.id == bindparam("endpoint_id"))
)
_CLEAR_FAILURES = Lean(
    update(_ENDPOINTS)
    .where(
        _ENDPOINTS.c.id == bindparam("endpoint_id"),
        (_ENDPOINTS.c.consecutive_failures > 0) | (_ENDPOINTS.c.status != EndpointStatus.ACTIVE),
    )
    .values(
        status=ENDPOINT.move(EndpointStatus.FAILING, EndpointStatus.ACTIVE),
        consecutive_failures=0,
        failing_since=None,
        probe_round=0,
        next_probe_at=None,
        probe_job_id=None,
        recovered_at=bindparam("now"),
        updated_at=bindparam("now"),
    )
    .returning(_ENDPOINTS.c.id)
)


async def endpoint_state(session: AsyncSession, *, endpoint_id: str) -> tuple[str, str | None] | None:
    """(status, probe job id) of an endpoint, or None for one that never failed."""
    return await lean.first(session, _ENDPOINT_STATE, {"endpoint_id": endpoint_id})


async def clear_endpoint_failures(session: LeanSession, *, endpoint_id: str, now: datetime) -> bool:
    """After a successful delivery: the endpoint's failure count back to zero and its breaker closed. A
    no-op (no write, no lock) for an endpoint with no failures, the usual case. True if it had any."""
    return bool(await lean.rows(session, _CLEAR_FAILURES, {"endpoint_id": endpoint_id, "now": now}))


async def failing_endpoints(session: AsyncSession) -> dict[str, str | None]:
    """Every FAILING endpoint that has a probe scheduled: its id -> the probe's job id."""
    rows = await session.execute(
        select(WebhookEndpointRow.id, WebhookEndpointRow.probe_job_id).where(
            WebhookEndpointRow.status == EndpointStatus.FAILING, WebhookEndpointRow.probe_job_id.isnot(None)
        )
    )
    return dict(rows.all())


async def endpoints_of(session: AsyncSession, *, tenant_id: str) -> list[WebhookEndpointRow]:
    stmt = (
        select(WebhookEndpointRow)
        .where(WebhookEndpointRow.tenant_id == tenant_id)
        .order_by(WebhookEndpointRow.id)
    )
    return list((await session.scalars(stmt)).all())


async def pending_counts(session: AsyncSession, *, tenant_id: str, cap: int | None = None) -> dict[str, int]:
    """PENDING deliveries by URL; with `cap`, of at most `cap` of them (a backlog's size is then "at least"
    the sum: the count stops costing more with the backlog)."""
    pending = select(WebhookDeliveryRow.url).where(
        WebhookDeliveryRow.tenant_id == tenant_id, WebhookDeliveryRow.status == DeliveryStatus.PENDING
    )
    if cap is not None:
        pending = pending.limit(cap)
    counted = pending.subquery()
    rows = (await session.execute(select(counted.c.url, func.count()).group_by(counted.c.url))).all()
    return {url: count for url, count in rows}


async def endpoint_counts(session: AsyncSession) -> dict[str, int]:
    rows = (
        await session.execute(
            select(WebhookEndpointRow.status, func.count()).group_by(WebhookEndpointRow.status)
        )
    ).all()
    return {status: count for status, count in rows}


async def give_up_stale(
    session: AsyncSession, *, tenant_id: str, url: str, created_before: datetime, sparing: str, now: datetime
) -> list[str]:
    """Mark FAILED the endpoint's PENDING deliveries created before `created_before` (past the retry
    horizon while the endpoint failed); the ids of the jobs that were to send them."""
    stale = (
        await session.execute(
            select(WebhookDeliveryRow.id, WebhookDeliveryRow.job_id).where(
                WebhookDeliveryRow.tenant_id == tenant_id,
                WebhookDeliveryRow.url == url,
                WebhookDeliveryRow.status == DeliveryStatus.PENDING,
                WebhookDeliveryRow.created_at < created_before,
                WebhookDeliveryRow.id != sparing,
            )
        )
    ).all()
    if stale:
        await session.execute(
            update(WebhookDeliveryRow)
            .where(WebhookDeliveryRow.id.in_([delivery_id for delivery_id, _ in stale]))
            .values(
                status=DELIVERY.move(DeliveryStatus.PENDING, DeliveryStatus.FAILED),
                job_id=None,
                next_attempt_at=None,
                last_error="given up: the endpoint kept failing past the retry horizon",
                updated_at=now,
            )
            .execution_options(synchronize_session=False)
        )
    return [job_id for _, job_id in stale if job_id]


async def sandbox_faults(session: AsyncSession, *, tenant_id: str) -> WebhookSandboxFaultsRow | None:
    return await session.get(WebhookSandboxFaultsRow, tenant_id)


async def set_sandbox_faults(
    session: AsyncSession, *, tenant_id: str, duplicate: bool, delay_ms: int, reorder_ms: int, now: datetime
) -> WebhookSandboxFaultsRow:
    row = await session.get(WebhookSandboxFaultsRow, tenant_id, with_for_update=True)
    if row is None:
        row = WebhookSandboxFaultsRow(tenant_id=tenant_id)
        session.add(row)
    row.duplicate, row.delay_ms, row.reorder_ms, row.updated_at = duplicate, delay_ms, reorder_ms, now
    await session.flush()
    return row


# The console's reads: a fixed number of statements whatever the number of rows.


async def events_about(
    session: AsyncSession, *, tenant_id: str, resource_id: str, latest: int
) -> list[EventRow]:
    """The tenant's `latest` events whose resource is `resource_id`, oldest first (ix_events_tenant_resource)."""
    stmt = (
        select(EventRow)
        .where(EventRow.tenant_id == tenant_id, EventRow.resource_id == resource_id)
        .order_by(EventRow.id.desc())
        .limit(latest)
    )
    return list(reversed((await session.scalars(stmt)).all()))


async def deliveries_of_events(
    session: AsyncSession, *, tenant_id: str, event_ids: list[str]
) -> list[WebhookDeliveryRow]:
    if not event_ids:
        return []
    stmt = (
        select(WebhookDeliveryRow)
        # by the events' ids: SQLite read every delivery of the tenant through its index, the ids a filter
        .where(only_if(WebhookDeliveryRow.tenant_id, tenant_id), WebhookDeliveryRow.event_id.in_(event_ids))
        .order_by(WebhookDeliveryRow.id)
    )
    return list((await session.scalars(stmt)).all())


async def attempts_of_deliveries(
    session: AsyncSession, *, tenant_id: str, delivery_ids: list[str]
) -> list[WebhookAttemptRow]:
    if not delivery_ids:
        return []
    stmt = (
        select(WebhookAttemptRow)
        .where(
            only_if(WebhookAttemptRow.tenant_id, tenant_id), WebhookAttemptRow.delivery_id.in_(delivery_ids)
        )
        .order_by(WebhookAttemptRow.delivery_id, WebhookAttemptRow.id)
    )
    return list((await session.scalars(stmt)).all())


async def delivery_with_event(
    session: AsyncSession, *, tenant_id: str, delivery_id: str
) -> tuple[WebhookDeliveryRow, EventRow] | None:
    row = (
        await session.execute(
            select(WebhookDeliveryRow, EventRow)
            .join(EventRow, EventRow.id == WebhookDeliveryRow.event_id)
            .where(WebhookDeliveryRow.id == delivery_id, WebhookDeliveryRow.tenant_id == tenant_id)
        )
    ).first()
    return None if row is None else (row[0], row[1])


async def outcomes_since(
    session: AsyncSession, *, tenant_id: str, since: datetime, latest: int
) -> dict[str, tuple[int, int, int, datetime | None]]:
    """Per URL, of the tenant's `latest` deliveries last updated since `since` (newest first, through
    ix_webhook_deliveries_tenant_updated: the work is bounded by `latest`, not by the traffic): how many
    there are, how many are DELIVERED, how many FAILED, and the latest delivered_at. One statement."""
    recent = (
        select(WebhookDeliveryRow.url, WebhookDeliveryRow.status, WebhookDeliveryRow.delivered_at)
        .where(WebhookDeliveryRow.tenant_id == tenant_id, WebhookDeliveryRow.updated_at >= since)
        .order_by(WebhookDeliveryRow.updated_at.desc())
        .limit(latest)
        .subquery()
    )
    delivered = recent.c.status == DeliveryStatus.DELIVERED
    failed = recent.c.status == DeliveryStatus.FAILED
    rows = await session.execute(
        select(
            recent.c.url,
            func.count(),
            func.coalesce(func.sum(case((delivered, 1), else_=0)), 0),
            func.coalesce(func.sum(case((failed, 1), else_=0)), 0),
            func.max(recent.c.delivered_at),
        ).group_by(recent.c.url)
    )
    return {
        url: (int(sampled), int(n_delivered), int(n_failed), last_success)
        for url, sampled, n_delivered, n_failed, last_success in rows
    }


async def count_with_status(session: AsyncSession, *, tenant_id: str, status: str) -> int:
    return int(
        await session.scalar(
            select(func.count()).where(
                WebhookDeliveryRow.tenant_id == tenant_id, WebhookDeliveryRow.status == status
            )
        )
        or 0
    )


# Retention (events/jobs.py): the attempts' records go; events and deliveries stay.

ATTEMPT_ID_PREFIX = "WebhookAttempt"


async def prune_attempts(session: AsyncSession, *, before: datetime, limit: int) -> int:
    """Delete at most `limit` delivery attempts made before `before` (on the wall clock: their time-ordered
    ids, through the primary key, oldest first); how many. The delivery keeps its status, attempt count,
    last answer's status and error, and its event."""
    batch = batch_of(
        WebhookAttemptRow.id,
        WebhookAttemptRow.id < first_at(ATTEMPT_ID_PREFIX, before),
        order_by=WebhookAttemptRow.id,
        limit=limit,
    )
    statement = WebhookAttemptRow.__table__.delete().where(WebhookAttemptRow.id.in_(batch))
    return await batch_done(session, statement, WebhookAttemptRow.id)
