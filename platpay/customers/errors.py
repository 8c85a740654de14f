from __future__ import annotations

from platpay.errors import Conflict, Forbidden, Gone, InvalidInput, NotFound


class CustomerNotFound(NotFound):
    code = "USER_NOT_FOUND"


class CustomerDeleted(Gone):
    code = "CUSTOMER_DELETED"


class UmaAddressExists(Conflict):
    code = "UMA_ADDRESS_EXISTS"


class PlatformCustomerIdExists(Conflict):
    code = "CONFLICT"


class MissingMandatoryUserInfo(InvalidInput):
    code = "MISSING_MANDATORY_USER_INFO"


class BulkUploadJobNotFound(NotFound):
    code = "BULK_UPLOAD_JOB_NOT_FOUND"


class CustomerNotReady(Forbidden):
    code = "USER_NOT_READY"
