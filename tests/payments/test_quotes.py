"""Quotes through the API: pricing on both locked sides, the transaction from creation, execution (once,
before expiry), expiry, immediate execution, refusals, permissions, tenant isolation, idempotency.

Expected amounts are computed here from the published rate table, spread and fee schedule."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.kit import clock
from platpay.ledger import service as ledger_service
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
from tests.support.fx import expected
from tests.support.jobs import run_jobs_until


async def _advance(runner, seconds: float = 0) -> None:
    clock.advance(timedelta(seconds=seconds))
    await runner.run_until_idle()


def _outgoing(receiver, transaction_id: str) -> list[str]:
    return [
        r.json["type"]
        for r in receiver.received
        if r.json["type"].startswith("OUTGOING_PAYMENT") and r.json["data"]["id"] == transaction_id
    ]


@pytest.fixture
async def sender(client, auth):
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 1_000_000)
    payee = await mxn_account(client, auth, person["id"])
    return {"customer": person, "usd": usd, "payee": payee}


async def _usd_to_mxn(client, auth, sender, **kwargs):
    return await quote(
        client, auth, source=account_source(sender["usd"]["id"]), destination=account_destination(sender["payee"]["id"]), **kwargs
    )  # fmt: skip


class TestCreateQuote:
    async def test_locked_sending_amount(self, client, auth, sender):
        response = await _usd_to_mxn(client, auth, sender, locked="SENDING", amount=25_000)
        assert response.status_code == 201, response.text
        body = response.json()
        want = expected("USD", "MXN", "SPEI", locked="SENDING", amount=25_000)
        assert body["status"] == "PENDING"
        assert (body["totalSendingAmount"], body["totalReceivingAmount"], body["feesIncluded"]) == (
            25_000,
            want["receiving"],
            want["fees"],
        )
        assert body["sendingCurrency"]["code"] == "USD" and body["receivingCurrency"]["code"] == "MXN"
        assert body["exchangeRate"] == 17.4125
        assert body["destination"]["paymentRail"] == "SPEI"
        assert (
            body["rateDetails"]["gridApiFixedFee"] + body["rateDetails"]["gridApiVariableFeeAmount"]
            == want["fees"]
        )
        created, expires = body["createdAt"], body["expiresAt"]
        assert expires > created

    async def test_locked_receiving_amount(self, client, auth, sender):
        body = (await _usd_to_mxn(client, auth, sender, locked="RECEIVING", amount=100_000)).json()
        want = expected("USD", "MXN", "SPEI", locked="RECEIVING", amount=100_000)
        assert body["totalReceivingAmount"] == 100_000
        assert (body["totalSendingAmount"], body["feesIncluded"]) == (want["sending"], want["fees"])

    async def test_transaction_exists_from_creation_without_a_webhook(
        self, client, auth, sender, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        body = (await _usd_to_mxn(client, auth, sender)).json()
        transaction = (await client.get(f"/transactions/{body['transactionId']}", auth=auth)).json()
        assert transaction["status"] == "PENDING" and transaction["type"] == "OUTGOING"
        assert transaction["quoteId"] == body["id"]
        assert transaction["sentAmount"]["amount"] == body["totalSendingAmount"]
        assert transaction["receivedAmount"]["amount"] == body["totalReceivingAmount"]
        assert transaction["fees"] == body["feesIncluded"]  # an int64 of sending-currency minor units
        assert transaction["exchangeRate"] == body["exchangeRate"]
        assert transaction["customerId"] == sender["customer"]["id"]
        await runner.run_until_idle()
        assert _outgoing(receiver, body["transactionId"]) == []
        assert await balances(client, auth, sender["customer"]["id"]) == (
            1_000_000,
            1_000_000,
        )  # nothing moves yet
        fetched = (await client.get(f"/quotes/{body['id']}", auth=auth)).json()
        assert fetched == body

    async def test_same_currency_is_refused_pointing_to_transfers(self, client, auth, sender):
        bank = await external_account(client, auth, sender["customer"]["id"])
        response = await quote(
            client,
            auth,
            source=account_source(sender["usd"]["id"]),
            destination=account_destination(bank["id"]),
        )
        assert response.status_code == 400
        assert "/transfer-out" in response.json()["message"] and "/transfer-in" in response.json()["message"]

    async def test_embedded_wallet_sources_cannot_execute_immediately(self, client, auth, sender):
        """A wallet-funded quote executes only with the wallet's stamp (tests/wallets/test_quote_execution.py)."""
        wallet = await internal_account(client, auth, sender["customer"]["id"], "USDB", "EMBEDDED_WALLET")
        assert wallet["type"] == "EMBEDDED_WALLET"
        response = await quote(
            client,
            auth,
            source=account_source(wallet["id"]),
            destination=account_destination(sender["payee"]["id"]),
            immediatelyExecute=True,
        )
        assert response.status_code == 400
        assert response.json()["details"]["fields"][0]["field"] == "immediatelyExecute"
        assert "EMBEDDED_WALLET" in response.json()["message"]

    async def test_amount_that_does_not_cover_the_fees(self, client, auth, sender):
        response = await _usd_to_mxn(client, auth, sender, amount=51)  # fees: 50 + 1
        assert response.status_code == 400 and response.json()["code"] == "AMOUNT_OUT_OF_RANGE"

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"lockedCurrencySide": "BOTH"}, "lockedCurrencySide"),
            ({"lockedCurrencyAmount": 0}, "lockedCurrencyAmount"),
            ({"lockedCurrencyAmount": "100"}, "lockedCurrencyAmount"),
            ({"source": {"sourceType": "CARD", "accountId": "x"}}, "source"),
            ({"destination": {"destinationType": "ACCOUNT"}}, "destination"),
            ({"purposeOfPayment": "FUN"}, "purposeOfPayment"),
        ],
    )
    async def test_malformed_requests_name_the_field(self, client, auth, sender, change, field):
        body = {
            "source": account_source(sender["usd"]["id"]),
            "destination": account_destination(sender["payee"]["id"]),
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 1_000,
            **change,
        }
        response = await client.post("/quotes", auth=auth, json=body)
        assert response.status_code == 400
        assert any(f["field"].startswith(field) for f in response.json()["details"]["fields"]), (
            response.json()
        )

    async def test_account_rules(self, client, auth, sender):
        bad_rail = await _usd_to_mxn(client, auth, sender)  # sanity: the default rail works
        assert bad_rail.status_code == 201
        wire = await quote(
            client, auth, source=account_source(sender["usd"]["id"]),
            destination=account_destination(sender["payee"]["id"], paymentRail="WIRE"),
        )  # fmt: skip
        assert (
            wire.status_code == 400
            and wire.json()["details"]["fields"][0]["field"] == "destination.paymentRail"
        )
        stranger = await customer(client, auth)
        their_payee = await mxn_account(client, auth, stranger["id"], suffix="021")
        theirs = await quote(
            client,
            auth,
            source=account_source(sender["usd"]["id"]),
            destination=account_destination(their_payee["id"]),
        )
        assert theirs.status_code == 400 and "own external accounts" in theirs.json()["message"]
        missing = await quote(
            client,
            auth,
            source=account_source("InternalAccount:nope"),
            destination=account_destination(sender["payee"]["id"]),
        )
        assert missing.status_code == 404
        push_only = await quote(
            client,
            auth,
            source=account_source(sender["payee"]["id"]),
            destination=account_destination(sender["usd"]["id"]),
        )
        assert push_only.status_code == 400 and "REALTIME_FUNDING" in push_only.json()["message"]

    async def test_sending_amount_limits_from_config(self, client, auth, sender):
        config = (await client.get("/config", auth=auth)).json()
        entries = [
            {k: c[k] for k in ("currencyCode", "minAmount", "maxAmount", "requiredCounterpartyFields", "enabledTransactionTypes")}
            for c in config["supportedCurrencies"]
        ]  # fmt: skip
        for entry in entries:
            if entry["currencyCode"] == "USD":
                entry["maxAmount"] = 20_000
        await client.patch("/config", auth=auth, json={"supportedCurrencies": entries})
        assert (await _usd_to_mxn(client, auth, sender, amount=20_000)).status_code == 201
        too_much = await _usd_to_mxn(client, auth, sender, amount=20_001)
        assert too_much.status_code == 400 and too_much.json()["code"] == "AMOUNT_OUT_OF_RANGE"
        # a locked receiving amount whose sending amount exceeds the limit is refused too
        receiving = await _usd_to_mxn(client, auth, sender, locked="RECEIVING", amount=400_000)
        assert receiving.status_code == 400 and receiving.json()["code"] == "AMOUNT_OUT_OF_RANGE"

    async def test_idempotent_create_replays_the_same_quote(self, client, auth, sender):
        first = await _usd_to_mxn(client, auth, sender, key="q-1")
        again = await _usd_to_mxn(client, auth, sender, key="q-1")
        assert first.status_code == again.status_code == 201 and first.content == again.content
        assert len((await client.get("/transactions", auth=auth)).json()["data"]) == 1
        different = await _usd_to_mxn(client, auth, sender, key="q-1", amount=12_345)
        assert different.status_code == 400 and different.json()["code"] == "INVALID_INPUT"
        assert different.json()["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"

    async def test_permissions(self, client, auth, sender):
        token = (await client.post("/tokens", auth=auth, json={"name": "ro", "permissions": ["VIEW"]})).json()
        viewer = (token["clientId"], token["clientSecret"])
        created = (await _usd_to_mxn(client, auth, sender)).json()
        assert (await _usd_to_mxn(client, viewer, sender)).status_code == 403
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=viewer)).status_code == 403
        assert (await client.get(f"/quotes/{created['id']}", auth=viewer)).status_code == 200
        assert (await client.get(f"/quotes/{created['id']}")).status_code == 401

    async def test_other_tenants_see_nothing(self, client, auth, sender, db, settings):
        from tests.factories import create_platform

        created = (await _usd_to_mxn(client, auth, sender)).json()
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (await client.get(f"/quotes/{created['id']}", auth=other)).json()["code"] == "QUOTE_NOT_FOUND"
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=other)).status_code == 404
        assert (await _usd_to_mxn(client, other, sender)).status_code == 404
        assert (await client.get(f"/transactions/{created['transactionId']}", auth=other)).status_code == 404
        assert await balances(client, auth, sender["customer"]["id"]) == (1_000_000, 1_000_000)


