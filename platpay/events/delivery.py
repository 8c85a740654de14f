"""Signed webhook delivery: the `webhook.deliver` job, the HTTP send, retry policy and reply hooks.

Delivery is at-least-once: a worker that dies after the receiver answered but before recording it sends
again with the same envelope `id`, which receivers dedupe on. Nothing here holds a database transaction
while waiting on the network. Deliveries run in the runner's `webhooks` lane, capped per endpoint, and a
failing endpoint is handled as one unit (platpay.events.breaker).

An attempt is bounded twice: connecting by `webhook_connect_timeout_seconds` (a host that drops packets
costs seconds, not the whole timeout), the whole exchange by `webhook_timeout_seconds`.
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db import json_text
from platpay.db.unit_of_work import LeanFirst, LeanSession, Raced
from platpay.events import breaker, repository, signing
from platpay.events.breaker import retry_delay
from platpay.events.models import EventRow, WebhookAttemptRow, WebhookDeliveryRow, WebhookSandboxFaultsRow
from platpay.events.sender import ConnectTimeout, InvalidAnswer, Sender
from platpay.events.state import DELIVERY, DeliveryStatus, EndpointStatus
from platpay.jobs.registry import batch_handler, handler
from platpay.jobs.runner import JobContext, RetryLater, finish_together, reschedule_together
from platpay.kit import clock
from platpay.kit.crypto.webhook_signing import HEADER, signature_header
from platpay.kit.ids import new_id
from platpay.kit.urls import resolves_to_public
from platpay.metrics import WEBHOOK_ATTEMPTS
from platpay.tenants import service as tenants_service
from platpay.tenants.context import SANDBOX

USER_AGENT = "platpay-webhooks/1"
DELIVER_JOB = "webhook.deliver"

__all__ = ["retry_delay"]  # the delivery retry policy, with the breaker's probes


@dataclass(frozen=True)
class AttemptResult:
    status: int | None
    body: str | None
    latency_ms: int
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


ReplyHook = Callable[[AsyncSession, WebhookDeliveryRow, EventRow, AttemptResult], Awaitable[None]]
_reply_hooks: dict[str, ReplyHook] = {}


def on_reply(event_type: str) -> Callable[[ReplyHook], ReplyHook]:
    """Register what to do with the receiver's answer to `event_type` (e.g. incoming-payment approval).
    The hook runs in the transaction that records the attempt."""

    def register(hook: ReplyHook) -> ReplyHook:
        _reply_hooks[event_type] = hook
        return hook

    return register


_senders: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Sender] = weakref.WeakKeyDictionary()


def _sender() -> Sender:
    """The event loop's sender: its connections are kept alive per endpoint (never through a proxy, never
    following a redirect)."""
    loop = asyncio.get_running_loop()
    sender = _senders.get(loop)
    if sender is None:
        sender = _senders[loop] = Sender()
    return sender


async def close_clients() -> None:
    loop = asyncio.get_running_loop()
    sender = _senders.pop(loop, None)
    if sender is not None:
        await sender.close()


def envelope(*, delivery_id: str, event_type: str, data: Any, at: datetime) -> bytes:
    """A delivery's body: compact UTF-8 JSON (db/json_text.py; signed over these bytes, per delivery)."""
    return json_text.compact(
        {"id": delivery_id, "type": event_type, "timestamp": clock.isoformat(at), "data": data}
    )


async def send(
    url: str, body: bytes, headers: dict[str, str], *, timeout: float, max_chars: int, connect_timeout: float
) -> AttemptResult:
    started = clock.monotonic()
    try:
        async with asyncio.timeout(timeout):  # the whole exchange, connecting included
            answer = await _sender().post(
                url,
                body,
                headers,
                connect_timeout=min(connect_timeout, timeout),
                body_limit=max_chars * 4,  # UTF-8: at most 4 bytes a character
            )
        text = answer.body.decode("utf-8", errors="replace")[:max_chars]
        return AttemptResult(answer.status, text, int((clock.monotonic() - started) * 1000), None)
    except ConnectTimeout as exc:
        error = str(exc)
    except TimeoutError:
        error = f"timed out after {timeout:g}s"
    except (OSError, InvalidAnswer, ValueError) as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    return AttemptResult(None, None, int((clock.monotonic() - started) * 1000), error)


async def sign_and_send(
    session_factory: Callable[[], Any],
    *,
    settings: Settings,
    tenant_id: str,
    environment: str,
    url: str,
    body: bytes,
) -> AttemptResult:
    """Check the SSRF guard, sign with the tenant's key, POST."""
    if settings.production_webhooks_require_public_https and environment == "production":
        parts = urlsplit(url)
        if parts.scheme != "https" or not await resolves_to_public(parts.hostname or ""):
            return AttemptResult(
                None, None, 0, "blocked: production webhooks must use https on a public address"
            )
    async with session_factory() as session:
        key = await signing.signing_key(session, tenant_id=tenant_id, settings=settings)
    return await _sign_and_post(key, url, body, settings)


