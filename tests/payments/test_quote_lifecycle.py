"""An executed quote's life, driven by the job runner and the clock: every sandbox destination suffix,
the sandbox UMA counterparties, refunds (and a failed one), bank returns, real-time funding through
/sandbox/send, pull sources and internal destinations. Webhooks arrive at a real receiver."""

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
    mxn_account,
    quote,
)
from tests.support.fx import expected

START = 1_000_000


@pytest.fixture(autouse=True)
def _frozen_clock() -> None:
    """Time moves only when a test says so (`_advance`): a payout settles 1 s after it starts processing,
    and a loaded machine once let that second pass in real time inside one `run_until_idle`, so that the
    transfer asserted PROCESSING was already COMPLETED."""
    clock.freeze()


async def _advance(runner, seconds: float = 0) -> None:
    clock.advance(timedelta(seconds=seconds))
    await runner.run_until_idle()


def _events(receiver, transaction_id: str) -> list[str]:
    """The OUTGOING_PAYMENT.* events received for a transaction, sorted: delivery has no ordering guarantee
    (the state sequence itself is asserted through GETs)."""
    return sorted(
        r.json["type"].removeprefix("OUTGOING_PAYMENT.")
        for r in receiver.received
        if r.json["type"].startswith("OUTGOING_PAYMENT") and r.json["data"]["id"] == transaction_id
    )


@pytest.fixture
async def sender(client, auth, receiver):
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], START)
    return {"customer": person, "usd": usd}


async def _execute(client, auth, created):
    response = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
    assert response.status_code == 200, response.text
    return response.json()


