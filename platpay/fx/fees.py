"""The sandbox fee schedule (data/fee_schedule.json): a fixed part and a variable part per corridor.

A corridor is how the money leaves: the destination payment rail of a bank account (SPEI, ACH, ...),
CRYPTO for wallets and Lightning, UMA for UMA addresses, INTERNAL for another internal account. Both parts
are charged in the sending currency and both round up (in the platform's favour):

    fixed    = ceil(fixedUsd * mid(USD -> sending currency), to the sending currency's minor unit)
    variable = ceil(totalSendingAmount * variableBps / 10000)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from functools import cache
from importlib import resources

from platpay.fx import rates

UMA, INTERNAL, CRYPTO = "UMA", "INTERNAL", "CRYPTO"


@dataclass(frozen=True, slots=True)
class FeeRule:
    corridor: str
    fixed_usd: Decimal
    variable_bps: int

    def fixed_in(self, currency: str) -> int:
        """The fixed part in `currency` minor units, rounded up."""
        exact = Fraction(self.fixed_usd) * rates.minor_rate(rates.exact_mid("USD", currency), "USD", currency)
        return math.ceil(exact * 100)  # fixedUsd is in dollars: x100 gives cents before the rate's shift


@cache
def _schedule() -> dict[str, FeeRule]:
    raw = json.loads(resources.files("platpay.fx").joinpath("data/fee_schedule.json").read_text("utf-8"))
    rules = {"default": raw["default"], **raw["corridors"]}
    schedule = {}
    for corridor, rule in rules.items():
        bps = int(rule["variableBps"])
        if not 0 <= bps < 10_000:
            raise ValueError(f"fee schedule: {corridor} variableBps {bps} must be in [0, 10000)")
        schedule[corridor] = FeeRule(corridor, Decimal(rule["fixedUsd"]), bps)
    return schedule


def rule_for(corridor: str) -> FeeRule:
    schedule = _schedule()
    return schedule.get(corridor) or FeeRule(
        corridor, schedule["default"].fixed_usd, schedule["default"].variable_bps
    )
