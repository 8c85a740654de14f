"""Incoming UMA payments: POST /sandbox/uma/receive, every kind of reply to INCOMING_PAYMENT.PENDING through
a real webhook receiver, the API's approve / reject, the approval deadline, and where the money lands."""

from __future__ import annotations

import asyncio
import json
import socket
from datetime import timedelta

import pytest
from sqlalchemy import select

from platpay.kit import clock
from platpay.ledger import service as ledger_service
from platpay.payments.incoming import replies
from platpay.payments.models import TransactionRow
from tests.factories import balances, create_platform, customer, external_account, fund, internal_account
from tests.support.jobs import run_jobs_until
from tests.support.receiver import Reply
from tests.support.sandbox_values import SUCCESS_USD

SOLANA_ADDRESS = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"


async def _receive(
    client, auth, *, customer_id=None, uma=None, sender=SUCCESS_USD, currency="USD", amount=1_000, key=None
):
    body = {"senderUmaAddress": sender, "receivingCurrencyCode": currency, "receivingCurrencyAmount": amount}
    if customer_id is not None:
        body["customerId"] = customer_id
    if uma is not None:
        body["receiverUmaAddress"] = uma
    headers = {"Idempotency-Key": key} if key else {}
    return await client.post("/sandbox/uma/receive", auth=auth, json=body, headers=headers)


async def _received(client, auth, customer_id, **kwargs):
    response = await _receive(client, auth, customer_id=customer_id, **kwargs)
    assert response.status_code == 200, response.text
    return response.json()


