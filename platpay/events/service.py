"""The outbox: events written in the business transaction, webhook deliveries scheduled as jobs."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db.database import Database
from platpay.db.unit_of_work import LeanSession
from platpay.events import breaker, repository, signing, types
from platpay.events import delivery as delivery_mod
from platpay.events.errors import DeliveryNotFound, WebhookDeliveryError, WebhookEndpointNotSet
from platpay.events.models import EventRow, WebhookAttemptRow, WebhookDeliveryRow
from platpay.events.schemas import (
    SandboxWebhookFaults,
    TestWebhookResponse,
    WebhookAttempt,
    WebhookDelivery,
    WebhookDeliveryDetail,
    WebhookEndpointHealth,
)
from platpay.events.state import DELIVERY, DeliveryStatus, EndpointStatus
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.api_model import ApiModel
from platpay.kit.crypto.webhook_signing import HEADER, signature_header
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.tenants import context as tenant_context
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

DELIVER_JOB = delivery_mod.DELIVER_JOB


def _payload(resource: ApiModel | dict[str, Any]) -> dict[str, Any]:
    return resource.to_api() if isinstance(resource, ApiModel) else resource


def _resource_id(data: dict[str, Any]) -> str | None:
    """The id of the resource an event is about: its data's `id` (the resource as GET returns it)."""
    resource_id = data.get("id")
    return resource_id if isinstance(resource_id, str) and len(resource_id) <= 64 else None


async def emit(
    session: LeanSession,
    *,
    tenant_id: str,
    type: str,
    resource: ApiModel | dict[str, Any],
    filled: repository.Filled | None = None,
) -> str:
    """Record an event in the caller's transaction and schedule its delivery to the tenant's endpoint;
    the event's id. `filled`: values of the resource's JSON that a deferred write of the transaction returns
    (db/lean.py: the ledger's balance after a deferred change), in place of the placeholders rendered."""
    if not types.is_known(type):
        raise ValueError(f"unknown event type {type!r}: no domain declares it (platpay.domains.load)")
    now = clock.now()
    data = _payload(resource)
    event: dict[str, Any] = {
        "id": new_id("Event"),
        "tenant_id": tenant_id,
        "type": type,
        "data": data,
        "resource_id": _resource_id(data),
        "created_at": now,
    }
    acting = tenant_context.acting(tenant_id)  # the endpoint as the request's authentication read it
    url = await repository.insert_event(  # the tenant's endpoint (read by the same statement, or known)
        session,
        event,
        **({} if acting is None else {"endpoint": acting.webhook_endpoint}),
        filled=filled,
    )
    if url:
        await _schedule(session, event_id=event["id"], tenant_id=tenant_id, type=type, url=url, now=now)
    return event["id"]


async def endpoint_ahead(session: LeanSession, *, tenant_id: str) -> None:
    """Read the tenant's webhook endpoint for the transaction's events with its next read, where that saves a
    round trip (a job's lean transaction on PostgreSQL: events/repository.py)."""
    await repository.endpoint_ahead(session, tenant_id=tenant_id)


async def _schedule(
    session: LeanSession, *, event_id: str, tenant_id: str, type: str, url: str, now: datetime
) -> str:
    delivery_id = new_id("Webhook")
    job_id = await jobs_service.enqueue(
        session,
        DELIVER_JOB,
        {"deliveryId": delivery_id},
        tenant_id=tenant_id,
        run_at=now,
        lane=breaker.WEBHOOK_LANE,
        concurrency_key=breaker.endpoint_id(tenant_id, url),
    )
    await repository.insert_delivery(
        session,
        {
            "id": delivery_id,
            "tenant_id": tenant_id,
            "event_id": event_id,
            "event_type": type,
            "url": url,
            "status": DeliveryStatus.PENDING,
            "retryable": type not in types.NOT_RETRIED,
            "job_id": job_id,
            "attempt_count": 0,
            "next_attempt_at": now,
            "last_response_status": None,
            "last_error": None,
            "first_attempt_at": None,
            "delivered_at": None,
            "created_at": now,
            "updated_at": now,
        },
    )
    return delivery_id


