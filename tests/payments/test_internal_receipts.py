"""Payments between two parties of the same platform (a customer's UMA address, another owner's internal
account): the recipient gets its own INCOMING transaction, COMPLETED with the credit, listed under its
customerId and announced by INCOMING_PAYMENT.COMPLETED; failed payments leave it nothing."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.kit import clock
from tests.factories import (
    account_destination,
    account_source,
    balances,
    customer,
    external_account,
    fund,
    internal_account,
    quote,
)
from tests.payments.support import assert_reference_transaction, transaction_webhooks
from tests.support.fx import expected
from tests.support.jobs import run_jobs_until

START = 1_000_000


async def _advance(runner, seconds: float = 0) -> None:
    clock.advance(timedelta(seconds=seconds))
    await runner.run_until_idle()


async def _transactions(client, auth, **params) -> list[dict]:
    page = (await client.get("/transactions", auth=auth, params=params)).json()
    return [assert_reference_transaction(t) for t in page["data"]]


@pytest.fixture
async def parties(client, auth, receiver):
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    sender = await customer(client, auth)
    usd = await internal_account(client, auth, sender["id"])
    await fund(client, auth, usd["id"], START)
    recipient = await customer(client, auth, fullName="Rita Recipient", email="rita@example.com")
    usdc = await internal_account(client, auth, recipient["id"], "USDC")
    return {"sender": sender, "usd": usd, "recipient": recipient, "usdc": usdc}


async def _pay_uma(client, auth, parties, currency: str = "USDC", **extra):
    address = parties["recipient"]["umaAddress"]
    lookup = (
        await client.get(
            f"/receiver/uma/{address}", auth=auth, params={"customerId": parties["sender"]["id"]}
        )
    ).json()
    response = await quote(
        client,
        auth,
        source=account_source(parties["usd"]["id"]),
        destination={"destinationType": "UMA_ADDRESS", "umaAddress": address, "currency": currency},
        lookupId=lookup["lookupId"],
        immediatelyExecute=True,
        **extra,
    )
    assert response.status_code == 201, response.text
    return response.json()


class TestReceipts:
    async def test_paying_a_customers_uma_address_gives_it_a_completed_incoming_transaction(
        self, client, auth, parties, runner, receiver
    ):
        created = await _pay_uma(
            client, auth, parties, description="dinner", senderCustomerInfo={"FULL_NAME": "Jane Doe"}
        )
        want = expected("USD", "USDC", "UMA", locked="SENDING", amount=10_000)
        await _advance(runner)
        recipient_id = parties["recipient"]["id"]
        [incoming] = await _transactions(client, auth, customerId=recipient_id)
        assert incoming["type"] == "INCOMING" and incoming["status"] == "COMPLETED" and incoming["settledAt"]
        assert incoming["platformCustomerId"] == parties["recipient"]["platformCustomerId"]
        assert incoming["source"] == {
            "sourceType": "UMA_ADDRESS",
            "umaAddress": parties["sender"]["umaAddress"],
            "currency": "USD",
        }
        assert incoming["destination"] == {
            "destinationType": "ACCOUNT",
            "accountId": parties["usdc"]["id"],
            "currency": "USDC",
        }
        assert incoming["receivedAmount"]["amount"] == want["receiving"] == created["totalReceivingAmount"]
        assert incoming["receivedAmount"]["currency"]["code"] == "USDC"
        assert incoming["fees"] == 0 and "failureReason" not in incoming
        assert incoming["quoteId"] == created["id"]  # the quote names the OUTGOING transaction
        assert incoming["counterpartyInformation"] == {"FULL_NAME": "Jane Doe"}
        assert incoming["description"] == "dinner"
        assert await _transactions(client, auth, type="INCOMING") == [incoming]
        assert await _transactions(client, auth, receiverAccountIdentifier=parties["usdc"]["id"]) == [
            incoming
        ]
        assert await _transactions(
            client, auth, senderAccountIdentifier=parties["sender"]["umaAddress"], type="INCOMING"
        ) == [incoming]
        [outgoing] = await _transactions(client, auth, customerId=parties["sender"]["id"])
        assert outgoing["id"] == created["transactionId"] and outgoing["status"] == "COMPLETED"
        await run_jobs_until(runner, lambda: transaction_webhooks(receiver, incoming["id"]) != [])
        await runner.run_until_idle()
        # settled at once, no approval asked: only COMPLETED, carrying the transaction as GET shows it
        assert [(w["type"], w["data"]) for w in transaction_webhooks(receiver, incoming["id"])] == [
            ("INCOMING_PAYMENT.COMPLETED", incoming)
        ]
        credited = [
            r.json["data"]
            for r in receiver.of_type("INTERNAL_ACCOUNT.BALANCE_UPDATED")
            if r.json["data"]["id"] == parties["usdc"]["id"]
        ]
        assert credited[-1]["balance"]["amount"] == want["receiving"]
        assert await balances(client, auth, recipient_id, "USDC") == (want["receiving"],) * 2

    async def test_usdb_paid_to_a_customers_uma_address_lands_in_its_holding_account_not_its_wallet(
        self, client, auth, parties, runner
    ):
        recipient_id = parties["recipient"]["id"]
        holding = await internal_account(client, auth, recipient_id, "USDB")
        wallet = await internal_account(client, auth, recipient_id, "USDB", "EMBEDDED_WALLET")
        assert holding["type"] == "INTERNAL_CRYPTO"
        paid = await _pay_uma(client, auth, parties, currency="USDB")
        await _advance(runner)
        [incoming] = await _transactions(client, auth, customerId=recipient_id)
        assert incoming["status"] == "COMPLETED"
        assert incoming["destination"]["accountId"] == holding["id"]
        received = incoming["receivedAmount"]["amount"]
        assert received == paid["totalReceivingAmount"] > 0
        assert await balances(client, auth, recipient_id, "USDB") == (received, received)
        assert await balances(client, auth, recipient_id, "USDB", "EMBEDDED_WALLET") == (0, 0)
        assert wallet["id"] != holding["id"]

    async def test_paying_another_owners_internal_account_gives_it_one_too(
        self, client, auth, parties, runner
    ):
        created = (
            await quote(
                client,
                auth,
                source=account_source(parties["usd"]["id"]),
                destination=account_destination(parties["usdc"]["id"]),
                immediatelyExecute=True,
            )
        ).json()
        await _advance(runner)
        [incoming] = await _transactions(client, auth, customerId=parties["recipient"]["id"])
        assert incoming["status"] == "COMPLETED" and incoming["quoteId"] == created["id"]
        assert incoming["source"] == {
            "sourceType": "ACCOUNT",
            "accountId": parties["usd"]["id"],
            "currency": "USD",
        }
        assert incoming["receivedAmount"]["amount"] == created["totalReceivingAmount"]

    async def test_the_platform_paying_a_customer_and_a_customer_paying_the_platform(
        self, client, auth, parties, runner
    ):
        platform_usd = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
        ).json()["data"][0]
        platform_usdc = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USDC"})
        ).json()["data"][0]
        await fund(client, auth, platform_usd["id"], START)
        created = []
        for source, destination in [(platform_usd, parties["usdc"]), (parties["usd"], platform_usdc)]:
            response = await quote(
                client,
                auth,
                source=account_source(source["id"]),
                destination=account_destination(destination["id"]),
                immediatelyExecute=True,
            )
            assert response.status_code == 201, response.text
            created.append(response.json())
        await _advance(runner)
        [to_customer] = await _transactions(client, auth, customerId=parties["recipient"]["id"])
        assert to_customer["type"] == "INCOMING" and to_customer["source"]["accountId"] == platform_usd["id"]
        platform_id = (await _get(client, auth, created[0]["transactionId"]))["customerId"]
        assert platform_id.startswith("Platform:")
        to_platform = await _transactions(client, auth, customerId=platform_id, type="INCOMING")
        assert [t["source"]["accountId"] for t in to_platform] == [parties["usd"]["id"]]
        assert to_platform[0]["destination"]["accountId"] == platform_usdc["id"]

    async def test_a_conversion_between_ones_own_accounts_records_no_incoming(
        self, client, auth, parties, runner
    ):
        own_usdc = await internal_account(client, auth, parties["sender"]["id"], "USDC")
        response = await quote(
            client,
            auth,
            source=account_source(parties["usd"]["id"]),
            destination=account_destination(own_usdc["id"]),
            immediatelyExecute=True,
        )
        assert response.status_code == 201, response.text
        await _advance(runner)
        assert await _transactions(client, auth, type="INCOMING") == []
        [outgoing] = await _transactions(client, auth, customerId=parties["sender"]["id"])
        assert outgoing["status"] == "COMPLETED"


class TestFailedPaymentsLeaveTheRecipientNothing:
    async def test_a_failed_pull(self, client, auth, parties, runner):
        bank = await external_account(client, auth, parties["sender"]["id"], account_number="55555004")
        response = await quote(
            client,
            auth,
            source=account_source(bank["id"]),
            destination=account_destination(parties["usdc"]["id"]),
            immediatelyExecute=True,
        )
        assert response.status_code == 201, response.text
        await _advance(runner)
        await _advance(runner, 2)
        outgoing = await _get(client, auth, response.json()["transactionId"])
        assert outgoing["status"] == "FAILED" and outgoing["failureReason"] == "QUOTE_EXECUTION_FAILED"
        assert await _transactions(client, auth, customerId=parties["recipient"]["id"]) == []
        assert await balances(client, auth, parties["recipient"]["id"], "USDC") == (0, 0)

    async def test_a_funding_mismatch_and_an_expired_quote(self, client, auth, parties, runner):
        address = parties["recipient"]["umaAddress"]
        quotes = []
        for _ in range(2):
            lookup = (await client.get(f"/receiver/uma/{address}", auth=auth)).json()
            response = await quote(
                client,
                auth,
                source={"sourceType": "REALTIME_FUNDING", "currency": "USD"},
                destination={"destinationType": "UMA_ADDRESS", "umaAddress": address, "currency": "USDC"},
                lookupId=lookup["lookupId"],
            )
            assert response.status_code == 201, response.text
            quotes.append(response.json())
        short = await client.post(
            "/sandbox/send",
            auth=auth,
            json={"quoteId": quotes[0]["id"], "currencyCode": "USD", "currencyAmount": 1},
        )
        assert short.json()["failureReason"] == "FUNDING_AMOUNT_MISMATCH"
        await _advance(runner, 1)
        await _advance(runner, 301)
        expired = await _get(client, auth, quotes[1]["transactionId"])
        assert expired["status"] == "EXPIRED" and expired["failureReason"] == "QUOTE_EXPIRED"
        assert await _transactions(client, auth, customerId=parties["recipient"]["id"]) == []
        assert await balances(client, auth, parties["recipient"]["id"], "USDC") == (0, 0)


async def _get(client, auth, transaction_id):
    return assert_reference_transaction(
        (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()
    )