async def _get(client, auth, transaction_id):
    return (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()


async def _hook(client, auth, runner, receiver):
    """Point the webhooks at the receiver and let its TEST ping through, so scripted replies start clean."""
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    await runner.run_until_idle()


def _incoming_types(receiver):
    return [r.json["type"] for r in receiver.received if r.json["type"].startswith("INCOMING_PAYMENT")]


async def _entries(db, transaction_id):
    async with db.read() as session:
        tenant_id = await session.scalar(
            select(TransactionRow.tenant_id).where(TransactionRow.id == transaction_id)
        )
        return await ledger_service.entries_for(session, tenant_id=tenant_id, reference=transaction_id)


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks"


@pytest.fixture
async def person(client, auth):
    return await customer(client, auth)


class TestReceive:
    async def test_creates_a_pending_payment_and_asks_the_platform(
        self, client, auth, person, runner, receiver
    ):
        await _hook(client, auth, runner, receiver)
        receiver.replies(202)
        tx = await _received(client, auth, person["id"], amount=1_234)
        account = await internal_account(client, auth, person["id"])
        assert tx["type"] == "INCOMING" and tx["status"] == "PENDING"
        assert tx["customerId"] == person["id"] and tx["platformCustomerId"] == person["platformCustomerId"]
        assert tx["source"] == {"sourceType": "UMA_ADDRESS", "umaAddress": SUCCESS_USD, "currency": "USD"}
        assert tx["destination"] == {
            "destinationType": "ACCOUNT",
            "accountId": account["id"],
            "currency": "USD",
        }
        assert tx["receivedAmount"]["amount"] == 1_234 and tx["receivedAmount"]["currency"]["code"] == "USD"
        assert tx["counterpartyInformation"] == {"FULL_NAME": "Sandbox success (USD)"}
        assert tx["reconciliationInstructions"]["reference"].startswith("UMA-")
        assert "failureReason" not in tx and "settledAt" not in tx
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        pending = receiver.of_type("INCOMING_PAYMENT.PENDING")[0].json["data"]
        assert pending.pop("requestedReceiverCustomerInfoFields") == []  # everything USD needs is on file
        assert pending == await _get(client, auth, tx["id"]) == tx
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_by_uma_address_reaches_the_same_customer(self, client, auth, person):
        tx = (await _receive(client, auth, uma=person["umaAddress"].upper())).json()
        assert tx["customerId"] == person["id"] and tx["status"] == "PENDING"

    @pytest.mark.parametrize("both", [True, False])
    async def test_exactly_one_receiver(self, client, auth, person, both):
        response = await _receive(
            client,
            auth,
            customer_id=person["id"] if both else None,
            uma=person["umaAddress"] if both else None,
        )
        assert response.status_code == 400
        fields = {f["field"] for f in response.json()["details"]["fields"]}
        assert fields == {"receiverUmaAddress", "customerId"}

    @pytest.mark.parametrize(
        "sender",
        ["$non.existent.usd@sandbox.uma.money", "$alice@example.com", "$success.usd@elsewhere.example"],
    )
    async def test_unknown_sender_is_404(self, client, auth, person, sender):
        response = await _receive(client, auth, customer_id=person["id"], sender=sender)
        assert response.status_code == 404 and response.json()["code"] == "UMA_NOT_FOUND"

    async def test_malformed_sender_names_the_field(self, client, auth, person):
        response = await _receive(client, auth, customer_id=person["id"], sender="not an address")
        assert response.status_code == 400 and response.json()["code"] == "INVALID_UMA_ADDRESS"
        assert response.json()["details"]["fields"][0]["field"] == "senderUmaAddress"

    async def test_receiver_must_be_one_of_the_tenants_customers(self, client, auth, platform, person):
        unknown = await _receive(client, auth, customer_id="Customer:nope")
        assert unknown.status_code == 404 and unknown.json()["code"] == "USER_NOT_FOUND"
        stranger = await _receive(client, auth, uma="$nobody@test-platform.platpay.test")
        assert stranger.status_code == 404 and stranger.json()["code"] == "UMA_NOT_FOUND"
        sandbox_party = await _receive(client, auth, uma="$success.eur@sandbox.uma.money")
        assert sandbox_party.status_code == 404
        production_customer = await customer(client, platform["production"])
        other_tenant = await _receive(client, auth, customer_id=production_customer["id"])
        assert other_tenant.status_code == 404
        await client.delete(f"/customers/{person['id']}", auth=auth)
        assert (await _receive(client, auth, customer_id=person["id"])).status_code == 404

    async def test_currency_and_amount_rules(self, client, auth, person):
        unknown = await _receive(client, auth, customer_id=person["id"], currency="XYZ")
        assert unknown.status_code == 400 and unknown.json()["code"] == "INVALID_CURRENCY"
        assert unknown.json()["details"]["fields"][0]["field"] == "receivingCurrencyCode"
        unsupported = await _receive(client, auth, customer_id=person["id"], currency="EUR")
        assert unsupported.status_code == 400 and unsupported.json()["code"] == "INVALID_CURRENCY"
        for amount in (0, -1, "10", 1.5):
            bad = await _receive(client, auth, customer_id=person["id"], amount=amount)
            assert (
                bad.status_code == 400
                and bad.json()["details"]["fields"][0]["field"] == "receivingCurrencyAmount"
            )
        too_big = await _receive(client, auth, customer_id=person["id"], amount=1_000_000_000_001)
        assert too_big.status_code == 400 and too_big.json()["code"] == "AMOUNT_OUT_OF_RANGE"
        assert len((await client.get("/transactions", auth=auth)).json()["data"]) == 0

    async def test_incoming_must_be_enabled_for_the_currency(self, client, auth, person):
        config = (await client.get("/config", auth=auth)).json()
        keys = (
            "currencyCode",
            "minAmount",
            "maxAmount",
            "requiredCounterpartyFields",
            "enabledTransactionTypes",
        )
        entries = [{k: c[k] for k in keys} for c in config["supportedCurrencies"]]
        for entry in entries:
            if entry["currencyCode"] == "USD":
                entry["enabledTransactionTypes"] = ["OUTGOING"]
        assert (
            await client.patch("/config", auth=auth, json={"supportedCurrencies": entries})
        ).status_code == 200
        response = await _receive(client, auth, customer_id=person["id"])
        assert response.status_code == 400 and "enabledTransactionTypes" in response.json()["message"]

    async def test_customer_missing_required_information_cannot_receive(self, client, auth):
        bare = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        response = await _receive(client, auth, customer_id=bare["id"])
        assert response.status_code == 400 and response.json()["code"] == "MISSING_MANDATORY_USER_INFO"

    async def test_production_credentials_are_refused(self, client, platform):
        person = await customer(client, platform["production"])
        response = await _receive(client, platform["production"], customer_id=person["id"])
        assert response.status_code == 403

    async def test_needs_the_transact_permission(self, client, auth, person):
        token = (await client.post("/tokens", auth=auth, json={"name": "v", "permissions": ["VIEW"]})).json()
        response = await _receive(
            client, (token["clientId"], token["clientSecret"]), customer_id=person["id"]
        )
        assert response.status_code == 403

    async def test_idempotency_key_creates_one_payment(self, client, auth, person):
        first = await _receive(client, auth, customer_id=person["id"], key="r-1")
        again = await _receive(client, auth, customer_id=person["id"], key="r-1")
        assert first.status_code == 200 and first.content == again.content
        assert len((await client.get("/transactions", auth=auth)).json()["data"]) == 1
        other = await _receive(client, auth, customer_id=person["id"], key="r-1", amount=5)
        assert other.status_code == 400 and other.json()["code"] == "INVALID_INPUT"
        assert other.json()["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"

    async def test_usdb_lands_in_the_usdb_holding_account_never_the_wallet(self, client, auth, db, person):
        """A USDB customer has two USDB accounts (the INTERNAL_CRYPTO holding account and the EMBEDDED_WALLET):
        money arriving from outside for "the customer in USDB" goes to the holding account."""
        holding = await internal_account(client, auth, person["id"], "USDB")
        wallet = await internal_account(client, auth, person["id"], "USDB", "EMBEDDED_WALLET")
        assert holding["type"] == "INTERNAL_CRYPTO" and holding["id"] != wallet["id"]
        tx = await _received(
            client,
            auth,
            person["id"],
            sender="$success.usdb@sandbox.uma.money",
            currency="USDB",
            amount=2_500,
        )
        assert tx["destination"] == {
            "destinationType": "ACCOUNT",
            "accountId": holding["id"],
            "currency": "USDB",
        }
        approved = await client.post(f"/transactions/{tx['id']}/approve", auth=auth, json={})
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"], "USDB") == (2_500, 2_500)
        assert await balances(client, auth, person["id"], "USDB", "EMBEDDED_WALLET") == (0, 0)
        [entry] = await _entries(db, tx["id"])
        postings = {p["accountId"]: p["amount"] for p in entry["postings"]}
        assert postings.pop(holding["id"]) == 2_500 and list(postings.values()) == [-2_500]


class TestWebhookReplies:
    async def test_200_approves_and_credits_exactly_the_amount(
        self, client, auth, db, person, runner, receiver
    ):
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 500)
        await _hook(client, auth, runner, receiver)
        receiver.replies(Reply(status=200, body=b'{"receiverCustomerInfo":{}}'))
        tx = await _received(client, auth, person["id"], amount=1_234)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INTERNAL_ACCOUNT.BALANCE_UPDATED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "COMPLETED" and final["settledAt"]
        assert await balances(client, auth, person["id"]) == (1_734, 1_734)
        assert _incoming_types(receiver) == ["INCOMING_PAYMENT.PENDING", "INCOMING_PAYMENT.COMPLETED"]
        assert receiver.of_type("INCOMING_PAYMENT.COMPLETED")[0].json["data"] == final
        balance_event = receiver.of_type("INTERNAL_ACCOUNT.BALANCE_UPDATED")[0].json["data"]
        assert balance_event["id"] == account["id"] and balance_event["balance"]["amount"] == 1_734
        [entry] = await _entries(db, tx["id"])
        assert entry["kind"] == "UMA_INCOMING_CREDIT"
        postings = {p["accountId"]: p["amount"] for p in entry["postings"]}
        assert postings.pop(account["id"]) == 1_234 and list(postings.values()) == [-1_234]

    async def test_an_empty_200_approves_when_nothing_was_requested(
        self, client, auth, person, runner, receiver
    ):
        await _hook(client, auth, runner, receiver)
        receiver.replies(Reply(status=200, body=b""))
        tx = await _received(client, auth, person["id"], amount=700)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1)
        assert (await _get(client, auth, tx["id"]))["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"]) == (700, 700)

    async def test_202_then_api_approve(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        receiver.replies(202)
        tx = await _received(client, auth, person["id"], amount=900)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"
        approved = await client.post(f"/transactions/{tx['id']}/approve", auth=auth, json={})
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "COMPLETED" and approved.json()["settledAt"]
        assert await balances(client, auth, person["id"]) == (900, 900)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1)
        assert receiver.of_type("INCOMING_PAYMENT.COMPLETED")[0].json["data"] == approved.json()
        clock.advance(timedelta(seconds=10))  # the deadline passes: an approved payment stays approved
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "COMPLETED"
        for action in ("approve", "reject"):
            again = await client.post(f"/transactions/{tx['id']}/{action}", auth=auth)
            assert (
                again.status_code == 409
                and again.json()["code"] == "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL"
            )
        assert await balances(client, auth, person["id"]) == (900, 900)

    async def test_202_then_api_reject(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        receiver.replies(202)
        tx = await _received(client, auth, person["id"])
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        await runner.run_until_idle()
        rejected = await client.post(
            f"/transactions/{tx['id']}/reject", auth=auth, json={"reason": "RESTRICTED_JURISDICTION"}
        )
        assert rejected.status_code == 200, rejected.text
        body = rejected.json()
        assert body["status"] == "FAILED" and body["failureReason"] == "PAY_REQUEST_FAILED"
        assert body["failureDetails"] == {
            "code": "REJECTED_BY_PLATFORM",
            "message": "rejected through POST /transactions/{id}/reject",
            "reason": "RESTRICTED_JURISDICTION",
        }
        assert "settledAt" not in body
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        assert receiver.of_type("INCOMING_PAYMENT.FAILED")[0].json["data"] == body
        assert await balances(client, auth, person["id"]) == (0, 0)
        assert (await client.post(f"/transactions/{tx['id']}/approve", auth=auth)).status_code == 409

    async def test_202_without_a_decision_is_auto_rejected_at_the_deadline(
        self, client, auth, person, runner, receiver
    ):
        clock.freeze()  # 4 s of the 5 s window pass only when the test says (a loaded machine is slow)
        await _hook(client, auth, runner, receiver)
        receiver.replies(202)
        tx = await _received(client, auth, person["id"])
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=4))
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"
        clock.advance(timedelta(seconds=1.5))
        late = await client.post(f"/transactions/{tx['id']}/approve", auth=auth)
        assert late.status_code == 409 and "window closed" in late.json()["message"]
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "PAYMENT_APPROVAL_TIMED_OUT"
        assert receiver.of_type("INCOMING_PAYMENT.FAILED")[0].json["data"] == final
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_403_rejects_and_keeps_the_reason(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        reply = {
            "code": "COUNTERPARTY_NOT_ALLOWED",
            "message": "not from there",
            "reason": "RESTRICTED_JURISDICTION",
        }
        receiver.replies(Reply(status=403, body=json.dumps(reply).encode()))
        tx = await _received(client, auth, person["id"])
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "PAY_REQUEST_FAILED"
        assert final["failureDetails"] == reply  # the platform's own code and message win
        assert _incoming_types(receiver) == ["INCOMING_PAYMENT.PENDING", "INCOMING_PAYMENT.FAILED"]
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_a_bare_403_still_says_who_rejected_it(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        receiver.replies(Reply(status=403, body=b""))
        tx = await _received(client, auth, person["id"])
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["failureReason"] == "PAY_REQUEST_FAILED"
        assert final["failureDetails"] == {
            "code": "REJECTED_BY_PLATFORM",
            "message": "your webhook endpoint answered 403 to INCOMING_PAYMENT.PENDING",
        }
        assert receiver.of_type("INCOMING_PAYMENT.FAILED")[0].json["data"] == final

    async def test_422_fails_with_the_required_fields(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        reply = {"code": "MISSING_INFO", "message": "need more", "requiredFields": ["TAX_ID", "BIRTH_DATE"]}
        receiver.replies(Reply(status=422, body=json.dumps(reply).encode()))
        tx = await _received(client, auth, person["id"])
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "MISSING_MANDATORY_PAYEE_DATA"
        assert final["failureDetails"] == reply
        assert await balances(client, auth, person["id"]) == (0, 0)

    @pytest.mark.parametrize("status", [500, 404, 409, 301])
    async def test_other_replies_fail_as_a_webhook_error(
        self, client, auth, person, runner, receiver, status
    ):
        await _hook(client, auth, runner, receiver)
        receiver.replies(status)
        tx = await _received(client, auth, person["id"])
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["failureReason"] == "PAYMENT_APPROVAL_WEBHOOK_ERROR"
        assert final["failureDetails"] == {"responseStatus": status}
        assert len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1  # the approval request is never retried
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_an_unreachable_endpoint_fails_as_a_webhook_error(self, client, auth, person, runner):
        assert (
            await client.patch("/config", auth=auth, json={"webhookEndpoint": _closed_port_url()})
        ).status_code == 200
        tx = await _received(client, auth, person["id"])
        await runner.run_until_idle()
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "PAYMENT_APPROVAL_WEBHOOK_ERROR"
        assert final["failureDetails"]["error"]
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_a_reply_after_the_api_decided_changes_nothing(
        self, client, auth, person, runner, receiver
    ):
        await _hook(client, auth, runner, receiver)
        receiver.replies(200, 200)
        approved = await _received(client, auth, person["id"], amount=300)
        rejected = await _received(client, auth, person["id"], amount=50)
        # The platform decides through the API while the approval requests are still on their way.
        assert (await client.post(f"/transactions/{approved['id']}/approve", auth=auth)).status_code == 200
        assert (await client.post(f"/transactions/{rejected['id']}/reject", auth=auth)).status_code == 200
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 2)
        await runner.run_until_idle()
        assert (await _get(client, auth, approved["id"]))["status"] == "COMPLETED"
        assert (await _get(client, auth, rejected["id"]))["status"] == "FAILED"
        assert await balances(client, auth, person["id"]) == (300, 300)
        assert len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1

    async def test_a_redelivered_approval_request_credits_once(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        tx = await _received(client, auth, person["id"], amount=400)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1)
        deliveries = (
            await client.get("/webhooks/deliveries", auth=auth, params={"type": "INCOMING_PAYMENT.PENDING"})
        ).json()["data"]
        redelivered = await client.post(f"/webhooks/deliveries/{deliveries[0]['id']}/redeliver", auth=auth)
        assert redelivered.status_code == 202
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 2)
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"]) == (400, 400)
        assert len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1

    async def test_a_redelivery_after_202_can_still_decide(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        receiver.replies(202, 500, 200)
        tx = await _received(client, auth, person["id"], amount=250)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        await runner.run_until_idle()
        [delivery] = (
            await client.get("/webhooks/deliveries", auth=auth, params={"type": "INCOMING_PAYMENT.PENDING"})
        ).json()["data"]
        for expected in (2, 3):  # the 500 to the first redelivery is no decision; the 200 to the next is
            await client.post(f"/webhooks/deliveries/{delivery['id']}/redeliver", auth=auth)
            await run_jobs_until(
                runner, lambda n=expected: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == n
            )
            await runner.run_until_idle()
            status = (await _get(client, auth, tx["id"]))["status"]
            assert status == ("PENDING" if expected == 2 else "COMPLETED")
        assert await balances(client, auth, person["id"]) == (250, 250)


class TestRequestedReceiverInformation:
    @pytest.fixture
    async def brl(self, client, db, settings):
        created = await create_platform(db, settings, name="Brazil Platform", currencies=["USD", "BRL"])
        auth = created["sandbox"]
        return auth, await customer(client, auth)

    async def test_the_sender_asks_for_what_is_not_on_file(self, client, brl, runner, receiver):
        auth, person = brl
        await _hook(client, auth, runner, receiver)
        receiver.replies(Reply(status=200, body=b'{"receiverCustomerInfo":{"TAX_ID":"12345678909"}}'))
        tx = await _received(client, auth, person["id"], currency="BRL", amount=5_000)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1)
        pending = receiver.of_type("INCOMING_PAYMENT.PENDING")[0].json["data"]
        # BRL's provider wants the counterparty's FULL_NAME (on file) and TAX_ID (an individual has none on file).
        assert pending["requestedReceiverCustomerInfoFields"] == [{"name": "TAX_ID", "mandatory": True}]
        assert (await _get(client, auth, tx["id"]))["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"], "BRL") == (5_000, 5_000)

    @pytest.mark.parametrize("body", [b"{}", b'{"receiverCustomerInfo":{"TAX_ID":"  "}}', b"not json"])
    async def test_a_200_without_the_mandatory_fields_fails(self, client, brl, runner, receiver, body):
        auth, person = brl
        await _hook(client, auth, runner, receiver)
        receiver.replies(Reply(status=200, body=body))
        tx = await _received(client, auth, person["id"], currency="BRL", amount=5_000)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "MISSING_MANDATORY_PAYEE_DATA"
        assert final["failureDetails"] == {"missingFields": ["TAX_ID"]}
        assert await balances(client, auth, person["id"], "BRL") == (0, 0)

    async def test_the_api_approval_must_supply_them_too(self, client, brl):
        auth, person = brl
        tx = await _received(client, auth, person["id"], currency="BRL", amount=5_000)
        refused = await client.post(f"/transactions/{tx['id']}/approve", auth=auth, json={})
        assert refused.status_code == 400 and refused.json()["code"] == "MISSING_MANDATORY_USER_INFO"
        assert refused.json()["details"]["fields"][0]["field"] == "receiverCustomerInfo.TAX_ID"
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"
        approved = await client.post(
            f"/transactions/{tx['id']}/approve", auth=auth, json={"receiverCustomerInfo": {"TAX_ID": "123"}}
        )
        assert approved.status_code == 200 and approved.json()["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"], "BRL") == (5_000, 5_000)

    async def test_counterparty_information_follows_the_platforms_required_fields(self, client, auth, person):
        config = (await client.get("/config", auth=auth)).json()
        keys = (
            "currencyCode",
            "minAmount",
            "maxAmount",
            "requiredCounterpartyFields",
            "enabledTransactionTypes",
        )
        entries = [{k: c[k] for k in keys} for c in config["supportedCurrencies"]]
        for entry in entries:
            if entry["currencyCode"] == "USD":
                entry["requiredCounterpartyFields"] = [
                    {"name": "FULL_NAME", "mandatory": True},
                    {"name": "NATIONALITY", "mandatory": False},
                    {"name": "TAX_ID", "mandatory": True},
                ]
        assert (
            await client.patch("/config", auth=auth, json={"supportedCurrencies": entries})
        ).status_code == 200
        tx = await _received(client, auth, person["id"], sender="$success.eur@sandbox.uma.money")
        # The sandbox sender has no TAX_ID to give: the platform can answer 422 asking for it.
        assert tx["counterpartyInformation"] == {"FULL_NAME": "Sandbox success (EUR)", "NATIONALITY": "DE"}
        assert tx["source"]["currency"] == "EUR"


