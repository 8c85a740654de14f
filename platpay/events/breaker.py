"""One failing webhook endpoint is one unit: a circuit breaker per endpoint (one URL of one tenant).

Deliveries run in the job runner's `webhooks` lane, whose capacity settlement and every other state-
changing job never share, with the endpoint as their concurrency key: at most
`webhook_endpoint_max_in_flight` deliveries to one endpoint are in flight at once across every worker (a
manual redelivery has no key: sent at once, outside the count, see events/service.py), and
claims go round-robin across endpoints, so one endpoint's backlog never holds up another's first attempt.

While an endpoint answers, each delivery retries on its own schedule (`retry_delay`). After
`webhook_failing_after` failed attempts in a row (no answer, or any status but 2xx and 409), the endpoint
is FAILING: the lane holds its queued deliveries back (no claims, no attempts; `held_endpoints`), all but
one, the probe, which is tried at the endpoint's backoff interval (the retry delays: 5 s, 10 s, ... up to
30 min, with jitter). New deliveries to a failing endpoint wait with the rest. The first success, of the
probe or of any attempt still in flight, closes the breaker: every waiting delivery is due at once (those
that had a retry scheduled later too) and the backlog drains under the per-endpoint cap, instead of each
message waiting out its own backoff. Deliveries older than the retry horizon
(`webhook_retry_max_age_seconds`) are given up (FAILED) when a probe fails. Nothing is lost: delivery ids,
attempts and at-least-once delivery are unchanged; only the scheduling changed.

Decisions about the probe are made in transactions holding the endpoint's row lock, so two deliveries
never both become the probe, and one that finds no probe scheduled takes the role.

    state     event                              next      effect
    ACTIVE    failure, fewer than N in a row     ACTIVE    the delivery retries on its own schedule
    ACTIVE    failure, the Nth in a row          FAILING   the queue is held back; one probe at the backoff
    FAILING   the probe fails                    FAILING   the next probe later; stale deliveries given up
    FAILING   any success                        ACTIVE    every waiting delivery is due now
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.events import repository
from platpay.events.models import WebhookDeliveryRow, WebhookEndpointRow
from platpay.events.state import ENDPOINT, EndpointStatus
from platpay.jobs import service as jobs_service
from platpay.jobs.registry import Lane, lane
from platpay.jobs.runner import JobContext
from platpay.kit import clock


async def held_endpoints(session: AsyncSession, _now: datetime) -> dict[str, str | None]:
    """For the lane: the failing endpoints, each with its probe's job (the one delivery that may run)."""
    return await repository.failing_endpoints(session)


WEBHOOK_LANE = lane(
    Lane(
        "webhooks",
        concurrency=lambda settings: settings.webhook_concurrency,
        key_cap=lambda settings: settings.webhook_endpoint_max_in_flight,
        held=held_endpoints,
        chain=lambda settings: settings.webhook_batch_size,
    )
).name

_NAMESPACE = uuid.UUID("6f1d7f0e-4a43-4f8e-9a52-3c1f2b8e9d10")


def endpoint_id(tenant_id: str, url: str) -> str:
    """The endpoint's id, derived from what it is (no lookup on the path that emits events)."""
    name = f"{tenant_id} {url}"  # a tenant id holds no space
    return f"WebhookEndpoint:{uuid.uuid5(_NAMESPACE, name)}"


def retry_delay(attempt_count: int, settings: Settings) -> timedelta:
    """Exponential backoff with jitter: base, 2·base, 4·base … capped, each scaled by U(0.5, 1]. The
    delay before a delivery's next attempt, and before a failing endpoint's next probe."""
    raw = min(
        settings.webhook_retry_base_seconds * 2 ** max(attempt_count - 1, 0),
        settings.webhook_retry_max_interval_seconds,
    )
    return timedelta(seconds=raw * random.uniform(0.5, 1.0))


def counts_as_failure(status: int | None) -> bool:
    """An attempt that says the endpoint is not taking deliveries: no answer, or not 2xx / 409."""
    return status is None or not (200 <= status < 300 or status == 409)


async def admit(ctx: JobContext, *, delivery: WebhookDeliveryRow, manual: bool) -> bool:
    """Before sending to an endpoint read as FAILING: True to send now (the probe, when due, or a manual
    redelivery). Any other delivery goes back to the queue, where the lane holds it until the breaker
    closes; one that finds no probe scheduled becomes the probe."""
    if manual:
        return True
    key = endpoint_id(delivery.tenant_id, delivery.url)
    async with ctx.db.transaction() as session:
        endpoint = await repository.get_endpoint(session, endpoint_id=key, for_update=True)
        if endpoint is None or endpoint.status != EndpointStatus.FAILING:
            return True
        now = clock.real_now()
        if endpoint.probe_job_id not in (None, ctx.job_id):
            await ctx.reschedule_in(session, reason="the endpoint is failing; waiting for its probe")
            return False
        endpoint.probe_job_id = ctx.job_id
        endpoint.updated_at = now
        if endpoint.next_probe_at is None or endpoint.next_probe_at <= now:
            return True  # the probe
        await ctx.reschedule_in(session, run_at=endpoint.next_probe_at, reason="the endpoint's next probe")
        return False


