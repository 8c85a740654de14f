"""What an agent does with its token: reads, transfers and quotes under its policy, approvals, isolation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.kit import clock
from tests.factories import (
    account_destination,
    account_source,
    external_account,
    internal_account,
    mxn_account,
)
from tests.support.agents import balance, connect, funded_customer, quote_body, transfer_out
from tests.support.jobs import run_jobs_until


@pytest.fixture
async def world(client, auth):
    """A funded customer with a connected agent, and another customer with its own account."""
    mine = await funded_customer(client, auth, 100_000)
    theirs = await funded_customer(client, auth, 100_000)
    agent = await connect(client, auth, mine["customer"]["id"])
    return {**mine, "agent": agent, "headers": agent["headers"], "other": theirs}


class TestTransfers:
    async def test_under_the_threshold_executes_at_once(self, client, auth, world, runner):
        response = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 2_000
        )
        assert response.status_code == 201, response.text
        action = response.json()
        assert action["status"] == "APPROVED" and action["type"] == "TRANSFER_OUT"
        assert (
            action["transaction"]["status"] == "PENDING"
            and action["transaction"]["agentId"] == world["agent"]["agent"]["id"]
        )
        assert action["transferDetails"] == {
            "amount": 2_000,
            "currency": "USD",
            "sourceAccountId": world["account"]["id"],
            "destinationAccountId": world["bank"]["id"],
        }
        assert await balance(client, auth, world["account"]["id"]) == (98_000, 100_000)
        me = (await client.get("/agents/me", headers=world["headers"])).json()
        assert me["usage"]["dailySpend"] == 2_000 and me["usage"]["dailyTransactionCount"] == 1
        transaction_id = action["transaction"]["id"]
        await runner.run_until_idle()
        seen = (
            await client.get(f"/agents/me/transactions/{transaction_id}", headers=world["headers"])
        ).json()
        assert seen["status"] in ("PROCESSING", "COMPLETED")

    async def test_over_the_threshold_waits_with_funds_reserved_then_approved(
        self, client, auth, world, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        response = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 6_000
        )
        action = response.json()
        assert response.status_code == 201 and action["status"] == "PENDING_APPROVAL"
        assert "transaction" not in action
        assert await balance(client, auth, world["account"]["id"]) == (94_000, 100_000)
        approvals = (await client.get("/agents/approvals", auth=auth)).json()
        assert [a["id"] for a in approvals["data"]] == [action["id"]]
        await run_jobs_until(runner, lambda: len(receiver.of_type("AGENT_ACTION.PENDING_APPROVAL")) == 1)
        webhook = receiver.of_type("AGENT_ACTION.PENDING_APPROVAL")[0].json
        assert webhook["data"]["id"] == action["id"] and webhook["id"].startswith("Webhook:")
        agent_id = world["agent"]["agent"]["id"]
        approved = await client.post(f"/agents/{agent_id}/actions/{action['id']}/approve", auth=auth)
        assert approved.status_code == 200, approved.text
        assert (
            approved.json()["status"] == "APPROVED" and approved.json()["transaction"]["status"] == "PENDING"
        )
        assert await balance(client, auth, world["account"]["id"]) == (94_000, 100_000)
        again = await client.post(f"/agents/{agent_id}/actions/{action['id']}/approve", auth=auth)
        assert again.status_code == 409
        polled = (await client.get(f"/agents/me/actions/{action['id']}", headers=world["headers"])).json()
        assert polled["status"] == "APPROVED"
        assert (await client.get("/agents/approvals", auth=auth)).json()["data"] == []

    async def test_rejected_releases_the_reservation_and_the_usage(self, client, auth, world):
        action = (
            await transfer_out(client, world["headers"], world["account"]["id"], world["bank"]["id"], 6_000)
        ).json()
        agent_id = world["agent"]["agent"]["id"]
        rejected = await client.post(
            f"/agents/{agent_id}/actions/{action['id']}/reject", auth=auth, json={"reason": "not today"}
        )
        assert rejected.status_code == 200
        assert rejected.json()["status"] == "REJECTED" and rejected.json()["rejectionReason"] == "not today"
        assert await balance(client, auth, world["account"]["id"]) == (100_000, 100_000)
        me = (await client.get("/agents/me", headers=world["headers"])).json()
        assert me["usage"]["dailySpend"] == 0 and me["usage"]["dailyTransactionCount"] == 0
        assert (
            await client.post(f"/agents/{agent_id}/actions/{action['id']}/reject", auth=auth)
        ).status_code == 409

    async def test_a_pending_action_expires_and_releases(self, client, auth, world, runner, settings):
        action = (
            await transfer_out(client, world["headers"], world["account"]["id"], world["bank"]["id"], 6_000)
        ).json()
        clock.freeze()
        clock.advance(timedelta(seconds=settings.agent_approval_ttl_seconds + 1))
        await runner.run_until_idle()
        polled = (await client.get(f"/agents/me/actions/{action['id']}", headers=world["headers"])).json()
        assert polled["status"] == "FAILED" and polled["failureReason"].startswith("APPROVAL_EXPIRED")
        assert await balance(client, auth, world["account"]["id"]) == (100_000, 100_000)

    async def test_limits_refuse_with_the_rule(self, client, auth, world):
        response = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 10_001
        )
        assert response.status_code == 403
        details = response.json()["details"]
        assert details["rule"] == "spendingLimits.perTransactionLimit" and details["decision"] == "DENY"
        assert await balance(client, auth, world["account"]["id"]) == (100_000, 100_000)
        await client.patch(
            f"/agents/{world['agent']['agent']['id']}/policy",
            auth=auth,
            json={"spendingLimits": {"dailyLimit": 3_000}},
        )
        assert (
            await transfer_out(client, world["headers"], world["account"]["id"], world["bank"]["id"], 2_000)
        ).status_code == 201
        refused = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 2_000
        )
        assert refused.status_code == 403 and refused.json()["details"]["rule"] == "spendingLimits.dailyLimit"

    async def test_a_paused_agent_reads_but_does_not_pay(self, client, auth, world):
        await client.patch(f"/agents/{world['agent']['agent']['id']}", auth=auth, json={"isPaused": True})
        refused = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 100
        )
        assert refused.status_code == 403 and refused.json()["details"]["rule"] == "isPaused"
        assert (await client.get("/agents/me/transactions", headers=world["headers"])).status_code == 200

    async def test_a_missing_permission_is_403(self, client, auth, world):
        await client.patch(
            f"/agents/{world['agent']['agent']['id']}/policy",
            auth=auth,
            json={"permissions": ["CREATE_QUOTES"]},
        )
        refused = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 100
        )
        assert refused.status_code == 403 and refused.json()["details"]["rule"] == "permissions"
        assert (await client.get("/agents/me/external-accounts", headers=world["headers"])).status_code == 403

    async def test_idempotency_key_pays_once(self, client, auth, world):
        first = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 1_000, key="k1"
        )
        second = await transfer_out(
            client, world["headers"], world["account"]["id"], world["bank"]["id"], 1_000, key="k1"
        )
        assert first.json()["id"] == second.json()["id"]
        assert await balance(client, auth, world["account"]["id"]) == (99_000, 100_000)

    async def test_transfer_in(self, client, auth, world):
        response = await client.post(
            "/agents/me/transfer-in",
            headers=world["headers"],
            json={
                "source": {"accountId": world["bank"]["id"]},
                "destination": {"accountId": world["account"]["id"]},
                "amount": 1_500,
            },
        )
        assert response.status_code == 201, response.text
        assert (
            response.json()["type"] == "TRANSFER_IN" and response.json()["transaction"]["type"] == "INCOMING"
        )


class TestIsolation:
    async def test_another_customers_resources_are_404(self, client, auth, world):
        other = world["other"]
        headers = world["headers"]
        assert (
            await transfer_out(client, headers, other["account"]["id"], world["bank"]["id"], 100)
        ).status_code == 404
        assert (
            await transfer_out(client, headers, world["account"]["id"], other["bank"]["id"], 100)
        ).status_code == 404
        assert (
            await client.get(f"/agents/me/external-accounts/{other['bank']['id']}", headers=headers)
        ).status_code == 404
        assert (
            await client.delete(f"/agents/me/external-accounts/{other['bank']['id']}", headers=headers)
        ).status_code == 404
        theirs = await client.post(
            "/transfer-out",
            auth=auth,
            json={
                "source": {"accountId": other["account"]["id"]},
                "destination": {"accountId": other["bank"]["id"]},
                "amount": 100,
            },
        )
        assert (
            await client.get(f"/agents/me/transactions/{theirs.json()['id']}", headers=headers)
        ).status_code == 404
        listed = (await client.get("/agents/me/transactions", headers=headers)).json()
        assert theirs.json()["id"] not in [t["id"] for t in listed["data"]]
        other_agent = await connect(client, auth, other["customer"]["id"])
        action = (
            await transfer_out(
                client, other_agent["headers"], other["account"]["id"], other["bank"]["id"], 100
            )
        ).json()
        assert (await client.get(f"/agents/me/actions/{action['id']}", headers=headers)).status_code == 404
        assert (
            await client.post(
                f"/agents/{world['agent']['agent']['id']}/actions/{action['id']}/approve", auth=auth
            )
        ).status_code == 404
        accounts = (await client.get("/agents/me/internal-accounts", headers=headers)).json()["data"]
        assert accounts and all(a["customerId"] == world["customer"]["id"] for a in accounts)

    async def test_internal_accounts_honour_the_allowed_list(self, client, auth, world):
        agent_id = world["agent"]["agent"]["id"]
        response = await client.patch(
            f"/agents/{agent_id}/policy",
            auth=auth,
            json={"accountRestrictions": {"allowedAccountIds": [world["account"]["id"]]}},
        )
        assert response.status_code == 200, response.text
        accounts = (await client.get("/agents/me/internal-accounts", headers=world["headers"])).json()["data"]
        assert [a["id"] for a in accounts] == [world["account"]["id"]]

    async def test_external_accounts_for_its_customer(self, client, auth, world):
        body = {
            "currency": "USD",
            "accountInfo": {
                "accountType": "USD_ACCOUNT",
                "accountNumber": "555666777",
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            },
        }
        created = await client.post("/agents/me/external-accounts", headers=world["headers"], json=body)
        assert created.status_code == 201, created.text
        assert created.json()["customerId"] == world["customer"]["id"]
        bad = await client.post(
            "/agents/me/external-accounts",
            headers=world["headers"],
            json={**body, "accountInfo": {"accountType": "USD_ACCOUNT"}},
        )
        assert bad.status_code == 400
        listed = (await client.get("/agents/me/external-accounts", headers=world["headers"])).json()
        assert created.json()["id"] in [a["id"] for a in listed["data"]]
        deleted = await client.delete(
            f"/agents/me/external-accounts/{created.json()['id']}", headers=world["headers"]
        )
        assert deleted.status_code == 204


class TestQuotes:
    async def _quote(self, client, auth, world, amount):
        payee = await mxn_account(client, auth, world["customer"]["id"])
        response = await client.post(
            "/agents/me/quotes",
            headers=world["headers"],
            json=quote_body(world["account"]["id"], payee["id"], amount),
        )
        assert response.status_code == 201, response.text
        return response.json()

    async def test_create_and_execute_under_the_threshold(self, client, auth, world):
        quote = await self._quote(client, auth, world, 2_000)
        assert (
            await client.get(f"/agents/me/quotes/{quote['id']}", headers=world["headers"])
        ).status_code == 200
        executed = await client.post(f"/agents/me/quotes/{quote['id']}/execute", headers=world["headers"])
        assert executed.status_code == 200, executed.text
        action = executed.json()
        assert action["status"] == "APPROVED" and action["quote"]["id"] == quote["id"]
        assert action["transaction"]["id"] == quote["transactionId"]
        assert await balance(client, auth, world["account"]["id"]) == (98_000, 98_000)

    async def test_a_quote_that_expired_while_pending_fails_on_approval(self, client, auth, world, settings):
        quote = await self._quote(client, auth, world, 6_000)
        action = (
            await client.post(f"/agents/me/quotes/{quote['id']}/execute", headers=world["headers"])
        ).json()
        assert action["status"] == "PENDING_APPROVAL"
        assert await balance(client, auth, world["account"]["id"]) == (94_000, 100_000)
        clock.freeze()
        clock.advance(timedelta(seconds=settings.quote_ttl_seconds + 1))
        approved = await client.post(
            f"/agents/{world['agent']['agent']['id']}/actions/{action['id']}/approve", auth=auth
        )
        assert approved.status_code == 200, approved.text
        assert approved.json()["status"] == "FAILED" and approved.json()["failureReason"].startswith(
            "QUOTE_EXPIRED"
        )
        assert await balance(client, auth, world["account"]["id"]) == (100_000, 100_000)

    async def test_approved_quote_executes(self, client, auth, world):
        quote = await self._quote(client, auth, world, 6_000)
        action = (
            await client.post(f"/agents/me/quotes/{quote['id']}/execute", headers=world["headers"])
        ).json()
        approved = await client.post(
            f"/agents/{world['agent']['agent']['id']}/actions/{action['id']}/approve", auth=auth
        )
        assert (
            approved.json()["status"] == "APPROVED"
            and approved.json()["transaction"]["id"] == quote["transactionId"]
        )
        assert await balance(client, auth, world["account"]["id"]) == (94_000, 94_000)

    async def test_only_its_own_quotes(self, client, auth, world):
        platform_quote = await client.post(
            "/quotes",
            auth=auth,
            json={
                "source": account_source(world["account"]["id"]),
                "destination": account_destination(
                    (await mxn_account(client, auth, world["customer"]["id"], suffix="031"))["id"]
                ),
                "lockedCurrencySide": "SENDING",
                "lockedCurrencyAmount": 1_000,
            },
        )
        quote_id = platform_quote.json()["id"]
        assert (
            await client.get(f"/agents/me/quotes/{quote_id}", headers=world["headers"])
        ).status_code == 404
        assert (
            await client.post(f"/agents/me/quotes/{quote_id}/execute", headers=world["headers"])
        ).status_code == 404


async def test_a_second_external_account_of_the_customer(client, auth, world):
    """Sanity for the fixtures: a platform-registered account of the customer is visible to the agent."""
    extra = await external_account(client, auth, world["customer"]["id"], account_number="999888777")
    got = await client.get(f"/agents/me/external-accounts/{extra['id']}", headers=world["headers"])
    assert got.status_code == 200
    mine = await internal_account(client, auth, world["customer"]["id"])
    assert mine["id"] == world["account"]["id"]


async def test_no_customer_filter_on_the_agents_transactions(client, auth, world):
    other = world["other"]["customer"]["id"]
    for name in ("customerId", "platformCustomerId"):
        response = await client.get("/agents/me/transactions", headers=world["headers"], params={name: other})
        assert response.status_code == 400 and response.json()["details"]["fields"][0]["field"] == name