class TestNoWebhookEndpoint:
    async def test_the_platform_decides_through_the_api(self, client, auth, person, runner):
        tx = await _received(client, auth, person["id"], amount=640)
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"
        approved = await client.post(f"/transactions/{tx['id']}/approve", auth=auth)
        assert approved.status_code == 200 and approved.json()["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"]) == (640, 640)

    async def test_a_rejection_without_a_reason_still_has_a_reason_and_details(self, client, auth, person):
        tx = await _received(client, auth, person["id"])
        rejected = (await client.post(f"/transactions/{tx['id']}/reject", auth=auth)).json()
        assert rejected["status"] == "FAILED" and rejected["failureReason"] == "PAY_REQUEST_FAILED"
        assert rejected["failureDetails"] == {
            "code": "REJECTED_BY_PLATFORM",
            "message": "rejected through POST /transactions/{id}/reject",
        }
        assert rejected == await _get(client, auth, tx["id"])

    async def test_undecided_payments_are_auto_rejected(self, client, auth, person, runner):
        tx = await _received(client, auth, person["id"])
        clock.advance(timedelta(seconds=5.1))
        await runner.run_until_idle()
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "PAYMENT_APPROVAL_TIMED_OUT"
        assert await balances(client, auth, person["id"]) == (0, 0)


