"""The state machines of customers: a bulk customer import job's status (customers/bulk/service.py) and a
customer's KYC (KYB) status (customers/service.py, driven by onboarding's verifications)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class BulkImportStatus(StrEnum):
    PENDING = "PENDING"  # stored and queued; no chunk has committed yet
    PROCESSING = "PROCESSING"  # chunks are being imported from the checkpoint
    COMPLETED = "COMPLETED"  # every row imported or refused (BULK_UPLOAD.COMPLETED)
    FAILED = "FAILED"  # the file could not be read, or a chunk kept failing (BULK_UPLOAD.FAILED)


_B = BulkImportStatus

BULK_IMPORT = StateMachine(
    "bulk customer import",
    BulkImportStatus,
    {
        # a job whose first chunk keeps failing is given up while still PENDING (its runs rolled back)
        _B.PENDING: {_B.PROCESSING, _B.FAILED},
        _B.PROCESSING: {_B.PROCESSING, _B.COMPLETED, _B.FAILED},  # every chunk's run moves it to PROCESSING
    },
    initial={_B.PENDING},
)


# A customer's KYC (KYB for businesses) lifecycle: INTERFACE-FACTS §8 with SPEC §3. UNVERIFIED (nothing submitted
# yet: new businesses on unregulated platforms) -> PENDING (submitted for review; entering PENDING again
# re-emits CUSTOMER.KYC_PENDING) -> APPROVED | REJECTED. SPEC lets any state enter PENDING (a resubmission, a
# manual review requested after a rejection); APPROVED and REJECTED are reached only from PENDING, or from
# HOLD. HOLD (the August reference: "placed on hold and may be required to update or provide more
# information") is entered from APPROVED or PENDING (the sandbox's override; a provider's hold), moves no
# money (customers.service gates it like REJECTED) and is left by a resubmission (PENDING) or a decision.
# A sandbox customer may also start REJECTED (an individual whose fullName ends in 002, customers/sandbox.py).


class KycStatus(StrEnum):
    UNVERIFIED = "UNVERIFIED"
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"
    HOLD = "HOLD"


_K = KycStatus

KYC = StateMachine(
    "customer kyc",
    KycStatus,
    {
        _K.UNVERIFIED: {_K.PENDING},
        _K.PENDING: {_K.PENDING, _K.APPROVED, _K.REJECTED, _K.HOLD},
        _K.APPROVED: {_K.PENDING, _K.HOLD},
        _K.REJECTED: {_K.PENDING},
        _K.HOLD: {_K.PENDING, _K.APPROVED, _K.REJECTED},
    },
    initial={_K.UNVERIFIED, _K.PENDING, _K.APPROVED, _K.REJECTED},
)
# The statuses that move no money (403 USER_NOT_READY): failed KYC, and a hold until it is lifted.
BLOCKED = frozenset({KycStatus.REJECTED, KycStatus.HOLD})


def initial_status(
    *, is_regulated: bool, customer_type: str, sandbox_outcome: KycStatus | None = None
) -> KycStatus:
    """Where a new customer starts (SPEC §3 Customer kycStatus; INTERFACE-FACTS §8 for businesses).
    `sandbox_outcome`: the status a sandbox magic value asks for (customers/sandbox.py: an individual's
    fullName suffix), which wins."""
    if sandbox_outcome is not None:
        return sandbox_outcome
    if is_regulated:
        return KycStatus.APPROVED
    return KycStatus.UNVERIFIED if customer_type == "BUSINESS" else KycStatus.PENDING


class ContactChannelStatus(StrEnum):
    """A contact channel's verification (customers.contact_verified; the API's contactVerification)."""

    PENDING = "PENDING"
    VERIFIED = "VERIFIED"