async def _transaction(client, auth, created):
    return (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()


async def _pay_mxn(client, auth, sender, suffix: str):
    payee = await mxn_account(client, auth, sender["customer"]["id"], suffix=suffix)
    created = (
        await quote(
            client,
            auth,
            source=account_source(sender["usd"]["id"]),
            destination=account_destination(payee["id"]),
        )
    ).json()
    await _execute(client, auth, created)
    return created


class TestDestinationSuffixes:
    async def test_success(self, client, auth, sender, runner, receiver):
        created = await _pay_mxn(client, auth, sender, "011")
        await _advance(runner)
        assert (await _transaction(client, auth, created))["status"] == "PROCESSING"
        await _advance(runner, 1)
        assert (await _transaction(client, auth, created))["status"] == "COMPLETED"
        assert _events(receiver, created["transactionId"]) == sorted(["PENDING", "PROCESSING", "COMPLETED"])
        assert await balances(client, auth, sender["customer"]["id"]) == (START - 10_000,) * 2

    async def test_002_execution_fails_and_is_refunded_in_full(self, client, auth, sender, runner, receiver):
        created = await _pay_mxn(client, auth, sender, "002")
        assert await balances(client, auth, sender["customer"]["id"]) == (START - 10_000,) * 2
        await _advance(runner)
        failed = await _transaction(client, auth, created)
        assert failed["status"] == "FAILED" and failed["failureReason"] == "QUOTE_EXECUTION_FAILED"
        assert failed["refund"]["status"] == "PENDING" and failed["refund"]["reason"] == "TRANSACTION_FAILED"
        assert failed["refund"]["reference"] and failed["refund"]["initiatedAt"]
        await _advance(runner, 1)
        refunded = await _transaction(client, auth, created)
        assert refunded["refund"]["status"] == "COMPLETED" and refunded["refund"]["settledAt"]
        assert _events(receiver, created["transactionId"]) == sorted(
            ["PENDING", "FAILED", "REFUND_PENDING", "REFUND_COMPLETED"]
        )
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "FAILED"
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)  # fees refunded too

    async def test_003_completes_after_about_six_minutes(self, client, auth, sender, runner):
        created = await _pay_mxn(client, auth, sender, "003")
        await _advance(runner)
        await _advance(runner, 300)
        assert (await _transaction(client, auth, created))["status"] == "PROCESSING"
        await _advance(runner, 61)
        assert (await _transaction(client, auth, created))["status"] == "COMPLETED"

    async def test_004_counterparty_delivery_fails_after_processing(
        self, client, auth, sender, runner, receiver
    ):
        created = await _pay_mxn(client, auth, sender, "004")
        await _advance(runner)
        await _advance(runner, 1)
        failed = await _transaction(client, auth, created)
        assert failed["failureReason"] == "COUNTERPARTY_POST_TX_FAILED"
        await _advance(runner, 1)
        assert _events(receiver, created["transactionId"]) == sorted([
            "PENDING", "PROCESSING", "FAILED", "REFUND_PENDING", "REFUND_COMPLETED"
        ])  # fmt: skip
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)

    async def test_005_bank_return_turns_completed_into_failed(self, client, auth, sender, runner, receiver):
        created = await _pay_mxn(client, auth, sender, "005")
        await _advance(runner)
        await _advance(runner, 1)
        completed = await _transaction(client, auth, created)
        assert completed["status"] == "COMPLETED"
        assert await balances(client, auth, sender["customer"]["id"]) == (START - 10_000,) * 2
        await _advance(runner, 29)
        assert (await _transaction(client, auth, created))["status"] == "COMPLETED"
        await _advance(runner, 1)
        returned = await _transaction(client, auth, created)
        assert returned["status"] == "FAILED" and returned["failureReason"] == "COUNTERPARTY_POST_TX_FAILED"
        assert returned["settledAt"] == completed["settledAt"]
        await _advance(runner, 1)
        assert _events(receiver, created["transactionId"]) == sorted([
            "PENDING", "PROCESSING", "COMPLETED", "FAILED", "REFUND_PENDING", "REFUND_COMPLETED"
        ])  # fmt: skip
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "FAILED"
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)

    async def test_006_user_cancellation(self, client, auth, sender, runner):
        created = await _pay_mxn(client, auth, sender, "006")
        await _advance(runner)
        await _advance(runner, 1)
        await _advance(runner, 1)
        cancelled = await _transaction(client, auth, created)
        assert cancelled["status"] == "FAILED"
        assert cancelled["refund"] | {"reference": "", "initiatedAt": "", "settledAt": ""} == {
            "reference": "", "initiatedAt": "", "settledAt": "", "status": "COMPLETED", "reason": "USER_CANCELLATION"
        }  # fmt: skip
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)

    async def test_007_payout_and_refund_fail(self, client, auth, sender, runner, receiver, db):
        created = await _pay_mxn(client, auth, sender, "007")
        await _advance(runner)
        await _advance(runner, 1)
        await _advance(runner, 1)
        failed = await _transaction(client, auth, created)
        assert failed["status"] == "FAILED" and failed["refund"]["status"] == "FAILED"
        assert "settledAt" not in failed["refund"]
        assert _events(receiver, created["transactionId"]) == sorted([
            "PENDING", "PROCESSING", "FAILED", "REFUND_PENDING", "REFUND_FAILED"
        ])  # fmt: skip
        assert await balances(client, auth, sender["customer"]["id"]) == (START - 10_000,) * 2  # not refunded
        # the returned pesos wait in a suspense account; the ledger still balances (checked at teardown)
        from sqlalchemy import text

        async with db.read() as session:
            suspense = (
                await session.execute(
                    text("SELECT available FROM ledger_accounts WHERE code = 'clearing:SUSPENSE:MXN'")
                )
            ).scalar_one()
        assert suspense == created["totalReceivingAmount"]


