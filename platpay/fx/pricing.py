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

    @property
    def fees(self) -> int:
        return self.fixed_fee + self.variable_fee

    @property
    def converted_amount(self) -> int:
        return self.sending_amount - self.fees


def variable_fee(sending_amount: int, bps: int) -> int:
    """ceil(sending_amount * bps / 10000), in integers."""
    return -(-sending_amount * bps // 10_000)


def price(
    *, locked_side: str, locked_amount: int, minor_rate: Fraction, fixed_fee: int, variable_bps: int
) -> Price:
    """The amounts of a quote; `minor_rate` is receiving minor units per sending minor unit (> 0)."""
    if locked_amount <= 0 or minor_rate <= 0 or fixed_fee < 0 or not 0 <= variable_bps < 10_000:
        raise ValueError("price() needs a positive amount and rate, a fee >= 0 and 0 <= bps < 10000")
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
