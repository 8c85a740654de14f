"""The payments domain's shapes that services pass around as JSON: a transaction's `source` and
`destination`, stored as they are shown (API names, only the keys that apply to the kind; see
`schemas.Transaction`). TypedDicts: at run time they are the plain dicts the column and the API take."""

from __future__ import annotations

from typing import Required, TypedDict


class TransactionSource(TypedDict, total=False):
    """Who pays: an ACCOUNT (internal or external, `paymentRail` when pulled from an external one), the
    REALTIME_FUNDING of a quote (`customerId`: the customer who pays it, absent for the platform), or a
    UMA_ADDRESS."""

    sourceType: Required[str]  # ACCOUNT | REALTIME_FUNDING | UMA_ADDRESS
    accountId: str
    currency: str | None  # (an internal payment's sender shown by UMA address: its sent currency)
    customerId: str
    paymentRail: str
    umaAddress: str


class TransactionDestination(TypedDict, total=False):
    """Who receives: an ACCOUNT (internal, or external paid over `paymentRail`) or a UMA_ADDRESS."""

    destinationType: Required[str]  # ACCOUNT | UMA_ADDRESS
    accountId: str
    currency: str
    paymentRail: str
    umaAddress: str