def _blocked(settings: Settings, environment: str, url: str) -> bool:
    return settings.production_webhooks_require_public_https and environment == "production"


async def _sign_and_post(key: Any, url: str, body: bytes, settings: Settings) -> AttemptResult:
    """One delivery's own signature (over its own body and timestamp), then the POST."""
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        HEADER: signature_header(key, body),
    }
    return await send(
        url,
        body,
        headers,
        timeout=settings.webhook_timeout_seconds,
        max_chars=settings.webhook_response_max_chars,
        connect_timeout=settings.webhook_connect_timeout_seconds,
    )


def should_retry(delivery: WebhookDeliveryRow, result: AttemptResult) -> bool:
    if result.ok or not delivery.retryable:
        return False
    return result.status != 409  # the receiver already processed this id


async def record_attempt(
    session: AsyncSession,
    *,
    delivery: WebhookDeliveryRow,
    event: EventRow,
    result: AttemptResult,
    at: datetime,
    settings: Settings,
    tenant_clock: clock.TenantClock | None = None,
) -> datetime | None:
    """Store the attempt and move the delivery on; returns when to try again, or None. The event's reply
    hook (what the answer means for the business: an approval's deadline) runs on `tenant_clock`."""
    session.add(
        WebhookAttemptRow(
            id=new_id(repository.ATTEMPT_ID_PREFIX),
            delivery_id=delivery.id,
            tenant_id=delivery.tenant_id,
            attempted_at=at,
            response_status=result.status,
            latency_ms=result.latency_ms,
            response_body=result.body,
            error=result.error,
        )
    )
    now = clock.now()
    delivery.attempt_count += 1
    delivery.first_attempt_at = delivery.first_attempt_at or at
    delivery.last_response_status = result.status
    delivery.last_error = result.error
    delivery.updated_at = now
    next_at: datetime | None = None
    if result.ok:
        delivery.status = DELIVERY.move(delivery.status, DeliveryStatus.DELIVERED, subject=delivery.id)
        delivery.delivered_at = now
        outcome = "delivered"
    elif should_retry(delivery, result):
        candidate = now + retry_delay(delivery.attempt_count, settings)
        if candidate - delivery.first_attempt_at <= timedelta(seconds=settings.webhook_retry_max_age_seconds):
            next_at = candidate
            outcome = "retry"
        else:
            delivery.status = DELIVERY.move(delivery.status, DeliveryStatus.FAILED, subject=delivery.id)
            outcome = "gave_up"
    else:
        delivery.status = DELIVERY.move(delivery.status, DeliveryStatus.FAILED, subject=delivery.id)
        outcome = "failed"
    delivery.next_attempt_at = next_at
    if next_at is None:
        delivery.job_id = None
    WEBHOOK_ATTEMPTS.labels(outcome=outcome).inc()
    hook = _reply_hooks.get(event.type)
    if hook is not None:
        token = clock.use(tenant_clock)
        try:
            await hook(session, delivery, event, result)
        finally:
            clock.restore(token)
    return next_at


@handler(DELIVER_JOB)
async def deliver(ctx: JobContext) -> None:
    delivery_id = ctx.payload["deliveryId"]
    async with ctx.db.read() as session:
        delivery = await repository.get_delivery(session, delivery_id=delivery_id)
        if delivery is None:
            return
        event = await repository.get_event(session, delivery.event_id)
        environment = await tenants_service.environment_of(session, tenant_id=delivery.tenant_id)
        faults = (
            await repository.sandbox_faults(session, tenant_id=delivery.tenant_id)
            if environment == SANDBOX
            else None
        )
        status, probe_job_id = await repository.endpoint_state(
            session, endpoint_id=breaker.endpoint_id(delivery.tenant_id, delivery.url)
        ) or (EndpointStatus.ACTIVE, None)
    if event is None:
        return
    # superseded by a redelivery, or settled
    if delivery.status != DeliveryStatus.PENDING or delivery.job_id != ctx.job_id:
        if probe_job_id == ctx.job_id:
            await breaker.hand_over_probe(ctx, delivery=delivery)
        return
    failing = status == EndpointStatus.FAILING
    if failing and not await breaker.admit(ctx, delivery=delivery, manual=bool(ctx.payload.get("manual"))):
        return  # its endpoint is failing: it waits for the endpoint's probe
    if faults is not None and delivery.attempt_count == 0 and not ctx.payload.get("manual"):
        _hold(ctx, delivery, faults)
    at = clock.now()  # real time: this lane runs on it (jobs.runner), as its retry backoff does
    # the webhook's timestamp on its tenant's clock
    body = envelope(delivery_id=delivery.id, event_type=event.type, data=event.data, at=clock.now(ctx.clock))
    result = await sign_and_send(
        ctx.db.read,
        settings=ctx.settings,
        tenant_id=delivery.tenant_id,
        environment=environment or "",
        url=delivery.url,
        body=body,
    )
    if faults is not None and faults.duplicate and result.ok:  # the sandbox's fault: the same envelope again
        await sign_and_send(
            ctx.db.read,
            settings=ctx.settings,
            tenant_id=delivery.tenant_id,
            environment=environment or "",
            url=delivery.url,
            body=body,
        )
    await _record_one(ctx, delivery_id=delivery_id, event=event, result=result, at=at)


