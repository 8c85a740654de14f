"""A quote's status (INTERFACE-FACTS §8), the machine every quote status change goes through."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class QuoteStatus(StrEnum):
    PENDING = "PENDING"  # created, executable until expiresAt
    PROCESSING = "PROCESSING"  # executed: the money is moving
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"  # never executed


_Q = QuoteStatus

QUOTE = StateMachine(
    "quote",
    QuoteStatus,
    {
        _Q.PENDING: {
            _Q.PROCESSING,
            _Q.EXPIRED,
            _Q.FAILED,
        },  # FAILED: a real-time funding that cannot be matched
        _Q.PROCESSING: {_Q.COMPLETED, _Q.FAILED},
        _Q.COMPLETED: {_Q.FAILED},  # the payout came back (sandbox 005)
    },
    initial={_Q.PENDING},
)
