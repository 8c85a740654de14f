"""The rate table, the public conversion helpers, the fee schedule and the quote arithmetic (no database).

Expected values come from the published data files and independent arithmetic (tests/support/fx.py),
never from the functions under test."""

from __future__ import annotations

import random
from decimal import Decimal
from fractions import Fraction

import pytest

from platpay.errors import InvalidInput
from platpay.fx import fees, pricing, providers, rates
from platpay.kit import currencies
from tests.support.fx import RATES, expected


class TestRateTable:
    def test_every_catalog_currency_has_a_mid_rate(self):
        assert set(RATES["unitsPerUsd"]) == set(currencies.catalog())
        assert all(Decimal(v) > 0 for v in RATES["unitsPerUsd"].values())

    def test_mid_rate_is_destination_units_per_source_unit(self):
        assert rates.mid_rate("USD", "MXN") == Decimal("17.5")
        assert rates.mid_rate("MXN", "USD") == Decimal(1) / Decimal("17.5")
        assert rates.mid_rate("EUR", "GBP") == Decimal("0.78") / Decimal("0.9")
        assert rates.mid_rate("USD", "USD") == 1

    def test_unknown_currency_is_a_400_naming_the_argument(self):
        with pytest.raises(InvalidInput) as error:
            rates.mid_rate("USD", "XXX")
        assert error.value.details["fields"][0]["field"] == "destinationCurrency"

    async def test_convert_rounds_minor_units_half_to_even_without_spread_or_fees(self):
        assert (
            await rates.convert(source_currency="USD", destination_currency="MXN", amount=10_000) == 175_000
        )
        assert (
            await rates.convert(source_currency="USD", destination_currency="JPY", amount=1) == 2
        )  # 1.5 -> 2
        assert (
            await rates.convert(source_currency="USD", destination_currency="JPY", amount=3) == 4
        )  # 4.5 -> 4
        # 1 ETH = 2500 USD; 0.001 ETH (10**15 wei) = 250 cents
        assert await rates.convert(source_currency="ETH", destination_currency="USD", amount=10**15) == 250
        assert await rates.convert(
            source_currency="BTC", destination_currency="USDC", amount=100_000_000
        ) == (100_000 * 10**6)
        assert await rates.convert(source_currency="EUR", destination_currency="EUR", amount=123) == 123

    async def test_cross_rates_are_exact_not_rounded_twice(self):
        # EUR -> USD is 1/0.9: 900 EUR cents are exactly 1000 USD cents, not 999.
        assert await rates.convert(source_currency="EUR", destination_currency="USD", amount=900) == 1000

    def test_stablecoins_pegged_to_usd_trade_without_spread(self):
        assert providers.RATES.get().rate("USD", "USDC").spread_bps == RATES["pegSpreadBps"] == 0
        assert providers.RATES.get().rate("USD", "MXN").spread_bps == RATES["spreadBps"] == 50

    def test_display_rate_has_twelve_significant_digits(self):
        assert rates.to_decimal(Fraction(1, 3)) == Decimal("0.333333333333")
        assert rates.to_decimal(Fraction(174125, 10_000)) == Decimal("17.4125")


class TestFeeSchedule:
    def test_fixed_fee_is_usd_converted_at_mid_and_rounded_up(self):
        spei = fees.rule_for("SPEI")
        assert (spei.fixed_usd, spei.variable_bps) == (Decimal("0.50"), 30)
        assert spei.fixed_in("USD") == 50
        assert spei.fixed_in("MXN") == 875  # 0.50 * 17.5 = 8.75
        assert spei.fixed_in("JPY") == 75
        assert fees.rule_for("SWIFT").fixed_in("BTC") == 20_000  # 20 USD at 100 000 USD/BTC, in sats

    def test_unlisted_corridors_use_the_default(self):
        assert fees.rule_for("NOWHERE").variable_bps == 30


class TestPricing:
    def test_locked_sending_usd_to_mxn(self):
        price = pricing.price(
            locked_side="SENDING",
            locked_amount=10_000,
            minor_rate=Fraction("17.4125"),
            fixed_fee=50,
            variable_bps=30,
        )
        # fees 50 + 30; (10000 - 80) * 17.4125 = 172732.0
        assert (price.sending_amount, price.fees, price.receiving_amount) == (10_000, 80, 172_732)

    def test_locked_receiving_takes_the_smallest_sufficient_sending_amount(self):
        rate = Fraction("17.4125")
        price = pricing.price(
            locked_side="RECEIVING", locked_amount=100_000, minor_rate=rate, fixed_fee=50, variable_bps=30
        )
        assert price.receiving_amount == 100_000
        assert price == pricing.price(
            locked_side="RECEIVING", locked_amount=100_000, minor_rate=rate, fixed_fee=50, variable_bps=30
        )
        one_less = price.sending_amount - 1
        fees_then = 50 + -(-one_less * 30 // 10_000)
        assert (one_less - fees_then) * rate < 100_000  # one cent less would not deliver it
        assert (price.sending_amount - price.fees) * rate >= 100_000

    def test_amounts_too_small_for_the_fees_are_refused(self):
        with pytest.raises(pricing.AmountTooSmall):
            pricing.price(
                locked_side="SENDING",
                locked_amount=50,
                minor_rate=Fraction(17),
                fixed_fee=50,
                variable_bps=30,
            )
        with pytest.raises(pricing.AmountTooSmall):  # converts to less than one satoshi
            pricing.price(
                locked_side="SENDING",
                locked_amount=1,
                minor_rate=Fraction(1, 1000),
                fixed_fee=0,
                variable_bps=0,
            )

    @pytest.mark.parametrize(
        ("source", "destination", "corridor"),
        [("USD", "MXN", "SPEI"), ("USD", "EUR", "SEPA"), ("EUR", "USD", "ACH"), ("USD", "JPY", "SWIFT"),
         ("USDC", "INR", "UPI"), ("USD", "BTC", "CRYPTO"), ("JPY", "GBP", "FASTER_PAYMENTS")],
    )  # fmt: skip
    def test_both_sides_match_the_published_rules(self, source, destination, corridor):
        generator = random.Random(f"{source}{destination}")
        rule = fees.rule_for(corridor)
        provider_rate = providers.RATES.get().rate(source, destination)
        minor_rate = rates.minor_rate(provider_rate.customer_rate, source, destination)
        for _ in range(40):
            for locked in ("SENDING", "RECEIVING"):
                amount = generator.randint(1, 10**9)
                want = expected(source, destination, corridor, locked=locked, amount=amount)
                try:
                    got = pricing.price(
                        locked_side=locked,
                        locked_amount=amount,
                        minor_rate=minor_rate,
                        fixed_fee=rule.fixed_in(source),
                        variable_bps=rule.variable_bps,
                    )
                except pricing.AmountTooSmall:
                    assert want["receiving"] <= 0
                    continue
                assert (got.sending_amount, got.receiving_amount, got.fees) == (
                    want["sending"],
                    want["receiving"],
                    want["fees"],
                ), (locked, amount)