class TestUmaDestinations:
    async def _pay(self, client, auth, person, source_account, address, amount=10_000, **extra):
        lookup = (
            await client.get(f"/receiver/uma/{address}", auth=auth, params={"customerId": person["id"]})
        ).json()
        response = await quote(
            client, auth, source=account_source(source_account["id"]),
            destination={"destinationType": "UMA_ADDRESS", "umaAddress": address, **extra}, lookupId=lookup["lookupId"],
            amount=amount,
        )  # fmt: skip
        assert response.status_code == 201, response.text
        created = response.json()
        await _execute(client, auth, created)
        return created

    async def test_success_completes(self, client, auth, sender, runner, receiver):
        created = await self._pay(
            client, auth, sender["customer"], sender["usd"], "$success.mxn@sandbox.uma.money"
        )
        want = expected("USD", "MXN", "UMA", locked="SENDING", amount=10_000)
        assert (created["totalReceivingAmount"], created["feesIncluded"]) == (want["receiving"], want["fees"])
        assert created["destination"] == {
            "destinationType": "UMA_ADDRESS",
            "umaAddress": "$success.mxn@sandbox.uma.money",
            "currency": "MXN",
        }
        await _advance(runner)
        await _advance(runner, 1)
        assert _events(receiver, created["transactionId"]) == sorted(["PENDING", "PROCESSING", "COMPLETED"])

    async def test_long_pending_stays_processing(self, client, auth, sender, runner):
        usdc = await internal_account(client, auth, sender["customer"]["id"], "USDC")
        await fund(client, auth, usdc["id"], 50_000_000)
        created = await self._pay(
            client, auth, sender["customer"], usdc, "$pending.long.usd@sandbox.uma.money", 10_000_000
        )
        await _advance(runner)
        await _advance(runner, 1800)
        assert (await _transaction(client, auth, created))["status"] == "PROCESSING"
        await _advance(runner, 1801)
        assert (await _transaction(client, auth, created))["status"] == "COMPLETED"

    async def test_compliance_failure_is_refunded(self, client, auth, sender, runner, receiver):
        usdc = await internal_account(client, auth, sender["customer"]["id"], "USDC")
        await fund(client, auth, usdc["id"], 50_000_000)
        created = await self._pay(
            client, auth, sender["customer"], usdc, "$fail.compliance.usd@sandbox.uma.money", 10_000_000
        )
        assert created["sendingCurrency"]["code"] == "USDC" and created["exchangeRate"] == 1.0
        await _advance(runner)
        await _advance(runner, 1)
        await _advance(runner, 1)
        assert _events(receiver, created["transactionId"]) == sorted([
            "PENDING", "PROCESSING", "FAILED", "REFUND_PENDING", "REFUND_COMPLETED"
        ])  # fmt: skip
        assert await balances(client, auth, sender["customer"]["id"], "USDC") == (50_000_000, 50_000_000)

    async def test_lookup_id_is_required_and_checked(self, client, auth, sender, runner):
        destination = {"destinationType": "UMA_ADDRESS", "umaAddress": "$success.mxn@sandbox.uma.money"}
        source = account_source(sender["usd"]["id"])
        missing = await quote(client, auth, source=source, destination=destination)
        assert missing.status_code == 400 and missing.json()["details"]["fields"][0]["field"] == "lookupId"
        unknown = await quote(client, auth, source=source, destination=destination, lookupId="Lookup:nope")
        assert unknown.status_code == 404 and unknown.json()["code"] == "LOOKUP_REQUEST_NOT_FOUND"
        other = (await client.get("/receiver/uma/$success.eur@sandbox.uma.money", auth=auth)).json()
        mismatched = await quote(
            client, auth, source=source, destination=destination, lookupId=other["lookupId"]
        )
        assert mismatched.status_code == 400 and "$success.eur" in mismatched.json()["message"]
        lookup = (await client.get("/receiver/uma/$success.mxn@sandbox.uma.money", auth=auth)).json()
        wrong_currency = await quote(
            client, auth, source=source, destination={**destination, "currency": "EUR"}, lookupId=lookup["lookupId"]
        )  # fmt: skip
        assert wrong_currency.status_code == 400
        clock.advance(timedelta(seconds=901))
        expired = await quote(
            client, auth, source=source, destination=destination, lookupId=lookup["lookupId"]
        )
        assert expired.status_code == 400 and "expired" in expired.json()["message"]
        await runner.run_until_idle()

    async def test_own_customers_are_credited_locally(self, client, auth, sender, runner):
        friend = await customer(client, auth)
        created = await self._pay(
            client, auth, sender["customer"], sender["usd"], friend["umaAddress"], currency="USDC"
        )
        want = expected("USD", "USDC", "UMA", locked="SENDING", amount=10_000)
        assert created["totalReceivingAmount"] == want["receiving"]
        await _advance(runner)
        await _advance(runner, 1)
        assert (await _transaction(client, auth, created))["status"] == "COMPLETED"
        assert await balances(client, auth, friend["id"], "USDC") == (want["receiving"],) * 2
        own = await client.get(f"/receiver/uma/{sender['customer']['umaAddress']}", auth=auth)
        self_quote = await quote(
            client, auth, source=account_source(sender["usd"]["id"]), lookupId=own.json()["lookupId"],
            destination={"destinationType": "UMA_ADDRESS", "umaAddress": sender["customer"]["umaAddress"], "currency": "USDC"},
        )  # fmt: skip
        assert self_quote.status_code == 400 and self_quote.json()["code"] == "SELF_PAYMENT"


