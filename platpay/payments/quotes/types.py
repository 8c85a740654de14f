"""What a quote is asked for, as services take it: who pays (a `QuoteSource`) and who receives (a
`QuoteDestination`), plain values the endpoint, a job or a test builds alike. Each `as_api()` is the shape
the quote reports back (its `source` / `destination`: API names, absent values left out)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


def _present(values: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in values.items() if value is not None}


@dataclass(frozen=True)
class AccountSource:
    """Funded from an account: an internal account, or an external one that supports pull (ACH debit).
    `customer_id`: the customer a platform account pays for (otherwise the account's owner)."""

    account_id: str
    customer_id: str | None = None

    def as_api(self) -> dict[str, Any]:
        return _present(
            {"sourceType": "ACCOUNT", "accountId": self.account_id, "customerId": self.customer_id}
        )


@dataclass(frozen=True)
class RealtimeFundingSource:
    """Funded by a payment in `currency` to the quote's paymentInstructions (`crypto_network` for
    stablecoins); `customer_id` None: the platform itself pays."""

    currency: str
    customer_id: str | None = None
    crypto_network: str | None = None

    def as_api(self) -> dict[str, Any]:
        return _present(
            {
                "sourceType": "REALTIME_FUNDING",
                "currency": self.currency,
                "customerId": self.customer_id,
                "cryptoNetwork": self.crypto_network,
            }
        )


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

    def as_api(self) -> dict[str, Any]:
        return _present(
            {"destinationType": "ACCOUNT", "accountId": self.account_id, "paymentRail": self.payment_rail}
        )


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
