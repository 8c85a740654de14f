"""The currency catalog: ISO 4217 fiat (from CLDR data) and the crypto assets we hold, with minor-unit decimals.

Every `Currency` object the API returns and every currency code it accepts goes through here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources

from platpay.errors import InvalidCurrency, invalid_field


@dataclass(frozen=True, slots=True)
class Currency:
    code: str
    name: str
    symbol: str
    decimals: int
    kind: str  # FIAT | CRYPTO

    def as_api(self) -> dict[str, object]:
        return {"code": self.code, "name": self.name, "symbol": self.symbol, "decimals": self.decimals}


@cache
def catalog() -> dict[str, Currency]:
    raw = json.loads(resources.files("platpay.kit").joinpath("data/currencies.json").read_text("utf-8"))
    return {item["code"]: Currency(**item) for item in raw["currencies"]}


# Stablecoins and the fiat currency each tracks one for one (a unit of the coin for a unit of the fiat): the one
# place that says so. A card funded in one of them takes authorizations in that fiat currency (cards/decisioning.py).
_TRACKS = {"USDB": "USD", "USDC": "USD", "USDT": "USD"}


def tracked_fiat(code: str) -> str | None:
    """The fiat currency the stablecoin `code` tracks one for one; None for any other currency."""
    return _TRACKS.get(code)


def get(code: str) -> Currency | None:
    return catalog().get(code)


def require(code: str, *, field: str = "currency") -> Currency:
    """The currency for `code`, or a 400 naming `field` when the code is not in the catalog."""
    currency = catalog().get(code) if isinstance(code, str) else None
    if currency is None:
        raise invalid_field(field, f"unknown currency code {code!r}", error=InvalidCurrency)
    return currency
