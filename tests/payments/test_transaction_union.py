"""Transactions as the reference has them since 2026-08: direction on every transaction,
the base fields moved up, the outgoing rail fields, remittanceInformation and purposeOfPayment, and card
transactions listed and read as the CARD variant of the transaction union, in every answer that carries one."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from platpay.kit import clock
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
from tests.payments.support import assert_reference_transaction, transaction_webhooks
from tests.support.agents import connect
from tests.support.cards import active_card, approved, approved_cardholder, clear, funded_account, give_back
from tests.support.jobs import run_jobs_until


async def _transfer_out(client, auth, source, destination, amount, **extra):
    body = {"source": {"accountId": source}, "destination": {"accountId": destination}, "amount": amount}
    return await client.post("/transfer-out", auth=auth, json={**body, **extra})


@pytest.fixture
async def funded(client, auth):
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    bank = await external_account(client, auth, person["id"])
    return {"customer": person, "account": account, "bank": bank}


class TestTransferFields:
    async def test_a_transfer_out_is_a_debit_with_its_rail_and_what_travels_with_it(
        self, client, auth, funded, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        response = await _transfer_out(
            client,
            auth,
            funded["account"]["id"],
            funded["bank"]["id"],
            2_500,
            remittanceInformation="Invoice 1234",
            purposeOfPayment="FAMILY_SUPPORT",
        )
        assert response.status_code == 201, response.text
        tx = assert_reference_transaction(response.json())
        assert (tx["type"], tx["direction"], tx["paymentRail"], tx["railSelectionMode"]) == (
            "OUTGOING",
            "DEBIT",
            "ACH",
            "AUTO",
        )
        assert (tx["remittanceInformation"], tx["purposeOfPayment"]) == ("Invoice 1234", "FAMILY_SUPPORT")
        created = datetime.fromisoformat(tx["createdAt"].replace("Z", "+00:00"))
        expected = datetime.fromisoformat(tx["expectedSettlementAt"].replace("Z", "+00:00"))
        assert (
            expected - created == timedelta(seconds=tx["settlementTimelineSeconds"]) == timedelta(seconds=1)
        )
        assert tx["sentAmount"] == {**tx["sentAmount"], "amount": 2_500}
        await run_jobs_until(runner, lambda: len(transaction_webhooks(receiver, tx["id"])) == 3)
        final = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        assert final["status"] == "COMPLETED"
        for carried in [*transaction_webhooks(receiver, tx["id"])]:
            assert carried["data"]["direction"] == "DEBIT"
            assert carried["data"]["remittanceInformation"] == "Invoice 1234"
        listed = (await client.get("/transactions", auth=auth)).json()["data"]
        assert [t for t in listed if t["id"] == tx["id"]] == [final]

    async def test_naming_the_rail_is_manual(self, client, auth, funded):
        body = {
            "source": {"accountId": funded["account"]["id"]},
            "destination": {"accountId": funded["bank"]["id"], "paymentRail": "WIRE"},
            "amount": 100,
        }
        tx = (await client.post("/transfer-out", auth=auth, json=body)).json()
        assert (tx["paymentRail"], tx["railSelectionMode"]) == ("WIRE", "MANUAL")

    async def test_a_transfer_in_is_an_incoming_credit_that_sent_what_it_received(self, client, auth, funded):
        body = {
            "source": {"accountId": funded["bank"]["id"]},
            "destination": {"accountId": funded["account"]["id"]},
            "amount": 700,
        }
        tx = assert_reference_transaction((await client.post("/transfer-in", auth=auth, json=body)).json())
        assert (tx["type"], tx["direction"]) == ("INCOMING", "CREDIT")
        assert tx["sentAmount"]["amount"] == tx["receivedAmount"]["amount"] == 700
        assert "rateDetails" not in tx and "paymentRail" not in tx

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("remittanceInformation", "x" * 81),
            ("remittanceInformation", ""),
            ("remittanceInformation", 12345),
            ("purposeOfPayment", "BRIBERY"),
            ("purposeOfPayment", "family_support"),
        ],
    )
    async def test_bad_values_are_refused_naming_the_field_and_change_nothing(
        self, client, auth, funded, field, value
    ):
        response = await _transfer_out(
            client, auth, funded["account"]["id"], funded["bank"]["id"], 100, **{field: value}
        )
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "INVALID_INPUT"
        assert field in response.text
        assert (await client.get("/transactions", auth=auth)).json()["data"] == []
        account = await internal_account(client, auth, funded["customer"]["id"])
        assert account["balance"]["amount"] == 10_000


class TestQuotes:
    async def test_a_quote_keeps_remittance_and_purpose_on_its_transaction(self, client, auth, funded):
        mxn = await mxn_account(client, auth, funded["customer"]["id"])
        made = await quote(
            client,
            auth,
            source=account_source(funded["account"]["id"]),
            destination=account_destination(mxn["id"]),
            amount=1_000,
            remittanceInformation="rent March",
            purposeOfPayment="SALARY_PAYMENT",
        )
        assert made.status_code == 201, made.text
        tx = assert_reference_transaction(
            (await client.get(f"/transactions/{made.json()['transactionId']}", auth=auth)).json()
        )
        assert (tx["direction"], tx["remittanceInformation"], tx["purposeOfPayment"]) == (
            "DEBIT",
            "rent March",
            "SALARY_PAYMENT",
        )
        assert tx["exchangeRate"] > 0 and tx["quoteId"] == made.json()["id"]
        assert tx["paymentRail"] == "SPEI" and tx["railSelectionMode"] == "AUTO"

    async def test_a_bad_purpose_is_refused(self, client, auth, funded):
        mxn = await mxn_account(client, auth, funded["customer"]["id"])
        made = await quote(
            client,
            auth,
            source=account_source(funded["account"]["id"]),
            destination=account_destination(mxn["id"]),
            purposeOfPayment="LOTTERY",
        )
        assert made.status_code == 400 and "purposeOfPayment" in made.text


@pytest.fixture
async def cardholder(client, auth, runner):
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 100_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    bank = await external_account(client, auth, person["id"])
    return {"customer": person, "account": account, "card": card, "bank": bank}


class TestCardTransactions:
    async def test_a_card_transaction_is_listed_and_read_as_a_transaction(self, client, auth, cardholder):
        spent = await approved(client, auth, cardholder["card"]["id"], 1_250)
        listed = (await client.get("/transactions", auth=auth)).json()
        [card_tx] = [t for t in listed["data"] if t["type"] == "CARD"]
        assert card_tx["id"] == spent["id"] and len(listed["data"]) == 1
        assert "totalCount" not in listed  # no count of the tenant's every row (bench/transactions_list.py)
        assert card_tx["direction"] == "DEBIT" and card_tx["customerId"] == cardholder["customer"]["id"]
        assert card_tx["platformCustomerId"] == cardholder["customer"]["platformCustomerId"]
        by_id = (await client.get(f"/transactions/{spent['id']}", auth=auth)).json()
        assert by_id == card_tx == (await client.get(f"/card-transactions/{spent['id']}", auth=auth)).json()

    async def test_filters_apply_to_card_transactions(self, client, auth, cardholder):
        spent = await approved(client, auth, cardholder["card"]["id"], 300)
        moved = await _transfer_out(client, auth, cardholder["account"]["id"], cardholder["bank"]["id"], 100)
        assert moved.status_code == 201

        async def ids(**params):
            return {
                t["id"] for t in (await client.get("/transactions", auth=auth, params=params)).json()["data"]
            }

        both = {spent["id"], moved.json()["id"]}
        assert await ids(customerId=cardholder["customer"]["id"]) == both
        assert await ids(platformCustomerId=cardholder["customer"]["platformCustomerId"]) == both
        assert await ids(accountIdentifier=cardholder["account"]["id"]) == both
        assert await ids(senderAccountIdentifier=cardholder["account"]["id"]) == both
        assert await ids(receiverAccountIdentifier=cardholder["account"]["id"]) == set()
        assert await ids(type="OUTGOING") == {moved.json()["id"]}
        assert await ids(status="PENDING") == {moved.json()["id"]}
        other = await customer(client, auth)
        assert await ids(customerId=other["id"]) == set()

    async def test_pages_merge_both_kinds_by_creation_time_without_repeats(self, client, auth, cardholder):
        made = []
        for n in range(4):
            made.append((await approved(client, auth, cardholder["card"]["id"], 100 + n))["id"])
            clock.advance(timedelta(milliseconds=5))
            moved = await _transfer_out(
                client, auth, cardholder["account"]["id"], cardholder["bank"]["id"], 10 + n
            )
            made.append(moved.json()["id"])
            clock.advance(timedelta(milliseconds=5))
        for order, expected in (("desc", made[::-1]), ("asc", made)):
            seen, cursor = [], None
            while True:
                params = {"limit": 3, "sortOrder": order, **({"cursor": cursor} if cursor else {})}
                page = (await client.get("/transactions", auth=auth, params=params)).json()
                seen.extend(t["id"] for t in page["data"])
                if not page["hasMore"]:
                    break
                cursor = page["nextCursor"]
            assert seen == expected

    async def test_a_cursor_of_another_order_or_edited_is_refused(self, client, auth, cardholder):
        for n in range(3):
            await approved(client, auth, cardholder["card"]["id"], 100 + n)
        page = (await client.get("/transactions", auth=auth, params={"limit": 1})).json()
        wrong = await client.get(
            "/transactions", auth=auth, params={"limit": 1, "cursor": page["nextCursor"], "sortOrder": "asc"}
        )
        assert wrong.status_code == 400 and wrong.json()["details"]["fields"][0]["field"] == "cursor"
        # a whole base64 character of the MAC changed (the last one carries padding bits too, so editing it
        # can decode to the same bytes)
        cursor = page["nextCursor"]
        changed = cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]
        edited = await client.get("/transactions", auth=auth, params={"cursor": changed})
        assert edited.status_code == 400

    async def test_every_card_transaction_change_is_a_card_transaction_webhook(
        self, client, auth, cardholder, receiver, runner
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        spent = await approved(client, auth, cardholder["card"]["id"], 800)
        settled = await clear(client, auth, cardholder["card"]["id"], spent["id"], 800)
        assert settled.json()["status"] == "SETTLED"
        await run_jobs_until(runner, lambda: len(receiver.of_type("CARD_TRANSACTION.SETTLED")) == 1)
        for event in ("CARD_TRANSACTION.AUTHORIZED", "CARD_TRANSACTION.SETTLED"):
            [delivered] = receiver.of_type(event)
            data = delivered.json["data"]
            assert data["type"] == "CARD" and data["direction"] == "DEBIT"
            assert data["customerId"] == cardholder["customer"]["id"]
        final = (await client.get(f"/transactions/{spent['id']}", auth=auth)).json()
        assert receiver.of_type("CARD_TRANSACTION.SETTLED")[0].json["data"] == final

    async def test_a_listed_card_transaction_carries_its_refunds(self, client, auth, cardholder):
        spent = await approved(client, auth, cardholder["card"]["id"], 900)
        await approved(client, auth, cardholder["card"]["id"], 100)  # beside one without refunds
        await clear(client, auth, cardholder["card"]["id"], spent["id"], 900)
        returned = await give_back(client, auth, cardholder["card"]["id"], spent["id"], 400)
        assert returned.json()["refunds"], returned.text
        listed = (await client.get("/transactions", auth=auth)).json()["data"]
        [item] = [t for t in listed if t["id"] == spent["id"]]
        assert item == returned.json() == (await client.get(f"/transactions/{spent['id']}", auth=auth)).json()

    async def test_an_agent_sees_its_customer_s_card_transactions_only(
        self, client, auth, runner, cardholder
    ):
        spent = await approved(client, auth, cardholder["card"]["id"], 400)
        other = await approved_cardholder(client, auth)
        other_account = await funded_account(client, auth, other["id"], 10_000)
        other_card = await active_card(client, auth, runner, other["id"], [other_account["id"]])
        theirs = await approved(client, auth, other_card["id"], 400)
        agent = await connect(client, auth, cardholder["customer"]["id"])
        listed = (await client.get("/agents/me/transactions", headers=agent["headers"])).json()["data"]
        assert [t["id"] for t in listed] == [spent["id"]] and listed[0]["type"] == "CARD"
        own = await client.get(f"/agents/me/transactions/{spent['id']}", headers=agent["headers"])
        assert own.status_code == 200 and own.json()["customerId"] == cardholder["customer"]["id"]
        foreign = await client.get(f"/agents/me/transactions/{theirs['id']}", headers=agent["headers"])
        assert foreign.status_code == 404 and foreign.json()["code"] == "TRANSACTION_NOT_FOUND"
