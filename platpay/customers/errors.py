from __future__ import annotations

from platpay.errors import Conflict, Forbidden, Gone, InvalidInput, ResourceNotFound


class CustomerNotFound(ResourceNotFound):
    code = "USER_NOT_FOUND"
    resource, id_key = "customer", "customerId"


class UmaAddressOwnerNotFound(ResourceNotFound):
    """No customer of the tenant has this UMA address (a customer named by its address)."""

    code = "USER_NOT_FOUND"
    resource, id_key = "customer with UMA address", "umaAddress"


class CustomerDeleted(Gone):
    code = "CUSTOMER_DELETED"


class UmaAddressExists(Conflict):
    code = "UMA_ADDRESS_EXISTS"


class PlatformCustomerIdExists(Conflict):
    code = "CONFLICT"


class MissingMandatoryUserInfo(InvalidInput):
    code = "MISSING_MANDATORY_USER_INFO"


class BulkUploadJobNotFound(ResourceNotFound):
    code = "BULK_UPLOAD_JOB_NOT_FOUND"
    resource, id_key = "bulk upload job", "jobId"


class CustomerNotReady(Forbidden):
    code = "USER_NOT_READY"


class ContactVerificationNotRequired(Conflict):
    """verify-email / verify-phone (or confirm) for a channel the customer's providers do not require."""

    code = "CONFLICT"


class ContactAlreadyVerified(Conflict):
    code = "CONFLICT"


class ContactCodeRefused(InvalidInput):
    """A wrong, expired, used or burnt contact verification code."""

    code = "INVALID_INPUT"


class EndUserTermsVersionNotFound(InvalidInput):
    """An endUserTermsConsent naming a version of the End User Terms that platpay does not serve."""

    code = "END_USER_TERMS_VERSION_NOT_FOUND"


class EndUserTermsNotAccepted(Forbidden):
    """A quote for a customer of a platform that requires the End User Terms, without an acceptance of
    the current version on file."""

    code = "END_USER_TERMS_NOT_ACCEPTED"
