"""An incoming payment returned to its sender (INCOMING_PAYMENT.REFUND_PENDING / REFUND_COMPLETED /
REFUND_FAILED): a UMA payment routed to the customer's defaultUmaDepositAccount whose payout fails (sandbox
identifiers ending in 002, 004 or 007) comes back from the bank and is refunded to the sender. Webhooks arrive
at a real receiver; every test ends with the ledger verified (the db fixture) and checks its entries."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, text

from platpay.kit import clock
from platpay.ledger import service as ledger_service
from platpay.payments.models import TransactionRow
from tests.factories import balances, customer
from tests.support.jobs import run_jobs_until

SUCCESS_USD = "$success.usd@sandbox.uma.money"


async def _hook(client, auth, runner, receiver):
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    await runner.run_until_idle()


async def _deposit_account(client, auth, customer_id: str, account_number: str) -> dict:
    response = await client.post(
        "/customers/external-accounts",
        auth=auth,
        json={
            "customerId": customer_id,
            "currency": "USD",
            "defaultUmaDepositAccount": True,
            "accountInfo": {
                "accountType": "USD_ACCOUNT",
                "accountNumber": account_number,
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            },
        },
    )
    assert response.status_code == 201, response.text
    return response.json()


async def _receive(client, auth, customer_id: str, amount: int) -> dict:
    response = await client.post(
        "/sandbox/uma/receive",
        auth=auth,
        json={
            "senderUmaAddress": SUCCESS_USD,
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": amount,
            "customerId": customer_id,
        },
    )
    assert response.status_code == 200, response.text
    return response.json()


def _types(receiver, transaction_id: str) -> list[str]:
    return sorted(
        r.json["type"]
        for r in receiver.received
        if r.json["type"].startswith("INCOMING_PAYMENT") and r.json["data"]["id"] == transaction_id
    )


async def _row(db, transaction_id: str) -> TransactionRow:
    async with db.read() as session:
        return (
            await session.scalars(select(TransactionRow).where(TransactionRow.id == transaction_id))
        ).one()


async def _entries(db, row: TransactionRow) -> list[dict]:
    async with db.read() as session:
        return await ledger_service.entries_for(session, tenant_id=row.tenant_id, reference=row.id)


async def _suspense_usd(db) -> int:
    async with db.read() as session:
        value = await session.scalar(
            text("SELECT available FROM ledger_accounts WHERE code = 'clearing:SUSPENSE:USD'")
        )
    return value or 0


@pytest.fixture
async def person(client, auth):
    return await customer(client, auth)


class TestReturnedToTheSender:
    async def test_a_failed_payout_is_refunded_to_the_sender(
        self, client, auth, db, person, runner, receiver
    ):
        clock.freeze()  # the refund comes 1 s after the failure: only when the test moves time
        await _hook(client, auth, runner, receiver)
        await _deposit_account(client, auth, person["id"], "123456004")
        tx = await _receive(client, auth, person["id"], 2_500)
        await run_jobs_until(runner, lambda: "INCOMING_PAYMENT.REFUND_PENDING" in _types(receiver, tx["id"]))
        failed = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        assert failed["status"] == "FAILED" and failed["failureReason"] == "OFFRAMP_FAILED"
        assert failed["failureDetails"]["code"] == "DELIVERY_FAILED"
        row = await _row(db, tx["id"])
        assert row.refund["status"] == "PENDING" and row.refund["reason"] == "TRANSACTION_FAILED"
        assert await _suspense_usd(db) == 2_500  # back from the bank, not yet with the sender

        clock.advance(timedelta(seconds=1))
        await run_jobs_until(
            runner, lambda: "INCOMING_PAYMENT.REFUND_COMPLETED" in _types(receiver, tx["id"])
        )
        await runner.run_until_idle()
        assert _types(receiver, tx["id"]) == sorted([
            "INCOMING_PAYMENT.PENDING", "INCOMING_PAYMENT.FAILED", "INCOMING_PAYMENT.REFUND_PENDING",
            "INCOMING_PAYMENT.REFUND_COMPLETED",
        ])  # fmt: skip
        [completed] = [
            r.json for r in receiver.received if r.json["type"] == "INCOMING_PAYMENT.REFUND_COMPLETED"
        ]
        assert (
            completed["data"]["status"] == "FAILED" and completed["data"]["failureReason"] == "OFFRAMP_FAILED"
        )
        row = await _row(db, tx["id"])
        assert row.refund["status"] == "COMPLETED" and row.refund["settledAt"]
        entries = await _entries(db, row)
        assert [e["kind"] for e in entries] == [
            "UMA_INCOMING_PAYOUT", "UMA_INCOMING_OFFRAMP_RETURN", "UMA_INCOMING_REFUND"
        ]  # fmt: skip
        for entry in entries:
            assert sum(p["amount"] for p in entry["postings"]) == 0 and len(entry["postings"]) == 2
        assert await _suspense_usd(db) == 0
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_007_the_refund_fails_and_the_funds_stay_in_suspense(
        self, client, auth, db, person, runner, receiver
    ):
        await _hook(client, auth, runner, receiver)
        await _deposit_account(client, auth, person["id"], "123456007")
        tx = await _receive(client, auth, person["id"], 1_200)
        await run_jobs_until(runner, lambda: "INCOMING_PAYMENT.REFUND_PENDING" in _types(receiver, tx["id"]))
        clock.advance(timedelta(seconds=1))
        await run_jobs_until(runner, lambda: "INCOMING_PAYMENT.REFUND_FAILED" in _types(receiver, tx["id"]))
        await runner.run_until_idle()
        assert "INCOMING_PAYMENT.REFUND_COMPLETED" not in _types(receiver, tx["id"])
        row = await _row(db, tx["id"])
        assert row.status == "FAILED" and row.refund["status"] == "FAILED"
        assert [e["kind"] for e in await _entries(db, row)] == [
            "UMA_INCOMING_PAYOUT",
            "UMA_INCOMING_OFFRAMP_RETURN",
        ]
        assert await _suspense_usd(db) == 1_200

    async def test_a_payout_that_succeeds_is_not_refunded(self, client, auth, db, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        await _deposit_account(client, auth, person["id"], "123456789")
        tx = await _receive(client, auth, person["id"], 999)
        await run_jobs_until(runner, lambda: "INCOMING_PAYMENT.COMPLETED" in _types(receiver, tx["id"]))
        clock.advance(timedelta(seconds=5))
        await runner.run_until_idle()
        assert _types(receiver, tx["id"]) == ["INCOMING_PAYMENT.COMPLETED", "INCOMING_PAYMENT.PENDING"]
        row = await _row(db, tx["id"])
        assert row.status == "COMPLETED" and row.refund is None
        assert [e["kind"] for e in await _entries(db, row)] == ["UMA_INCOMING_PAYOUT"]