async def _record_one(
    ctx: JobContext, *, delivery_id: str, event: EventRow, result: AttemptResult, at: datetime
) -> None:
    """One attempt recorded, the endpoint's breaker moved and the job finished (or rescheduled), in one
    transaction."""
    async with ctx.transaction() as session:
        locked = await repository.get_delivery(session, delivery_id=delivery_id, for_update=True)
        if locked is None or locked.job_id != ctx.job_id or locked.status != DeliveryStatus.PENDING:
            return
        next_at = await record_attempt(
            session,
            delivery=locked,
            event=event,
            result=result,
            at=at,
            settings=ctx.settings,
            tenant_clock=ctx.clock,
        )
        attempted = breaker.Attempted(
            delivery=locked,
            failed=breaker.counts_as_failure(result.status),
            error=result.error or f"answered {result.status}",
            retry_at=next_at,
        )
        await breaker.after_attempt(session, ctx, attempted, settings=ctx.settings)


# A chain's successes are recorded at its end, and during it whenever this long has passed since they were
# last recorded: a long chain to a fast endpoint is recorded once (its claim, its read and its recording shared
# by all of it), a slow endpoint's deliveries show DELIVERED within about this long of being sent, and a worker
# that dies mid-chain leaves at most this long's worth of sent-but-unrecorded deliveries to be sent again.
RECORD_EVERY_SECONDS = 1.0


@batch_handler(DELIVER_JOB)
async def deliver_chain(contexts: list[JobContext]) -> None:
    """A chain of deliveries to one endpoint (the lane's `chain`: up to `webhook_batch_size` of them per
    in-flight slot): read together, each signed with its own timestamp and sent in turn over the endpoint's
    kept-alive connection, the successes recorded together, in one transaction at the chain's end and one each
    `RECORD_EVERY_SECONDS` before it (attempts, deliveries, one breaker update, the jobs finished). The first
    failure is recorded on its own (the breaker's per-attempt rules) and ends the chain: the deliveries not
    yet sent go back to the queue without an attempt, where the breaker's state decides when they run. What
    this leaves unfinished (an endpoint not ACTIVE, a sandbox's faults, a manual redelivery) the runner runs
    one by one (`deliver`)."""
    if any(ctx.payload.get("manual") for ctx in contexts):
        return
    first = contexts[0]
    async with first.db.read() as session:
        found = await repository.deliveries_with_events(
            session, delivery_ids=[ctx.payload["deliveryId"] for ctx in contexts]
        )
        if not found:
            return
        tenant_id, url = next(iter(found.values()))[0].tenant_id, next(iter(found.values()))[0].url
        if any(delivery.tenant_id != tenant_id or delivery.url != url for delivery, _ in found.values()):
            return  # (one key is one endpoint: never the case)
        environment = await tenants_service.environment_of(session, tenant_id=tenant_id) or ""
        faults = (
            await repository.sandbox_faults(session, tenant_id=tenant_id) if environment == SANDBOX else None
        )
        state = await repository.endpoint_state(session, endpoint_id=breaker.endpoint_id(tenant_id, url))
        key = await signing.signing_key(session, tenant_id=tenant_id, settings=first.settings)
    if state is not None and state[0] != EndpointStatus.ACTIVE:
        return  # failing: the breaker's rules, one by one
    if faults is not None and (faults.duplicate or faults.delay_ms or faults.reorder_ms):
        return
    if _blocked(first.settings, environment, url):
        return  # the SSRF guard, one by one
    sent: list[_Sent] = []
    settled: list[JobContext] = []  # superseded by a redelivery, or settled: nothing to send
    failed: _Sent | None = None
    rest: list[JobContext] = []

    async def record() -> None:
        """What was sent (and settled) so far, recorded in one transaction; the lists emptied."""
        together = [ctx for ctx, *_ in sent] + settled
        if together:
            await first.db.run(
                LeanFirst.same(
                    _record_successes, together=together, sent=list(sent), tenant_id=tenant_id, url=url
                )
            )
            for ctx in together:
                ctx.mark_finished()
        sent.clear()
        settled.clear()

    recorded_at = clock.monotonic()
    for index, ctx in enumerate(contexts):
        pair = found.get(ctx.payload["deliveryId"])
        if pair is None or pair[0].status != DeliveryStatus.PENDING or pair[0].job_id != ctx.job_id:
            settled.append(ctx)
            continue
        delivery, event = pair
        at = clock.now()
        body = envelope(
            delivery_id=delivery.id, event_type=event.type, data=event.data, at=clock.now(ctx.clock)
        )
        result = await _sign_and_post(key, url, body, ctx.settings)
        if not result.ok:
            failed = (ctx, delivery, event, result, at)
            rest = contexts[index + 1 :]
            break
        sent.append((ctx, delivery, event, result, at))
        if clock.monotonic() - recorded_at >= RECORD_EVERY_SECONDS:
            await record()
            recorded_at = clock.monotonic()
    await record()
    if failed is not None:  # after the successes that came before it: the breaker counts it last
        ctx, delivery, event, result, at = failed
        await _record_one(ctx, delivery_id=delivery.id, event=event, result=result, at=at)
    if rest:  # not sent: back to the queue, no attempt spent
        async with first.db.transaction() as session:
            await reschedule_together(
                session, rest, reason="not sent: an earlier delivery to its endpoint failed"
            )