class TestApproveAndRejectRules:
    async def test_only_incoming_payments_awaiting_approval(self, client, auth, person, runner):
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 5_000)
        bank = await external_account(client, auth, person["id"])
        out = await client.post(
            "/transfer-out",
            auth=auth,
            json={
                "source": {"accountId": account["id"]},
                "destination": {"accountId": bank["id"]},
                "amount": 100,
            },
        )
        pull = await client.post(
            "/transfer-in",
            auth=auth,
            json={
                "source": {"accountId": bank["id"]},
                "destination": {"accountId": account["id"]},
                "amount": 100,
            },
        )
        for transaction in (out.json(), pull.json()):
            assert transaction["status"] == "PENDING"
            for action in ("approve", "reject"):
                response = await client.post(f"/transactions/{transaction['id']}/{action}", auth=auth)
                assert response.status_code == 409, response.text
                assert response.json()["code"] == "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL"
        await runner.run_until_idle()

    async def test_unknown_and_other_tenants_transactions_are_404(self, client, auth, platform, person):
        assert (await client.post("/transactions/Transaction:nope/approve", auth=auth)).status_code == 404
        tx = await _received(client, auth, person["id"])
        for action in ("approve", "reject"):
            response = await client.post(f"/transactions/{tx['id']}/{action}", auth=platform["production"])
            assert response.status_code == 404 and response.json()["code"] == "TRANSACTION_NOT_FOUND"
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"

    async def test_view_tokens_cannot_decide(self, client, auth, person):
        token = (await client.post("/tokens", auth=auth, json={"name": "v", "permissions": ["VIEW"]})).json()
        tx = await _received(client, auth, person["id"])
        viewer = (token["clientId"], token["clientSecret"])
        assert (await client.post(f"/transactions/{tx['id']}/approve", auth=viewer)).status_code == 403
        assert (await client.post(f"/transactions/{tx['id']}/reject", auth=viewer)).status_code == 403

    async def test_bodies_are_validated(self, client, auth, person):
        tx = await _received(client, auth, person["id"])
        bad = await client.post(f"/transactions/{tx['id']}/reject", auth=auth, json={"reason": 5})
        assert bad.status_code == 400 and bad.json()["details"]["fields"][0]["field"] == "reason"
        bad = await client.post(
            f"/transactions/{tx['id']}/approve", auth=auth, json={"receiverCustomerInfo": []}
        )
        assert bad.status_code == 400
        unknown = await client.post(f"/transactions/{tx['id']}/approve", auth=auth, json={"other": 1})
        assert unknown.status_code == 400
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"

    async def test_concurrent_decisions_credit_once(self, client, auth, person):
        tx = await _received(client, auth, person["id"], amount=330)
        responses = await asyncio.gather(
            *(
                client.post(f"/transactions/{tx['id']}/{action}", auth=auth)
                for action in ("approve",) * 4 + ("reject",)
            )
        )
        assert sorted(r.status_code for r in responses) == [200, 409, 409, 409, 409]
        final = await _get(client, auth, tx["id"])
        assert await balances(client, auth, person["id"]) == (
            (330, 330) if final["status"] == "COMPLETED" else (0, 0)
        )

    async def test_an_idempotent_approval_replays(self, client, auth, person):
        tx = await _received(client, auth, person["id"], amount=210)
        first = await client.post(
            f"/transactions/{tx['id']}/approve", auth=auth, headers={"Idempotency-Key": "a"}
        )
        again = await client.post(
            f"/transactions/{tx['id']}/approve", auth=auth, headers={"Idempotency-Key": "a"}
        )
        assert first.status_code == again.status_code == 200 and first.content == again.content
        assert await balances(client, auth, person["id"]) == (210, 210)


