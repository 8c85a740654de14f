"""POST /agents/me/policy/evaluate: the policy's decision on a money request, changing nothing.

It walks the same steps as the real operation (operations.transfer / operations.execute_quote): the agent's
usage row locked, the paused/permission check first, the transfer planned (the accounts checked as the
customer's, the amount resolved) and judged: the one plan both call (agents/planning.py), in a transaction
that is then rolled back. So a dry-run answers what the real call would decide at that moment:
the same `decision`, `rule`, `reason` and `remaining` as the real call's 403 details or its action, and the
same 4xx where the real call would refuse before judging (an unknown account, insufficient funds, an
expired quote)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from platpay.agents import planning
from platpay.agents import policy as policies
from platpay.agents.state import ActionType
from platpay.config import Settings
from platpay.db.database import Database
from platpay.kit import clock
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
                quote = await planning.plan_quote(
                    session, tenant=tenant, agent_id=agent_id, quote_id=quote_id, now=now
                )
                decision = quote.decision
            else:
                assert source_account_id is not None and destination_account_id is not None
                transfer = await planning.plan_transfer(
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
                decision = transfer.decision
            raise _RollBack(decision)
    except _RollBack as done:
        return body_of(done.decision, now)
    raise AssertionError("unreachable")
