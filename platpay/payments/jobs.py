"""Payment lifecycle jobs."""

from __future__ import annotations

from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext
from platpay.payments import transfers


@handler(transfers.STEP_JOB)
async def transfer_step(ctx: JobContext) -> None:
    """One step of a transfer; its state change, ledger entry and webhooks commit with the job."""
    async with ctx.transaction() as session:
        await transfers.step(
            session,
            tenant_id=ctx.tenant_id or "",
            transaction_id=ctx.payload["transactionId"],
            step_name=ctx.payload["step"],
            settings=ctx.settings,
        )
