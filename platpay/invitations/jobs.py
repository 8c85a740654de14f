"""Invitation jobs: expiry at expiresAt."""

from __future__ import annotations

from platpay.invitations import service as invitations_service
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext


@handler(invitations_service.EXPIRE_JOB)
async def expire_invitation(ctx: JobContext) -> None:
    """A PENDING invitation past its expiresAt becomes EXPIRED, committed with the job."""
    async with ctx.transaction() as session:
        await invitations_service.expire(session, code=ctx.payload["invitationCode"])