@dataclass(frozen=True)
class Attempted:
    """What one attempt told about the endpoint, for `after_attempt`."""

    delivery: WebhookDeliveryRow
    failed: bool  # counts against the endpoint (counts_as_failure)
    error: str | None  # what went wrong, for the endpoint's record
    retry_at: datetime | None  # the delivery's own next attempt, as the per-delivery policy decided


async def after_attempt(
    session: AsyncSession, ctx: JobContext, attempted: Attempted, *, settings: Settings
) -> None:
    """In the transaction recording the attempt: move the endpoint's breaker and decide when this job runs
    again (its own retry, the probe's time, or not at all)."""
    delivery = attempted.delivery
    if not attempted.failed:
        await record_success(session, tenant_id=delivery.tenant_id, url=delivery.url)
        _retry(ctx, attempted)
        return
    now = clock.real_now()
    endpoint = await repository.lock_endpoint(
        session,
        endpoint_id=endpoint_id(delivery.tenant_id, delivery.url),
        tenant_id=delivery.tenant_id,
        url=delivery.url,
        now=now,
    )
    endpoint.consecutive_failures += 1
    endpoint.last_failure_at = now
    endpoint.last_error = attempted.error
    endpoint.updated_at = now
    if endpoint.status == EndpointStatus.ACTIVE:
        if endpoint.consecutive_failures < settings.webhook_failing_after:
            _retry(ctx, attempted)
            return
        endpoint.status = ENDPOINT.move(endpoint.status, EndpointStatus.FAILING, subject=endpoint.id)
        endpoint.failing_since = now
        endpoint.probe_round = 0
        await _schedule_probe(session, ctx, endpoint, attempted, settings=settings)
    elif endpoint.probe_job_id == ctx.job_id:  # the probe failed
        await _give_up_stale(session, endpoint, sparing=delivery.id, settings=settings)
        await _schedule_probe(session, ctx, endpoint, attempted, settings=settings)
    else:  # an attempt that was in flight when the breaker opened (or a manual one): it waits with the rest
        _retry(ctx, attempted)


async def record_success(session: AsyncSession, *, tenant_id: str, url: str) -> None:
    """The endpoint answered: its failure count back to zero and, if it was failing, the breaker closed
    and its whole backlog due now. Costs nothing for an endpoint without failures."""
    key = endpoint_id(tenant_id, url)
    if await repository.clear_endpoint_failures(session, endpoint_id=key, now=clock.real_now()):
        await jobs_service.hasten(session, lane=WEBHOOK_LANE, key=key)


def _retry(ctx: JobContext, attempted: Attempted) -> None:
    delivery = attempted.delivery
    if attempted.retry_at is not None:
        ctx.retry_at(
            attempted.retry_at, reason=attempted.error or f"answered {delivery.last_response_status}"
        )


async def _schedule_probe(
    session: AsyncSession,
    ctx: JobContext,
    endpoint: WebhookEndpointRow,
    attempted: Attempted,
    *,
    settings: Settings,
) -> None:
    """The endpoint's next probe, at its backoff interval: this delivery if it is to be tried again,
    else the oldest waiting one (none: the next delivery to arrive becomes the probe)."""
    endpoint.probe_round += 1
    endpoint.next_probe_at = clock.real_now() + retry_delay(endpoint.probe_round, settings)
    if attempted.retry_at is not None:
        endpoint.probe_job_id = ctx.job_id
        attempted.delivery.next_attempt_at = endpoint.next_probe_at
        ctx.retry_at(
            endpoint.next_probe_at, reason="the endpoint is failing: this delivery is its next probe"
        )
    else:
        endpoint.probe_job_id = await jobs_service.reschedule_oldest(
            session, lane=WEBHOOK_LANE, key=endpoint.id, run_at=endpoint.next_probe_at
        )


async def _give_up_stale(
    session: AsyncSession, endpoint: WebhookEndpointRow, *, sparing: str, settings: Settings
) -> None:
    """Deliveries waiting past the retry horizon are given up (`sparing`: the probe's own, which its
    attempt's record already decided)."""
    now = clock.real_now()
    horizon = now - timedelta(seconds=settings.webhook_retry_max_age_seconds)
    job_ids = await repository.give_up_stale(
        session,
        tenant_id=endpoint.tenant_id,
        url=endpoint.url,
        created_before=horizon,
        sparing=sparing,
        now=now,
    )
    await jobs_service.give_up(session, job_ids=job_ids)


async def hand_over_probe(ctx: JobContext, *, delivery: WebhookDeliveryRow) -> None:
    """This job was its endpoint's probe but has nothing to send any more (its delivery was redelivered
    or settled meanwhile): the oldest waiting delivery probes in its place, at the same time."""
    key = endpoint_id(delivery.tenant_id, delivery.url)
    async with ctx.transaction() as session:
        endpoint = await repository.get_endpoint(session, endpoint_id=key, for_update=True)
        if (
            endpoint is None
            or endpoint.status != EndpointStatus.FAILING
            or endpoint.probe_job_id != ctx.job_id
        ):
            return
        endpoint.probe_job_id = await jobs_service.reschedule_oldest(
            session, lane=WEBHOOK_LANE, key=key, run_at=endpoint.next_probe_at or clock.real_now()
        )
        endpoint.updated_at = clock.real_now()
