"""decide(card, sources, request): every rule, in its order, with no I/O (cards/decisioning.py)."""

from __future__ import annotations

import itertools

import pytest

from platpay.cards.decisioning import (
    AuthorizationRequest,
    CardSnapshot,
    Decision,
    DeclineReason,
    SourceSnapshot,
    decide,
    without,
)

CARD = CardSnapshot("Card:1", "ACTIVE", "USD")


def source(
    account_id: str, available: int, *, currency: str = "USD", status: str = "ACTIVE"
) -> SourceSnapshot:
    return SourceSnapshot(account_id, currency, status, available)


def request(amount: int = 1_000, currency: str = "USD", network: DeclineReason | None = None):
    return AuthorizationRequest(amount, currency, network)


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


def test_exhaustively_over_small_worlds() -> None:
    """Every combination of card state, request currency, and two sources' status, currency and balance
    around the amount: the decision is the first rule that applies, computed here independently."""
    amount = 100
    states = ["ACTIVE", "FROZEN", "CLOSED", "PENDING_ISSUE"]
    source_options = list(
        itertools.product(["ACTIVE", "FROZEN"], ["USD", "EUR"], [0, amount - 1, amount, amount + 1])
    )
    checked = 0
    for state, currency, network in itertools.product(states, ["USD", "EUR"], [None, *DeclineReason]):
        card = CardSnapshot("Card:1", state, "USD")
        for first, second in itertools.product(source_options, repeat=2):
            sources = (
                SourceSnapshot("A", first[1], first[0], first[2]),
                SourceSnapshot("B", second[1], second[0], second[2]),
            )
            decision = decide(card, sources, request(amount, currency, network))
            if network is not None:
                expected = Decision.decline(network)
            elif state != "ACTIVE":
                expected = Decision.decline(
                    {"FROZEN": DeclineReason.CARD_PAUSED, "CLOSED": DeclineReason.CARD_CLOSED}.get(
                        state, DeclineReason.CARD_NOT_ACTIVE
                    )
                )
            elif currency != "USD":
                expected = Decision.decline(DeclineReason.CURRENCY_MISMATCH)
            else:
                payer = next(
                    (
                        s.account_id
                        for s in sources
                        if s.status == "ACTIVE" and s.currency == "USD" and s.available >= amount
                    ),
                    None,
                )
                expected = (
                    Decision.approve(payer) if payer else Decision.decline(DeclineReason.INSUFFICIENT_FUNDS)
                )
            assert decision == expected, (state, currency, network, sources)
            checked += 1
    assert checked == 4 * 2 * 6 * 16 * 16