def _delivery_schema(row: WebhookDeliveryRow) -> WebhookDelivery:
    return WebhookDelivery(
        id=row.id,
        event_id=row.event_id,
        type=row.event_type,
        url=row.url,
        status=row.status,
        attempt_count=row.attempt_count,
        next_attempt_at=row.next_attempt_at,
        last_response_status=row.last_response_status,
        last_error=row.last_error,
        delivered_at=row.delivered_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def list_deliveries(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    status: str | None = None,
    event_type: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
) -> tuple[PageResult[WebhookDeliveryRow], list[WebhookDelivery]]:
    stmt = repository.deliveries_query(
        tenant_id=tenant_id,
        status=status,
        event_type=event_type,
        created_after=created_after,
        created_before=created_before,
    )
    page = await paginate(session, stmt, id_column=WebhookDeliveryRow.id, params=params)
    return page, [_delivery_schema(row) for row in page.items]


async def get_delivery(session: AsyncSession, *, tenant_id: str, delivery_id: str) -> WebhookDeliveryDetail:
    row = await repository.get_delivery(session, delivery_id=delivery_id, tenant_id=tenant_id)
    if row is None:
        raise DeliveryNotFound(delivery_id)
    event = await repository.get_event(session, row.event_id)
    attempts = await repository.attempts_of(session, delivery_id=row.id)
    return WebhookDeliveryDetail(
        **_delivery_schema(row).model_dump(),
        data=event.data if event else {},
        attempts=[
            WebhookAttempt(
                attempted_at=a.attempted_at,
                response_status=a.response_status,
                latency_ms=a.latency_ms,
                response_body=a.response_body,
                error=a.error,
            )
            for a in attempts
        ],
    )


async def endpoint_health(session: AsyncSession, *, tenant_id: str) -> list[WebhookEndpointHealth]:
    """The configured endpoint first (ACTIVE with no failures if it never failed), then every other URL
    that deliveries went to and that has failed at some point."""
    configured = await tenants_service.webhook_endpoint(session, tenant_id=tenant_id)
    pending = await repository.pending_counts(session, tenant_id=tenant_id)
    rows = {row.url: row for row in await repository.endpoints_of(session, tenant_id=tenant_id)}
    urls = [configured] if configured else []
    urls += sorted((set(rows) | set(pending)) - set(urls))
    health = []
    for url in urls:
        row = rows.get(url)
        health.append(
            WebhookEndpointHealth(
                url=url,
                status=row.status if row else EndpointStatus.ACTIVE,
                configured=url == configured,
                consecutive_failures=row.consecutive_failures if row else 0,
                pending_deliveries=pending.get(url, 0),
                failing_since=row.failing_since if row else None,
                next_probe_at=row.next_probe_at if row else None,
                last_failure_at=row.last_failure_at if row else None,
                last_error=row.last_error if row else None,
                recovered_at=row.recovered_at if row else None,
            )
        )
    return health


async def redeliver(session: AsyncSession, *, tenant_id: str, delivery_id: str) -> WebhookDelivery:
    """Send the same delivery (same envelope id) again now, whatever its state; a scheduled retry is
    superseded so the receiver is not sent two copies for one request."""
    row = await repository.get_delivery(
        session, delivery_id=delivery_id, tenant_id=tenant_id, for_update=True
    )
    if row is None:
        raise DeliveryNotFound(delivery_id)
    now = clock.now()
    row.status = DELIVERY.move(row.status, DeliveryStatus.PENDING, subject=row.id)
    row.next_attempt_at = now
    row.updated_at = now
    row.job_id = await jobs_service.enqueue(
        session,
        DELIVER_JOB,
        {"deliveryId": row.id, "manual": True},
        tenant_id=tenant_id,
        run_at=now,
        # No concurrency key: a manual redelivery is sent now even to a failing endpoint (a manual probe:
        # its success closes the breaker), neither held back nor counted against the endpoint's cap.
        lane=breaker.WEBHOOK_LANE,
    )
    return _delivery_schema(row)


async def send_test_now(
    db: Database, *, tenant: TenantContext, settings: Settings, delivery_id: str | None = None
) -> TestWebhookResponse:
    """Send a TEST event synchronously and report the receiver's answer. Record, commit, call, record:
    no transaction is open while the receiver is being called. `delivery_id`: the new delivery's id, when
    the caller must know it (the console links to it); a fresh one otherwise."""
    async with db.transaction() as session:
        url = await tenants_service.webhook_endpoint(session, tenant_id=tenant.id)
        if not url:
            raise WebhookEndpointNotSet("no webhookEndpoint is configured; set one with PATCH /config")
        now = clock.now()
        event_id, delivery_id = new_id("Event"), delivery_id or new_id("Webhook")
        await repository.insert_event(
            session,
            {"id": event_id, "tenant_id": tenant.id, "type": types.TEST, "data": {}, "created_at": now},
        )
        await repository.insert_delivery(
            session,
            {
                "id": delivery_id,
                "tenant_id": tenant.id,
                "event_id": event_id,
                "event_type": types.TEST,
                "url": url,
                "status": DeliveryStatus.PENDING,
                "retryable": False,
                "job_id": None,
                "attempt_count": 0,
                "next_attempt_at": None,
                "last_response_status": None,
                "last_error": None,
                "first_attempt_at": None,
                "delivered_at": None,
                "created_at": now,
                "updated_at": now,
            },
        )
    at = clock.now()
    body = delivery_mod.envelope(delivery_id=delivery_id, event_type=types.TEST, data={}, at=at)
    result = await delivery_mod.sign_and_send(
        db.read, settings=settings, tenant_id=tenant.id, environment=tenant.environment, url=url, body=body
    )
    async with db.transaction() as session:
        locked = await repository.get_delivery(session, delivery_id=delivery_id, for_update=True)
        event = await repository.get_event(session, event_id)
        assert locked is not None and event is not None
        await delivery_mod.record_attempt(
            session, delivery=locked, event=event, result=result, at=at, settings=settings
        )
        if not breaker.counts_as_failure(result.status):
            await breaker.record_success(session, tenant_id=tenant.id, url=url)  # a failing one recovered
    if result.status is None:
        raise WebhookDeliveryError(
            f"could not deliver the test webhook to {url}: {result.error}",
            details={"url": url, "deliveryId": delivery_id, "error": result.error},
        )
    if not result.ok:
        raise WebhookDeliveryError(
            f"the webhook endpoint {url} answered {result.status}",
            details={
                "url": url,
                "deliveryId": delivery_id,
                "response_status": result.status,
                "response_body": result.body,
            },
        )
    return TestWebhookResponse(url=url, response_status=result.status, response_body=result.body)


ReplyHandler = Callable[..., Awaitable[None]]


def on_reply(event_type: str) -> Callable[[ReplyHandler], ReplyHandler]:
    """Register what to do with the tenant's answer to a webhook of `event_type` (e.g. the approval of an
    incoming payment): `handler(session, tenant_id=, data=, status=, body=, error=)` gets the event's tenant
    and payload and the answer (HTTP status and body, or the error when none came), and runs in the
    transaction that records the delivery attempt."""

    def register(handler: ReplyHandler) -> ReplyHandler:
        async def hook(
            session: AsyncSession,
            delivery: WebhookDeliveryRow,
            event: EventRow,
            result: delivery_mod.AttemptResult,
        ) -> None:
            await handler(
                session,
                tenant_id=event.tenant_id,
                data=event.data or {},
                status=result.status,
                body=result.body,
                error=result.error,
            )

        delivery_mod.on_reply(event_type)(hook)
        return handler

    return register


async def sandbox_faults(session: AsyncSession, *, tenant_id: str) -> SandboxWebhookFaults:
    """The sandbox tenant's webhook delivery faults (all off when never set)."""
    row = await repository.sandbox_faults(session, tenant_id=tenant_id)
    if row is None:
        return SandboxWebhookFaults()
    return SandboxWebhookFaults(duplicate=row.duplicate, delay_ms=row.delay_ms, reorder_ms=row.reorder_ms)


async def set_sandbox_faults(
    session: AsyncSession, *, tenant_id: str, duplicate: bool, delay_ms: int, reorder_ms: int
) -> SandboxWebhookFaults:
    """Set them (from the tenant's next delivery on; deliveries already held keep their hold)."""
    await repository.set_sandbox_faults(
        session,
        tenant_id=tenant_id,
        duplicate=duplicate,
        delay_ms=delay_ms,
        reorder_ms=reorder_ms,
        now=clock.real_now(),
    )
    return SandboxWebhookFaults(duplicate=duplicate, delay_ms=delay_ms, reorder_ms=reorder_ms)


# ---- the console's reads: a fixed number of statements whatever the number of rows ----------------------


def _attempt(row: WebhookAttemptRow) -> types.Attempt:
    return types.Attempt(
        id=row.id,
        attempted_at=row.attempted_at,
        response_status=row.response_status,
        latency_ms=row.latency_ms,
        response_body=row.response_body,
        error=row.error,
    )


def _delivery(row: WebhookDeliveryRow, attempts: Iterable[WebhookAttemptRow]) -> types.Delivery:
    return types.Delivery(
        id=row.id,
        event_id=row.event_id,
        event_type=row.event_type,
        url=row.url,
        status=row.status,
        attempt_count=row.attempt_count,
        next_attempt_at=row.next_attempt_at,
        last_response_status=row.last_response_status,
        last_error=row.last_error,
        delivered_at=row.delivered_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
        attempts=tuple(_attempt(a) for a in attempts),
    )


TIMELINE_EVENTS = 100  # the latest events of a resource a timeline shows


async def timeline_for_resource(
    session: AsyncSession, *, tenant_id: str, resource_id: str, latest: int = TIMELINE_EVENTS
) -> list[types.TimelineEvent]:
    """The tenant's `latest` events about one resource (an event's resource is its data's `id`: a
    transaction, a customer, an internal account...), oldest first, each with its webhook deliveries and
    their attempts. Three statements (events, deliveries, attempts), however many there are; a resource with
    more events (a customer's long life) shows its latest."""
    events = await repository.events_about(
        session, tenant_id=tenant_id, resource_id=resource_id, latest=latest
    )
    deliveries = await repository.deliveries_of_events(
        session, tenant_id=tenant_id, event_ids=[e.id for e in events]
    )
    attempts = await repository.attempts_of_deliveries(
        session, tenant_id=tenant_id, delivery_ids=[d.id for d in deliveries]
    )
    attempts_by_delivery: dict[str, list[WebhookAttemptRow]] = defaultdict(list)
    for attempt in attempts:
        attempts_by_delivery[attempt.delivery_id].append(attempt)
    deliveries_by_event: dict[str, list[types.Delivery]] = defaultdict(list)
    for delivery in deliveries:
        deliveries_by_event[delivery.event_id].append(_delivery(delivery, attempts_by_delivery[delivery.id]))
    return [
        types.TimelineEvent(
            id=e.id,
            type=e.type,
            created_at=e.created_at,
            data=e.data,
            deliveries=tuple(deliveries_by_event[e.id]),
        )
        for e in events
    ]


async def delivery_detail(
    session: AsyncSession, *, tenant_id: str, delivery_id: str, settings: Settings
) -> types.DeliveryDetail:
    """A delivery with its attempts and the request it makes: the envelope and the headers, signature
    included. Neither is stored, so both are rebuilt the way `delivery.deliver` builds them: the envelope
    from the event (its `timestamp` is the instant of the latest attempt, or of the next one when none was
    made: a real send stamps the tenant's clock at that moment, which a sandbox tenant's moved clock can
    shift), the `X-Svc-Signature` over those exact bytes with the tenant's signing key. ECDSA signatures
    are randomized, so it is a valid signature of the body (the receiver's check, with the tenant's
    webhookPublicKey from GET /config, accepts it), not the bytes that were sent; the key itself never
    leaves the process. Three statements (the delivery with its event, its attempts, the sealed key the
    first time this process signs for the tenant); DeliveryNotFound for another tenant's."""
    found = await repository.delivery_with_event(session, tenant_id=tenant_id, delivery_id=delivery_id)
    if found is None:
        raise DeliveryNotFound(delivery_id)
    row, event = found
    attempts = await repository.attempts_of(session, delivery_id=row.id)
    at = attempts[-1].attempted_at if attempts else (row.next_attempt_at or row.created_at)
    body = delivery_mod.envelope(delivery_id=row.id, event_type=event.type, data=event.data, at=at)
    key = await signing.signing_key(session, tenant_id=tenant_id, settings=settings)
    headers = {
        "Content-Type": "application/json",
        "User-Agent": delivery_mod.USER_AGENT,
        HEADER: signature_header(key, body),
    }
    return types.DeliveryDetail(
        delivery=_delivery(row, attempts), body=body.decode(), headers=headers, timestamp=at
    )


async def list_deliveries_page(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    status: str | None = None,
    url: str | None = None,
) -> PageResult[types.Delivery]:
    """A page of the tenant's deliveries (by id, newest first unless `params` says otherwise), filtered by
    status and endpoint URL, with the API's cursor and total (`list_deliveries`' page: two statements, the
    count and the page); attempts are left out (`delivery_detail` has them). An endpoint is named by its
    URL, as deliveries record it and `endpoint_health_summary` lists it."""
    stmt = repository.deliveries_query(
        tenant_id=tenant_id, status=status, event_type=None, created_after=None, created_before=None
    )
    if url is not None:
        stmt = stmt.where(WebhookDeliveryRow.url == url)
    page = await paginate(session, stmt, id_column=WebhookDeliveryRow.id, params=params)
    return PageResult(
        [_delivery(row, ()) for row in page.items], page.has_more, page.next_cursor, page.total_count
    )


HEALTH_SAMPLE = 1_000  # the latest deliveries a health summary counts the outcomes of
PENDING_COUNTED = 10_000  # past this many PENDING deliveries, a health summary says "at least"


async def endpoint_health_summary(
    session: AsyncSession, *, tenant_id: str, window: timedelta = timedelta(hours=24)
) -> list[types.EndpointHealth]:
    """Per endpoint URL (the configured one first, then every other one deliveries went to that failed at
    some point, has pending deliveries or had deliveries in the window): its breaker's state and next probe,
    the outcomes of the latest HEALTH_SAMPLE deliveries last updated within `window` (how many of them went
    to it, DELIVERED, FAILED), its PENDING deliveries now (counted up to PENDING_COUNTED in all), the latest
    success among them and the breaker's latest failure. Four statements, whose cost is bounded by those
    two numbers rather than by the traffic (a tenant sending 50,000 deliveries a day reads 1,000). (GET
    /webhooks/endpoints/health answers `endpoint_health`, without the outcomes.)"""
    since = clock.now() - window
    configured = await tenants_service.webhook_endpoint(session, tenant_id=tenant_id)
    breakers = {row.url: row for row in await repository.endpoints_of(session, tenant_id=tenant_id)}
    pending = await repository.pending_counts(session, tenant_id=tenant_id, cap=PENDING_COUNTED + 1)
    more_pending = sum(pending.values()) > PENDING_COUNTED
    outcomes = await repository.outcomes_since(
        session, tenant_id=tenant_id, since=since, latest=HEALTH_SAMPLE
    )
    urls = [configured] if configured else []
    urls += sorted((set(breakers) | set(pending) | set(outcomes)) - set(urls))
    health = []
    for url in urls:
        breaker_row = breakers.get(url)
        sampled, delivered, failed, last_success = outcomes.get(url, (0, 0, 0, None))
        health.append(
            types.EndpointHealth(
                url=url,
                configured=url == configured,
                status=breaker_row.status if breaker_row else EndpointStatus.ACTIVE,
                consecutive_failures=breaker_row.consecutive_failures if breaker_row else 0,
                failing_since=breaker_row.failing_since if breaker_row else None,
                next_probe_at=breaker_row.next_probe_at if breaker_row else None,
                sampled=sampled,
                delivered=delivered,
                failed=failed,
                pending=pending.get(url, 0),
                pending_at_least=more_pending,
                last_success_at=last_success,
                last_failure_at=breaker_row.last_failure_at if breaker_row else None,
                last_error=breaker_row.last_error if breaker_row else None,
            )
        )
    return health


async def count_failed_deliveries(session: AsyncSession, *, tenant_id: str) -> int:
    """How many of the tenant's deliveries are FAILED (given up, or refused: POST
    /webhooks/deliveries/{id}/redeliver sends one again). One statement."""
    return await repository.count_with_status(session, tenant_id=tenant_id, status=DeliveryStatus.FAILED)
