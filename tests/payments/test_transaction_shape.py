"""The Transaction where the reference fixes its shape: `fees` is an int64 of minor units (sending currency
for OUTGOING, receiving currency for INCOMING), `failureReason` comes from the enum of the transaction's
direction. Checked wherever a transaction is rendered: GET, list, webhooks, /sandbox/send, and in
/openapi.json."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import TypeAdapter, ValidationError
from sqlalchemy import update

from platpay.kit import clock
from platpay.payments.models import TransactionRow
from platpay.payments.schemas import TransactionOneOf
from tests.factories import (
    account_destination,
    account_source,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)
from tests.payments.support import (
    INCOMING_FAILURE_REASONS,
    OUTGOING_FAILURE_REASONS,
    assert_reference_transaction,
    transaction_webhooks,
)
from tests.support.jobs import run_jobs_until


async def _get(client, auth, transaction_id):
    return assert_reference_transaction(
        (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()
    )


async def _listed(client, auth, transaction_id, **params):
    page = (await client.get("/transactions", auth=auth, params=params)).json()
    return assert_reference_transaction(next(t for t in page["data"] if t["id"] == transaction_id))


@pytest.fixture
async def sender(client, auth, receiver):
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 1_000_000)
    payee = await mxn_account(client, auth, person["id"])
    return {"customer": person, "usd": usd, "payee": payee}


class TestFees:
    async def test_a_quotes_transaction_carries_its_fees_as_minor_units_everywhere(
        self, client, auth, sender, runner, receiver
    ):
        created = (
            await quote(
                client,
                auth,
                source=account_source(sender["usd"]["id"]),
                destination=account_destination(sender["payee"]["id"]),
            )
        ).json()
        fees = created["feesIncluded"]
        assert fees == 80  # $0.50 + 30 bps of $100 (SPEI), in cents
        transaction_id = created["transactionId"]
        assert (await _get(client, auth, transaction_id))["fees"] == fees
        listed = await _listed(client, auth, transaction_id, customerId=sender["customer"]["id"])
        assert listed["fees"] == fees
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=auth)).status_code == 200
        clock.advance(timedelta(seconds=2))
        await run_jobs_until(
            runner,
            lambda: (
                "OUTGOING_PAYMENT.COMPLETED"
                in [w["type"] for w in transaction_webhooks(receiver, transaction_id)]
            ),
        )
        webhooks = transaction_webhooks(receiver, transaction_id)
        assert {w["type"] for w in webhooks} == {
            "OUTGOING_PAYMENT.PENDING",
            "OUTGOING_PAYMENT.PROCESSING",
            "OUTGOING_PAYMENT.COMPLETED",
        }
        assert [assert_reference_transaction(w["data"])["fees"] for w in webhooks] == [fees] * 3

    @pytest.mark.parametrize("amount", [None, 9_000])
    async def test_sandbox_send_answers_with_integer_fees(self, client, auth, sender, runner, amount):
        created = (
            await quote(
                client,
                auth,
                source={"sourceType": "REALTIME_FUNDING", "currency": "USD"},
                destination=account_destination(sender["payee"]["id"]),
            )
        ).json()
        body = {"quoteId": created["id"], "currencyCode": "USD"}
        if amount is not None:
            body["currencyAmount"] = amount  # a mismatch: FAILED, refunded
        sent = await client.post("/sandbox/send", auth=auth, json=body)
        assert sent.status_code == 200, sent.text
        assert assert_reference_transaction(sent.json())["fees"] == created["feesIncluded"]
        await runner.run_until_idle()

    async def test_same_currency_transfers_charge_no_fees(self, client, auth, sender):
        bank = await external_account(client, auth, sender["customer"]["id"])
        out = await client.post(
            "/transfer-out",
            auth=auth,
            json={"source": {"accountId": sender["usd"]["id"]}, "destination": {"accountId": bank["id"]}, "amount": 500},
        )  # fmt: skip
        pull = await client.post(
            "/transfer-in",
            auth=auth,
            json={"source": {"accountId": bank["id"]}, "destination": {"accountId": sender["usd"]["id"]}, "amount": 500},
        )  # fmt: skip
        for response in (out, pull):
            assert response.status_code == 201, response.text
            assert assert_reference_transaction(response.json())["fees"] == 0

    async def test_incoming_payments_fees_are_receiving_currency_minor_units(self, client, auth, runner):
        person = await customer(client, auth)
        received = await client.post(
            "/sandbox/uma/receive",
            auth=auth,
            json={
                "senderUmaAddress": "$success.usd@sandbox.uma.money",
                "customerId": person["id"],
                "receivingCurrencyCode": "USD",
                "receivingCurrencyAmount": 1_000,
            },
        )
        assert received.status_code == 200, received.text
        assert assert_reference_transaction(received.json())["fees"] == 0
        await runner.run_until_idle()


class TestFailureReasons:
    async def test_transfers_failed_before_the_fix_render_the_reference_reason(
        self, client, auth, sender, db
    ):
        """Rows stored with the sandbox label in failureReason (before it took the reference's values)."""
        bank = await external_account(client, auth, sender["customer"]["id"], account_number="55555003")
        tx = (
            await client.post(
                "/transfer-out",
                auth=auth,
                json={"source": {"accountId": sender["usd"]["id"]}, "destination": {"accountId": bank["id"]}, "amount": 500},
            )
        ).json()  # fmt: skip
        async with db.transaction() as session:
            await session.execute(
                update(TransactionRow)
                .where(TransactionRow.id == tx["id"])
                .values(failure_reason="ACCOUNT_CLOSED", extra={})
            )
        legacy = await _get(client, auth, tx["id"])
        assert legacy["failureReason"] == "QUOTE_EXECUTION_FAILED"
        assert legacy["failureDetails"]["code"] == "ACCOUNT_CLOSED"
        assert legacy == tx

    def test_a_reason_of_the_other_direction_is_refused(self):
        common = {
            "id": "Transaction:x",
            "status": "FAILED",
            "direction": "DEBIT",
            "destination": {"destinationType": "ACCOUNT", "accountId": "InternalAccount:x"},
            "customerId": "Customer:x",
            "platformCustomerId": "c",
            "createdAt": "2025-01-01T00:00:00Z",
            "updatedAt": "2025-01-01T00:00:00Z",
        }
        rendered = TypeAdapter(TransactionOneOf)  # an IncomingTransaction or an OutgoingTransaction, by type
        assert rendered.validate_python(
            {**common, "type": "OUTGOING", "failureReason": "COUNTERPARTY_POST_TX_FAILED"}
        )
        assert rendered.validate_python({**common, "type": "INCOMING", "failureReason": "PAY_REQUEST_FAILED"})
        for direction, reason in [
            ("INCOMING", "COUNTERPARTY_POST_TX_FAILED"),
            ("OUTGOING", "PAY_REQUEST_FAILED"),
            ("OUTGOING", "INSUFFICIENT_FUNDS"),
        ]:
            with pytest.raises(ValidationError):
                rendered.validate_python({**common, "type": direction, "failureReason": reason})


class TestOpenApi:
    async def test_the_document_shows_integer_fees_and_the_reference_enums(self, client):
        document = (await client.get("http://testserver/openapi.json")).json()
        schemas = document["components"]["schemas"]
        # Transaction holds what both directions carry; IncomingTransaction and OutgoingTransaction add theirs.
        fees = schemas["Transaction"]["properties"]["fees"]
        assert (fees["type"], fees["minimum"]) == ("integer", 0) and "anyOf" not in fees
        for direction in ("Outgoing", "Incoming"):
            added = schemas[f"{direction}Transaction"]["allOf"][1]["properties"]
            assert added["failureReason"]["$ref"].rsplit("/", 1)[-1] == f"{direction}TransactionFailureReason"
        assert set(schemas["OutgoingTransactionFailureReason"]["enum"]) == OUTGOING_FAILURE_REASONS
        assert set(schemas["IncomingTransactionFailureReason"]["enum"]) == INCOMING_FAILURE_REASONS