_Sent = tuple[JobContext, WebhookDeliveryRow, EventRow, AttemptResult, datetime]


async def _record_successes(
    session: LeanSession, *, together: list[JobContext], sent: list[_Sent], tenant_id: str, url: str
) -> None:
    """A chain's jobs finished (those still leased), and the deliveries it sent, each answered 2xx, recorded
    DELIVERED with their attempts, in one transaction. Lean (a LeanTransaction): the deliveries' states read
    locked, each kind of write in one driver call; `Raced` where the ORM is needed, for the careful attempt
    in an ORM session (`record_attempt` per delivery): an event with a reply hook, an endpoint whose breaker
    had counted failures."""
    finished = await finish_together(session, together)
    current = [one for one in sent if one[0].job_id in finished]  # (a lost lease: another worker's now)
    ids = [delivery.id for _, delivery, *_ in current]
    if not isinstance(session, AsyncSession):
        if any(event.type in _reply_hooks for _, _, event, _, _ in current):
            raise Raced("a reply hook runs in an ORM session")
        states = await repository.delivery_states(session, delivery_ids=ids)
        attempts = [
            {
                "id": new_id(repository.ATTEMPT_ID_PREFIX),
                "delivery_id": delivery.id,
                "tenant_id": delivery.tenant_id,
                "attempted_at": at,
                "response_status": result.status,
                "latency_ms": result.latency_ms,
                "response_body": result.body,
                "error": result.error,
            }
            for ctx, delivery, _, result, at in current
            # not if it was redelivered meanwhile
            if states.get(delivery.id) == (ctx.job_id, DeliveryStatus.PENDING)
        ]
        await repository.record_delivered(session, attempts=attempts, now=clock.now())
        if states and await repository.clear_endpoint_failures(
            session, endpoint_id=breaker.endpoint_id(tenant_id, url), now=clock.real_now()
        ):
            raise Raced("the endpoint had failures: its backlog is hastened through the ORM")
        WEBHOOK_ATTEMPTS.labels(outcome="delivered").inc(len(attempts))
        return
    locked = await repository.lock_deliveries(session, delivery_ids=ids)
    for ctx, delivery, event, result, at in current:
        row = locked.get(delivery.id)
        if row is None or row.job_id != ctx.job_id or row.status != DeliveryStatus.PENDING:
            continue  # redelivered meanwhile
        await record_attempt(
            session,
            delivery=row,
            event=event,
            result=result,
            at=at,
            settings=ctx.settings,
            tenant_clock=ctx.clock,
        )
    if locked:  # one breaker update for the chain's successes
        await breaker.record_success(session, tenant_id=tenant_id, url=url)


def _hold(ctx: JobContext, delivery: WebhookDeliveryRow, faults: WebhookSandboxFaultsRow) -> None:
    """A sandbox's delay/reorder fault: a first attempt held back until its delivery's created_at plus the
    delay plus its own share of the reorder window (a stable function of its id), on the tenant's clock."""
    share = int.from_bytes(hashlib.sha256(delivery.id.encode()).digest()[:4], "big") % (faults.reorder_ms + 1)
    hold = timedelta(milliseconds=faults.delay_ms + share)
    if not hold:
        return
    tenant_now = clock.now(ctx.clock)
    until = delivery.created_at + hold
    if tenant_now < until:
        raise RetryLater(clock.real_now() + (until - tenant_now), "held back by the sandbox's webhook faults")
