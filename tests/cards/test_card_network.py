"""The card network's messages as the sandbox simulates them (the August 2026 reference): every simulation answers 202
{issuerTransactionToken} and its card transaction (webhook, reads) follows on the job runner; the seven new
messages move money as their network meaning requires — a financial authorization settles in one step, a
balance inquiry moves nothing, a credit authorization credits the card's source when cleared (its advice is
recorded whatever the card's state), a financial credit credits at once, an authorization advice re-sizes the
hold (an uncovered one is EXCEPTION, never declined), a return reversal takes the last return back. Every
balance is checked against the test's own arithmetic; the ledger verifies after each test (the db fixture)."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from alembic import command
from sqlalchemy import func, select, text

from platpay.cards import transactions
from platpay.db import migrate
from platpay.events.models import EventRow
from platpay.jobs import service as jobs_service
from platpay.jobs.models import JobRow
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.ledger.models import LedgerAccountRow
from tests.factories import create_platform, fund, internal_account, wallet_account
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    balance,
    clear,
    deliver,
    events,
    funded_account,
    give_back,
    on_transaction,
    open_holds,
    opening_body,
    patch,
    run_jobs,
    simulate,
)

OPENING = ("authorization", "financial_authorization", "credit_authorization", "credit_authorization_advice")
OPENING += ("financial_credit_authorization",)


@pytest.fixture
async def setup(client, auth, runner):
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    return {"customer": person["id"], "account": account["id"], "card": card["id"]}


async def system_balance(db, code: str) -> int:
    """The total of a system account (its code: `clearing:CARD_NETWORK:USD`, `loss:CARD:USD`); 0 when unused."""
    async with db.read() as session:
        row = (await session.execute(select(LedgerAccountRow).where(LedgerAccountRow.code == code))).scalar()
    return 0 if row is None else row.available + row.held


NETWORK, LOSS = "clearing:CARD_NETWORK:USD", "loss:CARD:USD"


async def queued(db) -> int:
    async with db.read() as session:
        return await session.scalar(select(func.count()).select_from(JobRow).where(JobRow.state == "QUEUED"))


async def opened(client, auth, card_id: str, what: str, amount: int, descriptor: str = "SHOP") -> dict:
    response = await authorize(client, auth, card_id, amount, descriptor, what=what)
    assert response.status_code == 200, response.text
    return response.json()


class TestTheAnswerIs202AndTheCardTransactionFollows:
    async def test_an_authorization_is_readable_once_answered_and_queues_no_job(
        self, client, auth, db, setup
    ) -> None:
        queued_before = await queued(db)
        accepted = await simulate(client, auth, setup["card"], "authorization", opening_body(2_500))
        assert accepted.status_code == 202, accepted.text
        token = accepted.json()["issuerTransactionToken"]
        assert set(accepted.json()) == {"issuerTransactionToken"} and token.startswith("sandbox_txn_")
        # decided in the request: no job ran, none was queued; the webhook waits in the outbox
        assert await queued(db) == queued_before
        [transaction] = (await client.get(f"/cards/{setup['card']}/transactions", auth=auth)).json()["data"]
        assert (transaction["issuerTransactionToken"], transaction["status"]) == (token, "AUTHORIZED")
        by_account = await client.get("/card-transactions", auth=auth, params={"accountId": setup["account"]})
        assert [t["id"] for t in by_account.json()["data"]] == [transaction["id"]]
        assert await events(db, "CARD_TRANSACTION.") == [("CARD_TRANSACTION.AUTHORIZED", transaction)]
        assert await balance(client, auth, setup["customer"]) == (7_500, 10_000)

    @pytest.mark.parametrize("what", [*OPENING, "balance_inquiry"])
    async def test_every_opening_simulation_answers_202_with_the_token_of_what_it_opens(
        self, client, auth, setup, what
    ) -> None:
        body = {"merchant": {"descriptor": "SHOP"}} if what == "balance_inquiry" else opening_body(100)
        accepted = await simulate(client, auth, setup["card"], what, body)
        assert accepted.status_code == 202, accepted.text
        delivered = await deliver(client, auth, setup["card"], accepted)
        assert delivered.json()["issuerTransactionToken"] == accepted.json()["issuerTransactionToken"]

    async def test_a_message_on_a_card_transaction_answers_its_token(self, client, auth, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 1_000)
        for what, body in [("authorization_advice", {"amount": 1_200}), ("clearing", {"amount": 1_200})]:
            accepted = await simulate(
                client, auth, setup["card"], what, {"cardTransactionId": transaction["id"], **body}
            )
            assert accepted.status_code == 202, accepted.text
            assert accepted.json() == {"issuerTransactionToken": transaction["issuerTransactionToken"]}
            await run_jobs(client)

    async def test_refusals_are_answered_at_once_and_queue_nothing(self, client, auth, db, setup) -> None:
        card = setup["card"]
        unknown = await simulate(
            client, auth, "Card:019542f5-b3e7-1d02-0000-00000000dead", "authorization", opening_body(1)
        )
        assert unknown.status_code == 404
        currency = await simulate(
            client, auth, card, "financial_authorization", opening_body(1, currency="XXX")
        )
        assert currency.status_code == 400 and currency.json()["code"] == "INVALID_CURRENCY"
        for what in ("authorization", "credit_authorization"):
            zero = await simulate(client, auth, card, what, opening_body(0))
            assert zero.status_code == 400 and zero.json()["details"]["fields"][0]["field"] == "amount"
        with_amount = await simulate(client, auth, card, "balance_inquiry", opening_body(5))
        assert with_amount.status_code == 400, with_amount.text
        transaction = await approved(client, auth, card, 1_000)
        queued_before = await queued(db)
        for what, body, status in [
            ("return", {"amount": 1}, 409),  # not settled
            ("return_reversal", {}, 409),  # no return
            ("authorization_advice", {"amount": 0}, 400),
            ("clearing", {"amount": -1}, 400),
            ("clearing", {"cardTransactionId": "CardTransaction:nope", "amount": 1}, 400),
        ]:
            response = await simulate(
                client, auth, card, what, {"cardTransactionId": transaction["id"], **body}
            )
            assert response.status_code == status, (what, response.text)
        assert await queued(db) == queued_before

    async def test_production_credentials_get_404(self, client, auth, db, settings, setup) -> None:
        production = (await create_platform(db, settings))["production"]
        for what in (*OPENING, "balance_inquiry", "clearing", "authorization_advice", "return_reversal"):
            response = await simulate(client, production, setup["card"], what, opening_body(1))
            assert response.status_code in (400, 404), (what, response.text)
            assert response.status_code == 404 or response.json()["code"] == "INVALID_INPUT"

    async def test_an_idempotency_key_accepts_once(self, client, auth, setup) -> None:
        path = f"/sandbox/cards/{setup['card']}/simulate/financial_authorization"
        headers = {"Idempotency-Key": "fa-1"}
        first = await client.post(path, auth=auth, json=opening_body(300), headers=headers)
        again = await client.post(path, auth=auth, json=opening_body(300), headers=headers)
        assert first.status_code == again.status_code == 202 and first.json() == again.json()
        await run_jobs(client)
        assert len((await client.get(f"/cards/{setup['card']}/transactions", auth=auth)).json()["data"]) == 1
        assert await balance(client, auth, setup["customer"]) == (9_700, 9_700)

    async def test_a_message_the_card_transaction_no_longer_takes_when_its_job_runs_changes_nothing(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 1_000)
        body = {"cardTransactionId": transaction["id"], "amount": 0}
        for _ in range(2):  # both accepted while it is AUTHORIZED; the second finds it EXPIRED
            assert (await simulate(client, auth, setup["card"], "clearing", body)).status_code == 202
        await run_jobs(client)
        assert [kind for kind, _ in await events(db, "CARD_TRANSACTION.")] == [
            "CARD_TRANSACTION.AUTHORIZED",
            "CARD_TRANSACTION.EXPIRED",
        ]
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        async with db.read() as session:
            dead = await session.scalar(
                select(func.count()).select_from(JobRow).where(JobRow.state == "DEAD")
            )
        assert dead == 0

    @pytest.mark.parametrize("message", ["AUTHORIZATION", "BALANCE_INQUIRY"])
    async def test_an_opening_queued_by_the_previous_version_is_still_applied_by_its_job(
        self, client, auth, db, setup, message
    ) -> None:
        """Before openings were decided in their requests, each was queued (cards.network_message): one still
        queued at the upgrade is applied by the job runner as it was."""
        async with db.transaction() as session:
            tenant_id = (
                await session.execute(
                    text("SELECT tenant_id FROM cards WHERE id = :id"), {"id": setup["card"]}
                )
            ).scalar_one()
            transaction_id = new_id("CardTransaction")
            token = transactions.issuer_token("sandbox", transaction_id)
            amount = 2_500 if message == "AUTHORIZATION" else 0
            await jobs_service.enqueue(
                session,
                transactions.NETWORK_JOB,
                {
                    "message": message,
                    "cardId": setup["card"],
                    "cardTransactionId": transaction_id,
                    "issuerTransactionToken": token,
                    "amount": amount,
                    "currency": "USD",
                    "merchant": {"descriptor": "SHOP"},
                },
                tenant_id=tenant_id,
            )
        await run_jobs(client)
        found = (await client.get(f"/card-transactions/{transaction_id}", auth=auth)).json()
        expected = "AUTHORIZED" if message == "AUTHORIZATION" else "SETTLED"
        assert (found["issuerTransactionToken"], found["status"]) == (token, expected), found
        assert [kind for kind, _ in await events(db, "CARD_TRANSACTION.")] == [f"CARD_TRANSACTION.{expected}"]
        assert await balance(client, auth, setup["customer"]) == (10_000 - amount, 10_000)

    async def test_the_descriptor_suffixes_keep_working(self, client, auth, runner, db, setup) -> None:
        assert (await authorize(client, auth, setup["card"], 10, "SHOP-002")).json()["declineReason"] == (
            "INSUFFICIENT_FUNDS"
        )
        assert (await authorize(client, auth, setup["card"], 10, "SHOP-003")).json()["declineReason"] == (
            "CARD_PAUSED"
        )
        delayed = (await authorize(client, auth, setup["card"], 10, "SHOP-005")).json()
        assert delayed["status"] == "AUTHORIZED" and delayed["pullSummary"]["pendingCount"] == 1
        clock.advance(timedelta(seconds=31))
        await run_jobs(client)
        confirmed = (await client.get(f"/card-transactions/{delayed['id']}", auth=auth)).json()
        assert confirmed["pullSummary"]["pendingCount"] == 0
        failed = (await authorize(client, auth, setup["card"], 10, "SHOP-006")).json()
        assert failed["status"] == "EXCEPTION" and failed["pullSummary"]["totalAmount"] == 0
        assert await balance(client, auth, setup["customer"]) == (9_990, 10_000)


class TestFinancialAuthorization:
    async def test_it_is_pulled_and_settled_in_one_step(self, client, auth, db, setup) -> None:
        transaction = await opened(client, auth, setup["card"], "financial_authorization", 8_000)
        assert (transaction["status"], transaction["direction"]) == ("SETTLED", "DEBIT")
        assert transaction["settledAmount"]["amount"] == transaction["authorizedAmount"]["amount"] == 8_000
        assert transaction["pullSummary"] == {"count": 1, "totalAmount": 8_000, "pendingCount": 0}
        assert transaction["settlementSummary"] == {"count": 1, "totalAmount": 8_000}
        assert await balance(client, auth, setup["customer"]) == (2_000, 2_000)
        assert await open_holds(db, setup["account"]) == 0
        assert await system_balance(db, NETWORK) == 8_000
        assert [k for k, _ in await events(db, "CARD_TRANSACTION.")] == ["CARD_TRANSACTION.SETTLED"]
        entries = await client.get(f"/internal-accounts/{setup['account']}/entries", auth=auth)
        assert entries.json()["data"][0]["kind"] == "CARD_FINANCIAL_PULL"

    async def test_it_declines_like_an_authorization(self, client, auth, runner, setup) -> None:
        short = await opened(client, auth, setup["card"], "financial_authorization", 10_001)
        assert (short["status"], short["declineReason"]) == ("DECLINED", "INSUFFICIENT_FUNDS")
        await patch(client, auth, setup["card"], maxSpendPerTransaction=500)
        over = await opened(client, auth, setup["card"], "financial_authorization", 501)
        assert over["declineReason"] == "TRANSACTION_SIZE_LIMIT_EXCEEDED"
        paused = await opened(client, auth, setup["card"], "financial_authorization", 5, "ATM-003")
        assert paused["declineReason"] == "CARD_PAUSED"
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)

    async def test_a_failed_pull_is_the_operators_loss_and_an_exception(
        self, client, auth, db, setup
    ) -> None:
        transaction = await opened(client, auth, setup["card"], "financial_authorization", 4_200, "UBER-006")
        assert transaction["status"] == "EXCEPTION" and transaction["settledAmount"]["amount"] == 4_200
        assert transaction["pullSummary"]["totalAmount"] == 0
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        assert (await system_balance(db, NETWORK), await system_balance(db, LOSS)) == (4_200, -4_200)

    async def test_it_takes_returns_and_reversals_but_no_clearing(self, client, auth, setup) -> None:
        transaction = await opened(client, auth, setup["card"], "financial_authorization", 3_000)
        refused = await simulate(
            client, auth, setup["card"], "clearing", {"cardTransactionId": transaction["id"], "amount": 10}
        )
        assert refused.status_code == 409, refused.text
        refunded = (await give_back(client, auth, setup["card"], transaction["id"], 3_000)).json()
        assert refunded["status"] == "REFUNDED"
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        again = (
            await on_transaction(client, auth, setup["card"], "return_reversal", transaction["id"])
        ).json()
        assert again["status"] == "SETTLED" and "refundedAmount" not in again
        assert await balance(client, auth, setup["customer"]) == (7_000, 7_000)


class TestBalanceInquiry:
    async def test_it_is_recorded_and_moves_nothing(self, client, auth, db, setup) -> None:
        accepted = await simulate(
            client,
            auth,
            setup["card"],
            "balance_inquiry",
            {"merchant": {"descriptor": "SHELL OIL 12345678", "mcc": "5541"}},
        )
        inquiry = (await deliver(client, auth, setup["card"], accepted)).json()
        assert (inquiry["status"], inquiry["direction"], inquiry["accountId"]) == (
            "SETTLED",
            "DEBIT",
            setup["account"],
        )
        assert inquiry["authorizedAmount"]["amount"] == 0 and inquiry["requestedAmount"]["amount"] == 0
        assert inquiry["merchant"] == {"descriptor": "SHELL OIL 12345678", "mcc": "5541"}
        assert inquiry["pullSummary"]["count"] == 0 and "settledAmount" not in inquiry
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        assert await system_balance(db, NETWORK) == 0
        assert [k for k, _ in await events(db, "CARD_TRANSACTION.")] == ["CARD_TRANSACTION.SETTLED"]

    async def test_a_frozen_card_and_the_networks_decline_are_recorded(self, client, auth, setup) -> None:
        async def inquire(descriptor: str) -> dict:
            accepted = await simulate(
                client, auth, setup["card"], "balance_inquiry", {"merchant": {"descriptor": descriptor}}
            )
            return (await deliver(client, auth, setup["card"], accepted)).json()

        assert (await inquire("PUMP-002"))["declineReason"] == "INSUFFICIENT_FUNDS"
        await patch(client, auth, setup["card"], state="FROZEN")
        assert (await inquire("PUMP"))["declineReason"] == "CARD_PAUSED"


class TestCreditAuthorization:
    async def test_it_is_pending_until_cleared_then_credits_the_source(self, client, auth, db, setup) -> None:
        credit = await opened(client, auth, setup["card"], "credit_authorization", 2_500)
        assert (credit["status"], credit["direction"], credit["accountId"]) == (
            "AUTHORIZED",
            "CREDIT",
            setup["account"],
        )
        assert credit["pullSummary"] == {"count": 0, "totalAmount": 0, "pendingCount": 0}
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        partly = (await clear(client, auth, setup["card"], credit["id"], 1_000)).json()
        assert partly["status"] == "PARTIALLY_SETTLED"
        assert await balance(client, auth, setup["customer"]) == (11_000, 11_000)
        settled = (await clear(client, auth, setup["card"], credit["id"], 1_500)).json()
        assert settled["status"] == "SETTLED" and settled["settledAmount"]["amount"] == 2_500
        assert await balance(client, auth, setup["customer"]) == (12_500, 12_500)
        assert await system_balance(db, NETWORK) == -2_500
        entries = await client.get(f"/internal-accounts/{setup['account']}/entries", auth=auth)
        assert [e["kind"] for e in entries.json()["data"]][:2] == ["CARD_CREDIT", "CARD_CREDIT"]
        assert [k for k, _ in await events(db, "CARD_TRANSACTION.")] == [
            "CARD_TRANSACTION.AUTHORIZED",
            "CARD_TRANSACTION.PARTIALLY_SETTLED",
            "CARD_TRANSACTION.SETTLED",
        ]

    async def test_it_expires_or_closes_with_nothing_moved_and_takes_no_return(
        self, client, auth, setup
    ) -> None:
        expiring = await opened(client, auth, setup["card"], "credit_authorization", 700)
        assert (await clear(client, auth, setup["card"], expiring["id"], 0)).json()["status"] == "EXPIRED"
        pending = await opened(client, auth, setup["card"], "credit_authorization", 300)
        await patch(client, auth, setup["card"], state="CLOSED")
        assert (await client.get(f"/card-transactions/{pending['id']}", auth=auth)).json()[
            "status"
        ] == "EXPIRED"
        late = (await clear(client, auth, setup["card"], pending["id"], 300)).json()  # a late presentment
        assert late["status"] == "SETTLED"
        assert await balance(client, auth, setup["customer"]) == (10_300, 10_300)
        refused = await simulate(
            client, auth, setup["card"], "return", {"cardTransactionId": late["id"], "amount": 1}
        )
        assert refused.status_code == 409, refused.text

    async def test_no_spending_limit_applies_and_a_frozen_card_declines(self, client, auth, setup) -> None:
        await patch(client, auth, setup["card"], maxSpendPerTransaction=1)
        assert (await opened(client, auth, setup["card"], "credit_authorization", 9_999))[
            "status"
        ] == "AUTHORIZED"
        await patch(client, auth, setup["card"], state="FROZEN")
        paused = await opened(client, auth, setup["card"], "credit_authorization", 5)
        assert paused["declineReason"] == "CARD_PAUSED"

    async def test_an_advice_re_sizes_it_and_moves_no_money(self, client, auth, setup) -> None:
        credit = await opened(client, auth, setup["card"], "credit_authorization", 2_500)
        resized = (
            await on_transaction(
                client, auth, setup["card"], "authorization_advice", credit["id"], amount=4_000
            )
        ).json()
        assert resized["status"] == "AUTHORIZED" and resized["authorizedAmount"]["amount"] == 4_000
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)


class TestCreditAuthorizationAdvice:
    async def test_it_is_recorded_whatever_the_network_or_the_card_says(self, client, auth, setup) -> None:
        await patch(client, auth, setup["card"], state="FROZEN")
        advice = await opened(client, auth, setup["card"], "credit_authorization_advice", 2_500, "MKT-002")
        assert (advice["status"], advice["direction"]) == ("AUTHORIZED", "CREDIT")
        assert (await clear(client, auth, setup["card"], advice["id"], 2_500)).json()["status"] == "SETTLED"
        assert await balance(client, auth, setup["customer"]) == (12_500, 12_500)

    async def test_a_closed_card_has_nowhere_to_put_it(self, client, auth, setup) -> None:
        await patch(client, auth, setup["card"], state="CLOSED")
        advice = await opened(client, auth, setup["card"], "credit_authorization_advice", 2_500)
        assert (advice["status"], advice["declineReason"]) == ("DECLINED", "NO_ACTIVE_FUNDING_SOURCE")


class TestFinancialCreditAuthorization:
    async def test_it_credits_the_source_at_once(self, client, auth, db, setup) -> None:
        credit = await opened(client, auth, setup["card"], "financial_credit_authorization", 4_000)
        assert (credit["status"], credit["direction"]) == ("SETTLED", "CREDIT")
        assert credit["settledAmount"]["amount"] == 4_000
        assert await balance(client, auth, setup["customer"]) == (14_000, 14_000)
        assert await system_balance(db, NETWORK) == -4_000
        declined = await opened(
            client, auth, setup["card"], "financial_credit_authorization", 4_000, "PAY-003"
        )
        assert declined["declineReason"] == "CARD_PAUSED"
        assert await balance(client, auth, setup["customer"]) == (14_000, 14_000)


class TestAuthorizationAdvice:
    async def advise(self, client, auth, setup, transaction_id: str, amount: int) -> dict:
        response = await on_transaction(
            client, auth, setup["card"], "authorization_advice", transaction_id, amount=amount
        )
        assert response.status_code == 200, response.text
        return response.json()

    async def test_up_the_hold_grows_and_down_part_of_it_goes_back(self, client, auth, db, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 1_000)
        grown = await self.advise(client, auth, setup, transaction["id"], 2_000)
        assert (grown["status"], grown["authorizedAmount"]["amount"]) == ("AUTHORIZED", 2_000)
        assert grown["pullSummary"]["totalAmount"] == 2_000
        assert await balance(client, auth, setup["customer"]) == (8_000, 10_000)
        assert await open_holds(db, setup["account"]) == 2_000
        shrunk = await self.advise(client, auth, setup, transaction["id"], 600)
        assert shrunk["authorizedAmount"]["amount"] == 600 and shrunk["pullSummary"]["totalAmount"] == 600
        assert await balance(client, auth, setup["customer"]) == (9_400, 10_000)
        settled = (await clear(client, auth, setup["card"], transaction["id"], 600)).json()
        assert settled["status"] == "SETTLED"
        assert await balance(client, auth, setup["customer"]) == (9_400, 9_400)
        assert [k for k, _ in await events(db, "CARD_TRANSACTION.")] == [
            "CARD_TRANSACTION.AUTHORIZED",
            "CARD_TRANSACTION.UPDATED",
            "CARD_TRANSACTION.UPDATED",
            "CARD_TRANSACTION.SETTLED",
        ]

    async def test_uncovered_it_reserves_what_the_source_has_and_the_clearing_pulls_the_rest(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 6_000)
        recorded = await self.advise(client, auth, setup, transaction["id"], 12_000)
        assert (recorded["status"], recorded["authorizedAmount"]["amount"]) == ("AUTHORIZED", 12_000)
        assert recorded["pullSummary"]["totalAmount"] == 10_000  # all the source had
        assert await balance(client, auth, setup["customer"]) == (0, 10_000)
        assert await open_holds(db, setup["account"]) == 10_000
        await fund(client, auth, setup["account"], 1_500)  # money arrives, but not enough
        settled = (await clear(client, auth, setup["card"], transaction["id"], 12_000)).json()
        # 10,000 captured, 2,000 more to pull: the source's 1,500 do not cover it: the operator pays
        assert settled["status"] == "EXCEPTION" and settled["settledAmount"]["amount"] == 12_000
        assert await balance(client, auth, setup["customer"]) == (1_500, 1_500)
        assert await system_balance(db, LOSS) == -2_000

    async def test_an_advice_the_source_cannot_cover_expires_or_closes_with_its_hold_released(
        self, client, auth, db, setup
    ) -> None:
        first = await approved(client, auth, setup["card"], 6_000)
        await self.advise(client, auth, setup, first["id"], 20_000)
        assert (await clear(client, auth, setup["card"], first["id"], 0)).json()["status"] == "EXPIRED"
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        second = await approved(client, auth, setup["card"], 6_000)
        await self.advise(client, auth, setup, second["id"], 20_000)
        await patch(client, auth, setup["card"], state="CLOSED")
        closed = (await client.get(f"/card-transactions/{second['id']}", auth=auth)).json()
        assert closed["status"] == "EXPIRED" and await open_holds(db, setup["account"]) == 0
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)

    async def test_down_to_what_has_cleared_settles_it(self, client, auth, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 3_000)
        await clear(client, auth, setup["card"], transaction["id"], 1_000)
        done = await self.advise(client, auth, setup, transaction["id"], 1_000)
        assert done["status"] == "SETTLED"
        assert await balance(client, auth, setup["customer"]) == (9_000, 9_000)

    async def test_it_is_sent_in_the_authorizations_currency(self, client, auth, runner, db) -> None:
        person = await approved_cardholder(client, auth)
        usdb = await funded_account(client, auth, person["id"], 100_000_000, "USDB")
        card = await active_card(client, auth, runner, person["id"], [usdb["id"]])
        transaction = await approved(client, auth, card["id"], 1_250, currency="USD")
        resized = (
            await on_transaction(
                client, auth, card["id"], "authorization_advice", transaction["id"], amount=2_000
            )
        ).json()
        assert (
            resized["requestedAmount"]["amount"] == 2_000
            and resized["authorizedAmount"]["amount"] == 20_000_000
        )
        assert await open_holds(db, usdb["id"]) == 20_000_000

    async def test_only_an_open_authorization_takes_it(self, client, auth, setup) -> None:
        settled = await approved(client, auth, setup["card"], 100)
        await clear(client, auth, setup["card"], settled["id"], 100)
        financial = await opened(client, auth, setup["card"], "financial_authorization", 100)
        for transaction_id in (settled["id"], financial["id"]):
            response = await simulate(
                client,
                auth,
                setup["card"],
                "authorization_advice",
                {"cardTransactionId": transaction_id, "amount": 50},
            )
            assert response.status_code == 409, response.text


class TestReturnReversal:
    async def test_the_last_return_is_taken_back_from_the_account_it_credited(
        self, client, auth, db, setup
    ) -> None:
        transaction = await approved(client, auth, setup["card"], 1_000)
        await clear(client, auth, setup["card"], transaction["id"], 1_000)
        await give_back(client, auth, setup["card"], transaction["id"], 300)
        refunded = (await give_back(client, auth, setup["card"], transaction["id"], 700)).json()
        assert refunded["status"] == "REFUNDED"
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        reversed_ = (
            await on_transaction(client, auth, setup["card"], "return_reversal", transaction["id"])
        ).json()
        assert reversed_["status"] == "SETTLED" and reversed_["refundedAmount"]["amount"] == 300
        assert reversed_["refundSummary"] == {"count": 1, "totalAmount": 300}
        assert [(r["amount"]["amount"], r["status"]) for r in reversed_["refunds"]] == [
            (300, "COMPLETED"),
            (700, "REVERSED"),
        ]
        assert await balance(client, auth, setup["customer"]) == (9_300, 9_300)
        partial = (
            await on_transaction(client, auth, setup["card"], "return_reversal", transaction["id"])
        ).json()
        assert partial["status"] == "SETTLED" and "refundedAmount" not in partial
        assert await balance(client, auth, setup["customer"]) == (9_000, 9_000)
        assert [k for k, _ in await events(db, "CARD_TRANSACTION.")][-2:] == [
            "CARD_TRANSACTION.SETTLED",
            "CARD_TRANSACTION.UPDATED",
        ]
        again = (await give_back(client, auth, setup["card"], transaction["id"], 1_000)).json()
        assert again["status"] == "REFUNDED"  # returnable again, in full
        assert await balance(client, auth, setup["customer"]) == (10_000, 10_000)
        assert await system_balance(db, NETWORK) == 0

    async def test_a_source_that_spent_the_return_has_it_taken_from_the_next_else_the_operator(
        self, client, auth, runner, db
    ) -> None:
        person = await approved_cardholder(client, auth)
        holding = await internal_account(client, auth, person["id"], "USDB")
        wallet = await wallet_account(client, auth, person["id"])
        h, w = holding["id"], wallet["id"]
        await fund(client, auth, h, 1_000)
        card = (await active_card(client, auth, runner, person["id"], [h, w]))["id"]

        async def balances() -> tuple[tuple[int, int], tuple[int, int]]:
            return await _usdb(client, auth, person["id"], h), await _usdb(client, auth, person["id"], w)

        transaction = await approved(client, auth, card, 1_000, currency="USDB")
        await clear(client, auth, card, transaction["id"], 1_000)
        await give_back(client, auth, card, transaction["id"], 1_000)
        spent = await approved(client, auth, card, 900, currency="USDB")  # the return, mostly spent again
        await fund(client, auth, w, 1_000)
        assert await balances() == ((100, 1_000), (1_000, 1_000))
        reversed_ = (await on_transaction(client, auth, card, "return_reversal", transaction["id"])).json()
        assert reversed_["status"] == "SETTLED"
        assert await balances() == ((100, 1_000), (0, 0))  # the holding account is short: the wallet paid
        await clear(client, auth, card, spent["id"], 0)
        again = (await give_back(client, auth, card, transaction["id"], 1_000)).json()
        assert [(r["accountId"], r["status"]) for r in again["refunds"]][-1] == (
            w,
            "COMPLETED",
        )  # who paid last
        assert await balances() == ((1_000, 1_000), (1_000, 1_000))
        for _ in range(2):  # both accounts spend it: nothing covers the next reversal
            await approved(client, auth, card, 1_000, currency="USDB")
        assert await balances() == ((0, 1_000), (0, 1_000))
        flagged = (await on_transaction(client, auth, card, "return_reversal", transaction["id"])).json()
        assert flagged["status"] == "EXCEPTION" and "refundedAmount" not in flagged
        assert await system_balance(db, "loss:CARD:USDB") == -1_000
        assert await balances() == ((0, 1_000), (0, 1_000))

    async def test_one_without_a_return_is_409(self, client, auth, setup) -> None:
        transaction = await approved(client, auth, setup["card"], 100)
        await clear(client, auth, setup["card"], transaction["id"], 100)
        response = await simulate(
            client, auth, setup["card"], "return_reversal", {"cardTransactionId": transaction["id"]}
        )
        assert response.status_code == 409, response.text


async def _usdb(client, auth, customer_id: str, account_id: str) -> tuple[int, int]:
    listed = (
        await client.get(
            "/customers/internal-accounts", auth=auth, params={"customerId": customer_id, "currency": "USDB"}
        )
    ).json()["data"]
    [account] = [a for a in listed if a["id"] == account_id]
    return account["balance"]["amount"], account["totalBalance"]["amount"]


async def test_every_card_transaction_event_carries_a_type_the_domain_declares(
    client, auth, db, setup
) -> None:
    """CARD_TRANSACTION.<STATUS> for the reference's statuses and ours, and .UPDATED; nothing else."""
    await approved(client, auth, setup["card"], 10)
    async with db.read() as session:
        types = set(
            (
                await session.scalars(select(EventRow.type).where(EventRow.type.like("CARD_TRANSACTION.%")))
            ).all()
        )
    assert types <= {
        f"CARD_TRANSACTION.{s}"
        for s in (
            "AUTHORIZED",
            "PARTIALLY_SETTLED",
            "SETTLED",
            "REFUNDED",
            "EXCEPTION",
            "DECLINED",
            "EXPIRED",
            "UPDATED",
        )
    }


