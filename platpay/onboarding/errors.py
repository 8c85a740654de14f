from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, PayloadTooLarge, ResourceNotFound


class VerificationNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "verification", "verificationId"


class BeneficialOwnerNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "beneficial owner", "beneficialOwnerId"


class DocumentNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "document", "documentId"


class DocumentHolderNotFound(ResourceNotFound):
    """A documentHolder that is neither a customer nor a beneficial owner of the tenant."""

    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "document holder", "documentHolder"


class DocumentUnderReview(Conflict):
    """The document was submitted with a verification that is still under review."""

    code = "CONFLICT"


class ContactNotVerified(Conflict):
    """A KYC link for a customer whose contactVerification has a channel not VERIFIED yet."""

    code = "CONFLICT"


class DocumentTooLarge(PayloadTooLarge):
    pass


class NotABusiness(InvalidInput):
    pass


class VerificationNotAwaitingReview(Conflict):
    """A person's decision of a verification that is not waiting for one (PENDING_MANUAL_REVIEW): decided
    already (by the provider, the sandbox's override or another decision), or never sent to a person."""

    code = "VERIFICATION_NOT_AWAITING_REVIEW"

    def __init__(self, verification_id: str, status: str) -> None:
        super().__init__(
            f"verification {verification_id} is {status}, not PENDING_MANUAL_REVIEW: nothing to decide",
            details={"verificationId": verification_id, "verificationStatus": status},
        )
