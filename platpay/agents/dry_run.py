"""POST /agents/me/policy/evaluate: the policy's decision on a money request, changing nothing.

It walks the same steps as the real operation (operations.transfer / operations.execute_quote): the agent's
usage row locked, the paused/permission check first, the transfer planned (the accounts checked as the
customer's, the amount resolved) and judged by the very `operations._judge` enforcement calls, all in a
transaction that is then rolled back. So a dry-run answers what the real call would decide at that moment:
the same `decision`, `rule`, `reason` and `remaining` as the real call's 403 details or its action, and the
same 4xx where the real call would refuse before judging (an unknown account, insufficient funds, an
expired quote)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.agents import operations
from platpay.agents import policy as policies
from platpay.agents import service as agents_service
from platpay.agents.policy import NEEDS
from platpay.agents.state import ActionType
from platpay.config import Settings
from platpay.db.database import Database
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.payments import transfers
from platpay.payments.quotes import service as quotes_service
from platpay.tenants.context import TenantContext


class _RollBack(Exception):
    """Carries the decision out of the transaction it rolls back."""

    def __init__(self, decision: policies.Decision) -> None:
        super().__init__("dry-run")
        self.decision = decision


def body_of(decision: policies.Decision, now: datetime) -> dict[str, Any]:
    """The dry-run response: the decision's details (as in a 403's details) and when it was evaluated."""
    details = decision.details()
    details.setdefault("rate", None)
    return {**details, "evaluatedAt": now}


async def evaluate(
    db: Database,
    *,
    tenant: TenantContext,
    agent_id: str,
    operation: str,
    source_account_id: str | None = None,
    destination_account_id: str | None = None,
    payment_rail: str | None = None,
    amount: int | None = None,
    quote_id: str | None = None,
    settings: Settings,
) -> dict[str, Any]:
    now = clock.now(tenant)
    try:
        async with db.transaction() as session:
            if operation == ActionType.EXECUTE_QUOTE:
                assert quote_id is not None
                decision = await _quote(session, tenant=tenant, agent_id=agent_id, quote_id=quote_id, now=now)
            else:
                assert source_account_id is not None and destination_account_id is not None
                decision = await _transfer(
                    session,
                    tenant=tenant,
                    agent_id=agent_id,
                    outgoing=operation == ActionType.TRANSFER_OUT,
                    source_account_id=source_account_id,
                    destination_account_id=destination_account_id,
                    payment_rail=payment_rail,
                    amount=amount,
                    now=now,
                    settings=settings,
                )
            raise _RollBack(decision)
    except _RollBack as done:
        return body_of(done.decision, now)
    raise AssertionError("unreachable")


async def _transfer(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    outgoing: bool,
    source_account_id: str,
    destination_account_id: str,
    payment_rail: str | None,
    amount: int | None,
    now: datetime,
    settings: Settings,
) -> policies.Decision:
    agent, usage = await operations._lock(session, tenant=tenant, agent_id=agent_id)
    operation = ActionType.TRANSFER_OUT if outgoing else ActionType.TRANSFER_IN
    if agent.is_paused or NEEDS[operation] not in agent.policy["permissions"]:
        return operations._judge(
            agent, usage, operation=operation, account_id=None, amount=0, currency="", now=now
        )
    if outgoing:
        plan = await transfers.plan_transfer_out(
            session,
            tenant=tenant,
            source_account_id=source_account_id,
            destination_account_id=destination_account_id,
            payment_rail=payment_rail,
            amount=amount,
            agent_id=agent.id,
            customer_id=agent.customer_id,
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
            agent_id=agent.id,
            customer_id=agent.customer_id,
            settings=settings,
        )
    return operations._judge(
        agent,
        usage,
        operation=operation,
        account_id=plan.internal.id,
        amount=plan.amount,
        currency=plan.internal.currency,
        now=now,
    )


async def _quote(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, quote_id: str, now: datetime
) -> policies.Decision:
    agent, usage = await operations._lock(session, tenant=tenant, agent_id=agent_id)
    facts = await agents_service.own_quote(
        session, tenant=tenant, agent_id=agent.id, customer_id=agent.customer_id, quote_id=quote_id
    )
    decision = operations._judge(
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
    return decision
