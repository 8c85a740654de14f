"""The one plan of an agent's money request, shared by the real operation (agents/operations.py) and its
dry-run (agents/dry_run/): the agent's usage row locked, the paused/permission check first, then the transfer
planned (the accounts checked as the customer's, the amount resolved; a transfer-out's amount held) or the
quote found as this agent's, and the policy's decision on it. The caller acts on the plan (records and runs
the action, or answers a refusal) or rolls its transaction back (the dry-run), so both answer alike."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.agents import policy as policies
from platpay.agents import repository
from platpay.agents import service as agents_service
from platpay.agents.errors import AgentNotFound
from platpay.agents.models import AgentRow, AgentUsageRow
from platpay.agents.policy import NEEDS
from platpay.agents.state import ActionType
from platpay.config import Settings
from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.payments import transfers
from platpay.payments.quotes import service as quotes_service
from platpay.tenants.context import TenantContext


async def lock(
    session: LeanSession, *, tenant: TenantContext, agent_id: str
) -> tuple[AgentRow, AgentUsageRow]:
    """The agent and its usage row, the usage row locked (the agent's requests serialize on it)."""
    found = await repository.agent_with_usage(session, tenant_id=tenant.id, agent_id=agent_id)
    if found is None:
        raise AgentNotFound(agent_id)
    return found


def judge(
    agent: AgentRow,
    usage: AgentUsageRow,
    *,
    operation: str,
    account_id: str | None,
    amount: int,
    currency: str,
    now: datetime,
) -> policies.Decision:
    """The policy's decision on a request, against the (locked) usage as it stands."""
    return policies.evaluate(
        agent.policy,
        agents_service.usage_of(usage),
        policies.Request(
            operation=operation,
            account_id=account_id,
            amount=amount,
            currency=currency,
            agent_paused=agent.is_paused,
        ),
        agents_service.rates,
        now,
    )


@dataclass(frozen=True, slots=True)
class PlannedTransfer:
    agent: AgentRow
    usage: AgentUsageRow  # locked
    operation: ActionType
    decision: policies.Decision
    plan: transfers.TransferPlan | None  # None: refused before anything was planned (paused, no permission)


async def plan_transfer(
    session: LeanSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    outgoing: bool,
    source_account_id: str,
    destination_account_id: str,
    amount: int | None,
    payment_rail: str | None = None,
    description: str | None = None,
    remittance_information: str | None = None,
    purpose_of_payment: str | None = None,
    now: datetime,
    settings: Settings,
) -> PlannedTransfer:
    """A transfer-out (`outgoing`) or transfer-in of the agent's customer, planned and judged. Planned first
    (the accounts checked as the customer's, a transfer-out's amount held), judged next: a refusal leaves
    the plan to be rolled back with the caller's transaction. The accounts are read with the agent (one
    round trip): nothing the agent's read decides changes them, and a refusal before the plan ignores them."""
    internal_id, external_id = (
        (source_account_id, destination_account_id)
        if outgoing
        else (destination_account_id, source_account_id)
    )
    transfers.prefetch_accounts(session, tenant=tenant, internal_id=internal_id, external_id=external_id)
    agent, usage = await lock(session, tenant=tenant, agent_id=agent_id)
    operation = ActionType.TRANSFER_OUT if outgoing else ActionType.TRANSFER_IN
    if agent.is_paused or NEEDS[operation] not in agent.policy["permissions"]:  # before touching anything
        decision = judge(agent, usage, operation=operation, account_id=None, amount=0, currency="", now=now)
        return PlannedTransfer(agent, usage, operation, decision, None)
    if outgoing:
        plan = await transfers.plan_transfer_out(
            session,
            tenant=tenant,
            source_account_id=source_account_id,
            destination_account_id=destination_account_id,
            payment_rail=payment_rail,
            amount=amount,
            description=description,
            agent_id=agent.id,
            customer_id=agent.customer_id,
            remittance_information=remittance_information,
            purpose_of_payment=purpose_of_payment,
            settings=settings,
        )
    else:
        if amount is None:
            raise invalid_field("amount", "a transfer-in needs an amount")
        plan = await transfers.plan_transfer_in(
            session,
            tenant=tenant,
            source_account_id=source_account_id,
            destination_account_id=destination_account_id,
            amount=amount,
            description=description,
            agent_id=agent.id,
            customer_id=agent.customer_id,
            settings=settings,
        )
    decision = judge(
        agent,
        usage,
        operation=operation,
        account_id=plan.internal.id,
        amount=plan.amount,
        currency=plan.internal.currency,
        now=now,
    )
    return PlannedTransfer(agent, usage, operation, decision, plan)


@dataclass(frozen=True, slots=True)
class PlannedQuote:
    agent: AgentRow
    usage: AgentUsageRow  # locked
    facts: quotes_service.QuoteFacts
    decision: policies.Decision


async def plan_quote(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, quote_id: str, now: datetime
) -> PlannedQuote:
    """A quote this agent created (else 404), judged on its sending amount and source account; one the
    policy does not refuse must still be executable (else 409)."""
    agent, usage = await lock(session, tenant=tenant, agent_id=agent_id)
    facts = await agents_service.own_quote(
        session, tenant=tenant, agent_id=agent.id, customer_id=agent.customer_id, quote_id=quote_id
    )
    decision = judge(
        agent,
        usage,
        operation=ActionType.EXECUTE_QUOTE,
        account_id=facts.source_account_id,
        amount=facts.sending_amount,
        currency=facts.sending_currency,
        now=now,
    )
    if not isinstance(decision, policies.Deny):
        await quotes_service.check_executable(session, tenant=tenant, quote_id=quote_id)
    return PlannedQuote(agent, usage, facts, decision)
