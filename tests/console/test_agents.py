"""The console's agents pages over HTTP, on both backends: the agents list with its filters and the pending
approvals across agents, an agent's page (policy, usage bars, actions with the policy's decision, audit trail
verified, console trail), approving and rejecting an agent's payment (the API's operations: the money moves
once, a second decision changes nothing), and every refusal (CSRF, permission, unknown ids, bad filters)."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from typing import Any

import pytest

from platpay.kit import clock
from tests.factories import create_platform
from tests.support.agents import balance, connect, funded_customer, transfer_out
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.ledger import assert_ledger_verifies
from tests.support.statements import count_statements

APPROVAL_AMOUNT = 6_000  # above the test policy's approval threshold (5,000)


async def _pending(client, auth, setup: dict[str, Any], amount: int = APPROVAL_AMOUNT) -> dict[str, Any]:
    money = setup["money"]
    response = await transfer_out(
        client, setup["agent"]["headers"], money["account"]["id"], money["bank"]["id"], amount
    )
    assert response.status_code == 201 and response.json()["status"] == "PENDING_APPROVAL", response.text
    return response.json()


@pytest.fixture
async def setup(client, auth) -> dict[str, Any]:
    money = await funded_customer(client, auth)
    agent = await connect(client, auth, money["customer"]["id"])
    return {"money": money, "agent": agent, "agent_id": agent["agent"]["id"]}


async def _action(client, setup: dict[str, Any], action_id: str) -> dict[str, Any]:
    """The action as the API shows it (GET /agents/me/actions/{id}, as its agent)."""
    response = await client.get(f"/agents/me/actions/{action_id}", headers=setup["agent"]["headers"])
    assert response.status_code == 200, response.text
    return response.json()


async def _viewer(client, auth) -> tuple[str, str]:
    created = await client.post("/tokens", auth=auth, json={"name": "viewer", "permissions": ["VIEW"]})
    assert created.status_code == 201, created.text
    return created.json()["clientId"], created.json()["clientSecret"]


class TestAgentsList:
    async def test_agents_with_their_policy_and_the_pending_approvals(self, app, client, auth, setup) -> None:
        action = await _pending(client, auth, setup)
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get("/console/agents")
        assert page.status_code == 200, page.text
        html = page.text
        assert "<h1>Agents</h1>" in html
        assert setup["agent_id"] in html and "Pay bot" in html
        assert "per transaction 100.00 USD" in html and "approval above 50.00 USD" in html
        assert 'Pending approvals <span class="muted">(1)</span>' in html
        assert action["id"] in html and "60.00 USD" in html and "NEEDS_APPROVAL" in html
        assert f'action="/console/agents/actions/{action["id"]}/approve"' in html
        assert f'action="/console/agents/actions/{action["id"]}/reject"' in html

    async def test_filters_by_customer_and_status(self, app, client, auth, setup) -> None:
        other = await funded_customer(client, auth, amount=0)
        second = await connect(client, auth, other["customer"]["id"])
        paused = await client.patch(f"/agents/{second['agent']['id']}", auth=auth, json={"isPaused": True})
        assert paused.status_code == 200
        async with console_client(app) as console:
            await signed_in(console, auth)
            mine = await console.get(
                "/console/agents", params={"customerId": setup["money"]["customer"]["id"]}
            )
            assert setup["agent_id"] in mine.text and second["agent"]["id"] not in mine.text
            only_paused = await console.get("/console/agents", params={"status": "PAUSED"})
            assert second["agent"]["id"] in only_paused.text and setup["agent_id"] not in only_paused.text
            active = await console.get("/console/agents", params={"status": "ACTIVE"})
            assert setup["agent_id"] in active.text and second["agent"]["id"] not in active.text
            bad = await console.get("/console/agents", params={"status": "SLEEPING"})
            assert bad.status_code == 400 and "status" in bad.text and "ACTIVE" in bad.text
            too_long = await console.get("/console/agents", params={"customerId": "x" * 65})
            assert too_long.status_code == 400 and "customerId" in too_long.text
            bad_limit = await console.get("/console/agents", params={"limit": "0"})
            assert bad_limit.status_code == 400

    async def test_pages_with_the_next_link(self, app, client, auth, setup) -> None:
        for _ in range(2):
            await connect(client, auth, setup["money"]["customer"]["id"])
        seen: list[str] = []
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get("/console/agents", params={"limit": 2})
            seen += re.findall(r'href="/console/agents/(Agent:[^"]+)"', page.text)
            link = re.search(r'<a href="([^"]+)" rel="next">', page.text)
            assert link is not None
            second = await console.get(link.group(1).replace("&amp;", "&"))
            assert second.status_code == 200
            seen += re.findall(r'href="/console/agents/(Agent:[^"]+)"', second.text)
            assert 'rel="next"' not in second.text
        assert len(set(seen)) == 3


async def _page_statements(app, auth, db, path: str) -> int:
    async with console_client(app) as console:
        await signed_in(console, auth)
        with count_statements(db) as statements:
            page = await console.get(path)
        assert page.status_code == 200, page.text
    return statements.count


class TestStatementCounts:
    async def test_the_list_and_the_agent_page_cost_the_same_for_3_and_30_rows(self, app, client, auth, db):
        money = await funded_customer(client, auth, amount=10_000_000)
        cap = {"currency": "USD", "perTransactionLimit": 10_000, "dailyLimit": 5_000_000,
               "dailyTransactionLimit": 1_000, "monthlyLimit": 50_000_000}  # fmt: skip
        agents: list[dict[str, Any]] = []
        counts: dict[str, list[int]] = {"list": [], "agent": []}
        for rows in (3, 30):
            while len(agents) < rows:
                agents.append(await connect(client, auth, money["customer"]["id"], spendingLimits=cap))
            first = agents[0]
            listed = await client.get("/agents/me/actions", headers=first["headers"], params={"limit": 100})
            done = len(listed.json()["data"])
            for i in range(rows - done):
                amount = APPROVAL_AMOUNT if i % 2 else 100  # pending and executed ones
                response = await transfer_out(
                    client, first["headers"], money["account"]["id"], money["bank"]["id"], amount
                )
                assert response.status_code == 201, response.text
            counts["list"].append(await _page_statements(app, auth, db, "/console/agents?limit=100"))
            counts["agent"].append(
                await _page_statements(app, auth, db, f"/console/agents/{first['agent']['id']}?limit=100")
            )
        assert counts["list"][0] == counts["list"][1], counts
        assert counts["agent"][0] == counts["agent"][1], counts
        await assert_ledger_verifies(db)


class TestAgentPage:
    async def test_policy_bars_actions_audit_and_trail(self, app, client, auth, setup, db) -> None:
        money = setup["money"]
        done = await transfer_out(
            client, setup["agent"]["headers"], money["account"]["id"], money["bank"]["id"], 1_000
        )
        assert done.status_code == 201, done.text
        pending = await _pending(client, auth, setup)
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(f"/console/agents/{setup['agent_id']}")
        assert page.status_code == 200, page.text
        html = page.text
        assert "<h1>Agent Pay bot</h1>" in html
        assert "CREATE_TRANSFERS" in html and "APPROVAL_REQUIRED" not in html and "AUTO" in html
        # daily: 7,000 of 50,000 used -> 300 * 7000 // 50000 = 42 units; monthly 7,000 of 500,000 -> 4
        assert 'data-limit="daily" data-fill="42"' in html
        assert 'data-limit="monthly" data-fill="4"' in html
        assert 'data-limit="dailyCount" data-fill="30"' in html  # 2 of 20
        assert "70.00 USD of 500.00 USD" in html and "2 of 20" in html
        assert pending["id"] in html and "rule: approvalThresholds.amount" in html
        assert "NEEDS_APPROVAL" in html and "ALLOW" in html
        assert "The audit chain verifies" in html and "MONEY_REQUESTED" in html and "AGENT_CREATED" in html
        assert "No console actions on this yet." in html
        await assert_ledger_verifies(db)

    async def test_unknown_and_another_tenants_agent_are_the_same_404(
        self, app, client, auth, setup, db, settings
    ) -> None:
        other = await create_platform(db, settings, name="Other Platform")
        async with console_client(app) as console:
            await signed_in(console, other["sandbox"])
            foreign = await console.get(f"/console/agents/{setup['agent_id']}")
            unknown = await console.get("/console/agents/Agent:00000000-0000-0000-0000-000000000000")
            assert foreign.status_code == unknown.status_code == 404
            assert "Not found" in foreign.text and "Not found" in unknown.text
            assert setup["agent_id"] not in (await console.get("/console/agents")).text


class TestDeciding:
    async def test_approving_executes_the_payment_once_and_a_second_approval_changes_nothing(
        self, app, client, auth, setup, db, runner
    ) -> None:
        account = setup["money"]["account"]["id"]
        before = await balance(client, auth, account)
        action = await _pending(client, auth, setup)
        async with console_client(app) as first, console_client(app) as second:
            csrf_one = await signed_in(first, auth)
            csrf_two = await signed_in(second, auth)  # a second tab on the agents page
            approved = await first.post(
                f"/console/agents/actions/{action['id']}/approve",
                data={"csrf": csrf_one, "agent_id": setup["agent_id"]},
            )
            assert approved.status_code == 303, approved.text
            assert (
                approved.headers["location"] == f"/console/agents/{setup['agent_id']}?decided={action['id']}"
            )
            again = await second.post(
                f"/console/agents/actions/{action['id']}/approve",
                data={"csrf": csrf_two, "agent_id": setup["agent_id"]},
            )
            assert again.status_code == 409
            assert "already decided" in again.text and "APPROVED" in again.text
            rejected_late = await second.post(
                f"/console/agents/actions/{action['id']}/reject", data={"csrf": csrf_two, "reason": "late"}
            )
            assert rejected_late.status_code == 409
            await runner.run_until_idle()
            clock.advance(timedelta(seconds=20))  # the sandbox rail settles the transfer
            await runner.run_until_idle()
            page = await first.get(f"/console/agents/{setup['agent_id']}")
        shown = await _action(client, setup, action["id"])
        assert shown["status"] == "APPROVED" and shown["transaction"] is not None
        transaction = await client.get(f"/transactions/{shown['transaction']['id']}", auth=auth)
        assert transaction.json()["status"] == "COMPLETED", transaction.text
        after = await balance(client, auth, account)
        assert before[1] - after[1] == APPROVAL_AMOUNT  # moved exactly once
        assert before[0] - after[0] == APPROVAL_AMOUNT
        html = page.text
        assert "AGENT_ACTION_APPROVED" in html and html.count("AGENT_ACTION_APPROVED") == 1
        assert f"actionId: {action['id']}" in html and "status: APPROVED" in html
        assert "ACTION_APPROVED" in html and "The audit chain verifies" in html
        events = await client.get("/agents/approvals", auth=auth)
        assert events.json()["data"] == []
        await assert_ledger_verifies(db)

    async def test_rejecting_releases_the_reservation_with_the_reason(
        self, app, client, auth, setup, db
    ) -> None:
        account = setup["money"]["account"]["id"]
        before = await balance(client, auth, account)
        action = await _pending(client, auth, setup)
        assert (await balance(client, auth, account))[0] == before[0] - APPROVAL_AMOUNT  # held
        async with console_client(app) as console:
            csrf = await signed_in(console, auth)
            rejected = await console.post(
                f"/console/agents/actions/{action['id']}/reject",
                data={"csrf": csrf, "reason": "not this month"},
            )
            assert rejected.status_code == 303, rejected.text
            page = await console.get(rejected.headers["location"])
        shown = await _action(client, setup, action["id"])
        assert shown["status"] == "REJECTED" and shown["rejectionReason"] == "not this month"
        assert await balance(client, auth, account) == before
        assert "AGENT_ACTION_REJECTED" in page.text and "reason: not this month" in page.text
        assert "rejected: not this month" in page.text
        await assert_ledger_verifies(db)

    async def test_without_the_csrf_token_nothing_is_decided(self, app, client, auth, setup, db) -> None:
        action = await _pending(client, auth, setup)
        async with console_client(app) as console:
            await signed_in(console, auth)
            for verb in ("approve", "reject"):
                refused = await console.post(f"/console/agents/actions/{action['id']}/{verb}", data={})
                assert refused.status_code == 403 and "reload the page" in refused.text
                forged = await console.post(
                    f"/console/agents/actions/{action['id']}/{verb}", data={"csrf": "forged"}
                )
                assert forged.status_code == 403
        assert (await _action(client, setup, action["id"]))["status"] == "PENDING_APPROVAL"
        await assert_ledger_verifies(db)

    async def test_a_view_only_token_sees_no_buttons_and_is_refused(
        self, app, client, auth, setup, db
    ) -> None:
        action = await _pending(client, auth, setup)
        async with console_client(app) as console:
            await signed_in(console, await _viewer(client, auth))
            listing = await console.get("/console/agents")
            assert (
                action["id"] in listing.text
                and "/approve" not in listing.text
                and "/reject" not in listing.text
            )
            page = await console.get(f"/console/agents/{setup['agent_id']}")
            assert "/approve" not in page.text
            csrf = csrf_of(page.text)  # the sign-out form's: a valid token of this session
            for verb in ("approve", "reject"):
                refused = await console.post(
                    f"/console/agents/actions/{action['id']}/{verb}", data={"csrf": csrf}
                )
                assert refused.status_code == 403 and "TRANSACT" in refused.text
        assert (await _action(client, setup, action["id"]))["status"] == "PENDING_APPROVAL"
        await assert_ledger_verifies(db)

    async def test_unknown_and_another_tenants_actions_are_404(
        self, app, client, auth, setup, db, settings
    ) -> None:
        action = await _pending(client, auth, setup)
        other = await create_platform(db, settings, name="Other Platform")
        async with console_client(app) as console:
            csrf = await signed_in(console, other["sandbox"])
            for verb in ("approve", "reject"):
                foreign = await console.post(
                    f"/console/agents/actions/{action['id']}/{verb}", data={"csrf": csrf}
                )
                assert foreign.status_code == 404 and "Not found" in foreign.text
            unknown = await console.post(
                "/console/agents/actions/AgentAction:00000000-0000-0000-0000-000000000000/approve",
                data={"csrf": csrf},
            )
            assert unknown.status_code == 404
        assert (await _action(client, setup, action["id"]))["status"] == "PENDING_APPROVAL"
        await assert_ledger_verifies(db)


async def test_two_tabs_approving_at_once_decide_once(app, client, auth, setup, db, runner) -> None:
    """Two approvals of one action sent together (two tabs, two sessions): one executes it, the other is
    told it was already decided; the payment is made once and the trail holds one approval."""
    account = setup["money"]["account"]["id"]
    before = await balance(client, auth, account)
    action = await _pending(client, auth, setup)
    async with console_client(app) as first, console_client(app) as second:
        tokens = [await signed_in(first, auth), await signed_in(second, auth)]
        answers = await asyncio.gather(
            *(
                tab.post(f"/console/agents/actions/{action['id']}/approve", data={"csrf": csrf})
                for tab, csrf in zip((first, second), tokens, strict=True)
            )
        )
        assert sorted(answer.status_code for answer in answers) == [303, 409], [a.text for a in answers]
        page = await first.get(f"/console/agents/{setup['agent_id']}")
    assert page.text.count("AGENT_ACTION_APPROVED") == 1
    assert (await _action(client, setup, action["id"]))["status"] == "APPROVED"
    assert (await balance(client, auth, account))[0] == before[0] - APPROVAL_AMOUNT
    await runner.run_until_idle()
    await assert_ledger_verifies(db)
