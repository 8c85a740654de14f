"""Agents' jobs: a pending action's expiry."""

from __future__ import annotations

from platpay.agents import operations
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext


@handler(operations.EXPIRE_JOB)
async def expire_action(ctx: JobContext) -> None:
    """An action still PENDING_APPROVAL at its expiresAt fails and releases its reservation (with the job)."""
    async with ctx.transaction() as session:
        await operations.expire(session, tenant_id=ctx.tenant_id or "", action_id=ctx.payload["actionId"])
