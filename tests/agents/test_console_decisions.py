"""agents' front door for the console, on both backends: an agent's actions with the policy's decision as
stored (one statement a page), and deciding an action known only by its id (approve_action / reject_action:
the API's operations; another tenant's or an unknown action is not found, a decided one is a 409)."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from platpay.agents import service as agents_service
from platpay.agents.errors import ActionNotPending, AgentActionNotFound
from platpay.agents.state import ActionStatus
from platpay.kit.pagination import PageParams
from platpay.tenants import service as tenants_service
from tests.factories import create_platform
from tests.support.agents import balance, connect, funded_customer, transfer_out
from tests.support.ledger import assert_ledger_verifies
from tests.support.statements import count_statements


async def _tenant(db):
    async with db.read() as session:
        tenant_id = await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))
        return await tenants_service.load(session, tenant_id=tenant_id)


async def test_an_agents_actions_with_their_decisions_one_statement_a_page(db, client, auth) -> None:
    money = await funded_customer(client, auth)
    agent = await connect(client, auth, money["customer"]["id"])
    other = await connect(client, auth, money["customer"]["id"])
    ids = []
    for amount in (1_000, 6_000, 2_000):
        response = await transfer_out(
            client, agent["headers"], money["account"]["id"], money["bank"]["id"], amount
        )
        ids.append(response.json()["id"])
    await transfer_out(client, other["headers"], money["account"]["id"], money["bank"]["id"], 500)
    tenant = await _tenant(db)
    async with db.read() as session:
        with count_statements(db) as statements:
            first = await agents_service.list_agent_actions(
                session, tenant_id=tenant.id, agent_id=agent["agent"]["id"], params=PageParams(2, None)
            )
        assert statements.count == 1
        rest = await agents_service.list_agent_actions(
            session,
            tenant_id=tenant.id,
            agent_id=agent["agent"]["id"],
            params=PageParams(2, first.items[-1].id),
        )
    assert first.has_more and not rest.has_more
    listed = [*first.items, *rest.items]
    assert [a.id for a in listed] == list(reversed(ids))
    pending = next(a for a in listed if a.amount == 6_000)
    assert pending.status == ActionStatus.PENDING_APPROVAL and pending.transaction_id is None
    assert pending.decision["decision"] == "NEEDS_APPROVAL"
    assert pending.decision["rule"] == "approvalThresholds.amount"
    assert pending.decision["remaining"]["daily"] == 49_000  # before this request: 1,000 executed
    executed = next(a for a in listed if a.amount == 1_000)
    assert executed.status == ActionStatus.APPROVED and executed.transaction_id is not None


async def test_deciding_by_the_actions_id(db, client, auth, platform, settings) -> None:
    money = await funded_customer(client, auth)
    agent = await connect(client, auth, money["customer"]["id"])
    account = money["account"]["id"]
    before = await balance(client, auth, account)
    actions = []
    for _ in range(2):
        response = await transfer_out(client, agent["headers"], account, money["bank"]["id"], 6_000)
        actions.append(response.json()["id"])
    tenant = await _tenant(db)
    stranger = await create_platform(db, settings, name="Stranger")
    async with db.read() as session:
        stranger_tenant = await tenants_service.load(
            session,
            tenant_id=await session.scalar(
                text("SELECT id FROM tenants WHERE platform_id = :p AND environment = 'sandbox'"),
                {"p": stranger["platform_id"]},
            ),
        )
    with pytest.raises(AgentActionNotFound):
        async with db.transaction() as session:
            await agents_service.approve_action(
                session, tenant=stranger_tenant, action_id=actions[0], decided_by="Token:x"
            )
    async with db.transaction() as session:
        approved = await agents_service.approve_action(
            session, tenant=tenant, action_id=actions[0], decided_by="Token:console"
        )
        rejected = await agents_service.reject_action(
            session, tenant=tenant, action_id=actions[1], reason="no", decided_by="Token:console"
        )
    assert approved.status == ActionStatus.APPROVED and approved.agent_id == agent["agent"]["id"]
    assert rejected.status == ActionStatus.REJECTED and rejected.rejection_reason == "no"
    for decide in (agents_service.approve_action, agents_service.reject_action):
        with pytest.raises(ActionNotPending):
            async with db.transaction() as session:
                extra = {"reason": None} if decide is agents_service.reject_action else {}
                await decide(
                    session, tenant=tenant, action_id=actions[0], decided_by="Token:console", **extra
                )
    with pytest.raises(AgentActionNotFound):
        async with db.transaction() as session:
            await agents_service.reject_action(
                session, tenant=tenant, action_id="AgentAction:none", reason=None, decided_by="Token:x"
            )
    assert (await balance(client, auth, account))[0] == before[0] - 6_000
    await assert_ledger_verifies(db)
