"""Accounts errors: each class carries its code and HTTP status."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, NotFound


class ExternalAccountNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"


class DuplicateExternalAccount(Conflict):
    code = "CONFLICT"


class InvalidBankAccount(InvalidInput):
    code = "INVALID_BANK_ACCOUNT"


class InternalAccountNotFound(NotFound):
    code = "REFERENCE_NOT_FOUND"
