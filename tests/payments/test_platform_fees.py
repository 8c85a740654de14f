"""Platform fees (the August 2026 reference): PATCH /config feeConfigs, QuoteRequest.platformFeeOverride,
Quote.platformFeesIncluded, OutgoingTransaction.platformFees, and the fee's money: taken with the payment,
credited to the platform's own internal account when the payment completes, refunded with it when it fails
or comes back. Expected amounts are computed here from the published rate table and fee schedule, with the
platform fee's documented rule: fixed + round_half_up(totalSendingAmount * bps / 10000)."""

from __future__ import annotations

import math
from datetime import timedelta
from fractions import Fraction
from typing import Any

import pytest
from sqlalchemy import text

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
from tests.payments.support import transaction_webhooks
from tests.support.agents import connect, funded_customer, quote_body
from tests.support.fx import DECIMALS, FEES, RATES, expected

START = 1_000_000


def _platform_fee(sending: int, *, fixed: int, bps: int) -> int:
    exact = Fraction(sending * bps, 10_000)
    return fixed + math.floor(exact + Fraction(1, 2))  # half up


def _priced(*, corridor: str, locked: str, amount: int, fixed: int, bps: int) -> dict[str, int]:
    """USD -> MXN amounts with a platform fee, found by searching sending amounts (not by platpay's formula)."""
    units = RATES["unitsPerUsd"]
    rate = Fraction(units["MXN"]) / Fraction(units["USD"]) * Fraction(10_000 - RATES["spreadBps"], 10_000)
    minor_rate = rate * Fraction(10) ** (DECIMALS["MXN"] - DECIMALS["USD"])
    rule = FEES["corridors"].get(corridor, FEES["default"])
    grid_fixed = math.ceil(Fraction(rule["fixedUsd"]) * 100)

    def fees_at(sending: int) -> tuple[int, int]:
        grid = grid_fixed + math.ceil(Fraction(sending * rule["variableBps"], 10_000))
        return grid, _platform_fee(sending, fixed=fixed, bps=bps)

    if locked == "SENDING":
        sending = amount
    else:
        sending = 1
        while True:  # the smallest sending amount that delivers `amount`
            grid, platform = fees_at(sending)
            if math.floor((sending - grid - platform) * minor_rate) >= amount:
                break
            sending += 1
    grid, platform = fees_at(sending)
    receiving = amount if locked == "RECEIVING" else math.floor((sending - grid - platform) * minor_rate)
    return {"sending": sending, "receiving": receiving, "fees": grid + platform, "platform": platform}


def fee_config(*, bps: int = 50, fixed: int = 25, currency: str = "USD", **extra: Any) -> dict[str, Any]:
    return {
        "feeType": "CROSS_CURRENCY_TRANSACTION",
        "sourceCurrency": currency,
        "variableFeeBps": bps,
        "fixedFee": {"amount": fixed, "currency": currency},
        **extra,
    }


async def _configure(client, auth, *configs: dict[str, Any]) -> dict[str, Any]:
    response = await client.patch("/config", auth=auth, json={"feeConfigs": list(configs)})
    assert response.status_code == 200, response.text
    return response.json()


async def _advance(runner, seconds: float = 0) -> None:
    clock.advance(timedelta(seconds=seconds))
    await runner.run_until_idle()


async def _platform_usd(client, auth) -> dict[str, Any]:
    page = await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
    [account] = page.json()["data"]
    return account


async def _tenant_id(db) -> str:
    async with db.read() as session:
        return (
            await session.execute(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))
        ).scalar_one()


async def _entries(db, reference: str) -> list[dict[str, Any]]:
    async with db.read() as session:
        return await ledger_service.entries_for(session, tenant_id=await _tenant_id(db), reference=reference)


def _assert_balanced(entries: list[dict[str, Any]]) -> None:
    for entry in entries:
        sums: dict[str, int] = {}
        for posting in entry["postings"]:
            sums[posting["currency"]] = sums.get(posting["currency"], 0) + posting["amount"]
        assert set(sums.values()) == {0}, entry


async def _system_balance(db, code: str) -> int:
    async with db.read() as session:
        row = (
            await session.execute(
                text("SELECT available + held FROM ledger_accounts WHERE code = :c"), {"c": code}
            )
        ).first()
    return 0 if row is None else row[0]