class TestExecuteQuote:
    async def test_the_issue_check_script(self, client, auth, runner, receiver):
        """Fund a customer, transfer out, quote USD->MXN locking each side, execute, watch COMPLETED."""
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        person = await customer(client, auth)
        usd = await internal_account(client, auth, person["id"])
        await fund(client, auth, usd["id"], 500_000)
        bank = await external_account(client, auth, person["id"])
        out = await client.post(
            "/transfer-out", auth=auth, json={"source": {"accountId": usd["id"]}, "destination": {"accountId": bank["id"]}, "amount": 50_000}
        )  # fmt: skip
        assert out.status_code == 201
        payee = await mxn_account(client, auth, person["id"])
        expected_balance = 500_000 - 50_000
        for locked, amount in (("SENDING", 100_000), ("RECEIVING", 250_000)):
            created = (await quote(client, auth, source=account_source(usd["id"]), destination=account_destination(payee["id"]),
                                   locked=locked, amount=amount)).json()  # fmt: skip
            want = expected("USD", "MXN", "SPEI", locked=locked, amount=amount)
            assert (created["totalSendingAmount"], created["totalReceivingAmount"]) == (
                want["sending"],
                want["receiving"],
            )
            executed = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
            assert executed.status_code == 200 and executed.json()["status"] == "PROCESSING"
            expected_balance -= want["sending"]
            await _advance(runner)
            await _advance(runner, 2)
            await run_jobs_until(
                runner,
                lambda c=created: "OUTGOING_PAYMENT.COMPLETED" in _outgoing(receiver, c["transactionId"]),
            )
            assert sorted(_outgoing(receiver, created["transactionId"])) == [
                "OUTGOING_PAYMENT.COMPLETED",
                "OUTGOING_PAYMENT.PENDING",
                "OUTGOING_PAYMENT.PROCESSING",
            ]  # delivery order is not guaranteed
            transaction = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
            assert transaction["status"] == "COMPLETED" and transaction["settledAt"]
            assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "COMPLETED"
            completed = [
                r
                for r in receiver.of_type("OUTGOING_PAYMENT.COMPLETED")
                if r.json["data"]["id"] == transaction["id"]
            ]
            assert completed[0].json["data"] == transaction
        assert await balances(client, auth, person["id"]) == (expected_balance, expected_balance)

    async def test_ledger_entries_of_an_execution(self, client, auth, sender, db):
        created = (await _usd_to_mxn(client, auth, sender, amount=10_000)).json()
        await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        tenant_id = await _tenant_of(db, sender["usd"]["id"])
        async with db.read() as session:
            [entry] = await ledger_service.entries_for(
                session, tenant_id=tenant_id, reference=created["transactionId"]
            )
        by_currency = {}
        for posting in entry["postings"]:
            by_currency.setdefault(posting["currency"], []).append(posting["amount"])
        fees = created["feesIncluded"]
        assert sorted(by_currency["USD"]) == sorted([-10_000, fees, 10_000 - fees])
        assert sorted(by_currency["MXN"]) == sorted(
            [-created["totalReceivingAmount"], created["totalReceivingAmount"]]
        )
        assert entry["kind"] == "QUOTE_EXECUTE"
        assert await balances(client, auth, sender["customer"]["id"]) == (990_000, 990_000)

    async def test_executing_twice_is_a_conflict(self, client, auth, sender):
        created = (await _usd_to_mxn(client, auth, sender)).json()
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=auth)).status_code == 200
        again = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        assert again.status_code == 409 and again.json()["code"] == "QUOTE_ALREADY_EXECUTED"
        assert await balances(client, auth, sender["customer"]["id"]) == (990_000, 990_000)

    async def test_concurrent_executes_debit_once(self, client, auth, sender):
        import asyncio

        created = (await _usd_to_mxn(client, auth, sender)).json()
        answers = await asyncio.gather(
            *(client.post(f"/quotes/{created['id']}/execute", auth=auth) for _ in range(4))
        )
        assert sorted(a.status_code for a in answers) == [200, 409, 409, 409]
        assert await balances(client, auth, sender["customer"]["id"]) == (990_000, 990_000)

    async def test_idempotent_execute_debits_once(self, client, auth, sender):
        created = (await _usd_to_mxn(client, auth, sender)).json()
        first = await client.post(
            f"/quotes/{created['id']}/execute", auth=auth, headers={"Idempotency-Key": "x-1"}
        )
        again = await client.post(
            f"/quotes/{created['id']}/execute", auth=auth, headers={"Idempotency-Key": "x-1"}
        )
        assert first.status_code == again.status_code == 200 and first.content == again.content
        assert await balances(client, auth, sender["customer"]["id"]) == (990_000, 990_000)

    async def test_insufficient_funds_leave_the_quote_executable(self, client, auth, sender):
        created = (await _usd_to_mxn(client, auth, sender, amount=1_000_001)).json()
        response = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        assert response.status_code == 400 and response.json()["code"] == "INSUFFICIENT_BALANCE"
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "PENDING"
        assert await balances(client, auth, sender["customer"]["id"]) == (1_000_000, 1_000_000)
        await fund(client, auth, sender["usd"]["id"], 1)
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=auth)).status_code == 200
        assert await balances(client, auth, sender["customer"]["id"]) == (0, 0)

    async def test_expiry(self, client, auth, sender, runner, receiver):
        clock.freeze()  # 299 s later is 1 s before expiresAt however long the steps take (a loaded CI took > 1 s)
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        created = (await _usd_to_mxn(client, auth, sender)).json()
        await _advance(runner, 299)
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "PENDING"
        clock.advance(timedelta(seconds=1))  # at expiresAt, before the expiry job has run
        late = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        assert late.status_code == 409 and late.json()["code"] == "QUOTE_EXPIRED"
        await runner.run_until_idle()
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "EXPIRED"
        transaction = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert transaction["status"] == "EXPIRED" and transaction["failureReason"] == "QUOTE_EXPIRED"
        assert _outgoing(receiver, created["transactionId"]) == ["OUTGOING_PAYMENT.EXPIRED"]
        again = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        assert again.status_code == 409 and again.json()["code"] == "QUOTE_EXPIRED"
        assert await balances(client, auth, sender["customer"]["id"]) == (1_000_000, 1_000_000)

    async def test_an_executed_quote_does_not_expire(self, client, auth, sender, runner):
        created = (await _usd_to_mxn(client, auth, sender)).json()
        await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        await _advance(runner, 400)
        await _advance(runner, 2)
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "COMPLETED"

    async def test_immediately_execute(self, client, auth, sender, runner):
        response = await _usd_to_mxn(client, auth, sender, immediatelyExecute=True)
        assert response.status_code == 201 and response.json()["status"] == "PROCESSING"
        assert await balances(client, auth, sender["customer"]["id"]) == (990_000, 990_000)
        broke = await _usd_to_mxn(client, auth, sender, amount=5_000_000, immediatelyExecute=True)
        assert broke.status_code == 400 and broke.json()["code"] == "INSUFFICIENT_BALANCE"
        assert (
            len((await client.get("/transactions", auth=auth, params={"type": "OUTGOING"})).json()["data"])
            == 1
        )

    async def test_platform_accounts_pay_on_a_customers_behalf(self, client, auth, sender, runner):
        platform_usd = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
        ).json()["data"][0]
        await fund(client, auth, platform_usd["id"], 50_000)
        source = {**account_source(platform_usd["id"]), "customerId": sender["customer"]["id"]}
        response = await quote(
            client, auth, source=source, destination=account_destination(sender["payee"]["id"])
        )
        assert response.status_code == 201, response.text
        transaction = (
            await client.get(f"/transactions/{response.json()['transactionId']}", auth=auth)
        ).json()
        assert transaction["customerId"] == sender["customer"]["id"]
        wrong = {**account_source(sender["usd"]["id"]), "customerId": platform_usd["id"]}
        refused = await quote(
            client, auth, source=wrong, destination=account_destination(sender["payee"]["id"])
        )
        assert (
            refused.status_code == 400
            and refused.json()["details"]["fields"][0]["field"] == "source.customerId"
        )


async def _tenant_of(db, internal_account_id: str) -> str:
    from sqlalchemy import text

    async with db.read() as session:
        return (
            await session.execute(
                text("SELECT tenant_id FROM internal_accounts WHERE id = :id"), {"id": internal_account_id}
            )
        ).scalar_one()
