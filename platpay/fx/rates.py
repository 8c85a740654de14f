"""FX rates: the provider interface, the deterministic sandbox provider and the public conversion helpers.

Rates are exact numbers, never float: the table holds `Decimal` strings and cross rates are kept as exact
`Fraction`s, so an amount is rounded once, at the end, by a stated rule. A *rate* from A to B is always
"B major units per one A major unit" (the multiplier that turns a sending amount into a receiving amount),
which is what the API's `exchangeRate` shows (the reference's examples: USD→INR 82.5, USD→EUR 0.92).

The sandbox provider reads `data/sandbox_rates.json`: a fixed mid-market table of units per US dollar for
every currency in the catalog, and a spread in basis points that quotes apply against the customer.

Public API other domains rely on (keep stable):
    mid_rate(source_currency, destination_currency) -> Decimal
    async convert(*, source_currency, destination_currency, amount) -> int
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Protocol

from platpay.kit import currencies


@dataclass(frozen=True, slots=True)
class RateQuote:
    """One corridor's rates as a provider publishes them."""

    source_currency: str
    destination_currency: str
    mid: Fraction  # destination major units per one source major unit, exact
    spread_bps: int  # applied against the customer: customer rate = mid * (1 - spread_bps / 10000)
    as_of: datetime

    @property
    def customer_rate(self) -> Fraction:
        return apply_spread(self.mid, self.spread_bps)


class RateProvider(Protocol):
    """Where rates come from. Production adapters implement this; no domain code knows which one runs."""

    name: str

    def rate(self, source_currency: str, destination_currency: str) -> RateQuote: ...


class UnsupportedCurrencyPair(LookupError):
    pass


def apply_spread(mid: Fraction, spread_bps: int) -> Fraction:
    return mid * Fraction(10_000 - spread_bps, 10_000)


def to_decimal(rate: Fraction, *, significant: int = 12) -> Decimal:
    """A rate for display and storage: `significant` digits, half to even (amounts never use this)."""
    with localcontext() as context:
        context.prec = significant
        context.rounding = ROUND_HALF_EVEN
        return (Decimal(rate.numerator) / Decimal(rate.denominator)).normalize()


@cache
def _sandbox_table() -> dict[str, object]:
    raw = resources.files("platpay.fx").joinpath("data/sandbox_rates.json").read_text("utf-8")
    return json.loads(raw)


class SandboxRateProvider:
    """A fixed rate table: deterministic, offline, the same answer on every process and every day."""

    name = "sandbox"

    def __init__(self) -> None:
        table = _sandbox_table()
        self.units_per_usd: dict[str, Decimal] = {
            code: Decimal(v) for code, v in table["unitsPerUsd"].items()
        }
        self.spread_bps = int(table["spreadBps"])
        self.peg_spread_bps = int(table["pegSpreadBps"])
        self.pegged = frozenset(table["pegged"])
        self.as_of = datetime.fromisoformat(str(table["asOf"]).replace("Z", "+00:00"))

    def supports(self, code: str) -> bool:
        return code in self.units_per_usd

    def mid(self, source_currency: str, destination_currency: str) -> Fraction:
        try:
            source = self.units_per_usd[source_currency]
            destination = self.units_per_usd[destination_currency]
        except KeyError as missing:
            raise UnsupportedCurrencyPair(f"no sandbox rate for {missing.args[0]}") from None
        return Fraction(destination) / Fraction(source)

    def rate(self, source_currency: str, destination_currency: str) -> RateQuote:
        both_pegged = source_currency in self.pegged and destination_currency in self.pegged
        return RateQuote(
            source_currency=source_currency,
            destination_currency=destination_currency,
            mid=self.mid(source_currency, destination_currency),
            spread_bps=self.peg_spread_bps if both_pegged else self.spread_bps,
            as_of=self.as_of,
        )


_provider: RateProvider | None = None


def provider() -> RateProvider:
    """The configured rate provider (the sandbox table until a production adapter is plugged in)."""
    global _provider
    if _provider is None:
        _provider = SandboxRateProvider()
    return _provider


def set_provider(new: RateProvider | None) -> None:
    """Swap the provider (tests, plugins); `None` restores the sandbox table."""
    global _provider
    _provider = new


def minor_rate(rate: Fraction, source_currency: str, destination_currency: str) -> Fraction:
    """A major-unit rate as destination minor units per one source minor unit (exact)."""
    shift = currencies.require(destination_currency).decimals - currencies.require(source_currency).decimals
    return rate * Fraction(10) ** shift


def exact_mid(source_currency: str, destination_currency: str) -> Fraction:
    currencies.require(source_currency, field="sourceCurrency")
    currencies.require(destination_currency, field="destinationCurrency")
    if source_currency == destination_currency:
        return Fraction(1)
    return provider().rate(source_currency, destination_currency).mid


def mid_rate(source_currency: str, destination_currency: str) -> Decimal:
    """The mid-market rate: destination major units per one source major unit, without spread or fees
    (28 significant digits; 1 for the same currency)."""
    mid = exact_mid(source_currency, destination_currency)
    return Decimal(mid.numerator) / Decimal(mid.denominator)


async def convert(*, source_currency: str, destination_currency: str, amount: int) -> int:
    """`amount` minor units of source_currency in destination_currency minor units at the mid rate, no fees.

    An estimate helper (no spread, nothing locked): the exact value is rounded to the destination's minor
    unit once, half to even. Same currency returns `amount` unchanged. Unknown codes: 400 INVALID_CURRENCY.
    """
    if source_currency == destination_currency:
        return amount
    exact = amount * minor_rate(
        exact_mid(source_currency, destination_currency), source_currency, destination_currency
    )
    return round(exact)  # Fraction rounding is half to even
