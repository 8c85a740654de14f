"""Account jobs."""

from __future__ import annotations

from platpay.accounts import service as accounts_service
from platpay.accounts.external import service as external_service
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext
from platpay.kit import clock


@handler(accounts_service.BACKFILL_JOB)
async def backfill_currency(ctx: JobContext) -> None:
    """Open a newly configured currency's account for the next page of customers; repeat until none lack it.
    Each page commits with the job's bookkeeping, and the page query skips customers already done, so a
    crash or a second runner never opens an account twice."""
    async with ctx.transaction() as session:
        opened = await accounts_service.backfill_page(
            session, tenant_id=ctx.payload["tenantId"], currency=ctx.payload["currency"]
        )
        if opened == accounts_service.BACKFILL_PAGE:
            ctx.retry_at(clock.now(), reason=f"{opened} accounts opened; more customers to go")


@handler(accounts_service.PROVISION_JOB)
async def provision_account(ctx: JobContext) -> None:
    """One provisioning attempt of a PENDING internal account (accounts_service.provision)."""
    async with ctx.transaction() as session:
        await accounts_service.provision(
            session,
            tenant_id=ctx.payload["tenantId"],
            account_id=ctx.payload["accountId"],
            attempt=int(ctx.payload.get("attempt", 1)),
        )


@handler(external_service.REVIEW_JOB)
async def review_external_account(ctx: JobContext) -> None:
    """The account provider's review of an external account ends: its outcome, if the account still waits."""
    async with ctx.transaction() as session:
        await external_service.update_status(
            session,
            tenant_id=ctx.payload["tenantId"],
            account_id=ctx.payload["accountId"],
            status=ctx.payload["status"],
        )
