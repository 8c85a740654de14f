"""Payments errors: each class carries its code and HTTP status."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, NotFound, ResourceNotFound


class TransactionNotFound(ResourceNotFound):
    code = "TRANSACTION_NOT_FOUND"
    resource, id_key = "transaction", "transactionId"


class UmaNotFound(NotFound):
    code = "UMA_NOT_FOUND"


class TransactionNotPendingApproval(Conflict):
    code = "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL"


class AmountOutOfRange(InvalidInput):
    code = "AMOUNT_OUT_OF_RANGE"


class TransactionNotCancellable(Conflict):
    """POST /transactions/{id}/cancel on anything but a bank transfer the rail has not settled yet."""

    code = "TRANSACTION_NOT_CANCELLABLE"
