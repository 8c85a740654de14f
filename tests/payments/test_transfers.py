"""Sandbox funding, transfer-out (hold, settle, fail, release) and transfer-in (pull) through the API."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.kit import clock
from tests.factories import balances, customer, external_account, fund, internal_account
from tests.payments.support import assert_reference_transaction
from tests.support.jobs import run_jobs_until


async def _transfer_out(client, auth, source, destination, amount=None, key=None, **extra):
    body = {"source": {"accountId": source}, "destination": {"accountId": destination, **extra}}
    if amount is not None:
        body["amount"] = amount
    headers = {"Idempotency-Key": key} if key else {}
    return await client.post("/transfer-out", auth=auth, json=body, headers=headers)


async def _get(client, auth, transaction_id):
    return (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()


@pytest.fixture
async def funded(client, auth):
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    bank = await external_account(client, auth, person["id"])
    return {"customer": person, "account": account, "bank": bank}


class TestFunding:
    async def test_funding_credits_and_fires_balance_updated(self, client, auth, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        funded = await fund(client, auth, account["id"], 2_500)
        assert funded["balance"]["amount"] == 2_500 and funded["totalBalance"]["amount"] == 2_500
        await run_jobs_until(runner, lambda: len(receiver.of_type("INTERNAL_ACCOUNT.BALANCE_UPDATED")) == 1)
        event = receiver.of_type("INTERNAL_ACCOUNT.BALANCE_UPDATED")[0].json["data"]
        assert event["id"] == account["id"] and event["balance"]["amount"] == 2_500

    @pytest.mark.parametrize("amount", [0, -5, 100_000_000_001, "10", 1.5])
    async def test_bad_amounts(self, client, auth, amount):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        response = await client.post(
            f"/sandbox/internal-accounts/{account['id']}/fund", auth=auth, json={"amount": amount}
        )
        assert response.status_code == 400
        assert await balances(client, auth, person["id"]) == (0, 0)

    async def test_unknown_account_and_production(self, client, auth, platform):
        assert (
            await client.post(
                "/sandbox/internal-accounts/InternalAccount:x/fund", auth=auth, json={"amount": 1}
            )
        ).status_code == 404
        person = await customer(client, platform["production"])
        account = await internal_account(client, platform["production"], person["id"])
        response = await client.post(
            f"/sandbox/internal-accounts/{account['id']}/fund",
            auth=platform["production"],
            json={"amount": 1},
        )
        assert response.status_code == 403

    async def test_idempotent_funding_credits_once(self, client, auth):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        for _ in range(3):
            await client.post(
                f"/sandbox/internal-accounts/{account['id']}/fund",
                auth=auth,
                json={"amount": 700},
                headers={"Idempotency-Key": "f1"},
            )
        assert await balances(client, auth, person["id"]) == (700, 700)


class TestTransferOut:
    async def test_holds_then_settles(self, client, auth, funded, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        response = await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"], 4_000)
        assert response.status_code == 201, response.text
        tx = response.json()
        assert tx["status"] == "PENDING" and tx["type"] == "OUTGOING" and tx["sentAmount"]["amount"] == 4_000
        assert tx["customerId"] == funded["customer"]["id"] and tx["destination"]["paymentRail"] == "ACH"
        assert await balances(client, auth, funded["customer"]["id"]) == (6_000, 10_000)  # held, not gone
        await run_jobs_until(runner, lambda: len(receiver.of_type("OUTGOING_PAYMENT.COMPLETED")) == 1)
        assert await balances(client, auth, funded["customer"]["id"]) == (6_000, 6_000)
        final = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        assert final["status"] == "COMPLETED" and final["settledAt"]
        # delivery is unordered (docs/webhooks.md): the envelope ids (time-ordered) give the order of the events
        sent = [r.json for r in receiver.received if r.json["type"].startswith("OUTGOING_PAYMENT")]
        types = [envelope["type"] for envelope in sorted(sent, key=lambda envelope: envelope["id"])]
        assert types == [
            "OUTGOING_PAYMENT.PENDING",
            "OUTGOING_PAYMENT.PROCESSING",
            "OUTGOING_PAYMENT.COMPLETED",
        ]
        assert receiver.of_type("OUTGOING_PAYMENT.COMPLETED")[0].json["data"] == final

    async def test_without_amount_sends_the_whole_available_balance(self, client, auth, funded, runner):
        tx = (await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"])).json()
        assert tx["sentAmount"]["amount"] == 10_000
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert await balances(client, auth, funded["customer"]["id"]) == (0, 0)

    async def test_insufficient_funds_changes_nothing(self, client, auth, funded):
        response = await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"], 10_001)
        assert response.status_code == 400 and response.json()["code"] == "INSUFFICIENT_BALANCE"
        assert response.json()["details"]["available"] == 10_000
        assert await balances(client, auth, funded["customer"]["id"]) == (10_000, 10_000)
        assert len((await client.get("/transactions", auth=auth)).json()["data"]) == 0

    @pytest.mark.parametrize(("suffix", "cause"), [("002", "INSUFFICIENT_FUNDS"), ("003", "ACCOUNT_CLOSED")])
    async def test_immediate_failures_release_the_hold(
        self, client, auth, funded, runner, receiver, suffix, cause
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        bank = await external_account(client, auth, funded["customer"]["id"], account_number=f"55555{suffix}")
        tx = (await _transfer_out(client, auth, funded["account"]["id"], bank["id"], 3_000)).json()
        # refused before any money left: the payment did not execute; the rail's cause is in the details
        assert tx["status"] == "FAILED" and tx["failureReason"] == "QUOTE_EXECUTION_FAILED"
        assert tx["failureDetails"]["code"] == cause and "at once" in tx["failureDetails"]["message"]
        assert await balances(client, auth, funded["customer"]["id"]) == (10_000, 10_000)
        await run_jobs_until(runner, lambda: len(receiver.of_type("OUTGOING_PAYMENT.FAILED")) == 1)
        assert receiver.of_type("OUTGOING_PAYMENT.FAILED")[0].json["data"] == assert_reference_transaction(
            await _get(client, auth, tx["id"])
        )

    async def test_bank_rejection_fails_at_settlement_and_releases(self, client, auth, funded, runner):
        clock.freeze()  # settlement comes 1 s after the rail takes it: only when the test moves time
        bank = await external_account(client, auth, funded["customer"]["id"], account_number="55555004")
        tx = (await _transfer_out(client, auth, funded["account"]["id"], bank["id"], 3_000)).json()
        await runner.run_until_idle()
        assert (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()["status"] == "PROCESSING"
        assert await balances(client, auth, funded["customer"]["id"]) == (7_000, 10_000)
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        final = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        # the rail took it and the receiving bank failed it
        assert final["status"] == "FAILED" and final["failureReason"] == "COUNTERPARTY_POST_TX_FAILED"
        assert final["failureDetails"] == {
            "code": "BANK_REJECTED",
            "message": "the external account's bank rejected the transfer",
        }
        assert await balances(client, auth, funded["customer"]["id"]) == (10_000, 10_000)

    async def test_slow_failure_stays_pending_about_thirty_seconds(self, client, auth, funded, runner):
        clock.freeze()  # ~30 s pending, counted only as the test moves time
        bank = await external_account(client, auth, funded["customer"]["id"], account_number="55555005")
        tx = (await _transfer_out(client, auth, funded["account"]["id"], bank["id"], 3_000)).json()
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=20))
        await runner.run_until_idle()
        assert (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()["status"] == "PROCESSING"
        clock.advance(timedelta(seconds=11))
        await runner.run_until_idle()
        final = await _get(client, auth, tx["id"])
        assert final["status"] == "FAILED" and final["failureReason"] == "COUNTERPARTY_POST_TX_FAILED"
        assert final["failureDetails"]["code"] == "SLOW_FAILURE"
        assert await balances(client, auth, funded["customer"]["id"]) == (10_000, 10_000)

    async def test_idempotency_key_holds_once(self, client, auth, funded):
        first = await _transfer_out(
            client, auth, funded["account"]["id"], funded["bank"]["id"], 1_000, key="t-1"
        )
        again = await _transfer_out(
            client, auth, funded["account"]["id"], funded["bank"]["id"], 1_000, key="t-1"
        )
        assert first.content == again.content
        assert await balances(client, auth, funded["customer"]["id"]) == (9_000, 10_000)
        other = await _transfer_out(
            client, auth, funded["account"]["id"], funded["bank"]["id"], 2_000, key="t-1"
        )
        assert other.status_code == 400 and other.json()["code"] == "INVALID_INPUT"
        assert other.json()["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"

    async def test_account_rules(self, client, auth, funded):
        other_person = await customer(client, auth)
        their_bank = await external_account(client, auth, other_person["id"])
        response = await _transfer_out(client, auth, funded["account"]["id"], their_bank["id"], 100)
        assert response.status_code == 400 and "same customer" in response.json()["message"]
        usdc = await internal_account(client, auth, funded["customer"]["id"], "USDC")
        response = await _transfer_out(client, auth, usdc["id"], funded["bank"]["id"], 100)
        assert response.status_code == 400 and "quotes" in response.json()["message"]
        response = await _transfer_out(
            client, auth, funded["account"]["id"], funded["bank"]["id"], 100, paymentRail="SPEI"
        )
        assert (
            response.status_code == 400
            and response.json()["details"]["fields"][0]["field"] == "destination.paymentRail"
        )
        wire = await _transfer_out(
            client, auth, funded["account"]["id"], funded["bank"]["id"], 100, paymentRail="WIRE"
        )
        assert wire.status_code == 201 and wire.json()["destination"]["paymentRail"] == "WIRE"
        assert (
            await _transfer_out(client, auth, "InternalAccount:nope", funded["bank"]["id"], 100)
        ).status_code == 404
        assert (
            await _transfer_out(client, auth, funded["account"]["id"], "ExternalAccount:nope", 100)
        ).status_code == 400

    async def test_customer_missing_required_information_cannot_send(self, client, auth):
        person = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 500)
        bank = await external_account(client, auth, person["id"])
        response = await _transfer_out(client, auth, account["id"], bank["id"], 100)
        assert response.status_code == 400 and response.json()["code"] == "MISSING_MANDATORY_USER_INFO"

    async def test_amount_limits_from_config(self, client, auth, funded):
        config = (await client.get("/config", auth=auth)).json()
        usd = next(c for c in config["supportedCurrencies"] if c["currencyCode"] == "USD")
        limited = {
            k: usd[k] for k in ("currencyCode", "requiredCounterpartyFields", "enabledTransactionTypes")
        } | {"minAmount": 500, "maxAmount": 800}
        others = [
            {
                k: c[k]
                for k in (
                    "currencyCode",
                    "minAmount",
                    "maxAmount",
                    "requiredCounterpartyFields",
                    "enabledTransactionTypes",
                )
            }
            for c in config["supportedCurrencies"]
            if c["currencyCode"] != "USD"
        ]
        await client.patch("/config", auth=auth, json={"supportedCurrencies": [limited, *others]})
        for amount in (499, 801):
            response = await _transfer_out(
                client, auth, funded["account"]["id"], funded["bank"]["id"], amount
            )
            assert response.status_code == 400 and response.json()["code"] == "AMOUNT_OUT_OF_RANGE"
        assert (
            await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"], 600)
        ).status_code == 201

    async def test_platform_accounts_transfer_too(self, client, auth, runner):
        platform_usd = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
        ).json()["data"][0]
        await fund(client, auth, platform_usd["id"], 5_000)
        bank = await external_account(client, auth, None)
        tx = (await _transfer_out(client, auth, platform_usd["id"], bank["id"], 1_000)).json()
        config = (await client.get("/config", auth=auth)).json()
        assert tx["status"] == "PENDING" and tx["customerId"].startswith("Platform:")
        listed = (
            await client.get("/transactions", auth=auth, params={"customerId": tx["customerId"]})
        ).json()
        assert [t["id"] for t in listed["data"]] == [tx["id"]]
        assert config["id"]


class TestTransferIn:
    async def test_pull_from_an_ach_account_credits_on_settlement(
        self, client, auth, funded, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        body = {
            "source": {"accountId": funded["bank"]["id"]},
            "destination": {"accountId": funded["account"]["id"]},
            "amount": 2_000,
        }
        tx = (await client.post("/transfer-in", auth=auth, json=body)).json()
        assert (
            tx["status"] == "PENDING" and tx["type"] == "INCOMING" and tx["receivedAmount"]["amount"] == 2_000
        )
        assert await balances(client, auth, funded["customer"]["id"]) == (10_000, 10_000)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.COMPLETED")) == 1)
        assert await balances(client, auth, funded["customer"]["id"]) == (12_000, 12_000)

    async def test_push_only_sources_are_told_to_deposit(self, client, auth):
        person = await customer(client, auth)
        mxn_bank = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": person["id"],
                "currency": "USD",
                "accountInfo": {
                    "accountType": "SWIFT_ACCOUNT",
                    "country": "JP",
                    "swiftCode": "BOTKJPJT",
                    "bankName": "MUFG_BANK",
                    "accountNumber": "1234567",
                    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
                },
            },
        )
        assert mxn_bank.status_code == 201, mxn_bank.text
        account = await internal_account(client, auth, person["id"])
        body = {
            "source": {"accountId": mxn_bank.json()["id"]},
            "destination": {"accountId": account["id"]},
            "amount": 100,
        }
        response = await client.post("/transfer-in", auth=auth, json=body)
        assert response.status_code == 400 and "fundingPaymentInstructions" in response.json()["message"]

    @pytest.mark.parametrize(
        ("suffix", "cause"),
        [
            ("002", "INSUFFICIENT_FUNDS"),
            ("003", "ACCOUNT_CLOSED"),
            ("004", "BANK_REJECTED"),
            ("005", "SLOW_FAILURE"),
        ],
    )
    async def test_failing_pull_credits_nothing(self, client, auth, funded, runner, receiver, suffix, cause):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        bank = await external_account(client, auth, funded["customer"]["id"], account_number=f"55555{suffix}")
        body = {
            "source": {"accountId": bank["id"]},
            "destination": {"accountId": funded["account"]["id"]},
            "amount": 2_000,
        }
        tx = (await client.post("/transfer-in", auth=auth, json=body)).json()
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=31))
        await runner.run_until_idle()
        final = await _get(client, auth, tx["id"])
        # the incoming enum has no post-transfer reason: a pull that fails is a pull that did not execute
        assert final["status"] == "FAILED" and final["failureReason"] == "QUOTE_EXECUTION_FAILED"
        assert final["failureDetails"]["code"] == cause and final["failureDetails"]["message"]
        assert await balances(client, auth, funded["customer"]["id"]) == (10_000, 10_000)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)
        assert receiver.of_type("INCOMING_PAYMENT.FAILED")[0].json["data"] == assert_reference_transaction(
            final
        )

    async def test_amount_is_required(self, client, auth, funded):
        body = {
            "source": {"accountId": funded["bank"]["id"]},
            "destination": {"accountId": funded["account"]["id"]},
        }
        assert (await client.post("/transfer-in", auth=auth, json=body)).status_code == 400


class TestTransactions:
    async def test_list_filters_sort_and_confirm(self, client, auth, funded, db, settings):
        a = (await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"], 100)).json()
        b = (await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"], 200)).json()
        newest_first = (await client.get("/transactions", auth=auth)).json()
        assert [t["id"] for t in newest_first["data"]] == [b["id"], a["id"]]
        oldest_first = (
            await client.get("/transactions", auth=auth, params={"sortOrder": "asc", "limit": 1})
        ).json()
        assert oldest_first["data"][0]["id"] == a["id"]
        second = (
            await client.get(
                "/transactions",
                auth=auth,
                params={"sortOrder": "asc", "limit": 1, "cursor": oldest_first["nextCursor"]},
            )
        ).json()
        assert second["data"][0]["id"] == b["id"]
        mismatch = await client.get(
            "/transactions", auth=auth, params={"sortOrder": "desc", "cursor": oldest_first["nextCursor"]}
        )
        assert mismatch.status_code == 400
        for params, expected in [
            ({"customerId": funded["customer"]["id"]}, 2),
            ({"platformCustomerId": funded["customer"]["platformCustomerId"]}, 2),
            ({"accountIdentifier": funded["bank"]["id"]}, 2),
            ({"senderAccountIdentifier": funded["account"]["id"]}, 2),
            ({"receiverAccountIdentifier": funded["account"]["id"]}, 0),
            ({"type": "INCOMING"}, 0),
            ({"status": "PENDING"}, 2),
            ({"status": "COMPLETED"}, 0),
        ]:
            assert (
                len((await client.get("/transactions", auth=auth, params=params)).json()["data"]) == expected
            ), params
        confirmed = (await client.post(f"/transactions/{a['id']}/confirm", auth=auth)).json()
        assert confirmed["receiptDeliveryConfirmedAt"]
        explicit = (
            await client.post(
                f"/transactions/{a['id']}/confirm",
                auth=auth,
                json={"receiptDeliveryConfirmedAt": "2026-01-02T03:04:05Z"},
            )
        ).json()
        assert explicit["receiptDeliveryConfirmedAt"].startswith("2026-01-02T03:04:05")

    async def test_other_tenants_see_nothing(self, client, auth, funded, db, settings):
        from tests.factories import create_platform

        tx = (await _transfer_out(client, auth, funded["account"]["id"], funded["bank"]["id"], 100)).json()
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (await client.get(f"/transactions/{tx['id']}", auth=other)).status_code == 404
        assert (await client.post(f"/transactions/{tx['id']}/confirm", auth=other)).status_code == 404
        assert len((await client.get("/transactions", auth=other)).json()["data"]) == 0
        assert (
            await _transfer_out(client, other, funded["account"]["id"], funded["bank"]["id"], 100)
        ).status_code == 404
        assert (
            await client.post(
                f"/sandbox/internal-accounts/{funded['account']['id']}/fund", auth=other, json={"amount": 5}
            )
        ).status_code == 404
