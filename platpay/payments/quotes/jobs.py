"""Quote lifecycle jobs: expiry at expiresAt, and each step of an executed quote's payout and refund."""

from __future__ import annotations

from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext
from platpay.payments.quotes import service as quotes_service
from platpay.payments.quotes import settlement


@handler(quotes_service.EXPIRE_JOB)
async def expire_quote(ctx: JobContext) -> None:
    """An unexecuted quote becomes EXPIRED (OUTGOING_PAYMENT.EXPIRED), committed with the job."""
    async with ctx.transaction() as session:
        await quotes_service.expire(session, tenant_id=ctx.tenant_id or "", quote_id=ctx.payload["quoteId"])


@handler(settlement.STEP_JOB)
async def quote_step(ctx: JobContext) -> None:
    """One step of a quote's payment; its state change, ledger entry and webhooks commit with the job."""
    async with ctx.transaction() as session:
        await settlement.step(
            session,
            tenant_id=ctx.tenant_id or "",
            quote_id=ctx.payload["quoteId"],
            step_name=ctx.payload["step"],
            settings=ctx.settings,
        )
