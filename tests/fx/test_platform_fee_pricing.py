"""The quote arithmetic with a platform fee (pure, no database): the platform's fee is fixed +
round_half_up(S * bps / 10000) on the sending amount S, part of the fees; a RECEIVING lock takes the smallest
S that still delivers the locked amount. Checked against a brute-force search, never the code's formula."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest

from platpay.fx import pricing


def _fees(sending: int, *, fixed: int, bps: int, pfixed: int, pbps: int) -> tuple[int, int]:
    grid = fixed + math.ceil(Fraction(sending * bps, 10_000))
    platform = pfixed + math.floor(Fraction(sending * pbps, 10_000) + Fraction(1, 2))
    return grid, platform


class TestPlatformFee:
    @pytest.mark.parametrize(
        ("sending", "bps", "fee"),
        [(10_100, 50, 51), (10_099, 50, 50), (10_000, 5, 5), (1, 5_000, 1), (1, 4_999, 0), (0, 30, 0)],
    )
    def test_rounds_half_up(self, sending, bps, fee):
        assert pricing.platform_fee(sending, fixed=0, bps=bps) == fee
        assert pricing.platform_fee(sending, fixed=7, bps=bps) == fee + 7

    def test_without_a_platform_fee_prices_are_unchanged(self):
        rate = Fraction(1741, 100)
        for side, amount in (("SENDING", 10_000), ("RECEIVING", 150_000)):
            before = pricing.price(
                locked_side=side, locked_amount=amount, minor_rate=rate, fixed_fee=50, variable_bps=30
            )
            assert before.platform_fee == 0
            assert before == pricing.price(
                locked_side=side, locked_amount=amount, minor_rate=rate, fixed_fee=50, variable_bps=30,
                platform_fixed=0, platform_bps=0,
            )  # fmt: skip

    def test_sending_lock(self):
        price = pricing.price(
            locked_side="SENDING", locked_amount=10_100, minor_rate=Fraction(17), fixed_fee=50, variable_bps=30,
            platform_fixed=25, platform_bps=50,
        )  # fmt: skip
        assert (price.fixed_fee, price.variable_fee, price.platform_fee) == (50, 31, 76)
        assert price.fees == 157 and price.receiving_amount == (10_100 - 157) * 17

    def test_receiving_lock_is_the_smallest_sending_amount_that_delivers(self):
        rng = random.Random(28)
        for _ in range(300):
            rate = Fraction(rng.randint(1, 4_000), rng.randint(1, 400))
            fixed, bps = rng.randint(0, 100), rng.randint(0, 300)
            pfixed, pbps = rng.randint(0, 100), rng.choice([0, 1, 5, 50, 333, 2_500, 9_000])
            if bps + pbps >= 10_000:
                continue
            receiving = rng.randint(1, 50_000)
            price = pricing.price(
                locked_side="RECEIVING", locked_amount=receiving, minor_rate=rate, fixed_fee=fixed,
                variable_bps=bps, platform_fixed=pfixed, platform_bps=pbps,
            )  # fmt: skip

            parts = {"fixed": fixed, "bps": bps, "pfixed": pfixed, "pbps": pbps}

            def delivers(sending: int, parts=parts, rate=rate, receiving=receiving) -> bool:
                grid, platform = _fees(sending, **parts)
                left = sending - grid - platform
                return left > 0 and math.floor(left * rate) >= receiving

            assert delivers(price.sending_amount)
            assert not any(
                delivers(s) for s in range(max(1, price.sending_amount - 3_000), price.sending_amount)
            )
            grid, platform = _fees(price.sending_amount, fixed=fixed, bps=bps, pfixed=pfixed, pbps=pbps)
            assert (price.fixed_fee + price.variable_fee, price.platform_fee) == (grid, platform)
            assert price.receiving_amount == receiving

    @pytest.mark.parametrize("side", ["SENDING", "RECEIVING"])
    def test_variable_fees_of_the_whole_amount_are_refused(self, side):
        with pytest.raises(pricing.AmountTooSmall):
            pricing.price(
                locked_side=side, locked_amount=10_000, minor_rate=Fraction(17), fixed_fee=0, variable_bps=30,
                platform_fixed=0, platform_bps=9_970,
            )  # fmt: skip

    def test_a_fee_that_eats_the_amount_is_refused(self):
        with pytest.raises(pricing.AmountTooSmall):
            pricing.price(
                locked_side="SENDING", locked_amount=100, minor_rate=Fraction(17), fixed_fee=50, variable_bps=30,
                platform_fixed=49, platform_bps=0,
            )  # fmt: skip
