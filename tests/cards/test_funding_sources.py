"""A USDB card funded by both of the cardholder's USDB accounts: the platform-managed holding account
(INTERNAL_CRYPTO) and the embedded wallet (EMBEDDED_WALLET), in that priority order. Authorization tries the
sources in order and holds on the first that covers the whole amount; both short → INSUFFICIENT_FUNDS; a
PATCH that reorders them (signed by the wallet's session, since a source is a wallet) changes which one pays;
an over-amount clearing pulls the difference from the sources in priority order, across both accounts.
Every balance is checked against the test's own arithmetic, and the ledger verifies at the end of each."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import fund, internal_account, wallet_account
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    clear,
    events,
    get_card,
    give_back,
    open_holds,
    patch,
)
from tests.support.ledger import assert_ledger_verifies
from tests.support.wallets import Wallet, signed_headers

HOLDING_FUNDS, WALLET_FUNDS = 300, 10_000  # USDB minor units


async def _balance(client, auth, customer_id: str, account_id: str) -> tuple[int, int]:
    """(available, total) of one of the customer's accounts, as the API lists it."""
    listed = (
        await client.get(
            "/customers/internal-accounts",
            auth=auth,
            params={"customerId": customer_id, "currency": "USDB"},
        )
    ).json()["data"]
    [account] = [a for a in listed if a["id"] == account_id]
    return account["balance"]["amount"], account["totalBalance"]["amount"]


@pytest.fixture
async def two_sources(client, auth, runner) -> dict[str, Any]:
    person = await approved_cardholder(client, auth)
    holding = await internal_account(client, auth, person["id"], "USDB")
    wallet = await wallet_account(client, auth, person["id"])
    assert (holding["type"], wallet["type"]) == ("INTERNAL_CRYPTO", "EMBEDDED_WALLET")
    await fund(client, auth, holding["id"], HOLDING_FUNDS)
    await fund(client, auth, wallet["id"], WALLET_FUNDS)
    card = await active_card(client, auth, runner, person["id"], [holding["id"], wallet["id"]])
    assert card["currency"] == "USDB" and card["fundingSources"] == [holding["id"], wallet["id"]]
    return {"customer": person["id"], "holding": holding, "wallet": wallet, "card": card["id"]}


async def _balances(client, auth, s: dict[str, Any]) -> tuple[tuple[int, int], tuple[int, int]]:
    return (
        await _balance(client, auth, s["customer"], s["holding"]["id"]),
        await _balance(client, auth, s["customer"], s["wallet"]["id"]),
    )


class TestTwoSources:
    async def test_the_first_source_short_approves_from_the_second_with_the_hold_there(
        self, client, auth, db, two_sources
    ) -> None:
        s = two_sources
        transaction = await approved(client, auth, s["card"], 1_000, currency="USDB")
        assert transaction["accountId"] == s["wallet"]["id"]
        assert transaction["authorizedAmount"]["amount"] == 1_000
        assert transaction["authorizedAmount"]["currency"]["code"] == "USDB"
        assert await _balances(client, auth, s) == ((300, 300), (9_000, 10_000))
        assert await open_holds(db, s["holding"]["id"]) == 0
        assert await open_holds(db, s["wallet"]["id"]) == 1_000
        # the first source is still tried first: an amount it covers is held there
        small = await approved(client, auth, s["card"], 200, currency="USDB")
        assert small["accountId"] == s["holding"]["id"]
        assert await _balances(client, auth, s) == ((100, 300), (9_000, 10_000))
        assert await open_holds(db, s["holding"]["id"]) == 200
        await assert_ledger_verifies(db)

    async def test_both_short_is_insufficient_funds_and_nothing_moves(
        self, client, auth, db, two_sources
    ) -> None:
        s = two_sources
        # neither source covers it alone (an authorization is held on one source, never split)
        response = await authorize(client, auth, s["card"], WALLET_FUNDS + 1, currency="USDB")
        assert response.status_code == 200, response.text
        declined = response.json()
        assert declined["status"] == "DECLINED" and declined["declineReason"] == "INSUFFICIENT_FUNDS"
        assert "accountId" not in declined
        assert await _balances(client, auth, s) == ((300, 300), (10_000, 10_000))
        assert await open_holds(db, s["holding"]["id"]) == await open_holds(db, s["wallet"]["id"]) == 0
        await assert_ledger_verifies(db)

    async def test_a_signed_reorder_changes_which_source_pays(self, client, auth, db, two_sources) -> None:
        s = two_sources
        wallet = Wallet(client, auth, s["wallet"])
        await wallet.email_otp_login()
        reordered = [s["wallet"]["id"], s["holding"]["id"]]
        first = await patch(client, auth, s["card"], fundingSources=reordered)
        assert first.status_code == 202, first.text  # a source is the wallet: its session must sign
        assert (await get_card(client, auth, s["card"]))["fundingSources"] == [
            s["holding"]["id"],
            s["wallet"]["id"],
        ]
        signed = await client.patch(
            f"/cards/{s['card']}",
            auth=auth,
            json={"fundingSources": reordered},
            headers=signed_headers(wallet.key, first.json()),
        )
        assert signed.status_code == 200, signed.text
        assert signed.json()["fundingSources"] == reordered
        [(_kind, data)] = await events(db, "card.funding_source_change")
        assert data["fundingSources"] == reordered
        # 200 is covered by the holding account, but the wallet is first now
        transaction = await approved(client, auth, s["card"], 200, currency="USDB")
        assert transaction["accountId"] == s["wallet"]["id"]
        assert await _balances(client, auth, s) == ((300, 300), (9_800, 10_000))
        assert await open_holds(db, s["wallet"]["id"]) == 200
        await assert_ledger_verifies(db)

    async def test_an_over_clearing_pulls_the_difference_in_priority_order_across_both(
        self, client, auth, db, two_sources
    ) -> None:
        s = two_sources
        # held on the wallet (the holding account is short); cleared 200 over: the first source in
        # priority order that covers the difference pays it, here the holding account
        first = await approved(client, auth, s["card"], 1_000, currency="USDB")
        assert first["accountId"] == s["wallet"]["id"]
        settled = (await clear(client, auth, s["card"], first["id"], 1_200)).json()
        assert settled["status"] == "SETTLED" and settled["settledAmount"]["amount"] == 1_200
        assert settled["pullSummary"] == {"count": 2, "totalAmount": 1_200, "pendingCount": 0}
        assert await _balances(client, auth, s) == ((100, 100), (9_000, 9_000))
        # a difference the holding account (100) cannot cover comes from the next source, the wallet
        second = await approved(client, auth, s["card"], 1_000, currency="USDB")
        assert second["accountId"] == s["wallet"]["id"]
        over = (await clear(client, auth, s["card"], second["id"], 1_500)).json()
        assert over["status"] == "SETTLED" and over["pullSummary"]["totalAmount"] == 1_500
        assert await _balances(client, auth, s) == ((100, 100), (7_500, 7_500))
        assert await open_holds(db, s["holding"]["id"]) == await open_holds(db, s["wallet"]["id"]) == 0
        await assert_ledger_verifies(db)


