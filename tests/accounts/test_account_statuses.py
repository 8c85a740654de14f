"""Account statuses of the 2026-08 reference through the API: ownershipType; external
accounts held for ownership verification or a review, with EXTERNAL_ACCOUNT.STATUS_UPDATED on every change
and no payout until ACTIVE; internal accounts PENDING while provisioned, FAILED when provisioning fails for
good, with INTERNAL_ACCOUNT.STATUS_UPDATED and INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from platpay.accounts import service as accounts_service
from platpay.accounts.external import service as external_service
from platpay.accounts.models import ExternalAccountRow
from platpay.accounts.state import (
    EXTERNAL_ACCOUNT,
    INTERNAL_ACCOUNT,
    ExternalAccountStatus,
    InternalAccountStatus,
)
from platpay.events.models import EventRow
from platpay.kit import clock
from platpay.kit.states import IllegalTransition
from tests.factories import create_platform, customer, external_account, fund, internal_account

# a lower-case EVM address (no EIP-55 case to get right) ending in the magic value
WALLET = "0x" + "ab" * 18 + "c"


def wallet_address(suffix: str) -> str:
    return WALLET + suffix


async def events(db, prefix: str) -> list[tuple[str, dict[str, Any]]]:
    async with db.read() as session:
        rows = await session.execute(
            select(EventRow.type, EventRow.data).where(EventRow.type.like(f"{prefix}%")).order_by(EventRow.id)
        )
        return [(row.type, row.data) for row in rows]


async def register_wallet(client, auth, customer_id: str, suffix: str, **extra: Any):
    return await client.post(
        "/customers/external-accounts",
        auth=auth,
        json={
            "customerId": customer_id,
            "currency": "USDC",
            "accountInfo": {"accountType": "ETHEREUM_WALLET", "address": wallet_address(suffix)},
            **extra,
        },
    )


async def get_external(client, auth, account_id: str) -> dict[str, Any]:
    response = await client.get(f"/customers/external-accounts/{account_id}", auth=auth)
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture
async def person(client, auth) -> dict[str, Any]:
    return await customer(client, auth)


class TestOwnershipType:
    @pytest.mark.parametrize("ownership", ["FIRST_PARTY", "THIRD_PARTY"])
    async def test_is_stored_and_returned(self, client, auth, person, ownership) -> None:
        response = await client.post(
            "/customers/external-accounts",
            auth=auth,
            json={
                "customerId": person["id"],
                "currency": "USD",
                "ownershipType": ownership,
                "accountInfo": {
                    "accountType": "USD_ACCOUNT",
                    "accountNumber": "123456789",
                    "routingNumber": "011000015",
                    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
                },
            },
        )
        assert response.status_code == 201, response.text
        created = response.json()
        assert created["ownershipType"] == ownership and created["status"] == "ACTIVE"
        assert (await get_external(client, auth, created["id"]))["ownershipType"] == ownership
        listed = (
            await client.get("/customers/external-accounts", auth=auth, params={"customerId": person["id"]})
        ).json()["data"]
        assert [a["ownershipType"] for a in listed] == [ownership]

    async def test_is_absent_when_not_given(self, client, auth, person) -> None:
        created = await external_account(client, auth, person["id"])
        assert "ownershipType" not in created

    async def test_platform_accounts_take_it_too(self, client, auth) -> None:
        response = await client.post(
            "/platform/external-accounts",
            auth=auth,
            json={
                "currency": "USD",
                "ownershipType": "FIRST_PARTY",
                "accountInfo": {
                    "accountType": "USD_ACCOUNT",
                    "accountNumber": "123456789",
                    "routingNumber": "011000015",
                    "beneficiary": {"beneficiaryType": "BUSINESS", "legalName": "Acme Corp"},
                },
            },
        )
        assert response.status_code == 201, response.text
        assert response.json()["ownershipType"] == "FIRST_PARTY"

    @pytest.mark.parametrize("value", ["SECOND_PARTY", "first_party", 1, ""])
    async def test_an_unknown_value_is_refused_by_name_and_nothing_is_stored(
        self, client, auth, person, value
    ) -> None:
        response = await register_wallet(client, auth, person["id"], "011", ownershipType=value)
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["code"] == "INVALID_INPUT"
        assert [entry["field"] for entry in body["details"]["fields"]] == ["ownershipType"]
        listed = await client.get("/customers/external-accounts", auth=auth)
        assert listed.json()["data"] == []


class TestOwnershipVerification:
    """Sandbox: platformAccountId (else the identifier) ending 201/202/203 holds a FIRST_PARTY wallet."""

    async def test_201_is_verified_after_the_delay_with_a_webhook(self, client, auth, db, runner, person):
        clock.freeze()
        response = await register_wallet(client, auth, person["id"], "201", ownershipType="FIRST_PARTY")
        assert response.status_code == 201, response.text
        account = response.json()
        assert account["status"] == "PENDING_OWNERSHIP_VERIFICATION"
        await runner.run_until_idle()
        assert (await get_external(client, auth, account["id"]))["status"] == "PENDING_OWNERSHIP_VERIFICATION"
        assert await events(db, "EXTERNAL_ACCOUNT.") == []  # registering is not a status change
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        now = await get_external(client, auth, account["id"])
        assert now["status"] == "ACTIVE"
        [(event_type, data)] = await events(db, "EXTERNAL_ACCOUNT.")
        assert event_type == "EXTERNAL_ACCOUNT.STATUS_UPDATED"
        assert data == now  # the reference's payload: the external account as GET returns it

    async def test_202_fails_verification(self, client, auth, db, runner, person) -> None:
        clock.freeze()
        account = (
            await register_wallet(client, auth, person["id"], "202", ownershipType="FIRST_PARTY")
        ).json()
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert (await get_external(client, auth, account["id"]))["status"] == "UNVERIFIED"
        assert [d["status"] for _, d in await events(db, "EXTERNAL_ACCOUNT.")] == ["UNVERIFIED"]

    async def test_203_stays_pending(self, client, auth, db, runner, person) -> None:
        clock.freeze()
        account = (
            await client.post(
                "/customers/external-accounts",
                auth=auth,
                json={
                    "customerId": person["id"],
                    "currency": "USDC",
                    "ownershipType": "FIRST_PARTY",
                    "platformAccountId": "wallet-203",  # the platform's id carries it
                    "accountInfo": {"accountType": "ETHEREUM_WALLET", "address": wallet_address("011")},
                },
            )
        ).json()
        clock.advance(timedelta(hours=1))
        await runner.run_until_idle()
        assert (await get_external(client, auth, account["id"]))["status"] == "PENDING_OWNERSHIP_VERIFICATION"
        assert await events(db, "EXTERNAL_ACCOUNT.") == []

    @pytest.mark.parametrize("ownership", [None, "THIRD_PARTY"])
    async def test_applies_only_to_the_customers_own_wallets(self, client, auth, person, ownership) -> None:
        extra = {"ownershipType": ownership} if ownership else {}
        response = await register_wallet(client, auth, person["id"], "201", **extra)
        assert response.json()["status"] == "ACTIVE"

    async def test_applies_only_to_wallets(self, client, auth, person) -> None:
        created = await external_account(client, auth, person["id"], "123456201")
        assert created["status"] == "ACTIVE"

    async def test_a_wallet_waiting_for_verification_receives_no_payout(self, client, auth, runner, person):
        source = await internal_account(client, auth, person["id"], "USDC")
        await fund(client, auth, source["id"], 5_000)
        wallet = (
            await register_wallet(client, auth, person["id"], "203", ownershipType="FIRST_PARTY")
        ).json()
        body = {
            "source": {"accountId": source["id"]},
            "destination": {"accountId": wallet["id"]},
            "amount": 100,
        }
        refused = await client.post("/transfer-out", auth=auth, json=body)
        assert refused.status_code == 400, refused.text
        assert refused.json()["details"]["fields"][0]["field"] == "destination.accountId"
        assert "PENDING_OWNERSHIP_VERIFICATION" in refused.text
        quoted = await client.post(
            "/quotes",
            auth=auth,
            json={
                "source": {"sourceType": "ACCOUNT", "accountId": source["id"]},
                "destination": {"destinationType": "ACCOUNT", "accountId": wallet["id"]},
                "lockedCurrencySide": "SENDING",
                "lockedCurrencyAmount": 100,
            },
        )
        assert quoted.status_code == 400, quoted.text
        assert "PENDING_OWNERSHIP_VERIFICATION" in quoted.text
        available = (await internal_account(client, auth, person["id"], "USDC"))["balance"]["amount"]
        assert available == 5_000


class TestReview:
    async def test_204_is_under_review_then_active(self, client, auth, db, runner, person) -> None:
        clock.freeze()
        account = await external_account(client, auth, person["id"], "123456204")
        assert account["status"] == "UNDER_REVIEW"
        source = await internal_account(client, auth, person["id"])
        await fund(client, auth, source["id"], 1_000)
        transfer = {"source": {"accountId": source["id"]}, "destination": {"accountId": account["id"]}}
        refused = await client.post("/transfer-out", auth=auth, json={**transfer, "amount": 100})
        assert refused.status_code == 400 and "UNDER_REVIEW" in refused.text
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert (await get_external(client, auth, account["id"]))["status"] == "ACTIVE"
        assert [d["status"] for _, d in await events(db, "EXTERNAL_ACCOUNT.")] == ["ACTIVE"]
        paid = await client.post("/transfer-out", auth=auth, json={**transfer, "amount": 100})
        assert paid.status_code == 201, paid.text

    async def test_205_is_under_review_then_inactive(self, client, auth, db, runner, person) -> None:
        clock.freeze()
        account = await external_account(client, auth, person["id"], "123456205")
        assert account["status"] == "UNDER_REVIEW"
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert (await get_external(client, auth, account["id"]))["status"] == "INACTIVE"

    async def test_a_deleted_account_is_not_moved_by_its_review(self, client, auth, db, runner, person):
        clock.freeze()
        account = await external_account(client, auth, person["id"], "123456204")
        deleted = await client.delete(f"/customers/external-accounts/{account['id']}", auth=auth)
        assert deleted.status_code == 204
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert await events(db, "EXTERNAL_ACCOUNT.") == []

    async def test_production_accounts_are_active_at_once(self, client, db, settings) -> None:
        production = (await create_platform(db, settings))["production"]
        person = await customer(client, production)
        account = await external_account(client, production, person["id"], "123456204")
        assert account["status"] == "ACTIVE"


class TestExternalStatusMachine:
    def test_every_status_is_reachable_and_only_inactive_is_terminal(self) -> None:
        assert EXTERNAL_ACCOUNT.reachable() == set(ExternalAccountStatus)
        assert EXTERNAL_ACCOUNT.terminal == {ExternalAccountStatus.INACTIVE}

    def test_a_verified_account_does_not_go_back_to_verification(self) -> None:
        with pytest.raises(IllegalTransition):
            EXTERNAL_ACCOUNT.move("ACTIVE", ExternalAccountStatus.PENDING_OWNERSHIP_VERIFICATION)

    async def test_a_report_that_cannot_apply_changes_nothing(self, client, auth, db, person) -> None:
        """A provider's late or repeated status report (ACTIVE -> UNVERIFIED is no move) is ignored."""
        account = await external_account(client, auth, person["id"])
        async with db.transaction() as session:
            moved = await external_service.update_status(
                session,
                tenant_id=await _tenant_id(db, account["id"]),
                account_id=account["id"],
                status="UNVERIFIED",
            )
        assert moved is None
        assert (await get_external(client, auth, account["id"]))["status"] == "ACTIVE"
        assert await events(db, "EXTERNAL_ACCOUNT.") == []


