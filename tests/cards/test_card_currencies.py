"""The currency an authorization is sent in (the network may send another currency than the card's). A USDB card (6 decimals) takes authorizations in
USD (2 decimals), the fiat currency USDB tracks, one for one: USD 12.50 (1250) holds 12.500000 USDB
(12_500_000), exactly; the authorization's clearings (partial, full, over, expiry, after close) and returns are
sent in USD too and converted the same way. Any other currency declines CURRENCY_MISMATCH. Every card
transaction records what the network asked (`requestedAmount`, in its currency) beside what was held
(`authorizedAmount`, in the card's); a decline never shows the request's number in the card's units.
Migration 0015 backfills rows from before it (requested = authorized, in the card's currency)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from alembic import command

from platpay.cards.schemas import MAX_AMOUNT
from platpay.db import migrate
from tests.factories import balances
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    clear,
    events,
    funded_account,
    give_back,
    open_holds,
    patch,
)

FUNDS = 100_000_000  # 100 USDB
SCALE = 10**4  # USD cents → USDB micro-units


def usd(amount: int) -> dict[str, Any]:
    return {"amount": amount, "currency": {"code": "USD", "name": "US Dollar", "symbol": "$", "decimals": 2}}


def usdb(amount: int) -> dict[str, Any]:
    return {
        "amount": amount,
        "currency": {"code": "USDB", "name": "USDB (Spark stablecoin)", "symbol": "USDB", "decimals": 6},
    }


@pytest.fixture
async def setup(client, auth, runner) -> dict[str, str]:
    """A USDB card funded by the cardholder's USDB holding account (100 USDB)."""
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], FUNDS, currency="USDB")
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    assert card["currency"] == "USDB"
    return {"customer": person["id"], "account": account["id"], "card": card["id"]}


async def _usdb_balance(client, auth, setup) -> tuple[int, int]:
    return await balances(client, auth, setup["customer"], "USDB")


async def _card_transactions(client, auth, setup) -> list[dict[str, Any]]:
    return (await client.get(f"/cards/{setup['card']}/transactions", auth=auth)).json()["data"]


class TestAUsdAuthorizationOnAUsdbCard:
    async def test_is_approved_with_the_exact_hold_and_records_the_request(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 1_250, currency="USD")
        assert transaction["requestedAmount"] == usd(1_250)
        assert transaction["authorizedAmount"] == usdb(12_500_000)
        assert transaction["pullSummary"] == {"count": 1, "totalAmount": 12_500_000, "pendingCount": 0}
        assert transaction["accountId"] == setup["account"]
        assert await _usdb_balance(client, auth, setup) == (FUNDS - 12_500_000, FUNDS)
        assert await open_holds(db, setup["account"]) == 12_500_000
        [(kind, data)] = await events(db, "CARD_TRANSACTION.")
        assert kind == "CARD_TRANSACTION.AUTHORIZED" and data == transaction
        assert (await client.get(f"/card-transactions/{transaction['id']}", auth=auth)).json() == transaction

    async def test_the_whole_balance_in_usd_is_approved_and_a_cent_more_declines(
        self, client, auth, db, setup
    ) -> None:
        declined = (await authorize(client, auth, setup["card"], 10_001, currency="USD")).json()
        assert declined["status"] == "DECLINED" and declined["declineReason"] == "INSUFFICIENT_FUNDS"
        # the request as sent, and its value in the card's currency; nothing held
        assert declined["requestedAmount"] == usd(10_001)
        assert declined["authorizedAmount"] == usdb(100_010_000)
        assert declined["pullSummary"]["totalAmount"] == 0 and "accountId" not in declined
        assert await open_holds(db, setup["account"]) == 0
        whole = await approved(client, auth, setup["card"], 10_000, currency="USD")
        assert whole["authorizedAmount"] == usdb(FUNDS)
        assert await _usdb_balance(client, auth, setup) == (0, FUNDS)

    async def test_is_cleared_partially_then_fully_and_returned_in_usd(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 1_250, currency="USD")
        card, tid = setup["card"], transaction["id"]
        partial = (await clear(client, auth, card, tid, 500)).json()
        assert partial["status"] == "PARTIALLY_SETTLED" and partial["settledAmount"] == usdb(5_000_000)
        assert await _usdb_balance(client, auth, setup) == (FUNDS - 12_500_000, FUNDS - 5_000_000)
        assert await open_holds(db, setup["account"]) == 7_500_000
        full = (await clear(client, auth, card, tid, 750)).json()
        assert full["status"] == "SETTLED" and full["settledAmount"] == usdb(12_500_000)
        assert full["settlementSummary"] == {"count": 2, "totalAmount": 12_500_000}
        assert full["requestedAmount"] == usd(1_250)
        assert await open_holds(db, setup["account"]) == 0
        assert await _usdb_balance(client, auth, setup) == (FUNDS - 12_500_000,) * 2

        too_much = await give_back(client, auth, card, tid, 1_251)
        assert too_much.status_code == 400, too_much.text
        [problem] = too_much.json()["details"]["fields"]
        assert problem["field"] == "amount" and "at most 1250 USD" in problem["message"]
        part = (await give_back(client, auth, card, tid, 250)).json()
        assert part["status"] == "SETTLED" and part["refundedAmount"] == usdb(2_500_000)
        assert [refund["amount"] for refund in part["refunds"]] == [usdb(2_500_000)]
        rest = (await give_back(client, auth, card, tid, 1_000)).json()
        assert rest["status"] == "REFUNDED" and rest["refundSummary"] == {
            "count": 2,
            "totalAmount": 12_500_000,
        }
        assert await _usdb_balance(client, auth, setup) == (FUNDS, FUNDS)

    async def test_an_over_clearing_in_usd_pulls_the_difference_in_usdb(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 1_000, currency="USD")
        settled = (await clear(client, auth, setup["card"], transaction["id"], 1_200)).json()
        assert settled["status"] == "SETTLED" and settled["settledAmount"] == usdb(12_000_000)
        assert settled["pullSummary"] == {"count": 2, "totalAmount": 12_000_000, "pendingCount": 0}
        assert await _usdb_balance(client, auth, setup) == (FUNDS - 12_000_000,) * 2

    async def test_expiry_close_and_late_presentment_in_usd(self, client, auth, db, setup) -> None:
        card = setup["card"]
        first = await approved(client, auth, card, 1_000, currency="USD")
        expired = (await clear(client, auth, card, first["id"], 0)).json()
        assert expired["status"] == "EXPIRED" and expired["pullSummary"]["totalAmount"] == 0
        assert await _usdb_balance(client, auth, setup) == (FUNDS, FUNDS)
        pending = await approved(client, auth, card, 2_000, currency="USD")
        assert (await patch(client, auth, card, state="CLOSED")).status_code == 200
        assert await open_holds(db, setup["account"]) == 0
        late = (await clear(client, auth, card, pending["id"], 300)).json()  # force-posted: USD 3.00
        assert late["status"] == "SETTLED" and late["settledAmount"] == usdb(3_000_000)
        assert await _usdb_balance(client, auth, setup) == (FUNDS - 3_000_000,) * 2

    async def test_a_clearing_beyond_what_usdb_can_hold_is_refused_and_changes_nothing(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 1_000, currency="USD")
        huge = await clear(client, auth, setup["card"], transaction["id"], MAX_AMOUNT)
        assert huge.status_code == 400 and huge.json()["details"]["fields"][0]["field"] == "amount"
        again = (await client.get(f"/card-transactions/{transaction['id']}", auth=auth)).json()
        assert again == transaction
        assert await open_holds(db, setup["account"]) == 10_000_000


