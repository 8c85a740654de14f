"""Enqueue durable jobs inside the caller's business transaction.

Time: a job of the default lane with a tenant is due on its tenant's clock (kit/clock.py): `due_at` is
that instant, `run_at` when the process clock reaches it (what claims compare). When a sandbox tenant's
clock moves, `follow_clock` recomputes run_at for every queued job of the tenant in one statement (or one
executemany), so no worker ever polls tenants. Other lanes (webhook deliveries and their retry backoff,
messages) run on real time: their delays are kept, measured from the tenant's now.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db.unit_of_work import LeanSession
from platpay.jobs import repository
from platpay.jobs.registry import DEFAULT_LANE
from platpay.kit import clock
from platpay.kit.ids import new_id

ENQUEUED_FLAG = "platpay_jobs_enqueued"  # session.info: the lanes this transaction queued jobs in

# The attempts a job gets when its enqueue names none (PLATPAY_JOB_MAX_ATTEMPTS): set once at startup.
_max_attempts: int | None = None


def configure(settings: Settings) -> None:
    """Startup (domains.start): what `enqueue` takes from the settings."""
    global _max_attempts
    _max_attempts = settings.job_max_attempts


def _default_max_attempts() -> int:
    if _max_attempts is None:
        raise RuntimeError("a job enqueued before startup configured the jobs (domains.start)")
    return _max_attempts


def _queued_in(session: LeanSession, lane: str) -> None:
    """Note that the transaction made jobs of `lane` due: the runner of this process claims that lane
    as soon as it commits (other processes find them at their next poll)."""
    session.info.setdefault(ENQUEUED_FLAG, set()).add(lane)


def placement(when: datetime | None, *, lane: str, tenant_id: str | None) -> tuple[datetime, datetime | None]:
    """(run_at, due_at) of a job of `tenant_id` in `lane` wanted at `when` (tenant time; None: now)."""
    real = clock.real_now()
    state = clock.current()
    if state is not None and state.tenant_id != tenant_id:
        state = None  # work for another tenant: its clock is not known here, real time
    if state is None:
        at = when or real
        return at, (at if lane == DEFAULT_LANE and tenant_id is not None else None)
    tenant_now = state.now()
    at = when or tenant_now
    if lane == DEFAULT_LANE:
        return state.to_real(at), at
    return real + (at - tenant_now), None


async def enqueue(
    session: LeanSession,
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
    `concurrency_key`: see JobRow. `run_at` is on the tenant's clock (see the module)."""
    now = clock.real_now()
    real_run_at, due_at = placement(run_at, lane=lane, tenant_id=tenant_id)
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
            "run_at": real_run_at,
            "due_at": due_at,
            "attempts": 0,
            "max_attempts": max_attempts or _default_max_attempts(),
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
    now = clock.real_now()
    _queued_in(session, lane)
    return await repository.hasten(session, lane=lane, key=key, now=now, run_at=now)


async def reschedule_oldest(session: AsyncSession, *, lane: str, key: str, run_at: datetime) -> str | None:
    """The oldest queued job of `key` in `lane`, due at `run_at` (real time) instead; its id, or None."""
    return await repository.reschedule_oldest(
        session, lane=lane, key=key, now=clock.real_now(), run_at=run_at
    )


async def give_up(session: AsyncSession, *, job_ids: list[str]) -> int:
    """Finish queued jobs without running them; how many."""
    return await repository.finish_many(session, job_ids=job_ids, now=clock.real_now())


async def follow_clock(session: AsyncSession, *, tenant_id: str, state: clock.TenantClock | None) -> None:
    """The tenant's clock now reads as `state` (None: real time): every queued job of the tenant that
    follows its clock runs when that clock reaches its due_at (now, if it already has; never while frozen)."""
    real = clock.real_now()
    await repository.follow_clock(
        session,
        tenant_id=tenant_id,
        tenant_now=state.now() if state is not None else real,
        real_now=real,
        frozen=state is not None and state.frozen,
        offset=state.offset if state is not None else None,
    )


async def next_due(
    session: AsyncSession, *, tenant_id: str, after: datetime, until: datetime
) -> datetime | None:
    """The earliest due_at of the tenant's queued clock-following jobs in (after, until]."""
    return await repository.next_due(session, tenant_id=tenant_id, after=after, until=until)
