"""Sandbox tenants' clocks (each sandbox tenant's own time, docs/sandbox-control.md): reading them with the tenant, and moving them.

A clock is stored only once moved (sandbox_clocks): an offset from real time, or a frozen instant. Every
request reads it with its credential (tenants' context, one query: `join_clock`) and every job with its
claim (`clocks_of`, registered with the job runner), so every process sees a move at its next request or
claim, and `kit.clock.now(tenant)` costs no query.

Moving a clock: in one transaction the row is locked and changed and `jobs.service.follow_clock`
recomputes when the tenant's queued jobs run (one statement; no worker polls tenants). `advance` walks
forward through the due times of the tenant's jobs up to its target: at each it sets the clock there and
runs what is due (jobs.runner.JobRunner.run_due_of_tenant, the runner's own claims and leases, safe beside
other workers), so that every job runs at the tenant time it would have run at had the time really passed
(its timestamps, the jobs it enqueues, their due times), and the call returns once all of it ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Select, SQLColumnExpression
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.clocks import repository
from platpay.clocks.errors import ClockAhead
from platpay.clocks.models import ClockRow
from platpay.config import Settings
from platpay.db.database import Database
from platpay.errors import invalid_field
from platpay.jobs import registry
from platpay.jobs import service as jobs_service
from platpay.jobs.runner import JobRunner
from platpay.kit import clock
from platpay.kit.clock import TenantClock

_US = timedelta(microseconds=1)
# Steps an advance takes through distinct due times before running the rest at its target at once (a job
# that re-enqueues itself every second must not make `advance 3 days` take 259,200 steps).
MAX_STEPS = 1000
# The farthest one advance goes (about ten years).
MAX_ADVANCE_SECONDS = 10 * 366 * 86400


def join_clock(
    stmt: Select[*tuple[Any, ...]], tenant_id: SQLColumnExpression[str]
) -> Select[*tuple[Any, ...]]:
    """`stmt` with the clock columns of the tenant `tenant_id` names appended (NULLs when it has none):
    for tenants' context query; `from_columns` reads them."""
    return repository.join_clock(stmt, tenant_id)


def from_columns(tenant_id: str, offset_us: int | None, frozen_at: datetime | None) -> TenantClock | None:
    if offset_us is None and frozen_at is None:
        return None
    return TenantClock(tenant_id, timedelta(microseconds=offset_us or 0), frozen_at)


registry.clock_columns(registry.ClockColumns(join=join_clock, of=from_columns))


def _state(row: ClockRow) -> TenantClock:
    return TenantClock(row.tenant_id, timedelta(microseconds=row.offset_us or 0), row.frozen_at)


async def state_of(session: AsyncSession, *, tenant_id: str) -> TenantClock | None:
    row = await repository.get(session, tenant_id)
    return _state(row) if row is not None else None


@registry.clock_loader
async def clocks_of(session: AsyncSession, tenant_ids: set[str]) -> dict[str, TenantClock]:
    """The clocks of those of `tenant_ids` that have one (the job runner reads them with its claims)."""
    return {
        tenant_id: TenantClock(tenant_id, timedelta(microseconds=offset_us or 0), frozen_at)
        for tenant_id, offset_us, frozen_at in await repository.of_tenants(session, tenant_ids)
    }


@dataclass(frozen=True)
class ClockView:
    now: datetime
    frozen: bool
    offset_seconds: float
    jobs_run: int | None = None  # advance and reset: the jobs that ran before they returned


def view(state: TenantClock | None, *, jobs_run: int | None = None) -> ClockView:
    real = clock.real_now()
    now = state.now() if state is not None else real
    return ClockView(
        now=now,
        frozen=state is not None and state.frozen,
        offset_seconds=round((now - real) / _US) / 1_000_000,
        jobs_run=jobs_run,
    )


def _store(row: ClockRow, state: TenantClock) -> None:
    row.offset_us = round(state.offset / _US)
    row.frozen_at = state.frozen_at
    row.updated_at = clock.real_now()