class TestOtherCurrencies:
    @pytest.mark.parametrize("currency", ["EUR", "USDC", "JPY", "BTC"])
    async def test_decline_currency_mismatch_with_the_request_recorded_and_nothing_held(
        self, client, auth, db, setup, currency
    ) -> None:
        declined = (await authorize(client, auth, setup["card"], 1_250, currency=currency)).json()
        assert declined["status"] == "DECLINED" and declined["declineReason"] == "CURRENCY_MISMATCH"
        assert declined["requestedAmount"]["amount"] == 1_250
        assert declined["requestedAmount"]["currency"]["code"] == currency
        # nothing in the card's currency was asked for: never the request's number in USDB units
        assert declined["authorizedAmount"] == usdb(0)
        assert declined["pullSummary"]["totalAmount"] == 0
        assert await _usdb_balance(client, auth, setup) == (FUNDS, FUNDS)
        assert await open_holds(db, setup["account"]) == 0
        assert (await clear(client, auth, setup["card"], declined["id"], 1_250)).status_code == 409

    async def test_a_usd_card_takes_usd_as_is_and_declines_usdb(self, client, auth, runner) -> None:
        person = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, person["id"], 10_000)
        card = await active_card(client, auth, runner, person["id"], [account["id"]])
        transaction = await approved(client, auth, card["id"], 1_250, currency="USD")
        assert transaction["requestedAmount"] == transaction["authorizedAmount"] == usd(1_250)
        declined = (await authorize(client, auth, card["id"], 1_250, currency="USDB")).json()
        assert declined["declineReason"] == "CURRENCY_MISMATCH"
        assert declined["requestedAmount"] == usdb(1_250) and declined["authorizedAmount"] == usd(0)

    async def test_an_unknown_currency_code_is_refused_and_nothing_recorded(
        self, client, auth, setup
    ) -> None:
        response = await authorize(client, auth, setup["card"], 1_250, currency="XYZ")
        assert response.status_code == 400 and response.json()["code"] == "INVALID_CURRENCY"
        assert response.json()["details"]["fields"][0]["field"] == "currency.code"
        assert await _card_transactions(client, auth, setup) == []

    async def test_an_amount_beyond_what_usdb_can_hold_is_refused_and_nothing_recorded(
        self, client, auth, setup
    ) -> None:
        response = await authorize(client, auth, setup["card"], MAX_AMOUNT, currency="USD")
        assert response.status_code == 400, response.text
        assert response.json()["details"]["fields"][0]["field"] == "amount"
        assert await _card_transactions(client, auth, setup) == []


async def test_0015_backfills_what_earlier_card_transactions_asked_for(
    client, auth, runner, database_url
) -> None:
    """A card transaction from before 0015 (the columns dropped by its downgrade) renders after the upgrade
    with requestedAmount = authorizedAmount in the card's currency, and its clearings keep their units."""
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    card = (await active_card(client, auth, runner, person["id"], [account["id"]]))["id"]
    transaction = await approved(client, auth, card, 2_500)
    await clear(client, auth, card, transaction["id"], 1_000)
    declined = (await authorize(client, auth, card, 20_000)).json()
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0014_customer_accounts_by_type")
    await migrate.upgrade_async(database_url)
    for old in (transaction, declined):
        now = (await client.get(f"/card-transactions/{old['id']}", auth=auth)).json()
        assert now["requestedAmount"] == now["authorizedAmount"] == old["authorizedAmount"]
    settled = (await clear(client, auth, card, transaction["id"], 1_500)).json()
    assert settled["status"] == "SETTLED" and settled["settledAmount"] == usd(2_500)