class TestWhereTheMoneyLands:
    async def test_the_default_uma_deposit_account_takes_payments_in_its_currency(
        self, client, auth, db, person
    ):
        wallet = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": person["id"],
                "currency": "USDC",
                "defaultUmaDepositAccount": True,
                "accountInfo": {"accountType": "SOLANA_WALLET", "address": SOLANA_ADDRESS},
            },
        )
        assert wallet.status_code == 201, wallet.text
        usdc = await _received(client, auth, person["id"], currency="USDC", amount=2_500_000)
        assert usdc["destination"] == {
            "destinationType": "ACCOUNT",
            "accountId": wallet.json()["id"],
            "currency": "USDC",
        }
        usd = await _received(client, auth, person["id"], amount=800)  # no USD deposit account: internal
        assert usd["destination"]["accountId"] == (await internal_account(client, auth, person["id"]))["id"]
        for tx in (usdc, usd):
            approved = await client.post(f"/transactions/{tx['id']}/approve", auth=auth)
            assert approved.status_code == 200 and approved.json()["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"], "USDC") == (0, 0)  # passed straight through
        assert await balances(client, auth, person["id"]) == (800, 800)
        [entry] = await _entries(db, usdc["id"])
        assert entry["kind"] == "UMA_INCOMING_PAYOUT"
        assert sorted(p["amount"] for p in entry["postings"]) == [-2_500_000, 2_500_000]
        assert wallet.json()["id"] not in {p["accountId"] for p in entry["postings"]}

    async def test_a_bank_deposit_account_in_the_currency(self, client, auth, person):
        response = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": person["id"],
                "currency": "USD",
                "defaultUmaDepositAccount": True,
                "accountInfo": {
                    "accountType": "USD_ACCOUNT",
                    "accountNumber": "123456789",
                    "routingNumber": "011000015",
                    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
                },
            },
        )
        assert response.status_code == 201, response.text
        tx = await _received(client, auth, person["id"], amount=999)
        assert tx["destination"]["accountId"] == response.json()["id"]
        assert (await client.post(f"/transactions/{tx['id']}/approve", auth=auth)).json()[
            "status"
        ] == "COMPLETED"
        assert await balances(client, auth, person["id"]) == (0, 0)


