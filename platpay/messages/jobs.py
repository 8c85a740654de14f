"""The send job: a message goes out with no transaction open, then its outcome is recorded with the job; the
bodies' retention."""

from __future__ import annotations

from datetime import datetime

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.unit_of_work import LeanFirst, LeanSession
from platpay.jobs.registry import Lane, Pruner, handler, lane, pruning
from platpay.jobs.runner import JobContext
from platpay.kit import clock
from platpay.messages import providers, repository, service
from platpay.metrics import MESSAGE_ATTEMPTS

log = structlog.get_logger("platpay.messages")

# Sending waits on mail servers: a lane of its own, so a slow one never holds settlement steps back.
lane(Lane(service.LANE, lambda settings: settings.message_concurrency))


async def _prune_bodies(session: AsyncSession, before: datetime, limit: int) -> int:
    return await repository.prune_bodies(session, before=before, limit=limit)


# Retention (jobs/registry.py `Pruner`, scheduled by every runner's maintenance): a sent or failed message's
# body (a sandbox mailbox's; a production one is erased once sent) is erased `message_body_retention_days`
# after it was queued; the message's record stays.
pruning(Pruner("message_bodies", lambda settings: settings.message_body_retention_days, _prune_bodies))


def _describe(error: Exception) -> str:
    """What went wrong, for last_error (never the body): a sender's own description, or the exception."""
    if isinstance(error, providers.SendFailed | providers.MessageRejected):
        return str(error)
    return f"{type(error).__name__}: {error}"


@handler(service.SEND_JOB)
async def send_message(ctx: JobContext) -> None:
    message_id = ctx.payload["messageId"]
    message = await service.outbound(ctx.db, message_id=message_id)
    if message is None:
        return  # already sent or given up
    error, permanent, kind = None, False, ""
    try:
        await providers.send(message)
    except providers.MessageRejected as rejected:
        error, permanent, kind = _describe(rejected), True, type(rejected).__name__
    except Exception as failure:  # any other failure is temporary: tried again after a backoff
        error, kind = _describe(failure), type(failure).__name__
    # its tenant's clock, read when the job was claimed (this lane itself runs on real time)
    now = ctx.clock.now() if ctx.clock is not None else clock.real_now()
    if error is None:
        # Sent, the common case (an OTP email per wallet login): one conditional UPDATE with the job's finish,
        # lean statements only, so the job's runner may run it without an ORM session.
        async def sent(session: LeanSession) -> service.Attempt | None:
            return await service.record_sent(session, message_id=message_id, now=now)

        attempt = await ctx.run(LeanFirst(lean=sent, careful=sent))
    else:
        log.warning("message.send_failed", message_id=message_id, permanent=permanent, error=kind)
        # (the log names the failure's type only: SMTP replies may quote the recipient)
        async with ctx.transaction() as session:
            attempt = await service.record_attempt(
                session,
                message_id=message_id,
                error=error,
                permanent=permanent,
                settings=ctx.settings,
                now=now,
            )
            if attempt is not None and attempt.retry_at is not None:
                ctx.retry_at(attempt.retry_at, reason="send failed; retried")
    if attempt is not None:  # counted once recorded
        MESSAGE_ATTEMPTS.labels(attempt.channel, attempt.category, attempt.outcome).inc()
