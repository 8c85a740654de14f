"""The state machines of events: a webhook delivery's status (events/delivery.py) and a webhook endpoint's
circuit breaker (events/breaker.py)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class DeliveryStatus(StrEnum):
    PENDING = "PENDING"  # to be sent: its job is queued, or retries on its schedule
    DELIVERED = "DELIVERED"  # the receiver answered 2xx
    FAILED = "FAILED"  # not to be retried (a 409, a type never retried) or given up past the retry horizon


_D = DeliveryStatus

# No delivery is ever final: POST /webhooks/deliveries/{id}/redeliver sends any delivery again, a PENDING
# one too (superseding its scheduled retry).
DELIVERY = StateMachine(
    "webhook delivery",
    DeliveryStatus,
    {
        _D.PENDING: {_D.DELIVERED, _D.FAILED, _D.PENDING},
        _D.DELIVERED: {_D.PENDING},
        _D.FAILED: {_D.PENDING},
    },
    initial={_D.PENDING},
)


class EndpointStatus(StrEnum):
    ACTIVE = "ACTIVE"  # deliveries go out, each on its own retry schedule
    FAILING = "FAILING"  # the breaker is open: its deliveries wait while one probe is tried


# events/breaker.py: the Nth failure in a row opens the breaker, any success closes it.
ENDPOINT = StateMachine(
    "webhook endpoint",
    EndpointStatus,
    {EndpointStatus.ACTIVE: {EndpointStatus.FAILING}, EndpointStatus.FAILING: {EndpointStatus.ACTIVE}},
    initial={EndpointStatus.ACTIVE},
)
