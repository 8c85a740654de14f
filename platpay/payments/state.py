"""The state machines of payments: a transaction's status (one lifecycle per direction) and an incoming UMA
payment's approval sub-state. Every status change goes through `payments.service.move` (which checks
OUTGOING / INCOMING); every approval step through `APPROVAL.fire` (payments/incoming/service.py)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class TransactionStatus(StrEnum):
    """The statuses platpay gives a transaction. The API's enum (schemas.TransactionStatus) also lists
    CREATED, REJECTED and REFUNDED, reference values no platpay flow sets: a refund is `refund.status`."""

    PENDING = "PENDING"
    PROCESSING = "PROCESSING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"


_T = TransactionStatus

# INTERFACE-FACTS §8. A quote's transaction and a transfer-out: PENDING at creation (or execution),
# PROCESSING once the rail has it, then COMPLETED or FAILED; an unexecuted quote EXPIRED; failing at once
# (sandbox 002/003, a funding mismatch) PENDING -> FAILED; a bank return COMPLETED -> FAILED.
OUTGOING = StateMachine(
    "outgoing transaction",
    TransactionStatus,
    {
        _T.PENDING: {_T.PROCESSING, _T.FAILED, _T.EXPIRED},
        _T.PROCESSING: {_T.COMPLETED, _T.FAILED},
        _T.COMPLETED: {_T.FAILED},  # the bank returned the payout (sandbox 005)
    },
    initial={_T.PENDING},
)

# Incoming payments (transfer-in, UMA) go PENDING -> COMPLETED | FAILED, with no PROCESSING step; the
# receiving side of a payment between two parties of one platform is created COMPLETED and stays so.
INCOMING = StateMachine(
    "incoming transaction",
    TransactionStatus,
    {_T.PENDING: {_T.COMPLETED, _T.FAILED}},
    initial={_T.PENDING, _T.COMPLETED},
)


class RefundStatus(StrEnum):
    """Where the refund of a returned incoming payment to its sender stands (transactions.refund["status"])."""

    PENDING = "PENDING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"


REFUND = StateMachine(
    "refund",
    RefundStatus,
    {RefundStatus.PENDING: {RefundStatus.COMPLETED, RefundStatus.FAILED}},
    initial={RefundStatus.PENDING},
)


class TransactionType(StrEnum):
    """A transaction's direction (transactions.type): its lifecycle is OUTGOING's or INCOMING's."""

    OUTGOING = "OUTGOING"
    INCOMING = "INCOMING"


class TransactionKind(StrEnum):
    """Which flow created a transaction (transactions.kind): a closed set, no machine."""

    TRANSFER_OUT = "TRANSFER_OUT"
    TRANSFER_IN = "TRANSFER_IN"
    QUOTE = "QUOTE"  # an executed quote's outgoing payment
    UMA_INCOMING = "UMA_INCOMING"  # an incoming UMA payment from another VASP
    INTERNAL_INCOMING = "INTERNAL_INCOMING"  # the receiving side of a payment between two of the platform's


def lifecycle(direction: str) -> StateMachine[TransactionStatus]:
    """The machine of a transaction's `type` (OUTGOING or INCOMING)."""
    return OUTGOING if direction == TransactionType.OUTGOING else INCOMING


class ApprovalState(StrEnum):
    """Where an incoming UMA payment's approval by the platform stands (transactions.approval_state)."""

    # INCOMING_PAYMENT.PENDING is on its way; the platform has not answered
    AWAITING_REPLY = "AWAITING_REPLY"
    # 202 (or no webhook endpoint): the platform decides through the API before approval_deadline
    AWAITING_DECISION = "AWAITING_DECISION"
    # approved; the money is on its way (a $pending.long sender) or already credited
    APPROVED = "APPROVED"
    DONE = "DONE"  # COMPLETED or FAILED


class ApprovalTrigger(StrEnum):
    """What moves an approval: the platform's reply or API call, the deadline, the money arriving."""

    DEFER = "DEFER"  # the webhook answered 202
    APPROVE = "APPROVE"
    REJECT = "REJECT"
    FAIL = "FAIL"  # a reply that cannot approve (422, an error, no answer), or the sender failed compliance
    TIME_OUT = "TIME_OUT"
    ARRIVE = "ARRIVE"


_A, _On = ApprovalState, ApprovalTrigger

APPROVAL = StateMachine(
    "incoming payment approval",
    ApprovalState,
    triggers={
        (_A.AWAITING_REPLY, _On.DEFER): _A.AWAITING_DECISION,
        (_A.AWAITING_REPLY, _On.APPROVE): _A.APPROVED,
        (_A.AWAITING_DECISION, _On.APPROVE): _A.APPROVED,
        (_A.AWAITING_REPLY, _On.REJECT): _A.DONE,
        (_A.AWAITING_DECISION, _On.REJECT): _A.DONE,
        (_A.AWAITING_REPLY, _On.FAIL): _A.DONE,
        (_A.AWAITING_DECISION, _On.FAIL): _A.DONE,
        (_A.AWAITING_DECISION, _On.TIME_OUT): _A.DONE,
        (_A.APPROVED, _On.ARRIVE): _A.DONE,
    },
    initial={_A.AWAITING_REPLY, _A.AWAITING_DECISION},
)
AWAITING = frozenset({ApprovalState.AWAITING_REPLY, ApprovalState.AWAITING_DECISION})