@pytest.fixture
async def sender(client, auth):
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], START)
    return {"customer": person, "usd": usd}


async def _pay(client, auth, sender, *, suffix: str = "011", **extra: Any) -> dict[str, Any]:
    payee = await mxn_account(client, auth, sender["customer"]["id"], suffix=suffix)
    response = await quote(
        client, auth, source=account_source(sender["usd"]["id"]), destination=account_destination(payee["id"]), **extra
    )  # fmt: skip
    assert response.status_code == 201, response.text
    return response.json()


async def _execute(client, auth, created: dict[str, Any]) -> None:
    response = await client.post(f"/quotes/{created['id']}/execute", auth=auth)
    assert response.status_code == 200, response.text


class TestFeeConfigs:
    async def test_none_until_configured_then_merged_by_key(self, client, auth):
        assert "feeConfigs" not in (await client.get("/config", auth=auth)).json()
        answer = await _configure(client, auth, fee_config(bps=30, fixed=50))
        assert answer["feeConfigs"] == [fee_config(bps=30, fixed=50)]
        assert (await client.get("/config", auth=auth)).json()["feeConfigs"] == [fee_config(bps=30, fixed=50)]
        # the same key again replaces it; another field alone leaves it as it is
        await _configure(client, auth, fee_config(bps=45, fixed=0))
        response = await client.patch("/config", auth=auth, json={"endUserTermsRequired": False})
        assert response.json()["feeConfigs"] == [fee_config(bps=45, fixed=0)]
        # variable and fixed both 0: the key's config is deactivated
        answer = await _configure(client, auth, fee_config(bps=0, fixed=0))
        assert "feeConfigs" not in answer
        assert "feeConfigs" not in (await client.get("/config", auth=auth)).json()

    @pytest.mark.parametrize(
        ("configs", "field"),
        [
            ([fee_config(), fee_config(bps=10)], "feeConfigs.1.sourceCurrency"),
            ([fee_config(bps=10_001)], "feeConfigs.0.variableFeeBps"),
            ([fee_config(bps=-1)], "feeConfigs.0.variableFeeBps"),
            ([fee_config(bps=1.5)], "feeConfigs.0.variableFeeBps"),
            ([fee_config(fixed=-1)], "feeConfigs.0.fixedFee.amount"),
            ([fee_config(fixed="50")], "feeConfigs.0.fixedFee.amount"),
            ([fee_config(fixed=0.5)], "feeConfigs.0.fixedFee.amount"),
            ([fee_config(feeType="SAME_CURRENCY_TRANSACTION")], "feeConfigs.0.feeType"),
            ([fee_config(currency="EUR")], "feeConfigs.0.sourceCurrency"),
            ([fee_config(currency="XYZ")], "feeConfigs.0.sourceCurrency"),
            (
                [{**fee_config(), "fixedFee": {"amount": 5, "currency": "EUR"}}],
                "feeConfigs.0.fixedFee.currency",
            ),
            ([{k: v for k, v in fee_config().items() if k != "fixedFee"}], "feeConfigs.0.fixedFee"),
            ([{**fee_config(), "extra": 1}], "feeConfigs.0.extra"),
            (None, "feeConfigs"),
            ("USD", "feeConfigs"),
        ],
    )
    async def test_bad_configs_name_the_field_and_change_nothing(self, client, auth, configs, field):
        await _configure(client, auth, fee_config(bps=7, fixed=3))
        before = (await client.get("/config", auth=auth)).json()
        response = await client.patch("/config", auth=auth, json={"feeConfigs": configs})
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["status"] == 400 and error["code"] in ("INVALID_INPUT", "INVALID_CURRENCY")
        assert field in [f["field"] for f in error["details"]["fields"]], error
        assert (await client.get("/config", auth=auth)).json() == before


