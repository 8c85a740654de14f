"""POST /transactions/{transactionId}/cancel (the August 2026 reference): a bank-rail transfer the rail has not settled
yet ends FAILED (failureDetails.code CANCELLED) with its held funds back through the ledger and its webhook;
anything else is 409 TRANSACTION_NOT_CANCELLABLE. The sandbox's external account suffix 006 keeps a transfer
unsettled long enough to cancel it; a cancel racing the settlement (PostgreSQL, concurrent requests and job
runners) lets exactly one of them win."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import func, select, update

from platpay.db.unit_of_work import Raced
from platpay.events.models import EventRow
from platpay.kit import clock
from platpay.ledger.models import JournalEntryRow
from platpay.payments import transfers
from platpay.payments.models import TransactionRow
from tests.factories import (
    account_destination,
    account_source,
    balances,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)
from tests.payments.support import assert_reference_transaction, transaction_webhooks
from tests.support.cards import active_card, approved, approved_cardholder, funded_account, run_jobs
from tests.support.jobs import run_jobs_until
from tests.support.ledger import assert_ledger_verifies

SLOW = "123456006"  # the sandbox's slow settlement: unsettled for sandbox_slow_settlement_seconds


@pytest.fixture
async def funded(client, auth):
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    slow = await external_account(client, auth, person["id"], account_number=SLOW)
    fast = await external_account(client, auth, person["id"])
    return {"customer": person["id"], "account": account["id"], "slow": slow["id"], "fast": fast["id"]}


async def _transfer_out(client, auth, source, destination, amount, rail="ACH"):
    body = {
        "source": {"accountId": source},
        "destination": {"accountId": destination, "paymentRail": rail},
        "amount": amount,
    }
    response = await client.post("/transfer-out", auth=auth, json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def _cancel(client, auth, transaction_id, body=None, key=None):
    headers = {"Idempotency-Key": key} if key else {}
    kwargs = {"json": body} if body is not None else {}
    return await client.post(f"/transactions/{transaction_id}/cancel", auth=auth, headers=headers, **kwargs)


def _refused(response, status=409, code="TRANSACTION_NOT_CANCELLABLE"):
    assert response.status_code == status, response.text
    assert response.json()["code"] == code, response.text
    return response.json()


class TestCancel:
    async def test_an_unsettled_transfer_out_is_cancelled_and_its_hold_comes_back(
        self, client, auth, funded, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        tx = await _transfer_out(client, auth, funded["account"], funded["slow"], 4_000)
        await runner.run_until_idle()  # the rail takes it: PROCESSING, settling in ten minutes
        assert (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()["status"] == "PROCESSING"
        assert await balances(client, auth, funded["customer"]) == (6_000, 10_000)
        cancelled = await _cancel(client, auth, tx["id"], {"reason": "REQUESTED_AFTER_HOURS"})
        assert cancelled.status_code == 200, cancelled.text
        final = assert_reference_transaction(cancelled.json())
        assert final["status"] == "FAILED" and "failureReason" not in final
        assert final["failureDetails"]["code"] == "CANCELLED"
        assert final["failureDetails"]["reason"] == "REQUESTED_AFTER_HOURS"
        assert await balances(client, auth, funded["customer"]) == (10_000, 10_000)
        clock.advance(timedelta(minutes=11))  # the settlement's time comes: it finds the transfer cancelled
        await runner.run_until_idle()
        assert (await client.get(f"/transactions/{tx['id']}", auth=auth)).json() == final
        assert await balances(client, auth, funded["customer"]) == (10_000, 10_000)
        await run_jobs_until(runner, lambda: len(transaction_webhooks(receiver, tx["id"])) == 3)
        # delivery is at least once and unordered (docs/webhooks.md: two chains to one endpoint may be in flight
        # at once); an envelope's id is its delivery's, made when the event was: ids in the order they happened
        events = sorted(transaction_webhooks(receiver, tx["id"]), key=lambda envelope: envelope["id"])
        assert [e["type"] for e in events] == [
            "OUTGOING_PAYMENT.PENDING",
            "OUTGOING_PAYMENT.PROCESSING",
            "OUTGOING_PAYMENT.FAILED",
        ]
        assert events[-1]["data"] == final
        _refused(await _cancel(client, auth, tx["id"]))  # once is enough

    async def test_a_transfer_in_pull_is_cancelled_before_it_credits(self, client, auth, funded, runner):
        body = {
            "source": {"accountId": funded["slow"]},
            "destination": {"accountId": funded["account"]},
            "amount": 900,
        }
        tx = (await client.post("/transfer-in", auth=auth, json=body)).json()
        await runner.run_until_idle()
        cancelled = await _cancel(client, auth, tx["id"])
        assert cancelled.status_code == 200, cancelled.text
        assert (cancelled.json()["status"], cancelled.json()["direction"]) == ("FAILED", "CREDIT")
        clock.advance(timedelta(minutes=11))
        await runner.run_until_idle()
        assert await balances(client, auth, funded["customer"]) == (10_000, 10_000)  # nothing credited

    async def test_a_settled_transfer_is_not_cancellable(self, client, auth, funded, runner):
        tx = await _transfer_out(client, auth, funded["account"], funded["fast"], 1_000)
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()["status"] == "COMPLETED"
        refused = _refused(await _cancel(client, auth, tx["id"]))
        assert refused["details"]["status"] == "COMPLETED"
        assert await balances(client, auth, funded["customer"]) == (9_000, 9_000)

    async def test_the_idempotency_key_replays_the_cancel(self, client, auth, funded):
        tx = await _transfer_out(client, auth, funded["account"], funded["slow"], 500)
        first = await _cancel(client, auth, tx["id"], {"reason": "dup"}, key="cancel-1")
        again = await _cancel(client, auth, tx["id"], {"reason": "dup"}, key="cancel-1")
        assert first.status_code == again.status_code == 200
        assert first.json() == again.json()
        other_body = await _cancel(client, auth, tx["id"], {"reason": "other"}, key="cancel-1")
        assert other_body.status_code == 400, other_body.text  # the key was used for another request
        assert other_body.json()["code"] != "TRANSACTION_NOT_CANCELLABLE"
        assert await balances(client, auth, funded["customer"]) == (10_000, 10_000)

    async def test_a_card_transaction_or_a_quote_payment_is_not_cancellable(self, client, auth, runner):
        person = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, person["id"], 50_000)
        card = await active_card(client, auth, runner, person["id"], [account["id"]])
        spent = await approved(client, auth, card["id"], 700)
        _refused(await _cancel(client, auth, spent["id"]))
        payer = await customer(client, auth)
        usd = await internal_account(client, auth, payer["id"])
        await fund(client, auth, usd["id"], 50_000)
        mxn = await mxn_account(client, auth, payer["id"])
        made = await quote(
            client, auth, source=account_source(usd["id"]), destination=account_destination(mxn["id"])
        )
        assert made.status_code == 201, made.text
        _refused(await _cancel(client, auth, made.json()["transactionId"]))
        await run_jobs(client)

    async def test_unknown_ids_and_bad_bodies(self, client, auth, funded):
        for unknown in ("Transaction:nope", "CardTransaction:nope"):
            _refused(await _cancel(client, auth, unknown), 404, "TRANSACTION_NOT_FOUND")
        tx = await _transfer_out(client, auth, funded["account"], funded["slow"], 500)
        for body in ({"reason": ""}, {"reason": "x" * 256}, {"reason": 5}, {"why": "no"}):
            refused = _refused(await _cancel(client, auth, tx["id"], body), 400, "INVALID_INPUT")
            assert refused["details"]["fields"]
        assert (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()["status"] == "PENDING"
        assert await balances(client, auth, funded["customer"]) == (9_500, 10_000)


@pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
class TestCancelRacingSettlement:
    @pytest.fixture
    def backend(self, request, pg_database):
        if pg_database is None:
            pytest.skip("PostgreSQL concurrency: set PLATPAY_TEST_DATABASE_URL")
        return request.param

    async def _processing(self, client, auth, funded, runner, db):
        """A slow transfer PROCESSING (its settle step not due), and its tenant's id; a settled transfer first,
        so that the tenant and its clearing account are known to this process (a lean attempt that would have
        to read them gives way at once)."""
        await _transfer_out(client, auth, funded["account"], funded["fast"], 100)
        await runner.run_until_idle()
        clock.advance(timedelta(minutes=1))
        await runner.run_until_idle()
        tx = await _transfer_out(client, auth, funded["account"], funded["slow"], 100)
        await runner.run_until_idle()
        async with db.read() as session:
            tenant_id = await session.scalar(
                select(TransactionRow.tenant_id).where(TransactionRow.id == tx["id"])
            )
        return tx, tenant_id

    async def test_a_settlement_read_before_a_cancel_gives_way_to_it(self, client, auth, funded, runner, db):
        """The settle step's first attempt reads the transfer without a lock (payments/transfers.py `step`): a
        cancel committed after that read makes its writes fail as one (`Raced`), nothing of the settlement
        written; the careful attempt then finds the transfer FAILED and leaves it."""
        tx, tenant_id = await self._processing(client, auth, funded, runner, db)
        settle = {"tenant_id": tenant_id, "transaction_id": tx["id"], "step_name": "settle"}
        cancelled = None
        with pytest.raises(Raced):
            async with db.lean_transaction() as lean_session:
                await transfers.step(lean_session, **settle, settings=runner.settings)
                cancelled = await _cancel(client, auth, tx["id"], {"reason": "first"})
        assert cancelled is not None and cancelled.status_code == 200, cancelled
        async with db.transaction() as session:  # the careful attempt
            await transfers.step(session, **settle, settings=runner.settings)
        final = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        assert final["status"] == "FAILED" and final["failureDetails"]["code"] == "CANCELLED", final
        assert await balances(client, auth, funded["customer"]) == (9_900, 9_900)
        async with db.read() as session:
            announced = (
                await session.scalars(select(EventRow.type).where(EventRow.resource_id == tx["id"]))
            ).all()
        assert "OUTGOING_PAYMENT.COMPLETED" not in announced and "OUTGOING_PAYMENT.FAILED" in announced, (
            announced
        )
        await assert_ledger_verifies(db)

    async def test_a_settlement_read_before_a_change_that_keeps_the_status_gives_way_to_it(
        self, client, auth, funded, runner, db
    ):
        """A change committed after the lean read that keeps the status but moves updatedAt (as every change
        of a transaction does) also makes the lean writes give way, so none of it is overwritten; the careful
        attempt then settles the transfer once."""
        tx, tenant_id = await self._processing(client, auth, funded, runner, db)
        settle = {"tenant_id": tenant_id, "transaction_id": tx["id"], "step_name": "settle"}
        with pytest.raises(Raced):
            async with db.lean_transaction() as lean_session:
                await transfers.step(lean_session, **settle, settings=runner.settings)
                async with db.transaction() as session:
                    await session.execute(
                        update(TransactionRow)
                        .where(TransactionRow.id == tx["id"])
                        .values(updated_at=clock.real_now())
                    )
        async with db.read() as session:
            entries = await session.scalar(select(func.count()).where(JournalEntryRow.reference == tx["id"]))
        assert entries == 1, "the lean attempt wrote its entry (the hold's is the only one)"
        async with db.transaction() as session:  # the careful attempt
            await transfers.step(session, **settle, settings=runner.settings)
        final = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        assert final["status"] == "COMPLETED", final
        assert await balances(client, auth, funded["customer"]) == (9_800, 9_800)
        await assert_ledger_verifies(db)

    async def test_exactly_one_of_cancel_and_settlement_wins(self, client, auth, funded, runner, db):
        """Each round: a transfer whose settlement is due, three concurrent cancels and three job runners at
        once. Either one cancel won (200, the others 409) and the money is back, or the settlement won
        (every cancel 409) and the money left; never both, never neither."""
        outcomes = []
        for round_ in range(8):
            tx = await _transfer_out(client, auth, funded["account"], funded["slow"], 100)
            await runner.run_until_idle()  # PROCESSING, its settlement queued
            clock.advance(timedelta(minutes=11))  # due now

            async def cancel_after(delay: float, reason: str = f"race {round_}", tx_id: str = tx["id"]):
                await asyncio.sleep(delay)
                return await _cancel(client, auth, tx_id, {"reason": reason})

            # the cancels start a little later each round: the early rounds' cancels tend to win, the late
            # rounds' settlements
            results = await asyncio.gather(
                *(cancel_after(round_ * 0.003) for _ in range(3)),
                *(run_jobs(client, name=f"race-{n}") for n in range(3)),
            )
            answers = [r.status_code for r in results[:3]]
            final = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
            if 200 in answers:
                assert sorted(answers) == [200, 409, 409], [r.text for r in results[:3]]
                assert final["status"] == "FAILED" and final["failureDetails"]["code"] == "CANCELLED"
                outcomes.append("cancelled")
            else:
                assert answers == [409, 409, 409]
                assert final["status"] == "COMPLETED"
                outcomes.append("settled")
            await assert_ledger_verifies(db)
        sent = 100 * outcomes.count("settled")
        assert await balances(client, auth, funded["customer"]) == (10_000 - sent, 10_000 - sent)
