"""Payments errors: each class carries its code and HTTP status."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, NotFound


class TransactionNotFound(NotFound):
    code = "TRANSACTION_NOT_FOUND"


class UmaNotFound(NotFound):
    code = "UMA_NOT_FOUND"


class TransactionNotPendingApproval(Conflict):
    code = "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL"


class AmountOutOfRange(InvalidInput):
    code = "AMOUNT_OUT_OF_RANGE"


class AccountNotFound(NotFound):
    """An account that is not the acting customer's (an agent's transfer): the same answer as a missing one."""

    code = "REFERENCE_NOT_FOUND"
