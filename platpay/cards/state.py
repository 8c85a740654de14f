"""The state machines of cards (kit/states.py): a card's lifecycle and a card transaction's.

Card (SPEC §3, our names of INTERFACE-FACTS §9): PENDING_ISSUE → ACTIVE (provisioned) or CLOSED
(ISSUER_REJECTED); ACTIVE ⇄ FROZEN; ACTIVE | FROZEN → CLOSED (CLOSED_BY_PLATFORM), terminal. Every move goes
through `CARD.fire` with the trigger that caused it; a PATCH asking for a move the table lacks is answered
409 by the service before the machine is asked.

Card transaction (INTERFACE-FACTS §8, plus two states of ours a decisioning record needs): AUTHORIZED →
PARTIALLY_SETTLED → SETTLED → REFUNDED; EXCEPTION when the network settled but a pull from the funding
source failed; DECLINED for an authorization decisioning refused (kept with its reason); EXPIRED for an
authorization that expired (or was reconciled at close) with nothing cleared. A late presentment on an
EXPIRED (or EXCEPTION) authorization is force-posted. A single-message financial authorization (and a balance inquiry) starts SETTLED; a return
reversal takes a REFUNDED (or partly returned) transaction back to SETTLED, or to EXCEPTION when no source
covers it.
"""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class CardState(StrEnum):
    PENDING_ISSUE = "PENDING_ISSUE"
    ACTIVE = "ACTIVE"
    FROZEN = "FROZEN"
    CLOSED = "CLOSED"


class CardTrigger(StrEnum):
    PROVISIONED = "PROVISIONED"
    ISSUER_REJECTED = "ISSUER_REJECTED"
    FREEZE = "FREEZE"
    UNFREEZE = "UNFREEZE"
    CLOSE = "CLOSE"


_C, _On = CardState, CardTrigger

CARD = StateMachine(
    "card",
    CardState,
    triggers={
        (_C.PENDING_ISSUE, _On.PROVISIONED): _C.ACTIVE,
        (_C.PENDING_ISSUE, _On.ISSUER_REJECTED): _C.CLOSED,
        (_C.ACTIVE, _On.FREEZE): _C.FROZEN,
        (_C.FROZEN, _On.UNFREEZE): _C.ACTIVE,
        (_C.ACTIVE, _On.CLOSE): _C.CLOSED,
        (_C.FROZEN, _On.CLOSE): _C.CLOSED,
    },
    initial={_C.PENDING_ISSUE},
)

# What PATCH {state} asks for, by target: the trigger that moves a card there.
PATCH_TRIGGERS = {_C.FROZEN: _On.FREEZE, _C.ACTIVE: _On.UNFREEZE, _C.CLOSED: _On.CLOSE}


class CardTransactionStatus(StrEnum):
    AUTHORIZED = "AUTHORIZED"
    PARTIALLY_SETTLED = "PARTIALLY_SETTLED"
    SETTLED = "SETTLED"
    REFUNDED = "REFUNDED"
    EXCEPTION = "EXCEPTION"
    DECLINED = "DECLINED"
    EXPIRED = "EXPIRED"


_T = CardTransactionStatus

CARD_TRANSACTION = StateMachine(
    "card transaction",
    CardTransactionStatus,
    {
        _T.AUTHORIZED: {_T.PARTIALLY_SETTLED, _T.SETTLED, _T.EXCEPTION, _T.EXPIRED},
        _T.PARTIALLY_SETTLED: {_T.PARTIALLY_SETTLED, _T.SETTLED, _T.EXCEPTION},
        # a partial return keeps SETTLED; a return reversal no source covers is an EXCEPTION
        _T.SETTLED: {_T.SETTLED, _T.REFUNDED, _T.EXCEPTION},
        _T.REFUNDED: {_T.SETTLED, _T.EXCEPTION},  # a return reversal
        # late presentment (force-post) of an expired authorization, or a clearing after a failed pull
        _T.EXPIRED: {_T.SETTLED, _T.EXCEPTION},
        _T.EXCEPTION: {_T.SETTLED, _T.EXCEPTION},
    },
    initial={_T.AUTHORIZED, _T.DECLINED, _T.EXCEPTION, _T.SETTLED},
)


class CardRefundStatus(StrEnum):
    COMPLETED = "COMPLETED"
    REVERSED = "REVERSED"  # a RETURN_REVERSAL undid it


CARD_REFUND = StateMachine(
    "card refund",
    CardRefundStatus,
    {CardRefundStatus.COMPLETED: {CardRefundStatus.REVERSED}},
    initial={CardRefundStatus.COMPLETED},
)
# Where a clearing may arrive, and a return.
CLEARABLE = frozenset({_T.AUTHORIZED, _T.PARTIALLY_SETTLED, _T.EXPIRED, _T.EXCEPTION})
RETURNABLE = frozenset({_T.SETTLED})