class TestQuotesWithFees:
    async def test_configured_fee_is_charged_and_reaches_the_platform_on_completion(
        self, client, auth, db, sender, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        platform_before = (await _platform_usd(client, auth))["balance"]["amount"]
        # 10_100 * 50 / 10000 = 50.5: rounded half up to 51
        want = _priced(corridor="SPEI", locked="SENDING", amount=10_100, fixed=25, bps=50)
        assert want["platform"] == 25 + 51
        created = await _pay(client, auth, sender, amount=10_100)
        assert created["platformFeesIncluded"] == want["platform"]
        assert created["feesIncluded"] == want["fees"]
        assert created["totalSendingAmount"] == 10_100
        assert created["totalReceivingAmount"] == want["receiving"]
        transaction_id = created["transactionId"]

        await _execute(client, auth, created)
        [execution] = await _entries(db, transaction_id)
        usd = sorted(p["amount"] for p in execution["postings"] if p["currency"] == "USD")
        grid = want["fees"] - want["platform"]
        assert usd == sorted([-10_100, grid, want["platform"], 10_100 - want["fees"]])
        assert await _system_balance(db, "platform_fees:USD") == want["platform"]
        assert (await _platform_usd(client, auth))["balance"][
            "amount"
        ] == platform_before  # not before completion

        await _advance(runner)
        await _advance(runner, 1)
        tx = (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()
        assert tx["status"] == "COMPLETED"
        assert tx["platformFees"] == want["platform"] and tx["fees"] == want["fees"]
        listed = (await client.get("/transactions", auth=auth, params={"type": "OUTGOING"})).json()["data"]
        assert [t["platformFees"] for t in listed if t["id"] == transaction_id] == [want["platform"]]
        hooks = transaction_webhooks(receiver, transaction_id)
        assert {h["type"] for h in hooks} >= {"OUTGOING_PAYMENT.PENDING", "OUTGOING_PAYMENT.COMPLETED"}
        assert {h["data"]["platformFees"] for h in hooks} == {want["platform"]}

        assert (await _platform_usd(client, auth))["balance"]["amount"] == platform_before + want["platform"]
        assert await _system_balance(db, "platform_fees:USD") == 0
        assert await balances(client, auth, sender["customer"]["id"]) == (START - 10_100,) * 2
        entries = await _entries(db, transaction_id)
        assert [e["kind"] for e in entries] == ["QUOTE_EXECUTE", "PLATFORM_FEE_SETTLE"]
        _assert_balanced(entries)

    async def test_override_replaces_the_config_on_a_receiving_lock(self, client, auth, db, sender, runner):
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        override = {"platformFixedFee": {"amount": 100, "currency": "USD"}, "platformVariableFeeBps": 125}
        want = _priced(corridor="SPEI", locked="RECEIVING", amount=150_000, fixed=100, bps=125)
        created = await _pay(
            client, auth, sender, locked="RECEIVING", amount=150_000, platformFeeOverride=override
        )
        assert created["totalReceivingAmount"] == 150_000
        assert created["totalSendingAmount"] == want["sending"]
        assert created["platformFeesIncluded"] == want["platform"]
        assert created["feesIncluded"] == want["fees"]
        await _execute(client, auth, created)
        await _advance(runner)
        await _advance(runner, 1)
        tx = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert tx["status"] == "COMPLETED" and tx["platformFees"] == want["platform"]
        assert tx["sentAmount"]["amount"] == want["sending"]
        assert await balances(client, auth, sender["customer"]["id"]) == (START - want["sending"],) * 2
        _assert_balanced(await _entries(db, created["transactionId"]))

    async def test_an_override_of_zero_charges_no_platform_fee(self, client, auth, sender):
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        override = {"platformFixedFee": {"amount": 0, "currency": "USD"}, "platformVariableFeeBps": 0}
        created = await _pay(client, auth, sender, platformFeeOverride=override)
        plain = expected("USD", "MXN", "SPEI", locked="SENDING", amount=10_000)
        assert created["platformFeesIncluded"] == 0 and created["feesIncluded"] == plain["fees"]

    @pytest.mark.parametrize("locked", ["SENDING", "RECEIVING"])
    async def test_without_a_config_nothing_changes(self, client, auth, db, sender, runner, locked):
        amount = 10_000 if locked == "SENDING" else 150_000
        plain = expected("USD", "MXN", "SPEI", locked=locked, amount=amount)
        platform_before = (await _platform_usd(client, auth))["balance"]["amount"]
        created = await _pay(client, auth, sender, locked=locked, amount=amount)
        assert created["totalSendingAmount"] == plain["sending"]
        assert created["totalReceivingAmount"] == plain["receiving"]
        assert created["feesIncluded"] == plain["fees"] and created["platformFeesIncluded"] == 0
        await _execute(client, auth, created)
        await _advance(runner)
        await _advance(runner, 1)
        tx = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert tx["status"] == "COMPLETED" and tx["platformFees"] == 0 and tx["fees"] == plain["fees"]
        [execution] = await _entries(db, created["transactionId"])
        assert len(execution["postings"]) == 5  # funds, grid fee, FX x2, clearing: no platform leg
        assert await _system_balance(db, "platform_fees:USD") == 0
        assert (await _platform_usd(client, auth))["balance"]["amount"] == platform_before
        assert await balances(client, auth, sender["customer"]["id"]) == (START - plain["sending"],) * 2

    async def test_a_config_for_another_currency_does_not_apply(self, client, auth, sender):
        """feeConfigs are keyed by source currency: a USDC-funded quote is not a USD one."""
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        usdc = await internal_account(client, auth, sender["customer"]["id"], "USDC")
        await fund(client, auth, usdc["id"], START * 10_000)
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        created = await quote(
            client, auth, source=account_source(usdc["id"]), destination=account_destination(payee["id"]),
            amount=100_000_000,
        )  # fmt: skip
        assert created.status_code == 201, created.text
        assert created.json()["platformFeesIncluded"] == 0


class TestRefunds:
    async def test_002_the_fee_is_refunded_with_the_payment(self, client, auth, db, sender, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        platform_before = (await _platform_usd(client, auth))["balance"]["amount"]
        created = await _pay(client, auth, sender, suffix="002")
        assert created["platformFeesIncluded"] > 0
        await _execute(client, auth, created)
        await _advance(runner)
        await _advance(runner, 1)
        tx = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert tx["status"] == "FAILED" and tx["refund"]["status"] == "COMPLETED"
        assert tx["platformFees"] == created["platformFeesIncluded"]
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)  # the fee too
        assert (await _platform_usd(client, auth))["balance"]["amount"] == platform_before
        assert await _system_balance(db, "platform_fees:USD") == 0
        hooks = {h["type"] for h in transaction_webhooks(receiver, created["transactionId"])}
        assert {"OUTGOING_PAYMENT.FAILED", "OUTGOING_PAYMENT.REFUND_COMPLETED"} <= hooks
        entries = await _entries(db, created["transactionId"])
        assert [e["kind"] for e in entries] == ["QUOTE_EXECUTE", "QUOTE_REFUND"]
        _assert_balanced(entries)

    async def test_005_a_bank_return_takes_the_fee_back_from_the_platform(
        self, client, auth, db, sender, runner
    ):
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        platform_before = (await _platform_usd(client, auth))["balance"]["amount"]
        created = await _pay(client, auth, sender, suffix="005")
        fee = created["platformFeesIncluded"]
        await _execute(client, auth, created)
        await _advance(runner)
        await _advance(runner, 1)
        assert (await _platform_usd(client, auth))["balance"]["amount"] == platform_before + fee
        await _advance(runner, 30)
        await _advance(runner, 1)
        tx = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert tx["status"] == "FAILED" and tx["refund"]["status"] == "COMPLETED"
        assert (await _platform_usd(client, auth))["balance"]["amount"] == platform_before
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)
        assert await _system_balance(db, "platform_fees:USD") == 0
        entries = await _entries(db, created["transactionId"])
        assert [e["kind"] for e in entries] == [
            "QUOTE_EXECUTE", "PLATFORM_FEE_SETTLE", "PLATFORM_FEE_RETURN", "QUOTE_REFUND"
        ]  # fmt: skip
        _assert_balanced(entries)

    async def test_005_a_fee_the_platform_already_spent_is_the_operators_loss(
        self, client, auth, db, sender, runner
    ):
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        platform = await _platform_usd(client, auth)
        assert platform["balance"]["amount"] == 0
        created = await _pay(client, auth, sender, suffix="005")
        fee = created["platformFeesIncluded"]
        await _execute(client, auth, created)
        await _advance(runner)
        await _advance(runner, 1)
        assert (await _platform_usd(client, auth))["balance"]["amount"] == fee
        bank = await external_account(client, auth, None)
        spent = await client.post(
            "/transfer-out",
            auth=auth,
            json={"source": {"accountId": platform["id"]}, "destination": {"accountId": bank["id"]}},
        )
        assert spent.status_code == 201, spent.text
        assert spent.json()["sentAmount"]["amount"] == fee
        await _advance(runner, 30)
        await _advance(runner, 1)
        tx = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert tx["status"] == "FAILED" and tx["refund"]["status"] == "COMPLETED"
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)
        account = await _platform_usd(client, auth)
        assert account["balance"]["amount"] == 0 and account["totalBalance"]["amount"] == 0  # never overdrawn
        assert await _system_balance(db, "loss:PLATFORM_FEE:USD") == -fee
        assert await _system_balance(db, "platform_fees:USD") == 0
        _assert_balanced(await _entries(db, created["transactionId"]))