async def advance(
    db: Database,
    settings: Settings,
    *,
    tenant_id: str,
    seconds: float | None = None,
    to: datetime | None = None,
) -> ClockView:
    """Move the tenant's clock forward by `seconds` or to `to`, running everything that became due, in due
    order, each at its due time; returns once it all ran."""
    runner = JobRunner(db, settings, name=f"clock-{tenant_id}", listen=False)
    target: datetime | None = None
    final: TenantClock | None = None  # where `seconds` leaves a running clock: its offset plus seconds
    ran = steps = 0
    while True:
        async with db.transaction() as session:
            row = await repository.lock_or_create(session, tenant_id, now=clock.real_now())
            state = _state(row)
            current = state.now()
            if target is None:
                target = to if to is not None else current + timedelta(seconds=seconds or 0)
                if target < current:
                    raise invalid_field(
                        "to",
                        f"{clock.isoformat(target)} is before the clock's now ({clock.isoformat(current)}): "
                        "a clock only moves forward",
                    )
                if target - current > timedelta(seconds=MAX_ADVANCE_SECONDS):
                    raise invalid_field(
                        "to", f"at most {MAX_ADVANCE_SECONDS} seconds ahead of the clock's now"
                    )
                if to is None and not state.frozen:
                    final = TenantClock(tenant_id, state.offset + timedelta(seconds=seconds or 0), None)
                step: datetime | None = current  # first what is due already, at the time it is now
            else:
                steps += 1
                step = (
                    await jobs_service.next_due(session, tenant_id=tenant_id, after=current, until=target)
                    if steps < MAX_STEPS
                    else None
                )
            if step is None and final is not None and final.now() >= current:
                state = final  # (real time spent running jobs does not eat into the advance)
            else:
                state = state.moved_to(max(step or target, current))
            _store(row, state)
            await jobs_service.follow_clock(session, tenant_id=tenant_id, state=state)
        ran += await runner.run_due_of_tenant(tenant_id, state)
        if step is None:
            return view(state, jobs_run=ran)


async def freeze(db: Database, *, tenant_id: str) -> ClockView:
    """Stop the tenant's clock at its now: jobs due later wait until it moves again."""
    async with db.transaction() as session:
        row = await repository.lock_or_create(session, tenant_id, now=clock.real_now())
        state = _state(row)
        state = TenantClock(tenant_id, timedelta(0), state.now())
        _store(row, state)
        await jobs_service.follow_clock(session, tenant_id=tenant_id, state=state)
    return view(state)


async def unfreeze(db: Database, *, tenant_id: str) -> ClockView:
    """Let the tenant's clock run again from where it stands (it never jumps)."""
    async with db.transaction() as session:
        row = await repository.lock_or_create(session, tenant_id, now=clock.real_now())
        state = _state(row)
        if state.frozen_at is not None:
            state = TenantClock(tenant_id, state.frozen_at - clock.real_now(), None)
            _store(row, state)
            await jobs_service.follow_clock(session, tenant_id=tenant_id, state=state)
    return view(state)


async def reset(db: Database, settings: Settings, *, tenant_id: str) -> ClockView:
    """Back to real time, running what that makes due; refused (409) while the clock is ahead of real time,
    which would move it backwards."""
    async with db.transaction() as session:
        row = await repository.get(session, tenant_id, for_update=True)
        if row is not None:
            state = _state(row)
            real = clock.real_now()
            if state.now() > real:
                raise ClockAhead(
                    "the clock is ahead of real time: going back to real time would move it backwards "
                    "(reset works once real time has caught up with it, e.g. after freezing)",
                    details={"now": clock.isoformat(state.now()), "realNow": clock.isoformat(real)},
                )
            await repository.remove(session, tenant_id)
            await jobs_service.follow_clock(session, tenant_id=tenant_id, state=None)
    ran = await JobRunner(db, settings, name=f"clock-{tenant_id}", listen=False).run_due_of_tenant(
        tenant_id, None
    )
    return view(None, jobs_run=ran)