class TestReturnsGoBackToWhoPaid:
    async def test_a_return_is_split_between_the_sources_that_paid_the_last_payer_first(
        self, client, auth, db, two_sources
    ) -> None:
        s = two_sources
        # 1,000 held on the wallet, cleared 1,200: the holding account paid the 200 over
        paid = await approved(client, auth, s["card"], 1_000, currency="USDB")
        assert paid["accountId"] == s["wallet"]["id"]
        await clear(client, auth, s["card"], paid["id"], 1_200)
        assert await _balances(client, auth, s) == ((100, 100), (9_000, 9_000))
        # a partial return reverses the last take first: the holding account's pull
        partial = await give_back(client, auth, s["card"], paid["id"], 150)
        assert partial.status_code == 200, partial.text
        assert await _balances(client, auth, s) == ((250, 250), (9_000, 9_000))
        # the rest: 50 more to the holding account (its 200 is back), 1,000 to the wallet
        rest = await give_back(client, auth, s["card"], paid["id"], 1_050)
        assert rest.status_code == 200 and rest.json()["status"] == "REFUNDED", rest.text
        assert await _balances(client, auth, s) == ((300, 300), (10_000, 10_000))
        refunds = [(r["accountId"], r["amount"]["amount"]) for r in rest.json()["refunds"]]
        assert refunds == [(s["holding"]["id"], 150), (s["holding"]["id"], 50), (s["wallet"]["id"], 1_000)]
        assert rest.json()["refundSummary"]["totalAmount"] == 1_200
        await assert_ledger_verifies(db)

    async def test_what_the_operator_covered_goes_back_to_the_operator_not_the_customer(
        self, client, auth, db, two_sources
    ) -> None:
        s = two_sources
        paid = await approved(client, auth, s["card"], 100, currency="USDB")
        assert paid["accountId"] == s["holding"]["id"]
        # 20,000 over: no source covers it, the operator's loss account pays the network (EXCEPTION)
        lost = (await clear(client, auth, s["card"], paid["id"], 20_100)).json()
        assert lost["status"] == "EXCEPTION"
        # a later presentment of 10 is pulled from the holding account and settles the transaction
        settled = (await clear(client, auth, s["card"], paid["id"], 10)).json()
        assert settled["status"] == "SETTLED" and settled["settledAmount"]["amount"] == 20_110
        assert await _balances(client, auth, s) == ((190, 190), (10_000, 10_000))
        # 20,050 back: the operator's 20,000 first, then 50 to the customer (who paid 110)
        back = await give_back(client, auth, s["card"], paid["id"], 20_050)
        assert back.status_code == 200, back.text
        assert await _balances(client, auth, s) == ((240, 240), (10_000, 10_000))
        credited = {r["accountId"]: r["amount"]["amount"] for r in back.json()["refunds"]}
        assert credited.pop(s["holding"]["id"]) == 50 and list(credited.values()) == [20_000]
        rest = await give_back(client, auth, s["card"], paid["id"], 60)
        assert rest.json()["status"] == "REFUNDED"
        assert await _balances(client, auth, s) == ((300, 300), (10_000, 10_000))
        await assert_ledger_verifies(db)
