"""Webhook event types (INTERFACE-FACTS §5.2, with SPEC's names where they differ) and their retry rules.

Each domain declares the types it emits in its `domain.py` (`Domain.event_types`); discovery
(`platpay.domains.load`) registers them here, and `events.service.emit` refuses a type nobody declared.
"""

from __future__ import annotations

from collections.abc import Iterable

TEST = "TEST"
INCOMING_PAYMENT_PENDING = "INCOMING_PAYMENT.PENDING"

# No retry for these: the test ping, and the incoming-payment approval request (its reply *is* the answer).
NOT_RETRIED = frozenset({TEST, INCOMING_PAYMENT_PENDING})

_KNOWN: set[str] = {TEST}


def register(types: Iterable[str]) -> None:
    _KNOWN.update(types)


def is_known(type: str) -> bool:
    return type in _KNOWN