async def test_0018_backfills_processor_refs_kinds_and_returns(
    client, auth, runner, database_url, db
) -> None:
    """Cards and card transactions from before 0018 (its columns dropped by its downgrade): an issued card gets
    the processorRef its issuer derives, every card transaction is an AUTHORIZATION (a debit that still
    clears), and each return written at one instant is one return (a reversal undoes the last only)."""
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    settled = await approved(client, auth, card["id"], 1_000)
    await clear(client, auth, card["id"], settled["id"], 1_000)
    await give_back(client, auth, card["id"], settled["id"], 300)
    await give_back(client, auth, card["id"], settled["id"], 200)
    pending = await approved(client, auth, card["id"], 500)
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0017_acct28")
    await migrate.upgrade_async(database_url)
    assert (await client.get(f"/cards/{card['id']}", auth=auth)).json()["processorRef"] == card[
        "processorRef"
    ]
    again = (await client.get(f"/card-transactions/{pending['id']}", auth=auth)).json()
    assert again["direction"] == "DEBIT" and again["status"] == "AUTHORIZED"
    assert (await clear(client, auth, card["id"], pending["id"], 500)).json()["status"] == "SETTLED"
    reversed_ = (await on_transaction(client, auth, card["id"], "return_reversal", settled["id"])).json()
    assert [(r["amount"]["amount"], r["status"]) for r in reversed_["refunds"]] == [
        (300, "COMPLETED"),
        (200, "REVERSED"),
    ]
    assert await balance(client, auth, person["id"]) == (
        10_000 - 1_000 + 300 - 500,
        10_000 - 1_000 + 300 - 500,
    )