class TestSandboxSenders:
    async def test_a_compliance_failure_fails_at_once(self, client, auth, person, runner, receiver):
        await _hook(client, auth, runner, receiver)
        tx = await _received(client, auth, person["id"], sender="$fail.compliance.usd@sandbox.uma.money")
        assert tx["status"] == "FAILED" and tx["failureReason"] == "PAY_REQUEST_FAILED"
        assert tx["failureDetails"]["code"] == "COUNTERPARTY_NOT_ALLOWED"
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        assert _incoming_types(receiver) == ["INCOMING_PAYMENT.FAILED"]  # no approval was asked
        assert receiver.of_type("INCOMING_PAYMENT.FAILED")[0].json["data"] == tx
        assert (await client.post(f"/transactions/{tx['id']}/approve", auth=auth)).status_code == 409
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_a_long_pending_sender_arrives_long_after_approval(
        self, client, auth, person, runner, receiver, settings
    ):
        clock.freeze()  # the arrival comes 1 s after the test's first look only as the test moves time
        await _hook(client, auth, runner, receiver)
        tx = await _received(
            client, auth, person["id"], sender="$pending.long.usd@sandbox.uma.money", amount=777
        )
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"  # approved, not arrived
        assert await balances(client, auth, person["id"]) == (0, 0)
        conflict = await client.post(f"/transactions/{tx['id']}/reject", auth=auth)
        assert conflict.status_code == 409 and "already approved" in conflict.json()["message"]
        clock.advance(timedelta(seconds=settings.sandbox_uma_long_pending_seconds - 1))
        await runner.run_until_idle()
        assert (await _get(client, auth, tx["id"]))["status"] == "PENDING"
        clock.advance(timedelta(seconds=2))
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1)
        assert (await _get(client, auth, tx["id"]))["status"] == "COMPLETED"
        assert await balances(client, auth, person["id"]) == (777, 777)


