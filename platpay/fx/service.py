"""What other domains call on fx (payments' quotes, receiver lookups and withdrawal fees; agents' policy
rates): the configured provider's rates, the cached rate the API publishes, the fee schedule and the quote
arithmetic. Callers outside fx import this module, and fx/schemas.py for the API's documentation."""

from __future__ import annotations

from platpay.fx import cache
from platpay.fx.cache import CachedRate
from platpay.fx.exchange_rates import sending_limits
from platpay.fx.fees import CRYPTO, INTERNAL, UMA, FeeRule
from platpay.fx.fees import rule_for as fee_rule
from platpay.fx.pricing import AmountTooSmall, Price, price
from platpay.fx.providers import RATES, RateQuote, UnsupportedCurrencyPair
from platpay.fx.rates import convert, exact_mid, minor_rate, to_decimal

__all__ = [
    "CRYPTO",
    "INTERNAL",
    "UMA",
    "AmountTooSmall",
    "CachedRate",
    "FeeRule",
    "Price",
    "RateQuote",
    "UnsupportedCurrencyPair",
    "cached_rate",
    "convert",
    "exact_mid",
    "fee_rule",
    "minor_rate",
    "price",
    "quote_rate",
    "sending_limits",
    "to_decimal",
]


def quote_rate(source_currency: str, destination_currency: str) -> RateQuote:
    """The configured provider's rate for the pair now, read directly (a quote locks it in its row);
    UnsupportedCurrencyPair when it has none."""
    return RATES.get().rate(source_currency, destination_currency)


def cached_rate(source_currency: str, destination_currency: str, *, ttl_seconds: float) -> CachedRate:
    """The rate GET /exchange-rates and receiver lookups publish: fetched at most `ttl_seconds` ago."""
    return cache.get(source_currency, destination_currency, ttl_seconds=ttl_seconds)
