"""Enqueue durable jobs inside the caller's business transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import get_settings
from platpay.jobs import repository
from platpay.jobs.registry import DEFAULT_LANE
from platpay.kit import clock
from platpay.kit.ids import new_id

ENQUEUED_FLAG = "platpay_jobs_enqueued"  # session.info: the lanes this transaction queued jobs in


def _queued_in(session: AsyncSession, lane: str) -> None:
    """Note that the transaction made jobs of `lane` due: the runner of this process claims that lane
    as soon as it commits (other processes find them at their next poll)."""
    session.info.setdefault(ENQUEUED_FLAG, set()).add(lane)


async def enqueue(
    session: AsyncSession,
    kind: str,
    payload: dict[str, Any],
    *,
    tenant_id: str | None = None,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
    max_attempts: int | None = None,
    lane: str = DEFAULT_LANE,
    concurrency_key: str | None = None,
) -> str:
    """Write a job row in the current transaction; it runs only if that transaction commits. `lane` and
    `concurrency_key`: see JobRow."""
    now = clock.now()
    job_id = new_id("Task")
    await repository.insert(
        session,
        {
            "id": job_id,
            "kind": kind,
            "lane": lane,
            "concurrency_key": concurrency_key,
            "tenant_id": tenant_id,
            "payload": payload,
            "state": repository.QUEUED,
            "run_at": run_at or now,
            "attempts": 0,
            "max_attempts": max_attempts or get_settings().job_max_attempts,
            "lease_until": None,
            "lease_token": None,
            "dedupe_key": dedupe_key,
            "last_error": None,
            "created_at": now,
            "updated_at": now,
            "finished_at": None,
        },
    )
    _queued_in(session, lane)
    return job_id


async def hasten(session: AsyncSession, *, lane: str, key: str) -> int:
    """Every queued job of `key` in `lane` due now, however much later it was due; how many."""
    now = clock.now()
    _queued_in(session, lane)
    return await repository.hasten(session, lane=lane, key=key, now=now, run_at=now)


async def reschedule_oldest(session: AsyncSession, *, lane: str, key: str, run_at: datetime) -> str | None:
    """The oldest queued job of `key` in `lane`, due at `run_at` instead; its id, or None if none."""
    return await repository.reschedule_oldest(session, lane=lane, key=key, now=clock.now(), run_at=run_at)


async def give_up(session: AsyncSession, *, job_ids: list[str]) -> int:
    """Finish queued jobs without running them; how many."""
    return await repository.finish_many(session, job_ids=job_ids, now=clock.now())
