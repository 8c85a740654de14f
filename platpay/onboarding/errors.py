from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge


class VerificationNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class BeneficialOwnerNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class DocumentNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class DocumentHolderNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


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
