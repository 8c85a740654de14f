"""Quote and receiver-lookup errors. Execution conflicts have their own codes so a client can tell a late execute from a repeat."""

from __future__ import annotations

from platpay.errors import Conflict, InvalidInput, ResourceNotFound


class QuoteNotFound(ResourceNotFound):
    code = "QUOTE_NOT_FOUND"
    resource, id_key = "quote", "quoteId"


class LookupNotFound(ResourceNotFound):
    code = "LOOKUP_REQUEST_NOT_FOUND"
    resource, id_key = "lookup", "lookupId"


class QuoteExpired(Conflict):
    """Executing (or paying) a quote at or after its expiresAt."""

    code = "QUOTE_EXPIRED"


class QuoteAlreadyExecuted(Conflict):
    """Executing (or paying) a quote a second time."""

    code = "QUOTE_ALREADY_EXECUTED"


class SelfPayment(InvalidInput):
    code = "SELF_PAYMENT"
