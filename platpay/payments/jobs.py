"""Payment lifecycle jobs."""

from __future__ import annotations

from platpay.db.unit_of_work import LeanFirst
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext
from platpay.payments import transfers


@handler(transfers.STEP_JOB)
async def transfer_step(ctx: JobContext) -> None:
    """One step of a transfer; its state change, ledger entry and webhooks commit with the job: first in a
    lean transaction, raced or on a rarer path once more in an ORM session (`transfers.step`)."""
    await ctx.run(
        LeanFirst.same(
            transfers.step,
            tenant_id=ctx.tenant_id or "",
            transaction_id=ctx.payload["transactionId"],
            step_name=ctx.payload["step"],
            settings=ctx.settings,
        )
    )