class TestReplyDecisions:
    """The pure reading of a reply (payments/incoming/replies.py)."""

    REQUESTED = [{"name": "TAX_ID", "mandatory": True}, {"name": "EMAIL", "mandatory": False}]

    @pytest.mark.parametrize(
        ("status", "body", "awaiting", "action", "reason"),
        [
            (200, '{"receiverCustomerInfo":{"TAX_ID":"1"}}', False, "APPROVE", None),
            (200, '{"receiverCustomerInfo":{"TAX_ID":"1"}}', True, "APPROVE", None),
            (
                200,
                '{"receiverCustomerInfo":{"EMAIL":"a@b.co"}}',
                False,
                "FAIL",
                "MISSING_MANDATORY_PAYEE_DATA",
            ),
            (200, '{"receiverCustomerInfo":"TAX_ID"}', False, "FAIL", "MISSING_MANDATORY_PAYEE_DATA"),
            (202, "", False, "DEFER", None),
            (202, "", True, "IGNORE", None),
            (403, "", False, "REJECT", "PAY_REQUEST_FAILED"),
            (403, "[]", True, "REJECT", "PAY_REQUEST_FAILED"),
            (422, '{"requiredFields":["TAX_ID", 7]}', False, "FAIL", "MISSING_MANDATORY_PAYEE_DATA"),
            (500, "", False, "FAIL", "PAYMENT_APPROVAL_WEBHOOK_ERROR"),
            (500, "", True, "IGNORE", None),
            (None, None, False, "FAIL", "PAYMENT_APPROVAL_WEBHOOK_ERROR"),
            (None, None, True, "IGNORE", None),
        ],
    )
    def test_decide(self, status, body, awaiting, action, reason):
        decision = replies.decide(
            status=status, body=body, error=None, requested=self.REQUESTED, awaiting_decision=awaiting
        )
        assert (decision.action, decision.failure_reason) == (action, reason)

    def test_only_string_required_fields_are_kept(self):
        decision = replies.decide(
            status=422,
            body='{"requiredFields":["TAX_ID", 7]}',
            error=None,
            requested=[],
            awaiting_decision=False,
        )
        assert decision.failure_details == {"requiredFields": ["TAX_ID"]}
