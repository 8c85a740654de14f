"""Webhook event types (INTERFACE-FACTS §5.2, with SPEC's names where they differ) and their retry rules.

Each domain declares the types it emits in its `domain.py` (`Domain.event_types`); discovery
(`platpay.domains.load`) registers them here, and `events.service.emit` refuses a type nobody declared.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

TEST = "TEST"
INCOMING_PAYMENT_PENDING = "INCOMING_PAYMENT.PENDING"

# No retry for these: the test ping, and the incoming-payment approval request (its reply *is* the answer).
NOT_RETRIED = frozenset({TEST, INCOMING_PAYMENT_PENDING})

_KNOWN: set[str] = {TEST}


def register(types: Iterable[str]) -> None:
    _KNOWN.update(types)


def is_known(type: str) -> bool:
    return type in _KNOWN


# What the events domain's reads return to callers (the console's views): frozen dataclasses of plain values.


@dataclass(frozen=True, slots=True)
class Attempt:
    """One try at sending a delivery: the receiver's HTTP status (None when none came), how long it took,
    the start of its body (truncated) or the error (timeout, connection refused) when no answer came."""

    id: str
    attempted_at: datetime
    response_status: int | None
    latency_ms: int
    response_body: str | None
    error: str | None


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event sent to one endpoint URL (its id is the envelope's `id`), with its attempts, oldest first."""

    id: str
    event_id: str
    event_type: str
    url: str
    status: str  # DeliveryStatus
    attempt_count: int
    next_attempt_at: datetime | None
    last_response_status: int | None
    last_error: str | None
    delivered_at: datetime | None
    created_at: datetime
    updated_at: datetime
    attempts: tuple[Attempt, ...]


@dataclass(frozen=True, slots=True)
class TimelineEvent:
    """An outbox event about a resource: its type, time, payload and the deliveries of it."""

    id: str
    type: str
    created_at: datetime
    data: dict[str, Any]
    deliveries: tuple[Delivery, ...]


@dataclass(frozen=True, slots=True)
class DeliveryDetail:
    """A delivery with the request it makes: the envelope `body` (the exact bytes, as text) and the
    `headers`, signature included (see `events.service.delivery_detail` for what is recomputed)."""

    delivery: Delivery
    body: str
    headers: dict[str, str]
    timestamp: datetime  # the envelope's `timestamp`


@dataclass(frozen=True, slots=True)
class EndpointHealth:
    """One endpoint URL of a tenant: its circuit breaker (events/breaker.py) and the outcomes of its latest
    deliveries (events.service.endpoint_health_summary)."""

    url: str
    configured: bool  # the tenant's current webhookEndpoint
    status: str  # EndpointStatus: ACTIVE, or FAILING (the breaker is open)
    consecutive_failures: int
    failing_since: datetime | None
    next_probe_at: datetime | None  # when a FAILING endpoint's one probe goes out
    sampled: int  # of the latest deliveries updated within the window (HEALTH_SAMPLE at most), this URL's
    delivered: int  # of those, DELIVERED
    failed: int  # of those, FAILED
    pending: int  # PENDING now, whenever created (of the first PENDING_COUNTED counted)
    pending_at_least: bool  # the tenant has more PENDING deliveries than were counted
    last_success_at: datetime | None  # the latest delivered_at within the window
    last_failure_at: datetime | None  # the breaker's record of the latest failed attempt, ever
    last_error: str | None
