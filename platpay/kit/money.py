"""Money is an int of minor units with its currency. No floats anywhere near it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BaseModel, Field, Strict

from platpay.kit import currencies

# An amount in a request: a JSON integer of minor units. Strict, so "10" or 10.0 are refused rather than
# coerced: a client that sends money as a string or a float has a bug worth hearing about.
MinorUnits = Annotated[int, Strict()]


class Currency(BaseModel):
    code: str
    name: str
    symbol: str
    decimals: int


class CurrencyAmount(BaseModel):
    amount: int = Field(description="minor units (cents for USD, satoshis for BTC)")
    currency: Currency


@dataclass(frozen=True, slots=True)
class Money:
    minor: int
    currency: str

    def __post_init__(self) -> None:
        if not isinstance(self.minor, int) or isinstance(self.minor, bool):
            raise TypeError(f"money amounts are int minor units, got {type(self.minor).__name__}")

    def as_api(self) -> dict[str, Any]:
        return currency_amount(self.minor, self.currency)


def rescale(minor: int, *, from_decimals: int, to_decimals: int, round_up: bool = True) -> int:
    """`minor` units of a currency with `from_decimals` decimals as units of one with `to_decimals`, value for
    value (USD 12.50 = 1250 at 2 decimals = 12_500_000 at 6): exact when the target has as many decimals or
    more; else rounded up (`round_up`, the default) or down, never to the nearest."""
    if to_decimals >= from_decimals:
        scale: int = 10 ** (to_decimals - from_decimals)  # (typeshed: int ** int may be a float)
        return minor * scale
    unit: int = 10 ** (from_decimals - to_decimals)
    return -(-minor // unit) if round_up else minor // unit


def currency_amount(minor: int, code: str) -> dict[str, Any]:
    """The API's CurrencyAmount: {amount, currency: {code, name, symbol, decimals}}."""
    currency = currencies.require(code)
    return {"amount": minor, "currency": currency.as_api()}