class TestRealtimeFunding:
    async def _rt_quote(self, client, auth, person, payee, **source):
        response = await quote(
            client, auth, source={"sourceType": "REALTIME_FUNDING", "currency": "USD", "customerId": person["id"], **source},
            destination=account_destination(payee["id"]),
        )  # fmt: skip
        assert response.status_code == 201, response.text
        return response.json()

    async def test_send_pays_the_instructions_and_the_quote_executes_itself(
        self, client, auth, sender, runner, receiver
    ):
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        created = await self._rt_quote(client, auth, sender["customer"], payee)
        [instructions] = created["paymentInstructions"]
        info = instructions["accountOrWalletInfo"]
        assert (
            info["accountType"] == "USD_ACCOUNT"
            and info["routingNumber"]
            and info["reference"].startswith("PP")
        )
        assert str(created["totalSendingAmount"]) in instructions["instructionsNotes"]
        not_executable = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
        assert not_executable.status_code == 400 and "/sandbox/send" in not_executable.json()["message"]
        sent = await client.post(
            "/sandbox/send", auth=auth, json={"quoteId": created["id"], "currencyCode": "USD"}
        )
        assert sent.status_code == 200, sent.text
        assert sent.json()["id"] == created["transactionId"] and sent.json()["status"] == "PENDING"
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "PROCESSING"
        await _advance(runner)
        await _advance(runner, 1)
        assert _events(receiver, created["transactionId"]) == sorted(["PENDING", "PROCESSING", "COMPLETED"])
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)  # funded from outside
        twice = await client.post(
            "/sandbox/send", auth=auth, json={"quoteId": created["id"], "currencyCode": "USD"}
        )
        assert twice.status_code == 409 and twice.json()["code"] == "QUOTE_ALREADY_EXECUTED"

    async def test_mismatched_amount_fails_and_is_returned(self, client, auth, sender, runner, receiver):
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        created = await self._rt_quote(client, auth, sender["customer"], payee)
        wrong_currency = await client.post(
            "/sandbox/send", auth=auth, json={"quoteId": created["id"], "currencyCode": "EUR"}
        )
        assert wrong_currency.status_code == 400
        assert wrong_currency.json()["details"]["fields"][0]["field"] == "currencyCode"
        short = await client.post(
            "/sandbox/send",
            auth=auth,
            json={"quoteId": created["id"], "currencyCode": "USD", "currencyAmount": 9_000},
        )
        assert short.status_code == 200 and short.json()["status"] == "FAILED"
        assert (
            short.json()["failureReason"] == "FUNDING_AMOUNT_MISMATCH"
            and short.json()["refund"]["status"] == "PENDING"
        )
        await _advance(runner, 1)
        assert _events(receiver, created["transactionId"]) == sorted(
            ["FAILED", "REFUND_PENDING", "REFUND_COMPLETED"]
        )
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "FAILED"

    async def test_after_expiry_and_other_refusals(self, client, auth, sender, runner, platform):
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        created = await self._rt_quote(client, auth, sender["customer"], payee)
        immediate = await quote(
            client, auth, source={"sourceType": "REALTIME_FUNDING", "currency": "USD"},
            destination=account_destination(payee["id"]), immediatelyExecute=True,
        )  # fmt: skip
        assert (
            immediate.status_code == 400
            and immediate.json()["details"]["fields"][0]["field"] == "immediatelyExecute"
        )
        production = await client.post(
            "/sandbox/send",
            auth=platform["production"],
            json={"quoteId": created["id"], "currencyCode": "USD"},
        )
        assert production.status_code == 403
        usd_quote = (
            await quote(
                client,
                auth,
                source=account_source(sender["usd"]["id"]),
                destination=account_destination(payee["id"]),
            )
        ).json()
        not_rt = await client.post(
            "/sandbox/send", auth=auth, json={"quoteId": usd_quote["id"], "currencyCode": "USD"}
        )
        assert not_rt.status_code == 400
        await _advance(runner, 301)
        late = await client.post(
            "/sandbox/send", auth=auth, json={"quoteId": created["id"], "currencyCode": "USD"}
        )
        assert late.status_code == 409 and late.json()["code"] == "QUOTE_EXPIRED"

    async def test_stablecoin_funding_needs_its_network(self, client, auth, sender):
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        base = {"sourceType": "REALTIME_FUNDING", "currency": "USDC"}
        missing = await quote(client, auth, source=base, destination=account_destination(payee["id"]))
        assert (
            missing.status_code == 400
            and missing.json()["details"]["fields"][0]["field"] == "source.cryptoNetwork"
        )
        solana = await quote(
            client, auth, source={**base, "cryptoNetwork": "SOLANA"}, destination=account_destination(payee["id"]), amount=20_000_000
        )  # fmt: skip
        assert solana.status_code == 201, solana.text
        assert (
            solana.json()["paymentInstructions"][0]["accountOrWalletInfo"]["accountType"] == "SOLANA_WALLET"
        )
        want = expected("USDC", "MXN", "SPEI", locked="SENDING", amount=20_000_000)
        assert (solana.json()["totalReceivingAmount"], solana.json()["feesIncluded"]) == (
            want["receiving"],
            want["fees"],
        )
        tron = await quote(
            client,
            auth,
            source={**base, "cryptoNetwork": "TRON"},
            destination=account_destination(payee["id"]),
        )
        assert tron.status_code == 400 and "SOLANA" in tron.json()["message"]

    async def test_uma_address_sources_get_payment_instructions(self, client, auth, sender):
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        response = await quote(
            client, auth, source={"sourceType": "UMA_ADDRESS", "umaAddress": sender["customer"]["umaAddress"], "currency": "USD"},
            destination=account_destination(payee["id"]),
        )  # fmt: skip
        assert response.status_code == 201, response.text
        assert response.json()["paymentInstructions"]
        transaction = (
            await client.get(f"/transactions/{response.json()['transactionId']}", auth=auth)
        ).json()
        assert (
            transaction["source"]["sourceType"] == "UMA_ADDRESS"
            and transaction["customerId"] == sender["customer"]["id"]
        )


