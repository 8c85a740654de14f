"""decide(card, sources, request): every rule, in its order, with no I/O (cards/decisioning.py): the network's
verdict, the card's state, the currency, the card's maxSpendPerTransaction, the sources — for a purchase, a
balance inquiry and a credit, declinable or an advice; the request's currency converted to the card's
(in_card_currency, kit/money.rescale) for every pair of the catalog."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from platpay.cards.decisioning import (
    AuthorizationRequest,
    CardSnapshot,
    Decision,
    DeclineReason,
    MessageKind,
    Purpose,
    SourceSnapshot,
    decide,
    in_card_currency,
    without,
)
from platpay.kit import currencies
from platpay.kit.money import rescale

CARD = CardSnapshot("Card:1", "ACTIVE", "USD")


def source(
    account_id: str, available: int, *, currency: str = "USD", status: str = "ACTIVE"
) -> SourceSnapshot:
    return SourceSnapshot(account_id, currency, status, available)


def request(
    amount: int = 1_000,
    currency: str = "USD",
    network: DeclineReason | None = None,
    purpose: Purpose = Purpose.PURCHASE,
    advice: bool = False,
):
    return AuthorizationRequest(amount, currency, network, purpose=purpose, advice=advice)


def limited(limit: int | None, *, state: str = "ACTIVE", currency: str = "USD") -> CardSnapshot:
    return CardSnapshot("Card:1", state, currency, limit)


class TestTheCard:
    @pytest.mark.parametrize(
        ("state", "reason"),
        [
            ("FROZEN", DeclineReason.CARD_PAUSED),
            ("CLOSED", DeclineReason.CARD_CLOSED),
            ("PENDING_ISSUE", DeclineReason.CARD_NOT_ACTIVE),
        ],
    )
    def test_a_card_that_is_not_active_declines_whatever_the_funds(self, state, reason) -> None:
        card = CardSnapshot("Card:1", state, "USD")
        assert decide(card, (source("A", 10**9),), request()) == Decision.decline(reason)

    def test_an_active_card_with_funds_approves_on_its_source(self) -> None:
        assert decide(CARD, (source("A", 1_000),), request(1_000)) == Decision.approve("A")

    def test_the_networks_own_decline_comes_first(self) -> None:
        for reason in DeclineReason:
            frozen = CardSnapshot("Card:1", "FROZEN", "USD")
            assert decide(frozen, (), request(network=reason)) == Decision.decline(reason)

    def test_a_currency_other_than_the_cards_declines(self) -> None:
        decision = decide(CARD, (source("A", 10**9),), request(currency="EUR"))
        assert decision == Decision.decline(DeclineReason.CURRENCY_MISMATCH)

    def test_the_card_check_comes_before_the_currency_check(self) -> None:
        frozen = CardSnapshot("Card:1", "FROZEN", "USD")
        assert decide(frozen, (), request(currency="EUR")).decline_reason == DeclineReason.CARD_PAUSED


class TestSourcesInPriorityOrder:
    def test_the_first_source_that_covers_the_amount_pays(self) -> None:
        sources = (source("A", 999), source("B", 1_000), source("C", 5_000))
        assert decide(CARD, sources, request(1_000)) == Decision.approve("B")

    def test_an_exact_balance_covers(self) -> None:
        assert decide(CARD, (source("A", 1_000),), request(1_000)).account_id == "A"

    def test_none_covering_declines_insufficient_funds(self) -> None:
        sources = (source("A", 999), source("B", 0))
        assert decide(CARD, sources, request(1_000)) == Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)

    def test_no_source_at_all_declines_insufficient_funds(self) -> None:
        assert decide(CARD, (), request()).decline_reason == DeclineReason.INSUFFICIENT_FUNDS

    @pytest.mark.parametrize("status", ["FROZEN", "CLOSED", "PENDING"])
    def test_an_account_that_is_not_active_is_skipped(self, status) -> None:
        sources = (source("A", 10**6, status=status), source("B", 10**6))
        assert decide(CARD, sources, request()).account_id == "B"

    def test_a_source_in_another_currency_is_skipped(self) -> None:
        sources = (source("A", 10**6, currency="EUR"), source("B", 10**6))
        assert decide(CARD, sources, request()).account_id == "B"

    def test_a_non_positive_amount_never_approves(self) -> None:
        assert not decide(CARD, (source("A", 10**6),), request(0)).approved

    def test_a_refused_hold_moves_on_to_the_next_source(self) -> None:
        sources = (source("A", 5_000), source("B", 5_000))
        first = decide(CARD, sources, request(1_000))
        assert first.account_id == "A"
        assert decide(CARD, without(sources, "A"), request(1_000)).account_id == "B"
        spent = without(without(sources, "A"), "B")
        assert decide(CARD, spent, request(1_000)).decline_reason == DeclineReason.INSUFFICIENT_FUNDS


class TestMaxSpendPerTransaction:
    def test_exactly_the_limit_is_allowed_and_one_unit_more_declines(self) -> None:
        rich = (source("A", 10**9),)
        assert decide(limited(5_000), rich, request(5_000)) == Decision.approve("A")
        assert decide(limited(5_000), rich, request(5_001)) == Decision.decline(
            DeclineReason.TRANSACTION_SIZE_LIMIT_EXCEEDED
        )

    def test_no_limit_declines_nothing(self) -> None:
        assert decide(limited(None), (source("A", 10**15),), request(10**15)).approved

    def test_the_limit_is_in_the_cards_currency_after_the_conversion(self) -> None:
        usdb = limited(12_500_000, currency="USDB")  # 12.50 USDB
        rich = (source("A", 10**12, currency="USDB"),)
        assert decide(usdb, rich, request(1_250, "USD")).approved  # USD 12.50 = 12.500000 USDB
        assert decide(usdb, rich, request(1_251, "USD")).decline_reason == "TRANSACTION_SIZE_LIMIT_EXCEEDED"

    def test_the_limit_comes_before_the_funds(self) -> None:
        assert decide(limited(10), (), request(11)).decline_reason == "TRANSACTION_SIZE_LIMIT_EXCEEDED"

    def test_the_card_and_the_currency_come_before_the_limit(self) -> None:
        frozen = limited(10, state="FROZEN")
        assert decide(frozen, (), request(11)).decline_reason == DeclineReason.CARD_PAUSED
        assert decide(limited(10), (), request(11, "EUR")).decline_reason == DeclineReason.CURRENCY_MISMATCH

    @pytest.mark.parametrize("purpose", [Purpose.INQUIRY, Purpose.CREDIT])
    def test_a_limit_bounds_spending_only(self, purpose) -> None:
        decision = decide(limited(10), (source("A", 0),), request(10**6, purpose=purpose))
        assert decision == Decision.approve("A")


class TestWhatTheNetworkAsks:
    def test_every_kind_of_message_says_what_it_asks(self) -> None:
        assert {kind: (kind.purpose, kind.advice, kind.single_message) for kind in MessageKind} == {
            MessageKind.AUTHORIZATION: (Purpose.PURCHASE, False, False),
            MessageKind.FINANCIAL_AUTHORIZATION: (Purpose.PURCHASE, False, True),
            MessageKind.BALANCE_INQUIRY: (Purpose.INQUIRY, False, False),
            MessageKind.CREDIT_AUTHORIZATION: (Purpose.CREDIT, False, False),
            MessageKind.CREDIT_AUTHORIZATION_ADVICE: (Purpose.CREDIT, True, False),
            MessageKind.FINANCIAL_CREDIT_AUTHORIZATION: (Purpose.CREDIT, False, True),
        }

    def test_a_balance_inquiry_needs_an_active_source_not_money(self) -> None:
        inquiry = request(0, purpose=Purpose.INQUIRY)
        assert decide(CARD, (source("A", 0, status="FROZEN"), source("B", 0)), inquiry) == Decision.approve(
            "B"
        )
        assert decide(CARD, (), inquiry) == Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)

    def test_a_credit_goes_to_the_first_active_source_whatever_it_holds(self) -> None:
        credit = request(10**9, purpose=Purpose.CREDIT)
        assert decide(CARD, (source("A", 0, currency="EUR"), source("B", 0)), credit) == Decision.approve("B")
        assert decide(CARD, (source("A", 5, status="CLOSED"),), credit) == Decision.decline(
            DeclineReason.NO_ACTIVE_FUNDING_SOURCE
        )

    def test_a_credit_is_declined_like_an_authorization_for_the_network_and_the_card(self) -> None:
        credit = request(100, network=DeclineReason.CARD_PAUSED, purpose=Purpose.CREDIT)
        assert decide(CARD, (source("A", 0),), credit).decline_reason == DeclineReason.CARD_PAUSED
        closed = CardSnapshot("Card:1", "CLOSED", "USD")
        assert decide(closed, (source("A", 0),), request(100, purpose=Purpose.CREDIT)).decline_reason == (
            DeclineReason.CARD_CLOSED
        )

    def test_an_advice_is_recorded_whatever_the_network_said_and_the_cards_state(self) -> None:
        advice = request(100, network=DeclineReason.INSUFFICIENT_FUNDS, purpose=Purpose.CREDIT, advice=True)
        frozen = CardSnapshot("Card:1", "FROZEN", "USD")
        assert decide(frozen, (source("A", 0),), advice) == Decision.approve("A")

    def test_an_advice_with_nowhere_to_go_or_no_conversion_is_declined(self) -> None:
        advice = request(100, purpose=Purpose.CREDIT, advice=True)
        assert decide(CARD, (), advice).decline_reason == DeclineReason.NO_ACTIVE_FUNDING_SOURCE
        in_euros = request(100, "EUR", purpose=Purpose.CREDIT, advice=True)
        assert decide(CARD, (source("A", 0),), in_euros).decline_reason == DeclineReason.CURRENCY_MISMATCH


def expected_decision(
    card: CardSnapshot, sources: tuple[SourceSnapshot, ...], asked: AuthorizationRequest
) -> Decision:
    """The rules, stated here independently of decisioning.py (card and sources in USD, no conversion)."""
    if asked.network_decline is not None and not asked.advice:
        return Decision.decline(asked.network_decline)
    card_declines = {
        "FROZEN": DeclineReason.CARD_PAUSED,
        "CLOSED": DeclineReason.CARD_CLOSED,
        "PENDING_ISSUE": DeclineReason.CARD_NOT_ACTIVE,
    }
    if card.state in card_declines and not asked.advice:
        return Decision.decline(card_declines[card.state])
    if asked.currency != card.currency:
        return Decision.decline(DeclineReason.CURRENCY_MISMATCH)
    usable = [s for s in sources if s.status == "ACTIVE" and s.currency == card.currency]
    if asked.purpose == Purpose.PURCHASE:
        limit = card.max_spend_per_transaction
        if limit is not None and asked.amount > limit:
            return Decision.decline(DeclineReason.TRANSACTION_SIZE_LIMIT_EXCEEDED)
        payer = next((s.account_id for s in usable if s.available >= asked.amount), None)
        return Decision.approve(payer) if payer else Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)
    if usable:
        return Decision.approve(usable[0].account_id)
    if asked.purpose == Purpose.INQUIRY:
        return Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)
    return Decision.decline(DeclineReason.NO_ACTIVE_FUNDING_SOURCE)


def test_exhaustively_over_small_worlds() -> None:
    """Every combination of card state, maxSpendPerTransaction around the amount, request currency, the
    network's verdict, what is asked (a purchase, an inquiry, a credit; declinable or an advice), and two
    sources' status, currency and balance around the amount: the decision is the first rule that applies,
    computed here independently."""
    amount = 100
    states = ["ACTIVE", "FROZEN", "CLOSED", "PENDING_ISSUE"]
    limits = [None, amount - 1, amount, amount + 1]
    asks = [
        (Purpose.PURCHASE, False),
        (Purpose.INQUIRY, False),
        (Purpose.CREDIT, False),
        (Purpose.CREDIT, True),
    ]
    source_options = list(
        itertools.product(["ACTIVE", "FROZEN"], ["USD", "EUR"], [0, amount - 1, amount, amount + 1])
    )
    checked = 0
    worlds = itertools.product(states, limits, ["USD", "EUR"], [None, *DeclineReason], asks)
    for state, limit, currency, network, (purpose, advice) in worlds:
        card = CardSnapshot("Card:1", state, "USD", limit)
        asked = request(0 if purpose == Purpose.INQUIRY else amount, currency, network, purpose, advice)
        for first, second in itertools.product(source_options, repeat=2):
            sources = (
                SourceSnapshot("A", first[1], first[0], first[2]),
                SourceSnapshot("B", second[1], second[0], second[2]),
            )
            assert decide(card, sources, asked) == expected_decision(card, sources, asked), (
                card,
                asked,
                sources,
            )
            checked += 1
    assert checked == 4 * 4 * 2 * (1 + len(DeclineReason)) * 4 * 16 * 16


# The rule as this test states it, independently of kit/currencies: a stablecoin card takes its own currency
# and the fiat currency its coin tracks; nothing else converts.
TRACKED = {"USDB": "USD", "USDC": "USD", "USDT": "USD"}
CATALOG = sorted(currencies.catalog())


def expected_card_units(card_currency: str, amount: int, currency: str) -> int | None:
    if currency == card_currency:
        return amount
    if TRACKED.get(card_currency) != currency:
        return None
    card_decimals = currencies.catalog()[card_currency].decimals
    request_decimals = currencies.catalog()[currency].decimals
    scale = 10 ** abs(card_decimals - request_decimals)
    if card_decimals >= request_decimals:
        return amount * scale
    return (amount + scale - 1) // scale  # rounded up: a hold never covers less than was asked


class TestTheRequestsCurrency:
    def test_a_usd_authorization_on_a_usdb_card_is_held_one_for_one_at_six_decimals(self) -> None:
        usdb = CardSnapshot("Card:1", "ACTIVE", "USDB")
        assert in_card_currency("USDB", 1_250, "USD") == 12_500_000  # USD 12.50 = 12.500000 USDB
        assert decide(usdb, (source("A", 12_500_000, currency="USDB"),), request(1_250)) == Decision.approve(
            "A"
        )
        short = (source("A", 12_499_999, currency="USDB"),)
        assert decide(usdb, short, request(1_250)).decline_reason == DeclineReason.INSUFFICIENT_FUNDS

    def test_a_usd_card_takes_no_stablecoin_and_a_usdb_card_no_other_fiat(self) -> None:
        usd = CardSnapshot("Card:1", "ACTIVE", "USD")
        usdb = CardSnapshot("Card:1", "ACTIVE", "USDB")
        rich = (source("A", 10**15, currency="USD"), source("B", 10**15, currency="USDB"))
        for card, currency in [(usd, "USDB"), (usd, "USDC"), (usdb, "EUR"), (usdb, "USDC")]:
            decision = decide(card, rich, request(100, currency))
            assert decision == Decision.decline(DeclineReason.CURRENCY_MISMATCH), (card, currency)

    def test_the_catalog_knows_every_tracked_pair(self) -> None:
        for coin, fiat in TRACKED.items():
            assert currencies.tracked_fiat(coin) == fiat
            assert currencies.catalog()[coin].kind == "CRYPTO" and currencies.catalog()[fiat].kind == "FIAT"
        assert {code for code in CATALOG if currencies.tracked_fiat(code)} == set(TRACKED)

    @hypothesis_settings(max_examples=400, deadline=None, derandomize=True, database=None)
    @given(
        card_currency=st.sampled_from(CATALOG),
        currency=st.sampled_from(CATALOG),
        amount=st.integers(1, 9_000_000_000_000_000),
    )
    def test_every_card_and_request_currency_converts_exactly_or_not_at_all(
        self, card_currency, currency, amount
    ) -> None:
        assert in_card_currency(card_currency, amount, currency) == expected_card_units(
            card_currency, amount, currency
        )

    def test_every_pair_of_the_catalog_is_decided_by_the_rule(self) -> None:
        for card_currency, currency in itertools.product(CATALOG, repeat=2):
            card = CardSnapshot("Card:1", "ACTIVE", card_currency)
            held = expected_card_units(card_currency, 1_234, currency)
            exact = (source("A", held or 0, currency=card_currency),)
            decision = decide(card, exact, request(1_234, currency))
            if held is None:
                assert decision == Decision.decline(DeclineReason.CURRENCY_MISMATCH)
            else:
                assert decision == Decision.approve("A"), (card_currency, currency)
                short = (source("A", held - 1, currency=card_currency),)
                assert decide(card, short, request(1_234, currency)).decline_reason == "INSUFFICIENT_FUNDS"


class TestRescale:
    @hypothesis_settings(max_examples=500, deadline=None, derandomize=True, database=None)
    @given(
        minor=st.integers(0, 10**20),
        from_decimals=st.integers(0, 18),
        to_decimals=st.integers(0, 18),
        round_up=st.booleans(),
    )
    def test_the_value_is_kept_or_rounded_the_way_asked(self, minor, from_decimals, to_decimals, round_up):
        scaled = rescale(minor, from_decimals=from_decimals, to_decimals=to_decimals, round_up=round_up)
        # compare values in a common unit: 10^-36
        value, kept = minor * 10 ** (36 - from_decimals), scaled * 10 ** (36 - to_decimals)
        unit = 10 ** (36 - to_decimals)
        if to_decimals >= from_decimals:
            assert kept == value
        elif round_up:
            assert value <= kept < value + unit
        else:
            assert value - unit < kept <= value

    def test_scaling_down_rounds_up_a_lost_fraction(self) -> None:
        assert rescale(1_250_001, from_decimals=6, to_decimals=2) == 126
        assert rescale(1_250_001, from_decimals=6, to_decimals=2, round_up=False) == 125
        assert rescale(1_250_000, from_decimals=6, to_decimals=2) == 125
        assert rescale(1_250, from_decimals=2, to_decimals=6) == 12_500_000