class TestOverrideRefusals:
    @pytest.mark.parametrize(
        ("override", "field"),
        [
            ({"platformFixedFee": {"amount": 1, "currency": "USD"}, "platformVariableFeeBps": 10_001},
             "platformFeeOverride.platformVariableFeeBps"),
            ({"platformFixedFee": {"amount": 1, "currency": "USD"}, "platformVariableFeeBps": -1},
             "platformFeeOverride.platformVariableFeeBps"),
            ({"platformFixedFee": {"amount": -1, "currency": "USD"}, "platformVariableFeeBps": 0},
             "platformFeeOverride.platformFixedFee.amount"),
            ({"platformFixedFee": {"amount": "1", "currency": "USD"}, "platformVariableFeeBps": 0},
             "platformFeeOverride.platformFixedFee.amount"),
            ({"platformFixedFee": {"amount": 1, "currency": "EUR"}, "platformVariableFeeBps": 0},
             "platformFeeOverride.platformFixedFee.currency"),
            ({"platformFixedFee": {"amount": 1, "currency": "USD"}}, "platformFeeOverride.platformVariableFeeBps"),
            ({"platformVariableFeeBps": 5}, "platformFeeOverride.platformFixedFee"),
            # with the schedule's 30 bps the variable fees would take the whole amount
            ({"platformFixedFee": {"amount": 0, "currency": "USD"}, "platformVariableFeeBps": 10_000},
             "lockedCurrencyAmount"),
        ],
    )  # fmt: skip
    async def test_bad_overrides_name_the_field_and_create_nothing(
        self, client, auth, sender, override, field
    ):
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        response = await quote(
            client,
            auth,
            source=account_source(sender["usd"]["id"]),
            destination=account_destination(payee["id"]),
            platformFeeOverride=override,
        )
        assert response.status_code == 400, response.text
        assert field in [f["field"] for f in response.json()["details"]["fields"]], response.json()
        assert (await client.get("/transactions", auth=auth, params={"type": "OUTGOING"})).json()[
            "data"
        ] == []

    async def test_an_override_needs_a_usd_source(self, client, auth, sender):
        usdc = await internal_account(client, auth, sender["customer"]["id"], "USDC")
        await fund(client, auth, usdc["id"], START * 10_000)
        payee = await mxn_account(client, auth, sender["customer"]["id"])
        response = await quote(
            client,
            auth,
            source=account_source(usdc["id"]),
            destination=account_destination(payee["id"]),
            amount=100_000_000,
            platformFeeOverride={
                "platformFixedFee": {"amount": 1, "currency": "USDC"},
                "platformVariableFeeBps": 0,
            },
        )
        assert response.status_code == 400, response.text
        assert response.json()["details"]["fields"][0]["field"] == "platformFeeOverride"


class TestAgents:
    async def test_an_agents_quote_carries_the_platforms_fee_and_cannot_override_it(self, client, auth):
        await _configure(client, auth, fee_config(bps=50, fixed=25))
        owner = await funded_customer(client, auth)
        agent = await connect(client, auth, owner["customer"]["id"])
        payee = await mxn_account(client, auth, owner["customer"]["id"])
        body = quote_body(owner["account"]["id"], payee["id"], 2_000)
        refused = await client.post(
            "/agents/me/quotes",
            headers=agent["headers"],
            json={**body, "platformFeeOverride": {"platformFixedFee": {"amount": 0, "currency": "USD"},
                                                  "platformVariableFeeBps": 0}},
        )  # fmt: skip
        assert refused.status_code == 400, refused.text
        assert refused.json()["details"]["fields"][0]["field"] == "platformFeeOverride"
        created = await client.post("/agents/me/quotes", headers=agent["headers"], json=body)
        assert created.status_code == 201, created.text
        assert created.json()["platformFeesIncluded"] == _platform_fee(2_000, fixed=25, bps=50) == 35
