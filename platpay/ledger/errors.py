from __future__ import annotations

from platpay.errors import InvalidInput, ResourceNotFound


class InsufficientFunds(InvalidInput):
    """The account's available balance does not cover the debit; nothing was moved."""

    code = "INSUFFICIENT_BALANCE"


class UnbalancedEntry(ValueError):
    """A programming error: an entry whose postings do not sum to zero per currency is never written."""


class LedgerAccountMismatch(ValueError):
    """A programming error: a leg names an account of another tenant or currency, or none at all."""


class HoldExhausted(ValueError):
    """A programming error or a lost race its caller should have ruled out (by locking the hold's owner):
    taking more from a hold than it still reserves, or from a closed one."""


class LedgerAccountNotFound(ResourceNotFound):
    """A ledger account the caller may not see (unknown, or another tenant's): the console's account page."""

    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "ledger account", "accountId"
