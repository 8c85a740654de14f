"""All SQL on the jobs table. Claims and finishes are conditional on the lease so a job that a crashed or
slow worker lost can never be finished twice."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.portable import insert_ignore
from platpay.jobs.models import JobRow

QUEUED, RUNNING, DONE, DEAD = "QUEUED", "RUNNING", "DONE", "DEAD"
_INSERT = Lean(JobRow.__table__.insert())


async def insert(session: AsyncSession, values: dict[str, Any]) -> bool:
    """Insert a job; with a dedupe_key an existing job with that key wins. True if inserted."""
    if values.get("dedupe_key") is None:
        await lean.rows(session, _INSERT, values)  # lean: jobs are written on every money movement
        return True
    result = await session.execute(insert_ignore(session, JobRow.__table__, values))
    return bool(result.rowcount)


def _claimable(now: datetime) -> Any:
    return or_(
        and_(JobRow.state == QUEUED, JobRow.run_at <= now),
        and_(JobRow.state == RUNNING, JobRow.lease_until < now),
    )


async def bury_exhausted(session: AsyncSession, *, now: datetime) -> int:
    """Jobs whose worker died on every one of their attempts are given up (DEAD) instead of re-claimed."""
    result = await session.execute(
        update(JobRow)
        .where(JobRow.state == RUNNING, JobRow.lease_until < now, JobRow.attempts >= JobRow.max_attempts)
        .values(state=DEAD, finished_at=now, updated_at=now, last_error="lease expired on the last attempt")
    )
    return result.rowcount or 0


async def claim(
    session: AsyncSession, *, now: datetime, lease_until: datetime, token: str, limit: int
) -> list[JobRow]:
    due = (
        select(JobRow.id)
        .where(_claimable(now))
        .order_by(JobRow.run_at)
        .limit(limit)
        .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has a single writer anyway
    )
    # Lock the ids first, then update exactly those. As one `UPDATE … WHERE id IN (SELECT … LIMIT n FOR
    # UPDATE SKIP LOCKED)` PostgreSQL may plan a nested-loop semi join that rescans the locking subquery
    # per outer row, claiming the whole queue instead of `limit` jobs.
    ids = list((await session.scalars(due)).all())
    if not ids:
        return []
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id.in_(ids), _claimable(now))
        .values(
            state=RUNNING,
            lease_until=lease_until,
            lease_token=token,
            attempts=JobRow.attempts + 1,
            updated_at=now,
        )
        .returning(JobRow)
        .execution_options(synchronize_session=False)
    )
    return list(result.scalars().all())


async def extend_lease(session: AsyncSession, *, job_id: str, token: str, lease_until: datetime) -> bool:
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.lease_token == token, JobRow.state == RUNNING)
        .values(lease_until=lease_until)
    )
    return bool(result.rowcount)


async def finish(session: AsyncSession, *, job_id: str, token: str, now: datetime) -> bool:
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.lease_token == token, JobRow.state == RUNNING)
        .values(state=DONE, finished_at=now, updated_at=now, lease_token=None, lease_until=None)
    )
    return bool(result.rowcount)


async def reschedule(
    session: AsyncSession,
    *,
    job_id: str,
    token: str,
    now: datetime,
    run_at: datetime,
    error: str | None,
    reset_attempts: bool,
    refund_attempt: bool = False,
    dead: bool = False,
) -> bool:
    """Back to QUEUED at `run_at` (or DEAD), if `token` still holds the lease. `reset_attempts`: the
    handler asked to run later (a fresh start); `refund_attempt`: this attempt did not count (the
    database was unavailable)."""
    values: dict[str, Any] = {
        "state": DEAD if dead else QUEUED,
        "run_at": run_at,
        "updated_at": now,
        "lease_token": None,
        "lease_until": None,
        "last_error": error,
    }
    if reset_attempts:
        values["attempts"] = 0
    elif refund_attempt:
        values["attempts"] = JobRow.attempts - 1
    if dead:
        values["finished_at"] = now
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.lease_token == token, JobRow.state == RUNNING)
        .values(**values)
    )
    return bool(result.rowcount)


async def queue_stats(session: AsyncSession, *, now: datetime) -> dict[str, Any]:
    """Depth by state and the age of the oldest due job (seconds), for /metrics."""
    rows = (
        await session.execute(
            select(JobRow.state, func.count()).where(JobRow.state != DONE).group_by(JobRow.state)
        )
    ).all()
    oldest_due = await session.scalar(
        select(func.min(JobRow.run_at)).where(JobRow.state == QUEUED, JobRow.run_at <= now)
    )
    oldest_age = 0.0
    if oldest_due is not None:
        oldest_due = oldest_due if oldest_due.tzinfo else oldest_due.replace(tzinfo=now.tzinfo)
        oldest_age = max(0.0, (now - oldest_due).total_seconds())
    return {"by_state": {state: count for state, count in rows}, "oldest_due_age_seconds": oldest_age}


async def get(session: AsyncSession, job_id: str) -> JobRow | None:
    return await session.get(JobRow, job_id)


async def purge_finished(session: AsyncSession, *, before: datetime) -> int:
    result = await session.execute(
        JobRow.__table__.delete().where(JobRow.state == DONE, JobRow.finished_at < before)
    )
    return result.rowcount or 0
