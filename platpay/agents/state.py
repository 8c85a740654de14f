"""An agent action's approval (SPEC §3): created PENDING_APPROVAL when the policy asks for approval (or
APPROVED at once when it does not), then approved (APPROVED, or FAILED when executing it is no longer
possible: a quote expired, a limit now exceeded), rejected (REJECTED), or left to expire (FAILED)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class ActionStatus(StrEnum):
    PENDING_APPROVAL = "PENDING_APPROVAL"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    FAILED = "FAILED"


class ActionType(StrEnum):
    EXECUTE_QUOTE = "EXECUTE_QUOTE"
    TRANSFER_OUT = "TRANSFER_OUT"
    TRANSFER_IN = "TRANSFER_IN"


_S = ActionStatus

ACTION = StateMachine(
    "agent action",
    ActionStatus,
    {_S.PENDING_APPROVAL: {_S.APPROVED, _S.REJECTED, _S.FAILED}},
    initial={_S.PENDING_APPROVAL, _S.APPROVED},
)
