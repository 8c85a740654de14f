"""Helpers for FX tests: MXN/EUR payees with chosen sandbox suffixes, quotes, and the published rate table
and fee schedule read straight from their data files (so expected amounts never come from platpay code)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "platpay" / "fx" / "data"
RATES = json.loads((DATA / "sandbox_rates.json").read_text())
FEES = json.loads((DATA / "fee_schedule.json").read_text())
DECIMALS = {"USD": 2, "MXN": 2, "EUR": 2, "USDC": 6, "JPY": 0, "BTC": 8, "GBP": 2, "INR": 2}


def expected(source: str, destination: str, corridor: str, *, locked: str, amount: int) -> dict[str, int]:
    """The quote's amounts by the published rules: customer rate = mid * (1 - spread) (the peg spread
    between USD and its stablecoins), fees = fixed (USD,
    converted at mid, rounded up) + ceil(S * bps / 10000); R = floor((S - F) * rate); RECEIVING locks R and
    takes the smallest S whose fees leave enough to convert."""
    units = RATES["unitsPerUsd"]
    mid = Fraction(units[destination]) / Fraction(units[source])
    pegged = source in RATES["pegged"] and destination in RATES["pegged"]
    spread = RATES["pegSpreadBps"] if pegged else RATES["spreadBps"]
    rate = mid * Fraction(10_000 - spread, 10_000)
    minor_rate = rate * Fraction(10) ** (DECIMALS[destination] - DECIMALS[source])
    rule = FEES["corridors"].get(corridor, FEES["default"])
    fixed = math.ceil(Fraction(rule["fixedUsd"]) * Fraction(units[source]) * 10 ** DECIMALS[source])
    bps = rule["variableBps"]
    if locked == "SENDING":
        sending = amount
        fee = fixed + math.ceil(Fraction(sending * bps, 10_000))
        receiving = math.floor((sending - fee) * minor_rate)
    else:
        receiving = amount
        sending = 1
        # the smallest sending amount that delivers `amount`: found by search, not by the service's formula
        low, high = 1, 10**15
        while low < high:
            mid_amount = (low + high) // 2
            fee_at = fixed + math.ceil(Fraction(mid_amount * bps, 10_000))
            if math.floor((mid_amount - fee_at) * minor_rate) >= receiving:
                high = mid_amount
            else:
                low = mid_amount + 1
        sending = low
        fee = fixed + math.ceil(Fraction(sending * bps, 10_000))
    return {"sending": sending, "receiving": receiving, "fees": fee}