class TestOtherSourcesAndDestinations:
    async def test_pull_source_is_debited_when_the_pull_settles(
        self, client, auth, sender, runner, receiver, db
    ):
        bank = await external_account(client, auth, sender["customer"]["id"])
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        created = (
            await quote(
                client, auth, source=account_source(bank["id"]), destination=account_destination(payee["id"])
            )
        ).json()
        await _execute(client, auth, created)
        await _advance(runner)
        assert (await _transaction(client, auth, created))["status"] == "PROCESSING"
        await _advance(runner, 1)  # the ACH pull settles: now the exchange is posted
        await _advance(runner, 1)  # the payout settles
        assert _events(receiver, created["transactionId"]) == sorted(["PENDING", "PROCESSING", "COMPLETED"])
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)

    async def test_failed_pull_fails_without_a_refund(self, client, auth, sender, runner):
        bank = await external_account(client, auth, sender["customer"]["id"], account_number="55555004")
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        created = (
            await quote(
                client, auth, source=account_source(bank["id"]), destination=account_destination(payee["id"])
            )
        ).json()
        await _execute(client, auth, created)
        await _advance(runner)
        await _advance(runner, 1)
        failed = await _transaction(client, auth, created)
        assert failed["status"] == "FAILED" and "refund" not in failed

    async def test_cross_currency_between_internal_accounts(self, client, auth, sender, runner):
        usdc = await internal_account(client, auth, sender["customer"]["id"], "USDC")
        created = (
            await quote(client, auth, source=account_source(sender["usd"]["id"]), destination=account_destination(usdc["id"]),
                        locked="RECEIVING", amount=25_000_000)
        ).json()  # fmt: skip
        want = expected("USD", "USDC", "INTERNAL", locked="RECEIVING", amount=25_000_000)
        assert (created["totalSendingAmount"], created["feesIncluded"]) == (want["sending"], want["fees"])
        await _execute(client, auth, created)
        await _advance(runner)
        assert await balances(client, auth, sender["customer"]["id"], "USDC") == (25_000_000, 25_000_000)
        assert await balances(client, auth, sender["customer"]["id"]) == (START - want["sending"],) * 2
        assert (await _transaction(client, auth, created))["status"] == "COMPLETED"
