"""Quote arithmetic: pure, no I/O. Every amount is an int of minor units; the rate is an exact Fraction.

Definitions (S, F, R in minor units; r = customer rate in receiving minor units per sending minor unit):

    S = totalSendingAmount   what leaves the source, fees included
    F = feesIncluded         fixed + variable, in the sending currency (see fees.py)
    R = totalReceivingAmount what the receiver gets
    S - F is converted:      R = floor((S - F) * r)

Locked SENDING: S is given; F = fixed + ceil(S * bps / 10000); R = floor((S - F) * r).
Locked RECEIVING: R is given; the smallest convertible amount C = ceil(R / r), then the smallest S whose
fees leave at least C: S = ceil((C + fixed) * 10000 / (10000 - bps)) (then S - F >= C, so
floor((S - F) * r) >= R; the receiver gets exactly R and the rounding remainder stays with the platform).

Each amount is rounded exactly once, always in the platform's favour: the receiving amount down, the
sending amount and the fees up. The rate itself is never rounded for arithmetic (display only).

Platform fees (PlatformConfig.feeConfigs, QuoteRequest.platformFeeOverride): the platform's own fee P, part
of F (feesIncluded = grid fixed + grid variable + P), on the same source-currency amount S:

    P = platformFixed + round_half_up(S * platformBps / 10000)     (in integers: (S*bps + 5000) // 10000)

Locked SENDING: P from S as above, R = floor((S - F) * r). Locked RECEIVING: the smallest S whose fees,
P included, leave at least C = ceil(R / r) to convert, searched upward from the exact lower bound (two
independently rounded variable fees make S - F not quite monotonic, so no closed form is exact). Without a
platform fee both sides are computed exactly as before (P = 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

SENDING, RECEIVING = "SENDING", "RECEIVING"


class AmountTooSmall(ValueError):
    """The amount does not cover the fees or converts to nothing."""


@dataclass(frozen=True, slots=True)
class Price:
    sending_amount: int  # S, minor units of the sending currency, fees included
    receiving_amount: int  # R, minor units of the receiving currency
    fixed_fee: int  # minor units of the sending currency
    variable_fee: int  # minor units of the sending currency
    variable_bps: int
    platform_fee: int = 0  # minor units of the sending currency, part of `fees`

    @property
    def fees(self) -> int:
        return self.fixed_fee + self.variable_fee + self.platform_fee

    @property
    def converted_amount(self) -> int:
        return self.sending_amount - self.fees


def variable_fee(sending_amount: int, bps: int) -> int:
    """ceil(sending_amount * bps / 10000), in integers."""
    return -(-sending_amount * bps // 10_000)


def platform_fee(sending_amount: int, *, fixed: int, bps: int) -> int:
    """fixed + round_half_up(sending_amount * bps / 10000), in integers (amounts are never negative)."""
    return fixed + (sending_amount * bps + 5_000) // 10_000


def _with_platform_fee(
    *,
    locked_side: str,
    locked_amount: int,
    minor_rate: Fraction,
    fixed_fee: int,
    variable_bps: int,
    platform_fixed: int,
    platform_bps: int,
) -> Price:
    def fees_at(sending: int) -> tuple[int, int]:
        return variable_fee(sending, variable_bps), platform_fee(
            sending, fixed=platform_fixed, bps=platform_bps
        )

    if variable_bps + platform_bps >= 10_000:
        raise AmountTooSmall(f"variable fees of {variable_bps + platform_bps} bps take the whole amount")
    if locked_side == SENDING:
        sending = locked_amount
        variable, platform = fees_at(sending)
        converted = sending - fixed_fee - variable - platform
        if converted <= 0:
            raise AmountTooSmall(f"{sending} does not cover the fees of {fixed_fee + variable + platform}")
        receiving = math.floor(converted * minor_rate)
        if receiving <= 0:
            raise AmountTooSmall(f"{sending} minus fees converts to less than one receiving minor unit")
        return Price(sending, receiving, fixed_fee, variable, variable_bps, platform)
    if locked_side == RECEIVING:
        receiving = locked_amount
        converted = math.ceil(receiving / minor_rate)
        # Below this S even the exact fees (the platform's rounded down by at most half a unit) leave too
        # little: S * (10000 - bps) / 10000 >= C + fixed - 1/2 is necessary.
        bps = variable_bps + platform_bps
        sending = max(1, math.ceil(Fraction((2 * (converted + fixed_fee + platform_fixed) - 1) * 10_000,
                                            2 * (10_000 - bps))))  # fmt: skip
        while True:
            variable, platform = fees_at(sending)
            if sending - fixed_fee - variable - platform >= converted:
                return Price(sending, receiving, fixed_fee, variable, variable_bps, platform)
            sending += 1
    raise ValueError(f"unknown locked side {locked_side!r}")


def price(
    *,
    locked_side: str,
    locked_amount: int,
    minor_rate: Fraction,
    fixed_fee: int,
    variable_bps: int,
    platform_fixed: int = 0,
    platform_bps: int = 0,
) -> Price:
    """The amounts of a quote; `minor_rate` is receiving minor units per sending minor unit (> 0);
    `platform_fixed` (minor units of the sending currency) and `platform_bps` are the platform's fee."""
    if locked_amount <= 0 or minor_rate <= 0 or fixed_fee < 0 or not 0 <= variable_bps < 10_000:
        raise ValueError("price() needs a positive amount and rate, a fee >= 0 and 0 <= bps < 10000")
    if platform_fixed < 0 or not 0 <= platform_bps <= 10_000:
        raise ValueError("price() needs a platform fee >= 0 and 0 <= platform bps <= 10000")
    if platform_fixed or platform_bps:
        return _with_platform_fee(
            locked_side=locked_side,
            locked_amount=locked_amount,
            minor_rate=minor_rate,
            fixed_fee=fixed_fee,
            variable_bps=variable_bps,
            platform_fixed=platform_fixed,
            platform_bps=platform_bps,
        )
    if locked_side == SENDING:
        sending = locked_amount
        variable = variable_fee(sending, variable_bps)
        converted = sending - fixed_fee - variable
        if converted <= 0:
            raise AmountTooSmall(f"{sending} does not cover the fees of {fixed_fee + variable}")
        receiving = math.floor(converted * minor_rate)
        if receiving <= 0:
            raise AmountTooSmall(f"{sending} minus fees converts to less than one receiving minor unit")
        return Price(sending, receiving, fixed_fee, variable, variable_bps)
    if locked_side == RECEIVING:
        receiving = locked_amount
        converted = math.ceil(receiving / minor_rate)
        sending = math.ceil(Fraction((converted + fixed_fee) * 10_000, 10_000 - variable_bps))
        variable = variable_fee(sending, variable_bps)
        assert sending - fixed_fee - variable >= converted  # see the module docstring
        return Price(sending, receiving, fixed_fee, variable, variable_bps)
    raise ValueError(f"unknown locked side {locked_side!r}")
