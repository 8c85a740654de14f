"""What a quote is asked for, as services take it: who pays (a `QuoteSource`) and who receives (a
`QuoteDestination`), plain values the endpoint, a job or a test builds alike. Each `as_api()` is the shape
the quote reports back (its `source` / `destination`: API names, absent values left out): a
`QuoteSourceApi` / `QuoteDestinationApi`, what the quote row stores and the API shows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Required, TypedDict


class QuoteSourceApi(TypedDict, total=False):
    """A quote's `source` as the API shows it (the request's, with what planning settled: the crypto
    network, the UMA address as resolved)."""

    sourceType: Required[str]  # ACCOUNT | REALTIME_FUNDING | UMA_ADDRESS
    accountId: str
    customerId: str
    currency: str
    cryptoNetwork: str
    umaAddress: str


class QuoteDestinationApi(TypedDict, total=False):
    """A quote's `destination` as the API shows it (with the payout rail planning chose, for an external
    account paid over a rail)."""

    destinationType: Required[str]  # ACCOUNT | UMA_ADDRESS
    accountId: str
    paymentRail: str
    umaAddress: str
    currency: str


@dataclass(frozen=True)
class AccountSource:
    """Funded from an account: an internal account, or an external one that supports pull (ACH debit).
    `customer_id`: the customer a platform account pays for (otherwise the account's owner)."""

    account_id: str
    customer_id: str | None = None

    def as_api(self) -> QuoteSourceApi:
        api: QuoteSourceApi = {"sourceType": "ACCOUNT", "accountId": self.account_id}
        if self.customer_id is not None:
            api["customerId"] = self.customer_id
        return api


@dataclass(frozen=True)
class RealtimeFundingSource:
    """Funded by a payment in `currency` to the quote's paymentInstructions (`crypto_network` for
    stablecoins); `customer_id` None: the platform itself pays."""

    currency: str
    customer_id: str | None = None
    crypto_network: str | None = None

    def as_api(self) -> QuoteSourceApi:
        api: QuoteSourceApi = {"sourceType": "REALTIME_FUNDING", "currency": self.currency}
        if self.customer_id is not None:
            api["customerId"] = self.customer_id
        if self.crypto_network is not None:
            api["cryptoNetwork"] = self.crypto_network
        return api


@dataclass(frozen=True)
class UmaAddressSource:
    """Funded by one of the platform's own customers, named by UMA address, paying in `currency`."""

    uma_address: str
    currency: str


@dataclass(frozen=True)
class AccountDestination:
    """Paid to an external account (over `payment_rail`, default its first) or credited to an internal one."""

    account_id: str
    payment_rail: str | None = None

    def as_api(self) -> QuoteDestinationApi:
        api: QuoteDestinationApi = {"destinationType": "ACCOUNT", "accountId": self.account_id}
        if self.payment_rail is not None:
            api["paymentRail"] = self.payment_rail
        return api


@dataclass(frozen=True)
class UmaAddressDestination:
    """Paid to a UMA address in `currency` (default: the receiver's first currency)."""

    uma_address: str
    currency: str | None = None


QuoteSource = AccountSource | RealtimeFundingSource | UmaAddressSource
QuoteDestination = AccountDestination | UmaAddressDestination


@dataclass(frozen=True)
class PlatformFee:
    """A platform fee for one quote: `fixed` minor units of `currency` plus `variable_bps` of the source
    amount (QuoteRequest.platformFeeOverride; a feeConfigs entry has the same parts)."""

    fixed: int
    currency: str
    variable_bps: int
