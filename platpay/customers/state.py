"""The state machines of customers: a bulk customer import job's status (customers/bulk.py) and a
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
# manual review requested after a rejection); APPROVED and REJECTED are reached only from PENDING.


class KycStatus(StrEnum):
    UNVERIFIED = "UNVERIFIED"
    PENDING = "PENDING"
    APPROVED = "APPROVED"
    REJECTED = "REJECTED"


_K = KycStatus

KYC = StateMachine(
    "customer kyc",
    KycStatus,
    {
        _K.UNVERIFIED: {_K.PENDING},
        _K.PENDING: {_K.PENDING, _K.APPROVED, _K.REJECTED},
        _K.APPROVED: {_K.PENDING},
        _K.REJECTED: {_K.PENDING},
    },
    initial={_K.UNVERIFIED, _K.PENDING, _K.APPROVED},
)


def initial_status(*, is_regulated: bool, customer_type: str) -> KycStatus:
    """Where a new customer starts (SPEC §3 Customer kycStatus; INTERFACE-FACTS §8 for businesses)."""
    if is_regulated:
        return KycStatus.APPROVED
    return KycStatus.UNVERIFIED if customer_type == "BUSINESS" else KycStatus.PENDING
