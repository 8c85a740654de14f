"""Onboarding's state machines (kit/states.py): a verification's status and a beneficial owner's KYC."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class VerificationStatus(StrEnum):
    """INTERFACE-FACTS §3.10. READY_FOR_VERIFICATION is the reference's too, but no platpay flow sets it:
    a verification with nothing missing goes to review at once (IN_PROGRESS)."""

    RESOLVE_ERRORS = "RESOLVE_ERRORS"
    IN_PROGRESS = "IN_PROGRESS"
    PENDING_MANUAL_REVIEW = "PENDING_MANUAL_REVIEW"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    READY_FOR_VERIFICATION = "READY_FOR_VERIFICATION"


_V = VerificationStatus

# RESOLVE_ERRORS while something is missing (it stays so, its errors updated, on every call until nothing
# is); IN_PROGRESS once submitted for review; the review approves, rejects or leaves it to a person.
# A verification of a customer already APPROVED or REJECTED is created in that state.
VERIFICATION = StateMachine(
    "verification",
    VerificationStatus,
    {
        _V.RESOLVE_ERRORS: {_V.RESOLVE_ERRORS, _V.IN_PROGRESS},
        _V.IN_PROGRESS: {_V.APPROVED, _V.REJECTED, _V.PENDING_MANUAL_REVIEW},
        _V.PENDING_MANUAL_REVIEW: {_V.APPROVED, _V.REJECTED},
    },
    initial={_V.RESOLVE_ERRORS, _V.IN_PROGRESS, _V.APPROVED, _V.REJECTED},
)
UNDER_REVIEW = frozenset({VerificationStatus.IN_PROGRESS, VerificationStatus.PENDING_MANUAL_REVIEW})


class OwnerKycStatus(StrEnum):
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


_O = OwnerKycStatus

# An owner is reviewed when added and again whenever their personal information changes (back to PENDING);
# a review that needs a person leaves them PENDING.
OWNER_KYC = StateMachine(
    "beneficial owner kyc",
    OwnerKycStatus,
    {
        _O.PENDING: {_O.PENDING, _O.APPROVED, _O.REJECTED},
        _O.APPROVED: {_O.PENDING},
        _O.REJECTED: {_O.PENDING},
    },
    initial={_O.PENDING},
)
