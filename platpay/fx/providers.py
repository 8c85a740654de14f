"""Where FX rates come from (kit.providers): the RateProvider protocol, its slot
(PLATPAY_FX_RATE_PROVIDER) and the sandbox implementation, a fixed table in data/sandbox_rates.json."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from fractions import Fraction
from functools import cache
from importlib import resources
from typing import Any, Protocol

from platpay.config import Settings
from platpay.kit.providers import Slot


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


def apply_spread(mid: Fraction, spread_bps: int) -> Fraction:
    return mid * Fraction(10_000 - spread_bps, 10_000)


class UnsupportedCurrencyPair(LookupError):
    pass


RATES: Slot[RateProvider] = Slot("fx_rate_provider")


@cache
def _sandbox_table() -> dict[str, Any]:
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


@RATES.implementation("sandbox")
def _sandbox(settings: Settings) -> RateProvider:
    return SandboxRateProvider()
