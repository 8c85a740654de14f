"""FX rates: the public conversion helpers over the configured rate provider (fx/providers.py).

Rates are exact numbers, never float: the table holds `Decimal` strings and cross rates are kept as exact
`Fraction`s, so an amount is rounded once, at the end, by a stated rule. A *rate* from A to B is always
"B major units per one A major unit" (the multiplier that turns a sending amount into a receiving amount),
which is what the API's `exchangeRate` shows (the reference's examples: USD→INR 82.5, USD→EUR 0.92).

The sandbox provider (fx/providers.py) reads `data/sandbox_rates.json`: a fixed mid-market table of units
per US dollar for every currency in the catalog, and a spread in basis points quotes apply against the
customer.

Public API other domains rely on (keep stable):
    mid_rate(source_currency, destination_currency) -> Decimal
    async convert(*, source_currency, destination_currency, amount) -> int
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

from platpay.fx.providers import RATES
from platpay.kit import currencies


def to_decimal(rate: Fraction, *, significant: int = 12) -> Decimal:
    """A rate for display and storage: `significant` digits, half to even (amounts never use this)."""
    with localcontext() as context:
        context.prec = significant
        context.rounding = ROUND_HALF_EVEN
        return (Decimal(rate.numerator) / Decimal(rate.denominator)).normalize()


def minor_rate(rate: Fraction, source_currency: str, destination_currency: str) -> Fraction:
    """A major-unit rate as destination minor units per one source minor unit (exact)."""
    shift = currencies.require(destination_currency).decimals - currencies.require(source_currency).decimals
    return rate * Fraction(10) ** shift


def exact_mid(source_currency: str, destination_currency: str) -> Fraction:
    currencies.require(source_currency, field="sourceCurrency")
    currencies.require(destination_currency, field="destinationCurrency")
    if source_currency == destination_currency:
        return Fraction(1)
    return RATES.get().rate(source_currency, destination_currency).mid


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