async def _tenant_id(db, external_account_id: str) -> str:
    async with db.read() as session:
        return await session.scalar(
            select(ExternalAccountRow.tenant_id).where(ExternalAccountRow.id == external_account_id)
        )


async def holding_accounts(client, auth, customer_id: str) -> list[dict[str, Any]]:
    accounts = (
        await client.get("/customers/internal-accounts", auth=auth, params={"customerId": customer_id})
    ).json()["data"]
    return sorted(accounts, key=lambda a: a["id"])


class TestInternalAccountProvisioning:
    """Sandbox: the customer's email ending 301/302/303 before the @ opens its accounts PENDING."""

    async def test_301_opens_pending_without_instructions_then_active_with_them(
        self, client, auth, db, runner
    ) -> None:
        clock.freeze()
        person = await customer(client, auth, email="jane.301@example.com")
        accounts = await holding_accounts(client, auth, person["id"])
        assert accounts and {a["status"] for a in accounts} == {"PENDING"}
        assert all(a["fundingPaymentInstructions"] == [] for a in accounts)
        usd = next(a for a in accounts if a["balance"]["currency"]["code"] == "USD")
        refused = await client.post(
            f"/sandbox/internal-accounts/{usd['id']}/fund", auth=auth, json={"amount": 1}
        )
        assert refused.status_code == 400, refused.text
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        now = {a["id"]: a for a in await holding_accounts(client, auth, person["id"])}
        assert {a["status"] for a in now.values()} == {"ACTIVE"}
        assert all(a["fundingPaymentInstructions"] for a in now.values())
        emitted = await events(db, "INTERNAL_ACCOUNT.")
        for account_id, account in now.items():
            mine = [(t, d) for t, d in emitted if d["id"] == account_id]
            assert [t for t, _ in mine] == [
                "INTERNAL_ACCOUNT.STATUS_UPDATED",
                "INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED",
            ]
            assert mine[1][1]["fundingPaymentInstructions"] == account["fundingPaymentInstructions"]
        await fund(client, auth, usd["id"], 100)

    async def test_302_fails_for_good(self, client, auth, db, runner) -> None:
        clock.freeze()
        person = await customer(client, auth, email="jane.302@example.com")
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        accounts = await holding_accounts(client, auth, person["id"])
        assert {a["status"] for a in accounts} == {"FAILED"}
        assert all(a["fundingPaymentInstructions"] == [] for a in accounts)
        emitted = await events(db, "INTERNAL_ACCOUNT.")
        assert {t for t, _ in emitted} == {"INTERNAL_ACCOUNT.STATUS_UPDATED"}
        assert len(emitted) == len(accounts)

    async def test_303_fails_once_the_attempts_run_out(self, client, auth, db, runner) -> None:
        clock.freeze()
        person = await customer(client, auth, email="jane.303@example.com")
        for _ in range(accounts_service.PROVISION_ATTEMPTS - 1):
            clock.advance(timedelta(seconds=2))
            await runner.run_until_idle()
            assert {a["status"] for a in await holding_accounts(client, auth, person["id"])} == {"PENDING"}
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert {a["status"] for a in await holding_accounts(client, auth, person["id"])} == {"FAILED"}

    async def test_a_failed_account_closes_with_its_customer(self, client, auth, db, runner) -> None:
        clock.freeze()
        person = await customer(client, auth, email="jane.302@example.com")
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert (await client.delete(f"/customers/{person['id']}", auth=auth)).status_code == 200
        accounts = await holding_accounts(client, auth, person["id"])
        assert {a["status"] for a in accounts} == {"CLOSED"}

    async def test_a_pending_account_whose_customer_was_deleted_stays_closed(self, client, auth, runner):
        clock.freeze()
        person = await customer(client, auth, email="jane.301@example.com")
        assert (await client.delete(f"/customers/{person['id']}", auth=auth)).status_code == 200
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert {a["status"] for a in await holding_accounts(client, auth, person["id"])} == {"CLOSED"}

    async def test_other_customers_and_the_platform_open_at_once(self, client, auth) -> None:
        person = await customer(client, auth, email="jane.300@example.com")
        assert {a["status"] for a in await holding_accounts(client, auth, person["id"])} == {"ACTIVE"}
        platform = (await client.get("/platform/internal-accounts", auth=auth)).json()["data"]
        assert {a["status"] for a in platform} == {"ACTIVE"}

    async def test_production_accounts_open_at_once(self, client, db, settings) -> None:
        production = (await create_platform(db, settings))["production"]
        person = await customer(client, production, email="jane.301@example.com")
        assert {a["status"] for a in await holding_accounts(client, production, person["id"])} == {"ACTIVE"}


class TestInternalStatusMachine:
    def test_every_status_is_reachable_and_closed_is_terminal(self) -> None:
        assert INTERNAL_ACCOUNT.reachable() == set(InternalAccountStatus)
        assert INTERNAL_ACCOUNT.terminal == {InternalAccountStatus.CLOSED}

    def test_a_failed_account_never_becomes_active(self) -> None:
        with pytest.raises(IllegalTransition):
            INTERNAL_ACCOUNT.move("FAILED", InternalAccountStatus.ACTIVE)
