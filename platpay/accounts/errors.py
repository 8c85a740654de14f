"""Accounts errors: each class carries its code and HTTP status."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, ResourceNotFound


class ExternalAccountNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "external account", "accountId"


class DuplicateExternalAccount(Conflict):
    code = "CONFLICT"


class InvalidBankAccount(InvalidInput):
    code = "INVALID_BANK_ACCOUNT"


class InternalAccountNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "internal account", "accountId"
