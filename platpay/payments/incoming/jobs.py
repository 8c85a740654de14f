"""Incoming payment jobs (the approval deadline, a delayed arrival) and the hook that honours the
platform's reply to INCOMING_PAYMENT.PENDING."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.events import service as events_service
from platpay.events.types import INCOMING_PAYMENT_PENDING
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext
from platpay.payments.incoming import service as incoming


@handler(incoming.STEP_JOB)
async def incoming_step(ctx: JobContext) -> None:
    """One scheduled step; its state change, ledger entry and webhooks commit with the job."""
    async with ctx.transaction() as session:
        again = await incoming.step(
            session,
            tenant_id=ctx.tenant_id or "",
            transaction_id=ctx.payload["transactionId"],
            step_name=ctx.payload["step"],
            settings=ctx.settings,
        )
        if again is not None:
            ctx.retry_at(again, reason="not due yet")


@events_service.on_reply(INCOMING_PAYMENT_PENDING)
async def pending_reply(
    session: AsyncSession,
    *,
    tenant_id: str,
    data: dict[str, Any],
    status: int | None,
    body: str | None,
    error: str | None,
) -> None:
    """The receiver's answer decides the payment, in the transaction that records the attempt."""
    transaction_id = data.get("id")
    if not isinstance(transaction_id, str):
        return
    await incoming.on_pending_reply(
        session, tenant_id=tenant_id, transaction_id=transaction_id, status=status, body=body, error=error
    )
