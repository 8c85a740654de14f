"""Cards' jobs: provisioning by the issuer, a delayed pull's confirmation."""

from __future__ import annotations

from platpay.cards import service, transactions
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext


@handler(service.PROVISION_JOB)
async def provision(ctx: JobContext) -> None:
    """The issuer's answer for a new card: ACTIVE or CLOSED (ISSUER_REJECTED), with card.state_change."""
    async with ctx.transaction() as session:
        await service.provision(
            session,
            tenant_id=ctx.tenant_id or "",
            card_id=ctx.payload["cardId"],
            outcome=ctx.payload["outcome"],
        )


@handler(transactions.CONFIRM_PULL_JOB)
async def confirm_pull(ctx: JobContext) -> None:
    async with ctx.transaction() as session:
        await transactions.confirm_pull(
            session, tenant_id=ctx.tenant_id or "", transaction_id=ctx.payload["cardTransactionId"]
        )
