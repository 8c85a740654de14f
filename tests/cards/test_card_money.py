"""Card money through the API: authorization holds (available ↓, total unchanged), declines recorded,
partial / full / over clearings, expiry, the post-hoc pull and the operator's loss, returns with CardRefunds,
a card's closing, late presentment, the sandbox's descriptor suffixes, and the reads of card transactions.
Every balance is checked against the test's own arithmetic; the conftest verifies the ledger after each."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from platpay.kit import clock
from tests.factories import fund
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    balance,
    clear,
    events,
    funded_account,
    give_back,
    open_holds,
    patch,
)


@pytest.fixture
async def setup(client, auth, runner):
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    return {"customer": person["id"], "account": account["id"], "card": card["id"]}


async def _held_equals_open_holds(client, auth, db, setup) -> None:
    available, total = await balance(client, auth, setup["customer"])
    assert total - available == await open_holds(db, setup["account"])
    assert available >= 0


class TestAuthorization:
    async def test_an_approval_holds_on_the_source(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 2_500)
        assert transaction["accountId"] == setup["account"] and transaction["cardId"] == setup["card"]
        assert transaction["authorizedAmount"]["amount"] == 2_500
        assert transaction["authorizedAmount"]["currency"]["code"] == "USD"
        assert transaction["pullSummary"] == {"count": 1, "totalAmount": 2_500, "pendingCount": 0}
        assert transaction["settlementSummary"] == {"count": 0, "totalAmount": 0}
        assert transaction["refundSummary"] == {"count": 0, "totalAmount": 0}
        assert transaction["merchant"] == {"descriptor": "BLUE BOTTLE SF"}
        assert await balance(client, auth, setup["customer"]) == (7_500, 10_000)
        assert await open_holds(db, setup["account"]) == 2_500
        [(kind, data)] = await events(db, "CARD_TRANSACTION.")
        assert kind == "CARD_TRANSACTION.AUTHORIZED" and data == transaction

    async def test_a_decline_is_recorded_with_its_reason_and_moves_nothing(
        self, client, auth, db, setup
    ) -> None:
        response = await authorize(client, auth, setup["card"], 10_001)
        assert response.status_code == 200, response.text
        declined = response.json()
        assert declined["status"] == "DECLINED" and declined["declineReason"] == "INSUFFICIENT_FUNDS"
        assert "accountId" not in declined
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        assert [kind for kind, _ in await events(db, "CARD_TRANSACTION.")] == ["CARD_TRANSACTION.DECLINED"]

    @pytest.mark.parametrize(
        ("descriptor", "reason"), [("SHOP-002", "INSUFFICIENT_FUNDS"), ("SHOP-003", "CARD_PAUSED")]
    )
    async def test_the_sandbox_descriptor_declines(self, client, auth, setup, descriptor, reason) -> None:
        declined = (await authorize(client, auth, setup["card"], 100, descriptor=descriptor)).json()
        assert declined["status"] == "DECLINED" and declined["declineReason"] == reason
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)

    async def test_a_frozen_card_declines_card_paused_and_resumes_when_unfrozen(
        self, client, auth, setup
    ) -> None:
        await patch(client, auth, setup["card"], state="FROZEN")
        declined = (await authorize(client, auth, setup["card"], 100)).json()
        assert declined["declineReason"] == "CARD_PAUSED"
        await patch(client, auth, setup["card"], state="ACTIVE")
        await approved(client, auth, setup["card"], 100)

    async def test_another_currency_declines(self, client, auth, setup) -> None:
        declined = (await authorize(client, auth, setup["card"], 100, currency="EUR")).json()
        assert declined["declineReason"] == "CURRENCY_MISMATCH"

    async def test_holds_add_up_until_the_money_runs_out(self, client, auth, db, setup) -> None:
        for _ in range(4):
            await approved(client, auth, setup["card"], 2_500)
        assert (await authorize(client, auth, setup["card"], 1)).json()[
            "declineReason"
        ] == "INSUFFICIENT_FUNDS"
        assert await balance(client, auth, setup["customer"]) == (0, 10_000)
        await _held_equals_open_holds(client, auth, db, setup)

    async def test_delayed_pull_is_pending_until_confirmed(self, client, auth, runner, db, setup) -> None:
        clock.freeze()
        transaction = await approved(client, auth, setup["card"], 300, descriptor="HOTEL-005")
        assert transaction["pullSummary"]["pendingCount"] == 1
        clock.advance(timedelta(seconds=31))
        await runner.run_until_idle()
        confirmed = (await client.get(f"/card-transactions/{transaction['id']}", auth=auth)).json()
        assert confirmed["pullSummary"]["pendingCount"] == 0 and confirmed["status"] == "AUTHORIZED"
        assert [k for k, _ in await events(db, "CARD_TRANSACTION.")][-1] == "CARD_TRANSACTION.UPDATED"

    async def test_a_failed_pull_confirmation_is_an_exception_that_took_nothing(
        self, client, auth, setup
    ) -> None:
        failed = (await authorize(client, auth, setup["card"], 300, descriptor="GAS-006")).json()
        assert failed["status"] == "EXCEPTION"
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)

    async def test_production_credentials_get_404(self, client, platform, setup) -> None:
        response = await authorize(client, platform["production"], setup["card"], 100)
        assert response.status_code == 404


class TestClearing:
    async def test_partial_then_the_rest(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 3_000)
        first = (await clear(client, auth, setup["card"], transaction["id"], 1_000)).json()
        assert first["status"] == "PARTIALLY_SETTLED" and first["settledAmount"]["amount"] == 1_000
        assert await balance(client, auth, setup["customer"]) == (7_000, 9_000)
        await _held_equals_open_holds(client, auth, db, setup)
        second = (await clear(client, auth, setup["card"], transaction["id"], 2_000)).json()
        assert second["status"] == "SETTLED" and second["settlementSummary"] == {
            "count": 2,
            "totalAmount": 3_000,
        }
        assert await balance(client, auth, setup["customer"]) == (7_000, 7_000)
        assert await open_holds(db, setup["account"]) == 0

    async def test_a_partial_clearing_then_expiry_releases_the_rest(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 3_000)
        await clear(client, auth, setup["card"], transaction["id"], 1_200)
        expired = (await clear(client, auth, setup["card"], transaction["id"], 0)).json()
        assert expired["status"] == "SETTLED" and expired["settledAmount"]["amount"] == 1_200
        # what went back to the source was never pulled
        assert expired["pullSummary"] == {"count": 1, "totalAmount": 1_200, "pendingCount": 0}
        assert await balance(client, auth, setup["customer"]) == (8_800, 8_800)

    async def test_zero_is_the_authorizations_expiry(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 3_000)
        expired = (await clear(client, auth, setup["card"], transaction["id"], 0)).json()
        assert expired["status"] == "EXPIRED" and "settledAmount" not in expired
        assert expired["pullSummary"] == {"count": 1, "totalAmount": 0, "pendingCount": 0}
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        again = await clear(client, auth, setup["card"], transaction["id"], 0)
        assert again.status_code == 409

    async def test_an_over_clearing_pulls_the_difference(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 2_000)
        settled = (await clear(client, auth, setup["card"], transaction["id"], 2_400)).json()
        assert settled["status"] == "SETTLED" and settled["settledAmount"]["amount"] == 2_400
        assert settled["pullSummary"] == {"count": 2, "totalAmount": 2_400, "pendingCount": 0}
        assert await balance(client, auth, setup["customer"]) == (7_600, 7_600)

    async def test_an_uncovered_pull_is_an_exception_and_the_operators_loss(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 9_000)
        exception = (await clear(client, auth, setup["card"], transaction["id"], 12_000)).json()
        assert exception["status"] == "EXCEPTION" and exception["settledAmount"]["amount"] == 12_000
        # the hold paid 9,000; the 3,000 more could not be pulled (1,000 available): the operator pays
        assert await balance(client, auth, setup["customer"]) == (1_000, 1_000)
        async with db.read() as session:
            loss = await session.scalar(text("SELECT available FROM ledger_accounts WHERE kind = 'LOSS'"))
        assert loss == -3_000

    async def test_clearing_a_declined_transaction_is_a_conflict(self, client, auth, setup) -> None:
        declined = (await authorize(client, auth, setup["card"], 10**6)).json()
        response = await clear(client, auth, setup["card"], declined["id"], 10)
        assert response.status_code == 409

    async def test_an_unknown_transaction_is_named(self, client, auth, setup) -> None:
        response = await clear(client, auth, setup["card"], "CardTransaction:nope", 10)
        assert (
            response.status_code == 400
            and response.json()["details"]["fields"][0]["field"] == "cardTransactionId"
        )
        response = await clear(client, auth, "Card:nope", "CardTransaction:nope", 10)
        assert response.status_code == 404


class TestReturns:
    async def test_partial_then_full_return(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 4_000)
        await clear(client, auth, setup["card"], transaction["id"], 4_000)
        partial = (await give_back(client, auth, setup["card"], transaction["id"], 1_500)).json()
        assert partial["status"] == "SETTLED" and partial["refundedAmount"]["amount"] == 1_500
        assert partial["refundSummary"] == {"count": 1, "totalAmount": 1_500}
        assert [r["amount"]["amount"] for r in partial["refunds"]] == [1_500]
        assert await balance(client, auth, setup["customer"]) == (7_500, 7_500)
        too_much = await give_back(client, auth, setup["card"], transaction["id"], 2_501)
        assert too_much.status_code == 400
        full = (await give_back(client, auth, setup["card"], transaction["id"], 2_500)).json()
        assert full["status"] == "REFUNDED" and full["refundSummary"] == {"count": 2, "totalAmount": 4_000}
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        kinds = [k for k, _ in await events(db, "CARD_TRANSACTION.")]
        assert kinds == [
            "CARD_TRANSACTION.AUTHORIZED", "CARD_TRANSACTION.SETTLED", "CARD_TRANSACTION.UPDATED",
            "CARD_TRANSACTION.REFUNDED",
        ]  # fmt: skip
        assert (await give_back(client, auth, setup["card"], transaction["id"], 1)).status_code == 409

    async def test_an_unsettled_transaction_takes_no_return(self, client, auth, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 4_000)
        assert (await give_back(client, auth, setup["card"], transaction["id"], 1)).status_code == 409


class TestClose:
    async def test_closing_reconciles_pending_authorizations_and_late_presentment_is_force_posted(
        self, client, auth, db, setup
    ) -> None:
        pending = await approved(client, auth, setup["card"], 3_000)
        partly = await approved(client, auth, setup["card"], 2_000)
        await clear(client, auth, setup["card"], partly["id"], 500)
        settled = await approved(client, auth, setup["card"], 1_000)
        await clear(client, auth, setup["card"], settled["id"], 1_000)
        assert (await patch(client, auth, setup["card"], state="CLOSED")).status_code == 200
        statuses = {
            t["id"]: t["status"]
            for t in (await client.get(f"/cards/{setup['card']}/transactions", auth=auth)).json()["data"]
        }
        assert statuses == {pending["id"]: "EXPIRED", partly["id"]: "SETTLED", settled["id"]: "SETTLED"}
        assert await balance(client, auth, setup["customer"]) == (8_500, 8_500)
        assert await open_holds(db, setup["account"]) == 0
        # a clearing arriving after close: force-posted from the former source
        late = (await clear(client, auth, setup["card"], pending["id"], 700)).json()
        assert late["status"] == "SETTLED" and late["settledAmount"]["amount"] == 700
        assert await balance(client, auth, setup["customer"]) == (7_800, 7_800)
        # a refund in flight still completes; new authorizations decline
        returned = (await give_back(client, auth, setup["card"], settled["id"], 1_000)).json()
        assert returned["status"] == "REFUNDED"
        assert await balance(client, auth, setup["customer"]) == (8_800, 8_800)
        assert (await authorize(client, auth, setup["card"], 1)).json()["declineReason"] == "CARD_CLOSED"
        assert (await client.get(f"/cards/{setup['card']}", auth=auth)).json()["state"] == "CLOSED"

    async def test_a_late_presentment_the_source_cannot_cover_is_the_operators_loss(
        self, client, auth, db, setup
    ) -> None:
        pending = await approved(client, auth, setup["card"], 3_000)
        await patch(client, auth, setup["card"], state="CLOSED")
        late = (await clear(client, auth, setup["card"], pending["id"], 20_000)).json()
        assert late["status"] == "EXCEPTION"
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)


class TestReads:
    async def test_card_transactions_are_listed_filtered_and_found(self, client, auth, setup) -> None:
        first = await approved(client, auth, setup["card"], 100)
        declined = (await authorize(client, auth, setup["card"], 10**6)).json()
        await fund(client, auth, setup["account"], 1)
        listed = (await client.get(f"/cards/{setup['card']}/transactions", auth=auth)).json()
        assert [t["id"] for t in listed["data"]] == [declined["id"], first["id"]] and listed[
            "totalCount"
        ] == 2
        only = (
            await client.get(f"/cards/{setup['card']}/transactions", auth=auth, params={"status": "DECLINED"})
        ).json()
        assert [t["id"] for t in only["data"]] == [declined["id"]]
        by_account = (
            await client.get("/card-transactions", auth=auth, params={"accountId": setup["account"]})
        ).json()
        assert [t["id"] for t in by_account["data"]] == [first["id"]]
        assert (await client.get(f"/card-transactions/{first['id']}", auth=auth)).json() == first
        assert (await client.get("/card-transactions/CardTransaction:nope", auth=auth)).status_code == 404
        assert (await client.get("/cards/Card:nope/transactions", auth=auth)).status_code == 404
