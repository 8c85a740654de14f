"""agents' reads for the console: pending approvals across a tenant's agents, and an agent's usage against its
policy's limits, each a fixed number of statements."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from platpay.agents import service as agents_service
from platpay.agents.errors import AgentNotFound
from platpay.kit.pagination import PageParams
from tests.support.agents import connect, funded_customer, transfer_out
from tests.support.statements import count_statements


async def _tenant(db):
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))


async def _pending(client, auth, headers, money, amount):
    response = await transfer_out(client, headers, money["account"]["id"], money["bank"]["id"], amount)
    assert response.status_code == 201 and response.json()["status"] == "PENDING_APPROVAL", response.text
    return response.json()


class TestPendingApprovals:
    async def test_counted_and_listed_across_agents_in_one_statement_each(self, db, client, auth):
        money = await funded_customer(client, auth)
        first = await connect(client, auth, money["customer"]["id"])
        second = await connect(client, auth, money["customer"]["id"])
        tenant_id = await _tenant(db)
        counts = []
        for agent, n in ((first, 1), (second, 3)):
            for _ in range(n):
                await _pending(client, auth, agent["headers"], money, 6_000)  # above the approval threshold
            async with db.read() as session:
                with count_statements(db) as statements:
                    pending = await agents_service.count_pending_approvals(session, tenant_id=tenant_id)
                    page = await agents_service.list_pending_actions(
                        session, tenant_id=tenant_id, params=PageParams(limit=100, after_id=None)
                    )
            counts.append(statements.count)
        assert counts == [2, 2]
        assert pending == 4 and len(page.items) == 4
        assert [a.agent_id for a in page.items].count(second["agent"]["id"]) == 3
        action = page.items[-1]  # oldest: the first agent's
        assert (action.agent_id, action.amount, action.currency, action.type) == (
            first["agent"]["id"],
            6_000,
            "USD",
            "TRANSFER_OUT",
        )
        assert action.agent_name == "Pay bot" and action.customer_id == money["customer"]["id"]
        rejected = await client.post(
            f"/agents/{first['agent']['id']}/actions/{action.id}/reject", auth=auth, json={}
        )
        assert rejected.status_code == 200, rejected.text
        async with db.read() as session:
            assert await agents_service.count_pending_approvals(session, tenant_id=tenant_id) == 3
            assert await agents_service.count_pending_approvals(session, tenant_id="Tenant:other") == 0

    async def test_pages_with_the_cursor(self, db, client, auth):
        money = await funded_customer(client, auth)
        agent = await connect(client, auth, money["customer"]["id"])
        for _ in range(3):
            await _pending(client, auth, agent["headers"], money, 6_000)
        tenant_id = await _tenant(db)
        seen, params = [], PageParams(limit=2, after_id=None)
        async with db.read() as session:
            while True:
                page = await agents_service.list_pending_actions(session, tenant_id=tenant_id, params=params)
                seen += [a.id for a in page.items]
                if not page.has_more:
                    break
                params = PageParams(limit=2, after_id=page.items[-1].id)
        assert len(seen) == len(set(seen)) == 3 and seen == sorted(seen, reverse=True)


class TestUsageAgainstLimits:
    async def test_each_limit_with_what_is_used_and_left(self, db, client, auth):
        money = await funded_customer(client, auth)
        agent = await connect(client, auth, money["customer"]["id"])
        tenant_id = await _tenant(db)
        done = await transfer_out(
            client, agent["headers"], money["account"]["id"], money["bank"]["id"], 1_000
        )
        assert done.status_code in (200, 201), done.text
        await _pending(client, auth, agent["headers"], money, 6_000)
        async with db.read() as session:
            with count_statements(db) as statements:
                limits = await agents_service.usage_against_limits(
                    session, tenant_id=tenant_id, agent_id=agent["agent"]["id"]
                )
        assert statements.count == 1
        by_name = {limit.name: limit for limit in limits}
        daily = by_name["daily"]
        assert (daily.limit, daily.used, daily.remaining, daily.window, daily.currency) == (
            50_000,
            7_000,
            43_000,
            "DAY",
            "USD",
        )
        assert (by_name["dailyCount"].used, by_name["dailyCount"].remaining) == (2, 18)
        assert (by_name["monthly"].used, by_name["monthly"].remaining) == (7_000, 493_000)
        assert by_name["monthly"].resets.endswith("-01") and by_name["perTransaction"].limit == 10_000

    async def test_an_agent_that_never_spent_has_everything_left(self, db, client, auth):
        money = await funded_customer(client, auth)
        agent = await connect(client, auth, money["customer"]["id"])
        tenant_id = await _tenant(db)
        async with db.read() as session:
            limits = await agents_service.usage_against_limits(
                session, tenant_id=tenant_id, agent_id=agent["agent"]["id"]
            )
            with pytest.raises(AgentNotFound):
                await agents_service.usage_against_limits(
                    session, tenant_id="Tenant:other", agent_id=agent["agent"]["id"]
                )
        assert {limit.name: (limit.used, limit.remaining) for limit in limits} == {
            "perTransaction": (0, 10_000),
            "daily": (0, 50_000),
            "dailyCount": (0, 20),
            "monthly": (0, 500_000),
        }
