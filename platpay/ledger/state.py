"""The closed sets of the ledger: a hold's status (its state machine, kit/states.py), a posting's bucket and a
ledger account's kind.

A hold is OPEN while anything of it remains; each capture or release takes from it (OPEN -> OPEN) until
nothing does (CLOSED, terminal).
"""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class HoldStatus(StrEnum):
    OPEN = "OPEN"
    CLOSED = "CLOSED"


HOLD = StateMachine(
    "ledger hold",
    HoldStatus,
    {HoldStatus.OPEN: {HoldStatus.OPEN, HoldStatus.CLOSED}},
    initial={HoldStatus.OPEN},
)


class Bucket(StrEnum):
    """Which of an account's two balances a posting moves."""

    AVAILABLE = "AVAILABLE"
    HELD = "HELD"


class LedgerAccountKind(StrEnum):
    INTERNAL = "INTERNAL"  # a customer's or platform's internal account (its id is the internal account's)
    CLEARING = "CLEARING"  # money on its way to or from a rail
    FX = "FX"
    FEES = "FEES"
    SANDBOX_FUNDING = "SANDBOX_FUNDING"
    PLATFORM_FEES = "PLATFORM_FEES"  # platform fees in flight (ledger/service.py)
    LOSS = "LOSS"  # the operator's losses: paid out with no customer's money behind it (ledger/service.py)
