"""The job runner: claims due jobs under a lease, runs their handlers, finishes them exactly once.

Exactly-once effects: a handler that writes to the database does so inside `ctx.transaction()`, which
marks the job DONE in the same transaction, conditional on still holding the lease. If the worker crashed
(or lost the lease) the transaction never commits, the lease expires, and another worker re-runs the job
from scratch. Handlers that talk to the outside world (webhooks) are at-least-once by nature and say so.

Database outages: a job whose attempt failed because the database was unavailable is not a failing job.
It is put back to run again shortly without spending one of its attempts; if even that cannot be written,
its lease expires and it is claimed again, as after a crash. The runner itself keeps polling through an
outage and resumes on its own when the database answers again (the outage is logged once, by the
database layer).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import traceback
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db import replica
from platpay.db.database import Database
from platpay.db.faults import unavailable_reason
from platpay.db.unit_of_work import LeanFirst, LeanSession, Raced
from platpay.jobs import registry, repository
from platpay.jobs.service import ENQUEUED_FLAG, placement
from platpay.jobs.state import JobState
from platpay.kit import clock, idempotency, rate_limits
from platpay.metrics import JOB_RUNS

log = structlog.get_logger("platpay.jobs")
T = TypeVar("T")
SessionT = TypeVar("SessionT", bound=LeanSession)

# How soon the runner tries again after the database was unavailable (to claim, or to run a job).
OUTAGE_RETRY_SECONDS = 0.5
# How often each runner runs a maintenance pass (housekeeping and retention).
MAINTENANCE_SECONDS = 300.0


class LeaseLost(Exception):
    """Another worker owns this job now; everything this attempt wrote is rolled back."""


class RetryLater(Exception):
    """Raised by a handler to run the job again at `run_at` (its attempt counter is reset)."""

    def __init__(self, run_at: datetime, reason: str = "") -> None:
        super().__init__(reason)
        self.run_at = run_at
        self.reason = reason


@dataclass
class JobContext:
    job_id: str
    kind: str
    payload: dict[str, Any]
    tenant_id: str | None
    attempt: int
    db: Database
    settings: Settings
    _token: str
    _finished: bool = False
    _retry_at: datetime | None = None
    _retry_reason: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    lane: str = registry.DEFAULT_LANE
    clock: clock.TenantClock | None = None  # its tenant's clock, when the tenant has one (kit/clock.py)

    def retry_at(self, when: datetime, reason: str = "") -> None:
        """Inside `transaction()`: reschedule this job instead of finishing it."""
        self._retry_at = when
        self._retry_reason = reason

    async def reschedule_in(
        self, session: AsyncSession, *, run_at: datetime | None = None, reason: str = ""
    ) -> None:
        """Run this job again at `run_at` (now) as part of the caller's own transaction `session`, instead
        of finishing it: for a handler that decides not to do its work yet while holding a lock that
        decision depends on. Nothing else may finish the job afterwards."""
        real_run_at, due_at = placement(run_at, lane=self.lane, tenant_id=self.tenant_id)
        ok = await repository.reschedule(
            session,
            job_id=self.job_id,
            token=self._token,
            now=clock.real_now(),
            run_at=real_run_at,
            error=reason,
            reset_attempts=True,
            due_at=due_at,
        )
        if not ok:
            raise LeaseLost(self.job_id)
        self._finished = True

    @property
    def finished(self) -> bool:
        return self._finished

    def mark_finished(self) -> None:
        """After a transaction that finished this job with others (`finish_together`) committed, or found
        its lease lost: the runner has nothing more to do for it."""
        self._finished = True

    def transaction(self) -> contextlib.AbstractAsyncContextManager[AsyncSession]:
        """A write transaction that also finishes (or reschedules) this job, atomically with its effects."""
        return self._transaction(self.db.transaction())

    async def run(self, operation: LeanFirst[T] | Callable[[AsyncSession], Awaitable[T]]) -> T:
        """`operation` in `transaction()`; a `LeanFirst` (a card authorization) first in a lean transaction
        (`Database.lean_transaction()`: no ORM session), raced, once more in `transaction()`."""
        if not isinstance(operation, LeanFirst):
            async with self.transaction() as session:
                return await operation(session)
        try:
            async with self._transaction(self.db.lean_transaction()) as lean_session:
                return await operation.lean(lean_session)
        except Raced:  # rolled back, the job unfinished: the careful attempt
            async with self.transaction() as session:
                return await operation.careful(session)

    @contextlib.asynccontextmanager
    async def _transaction(
        self, unit: contextlib.AbstractAsyncContextManager[SessionT]
    ) -> AsyncIterator[SessionT]:
        if self._finished:
            raise RuntimeError("job already finished in an earlier transaction")
        async with unit as session:
            yield session
            now = clock.real_now()
            if self._retry_at is not None:
                assert isinstance(session, AsyncSession), "a handler in a lean transaction asked to run later"
                run_at, due_at = placement(self._retry_at, lane=self.lane, tenant_id=self.tenant_id)
                ok = await repository.reschedule(
                    session,
                    job_id=self.job_id,
                    token=self._token,
                    now=now,
                    run_at=run_at,
                    error=self._retry_reason,
                    reset_attempts=True,
                    due_at=due_at,
                )
            else:
                ok = await repository.finish(session, job_id=self.job_id, token=self._token, now=now)
            if not ok:
                raise LeaseLost(self.job_id)
        self._finished = True


def _chain_of(lane: registry.Lane, job: dict[str, Any], token: str) -> str:
    """Which chain of a claim the job runs in: a keyed lane's, its token's (the claim's chains); in another
    lane, its kind's and tenant's when the kind's batch handler takes it (one claim, one token), else its
    own."""
    if lane.chain is not None:
        return token
    if registry.batches(job["kind"], job["payload"]):
        return f"{job['kind']}\x00{job['tenant_id'] or ''}"
    return job["id"]


def _claimed(row: Any, job_clock: Any) -> dict[str, Any]:
    """What the runner keeps of a claimed job (a JobRow snapshot) and its tenant's clock."""
    return {
        "id": row.id,
        "kind": row.kind,
        "lane": row.lane,
        "clock": job_clock,
        "due_at": row.due_at,
        "payload": row.payload,
        "tenant_id": row.tenant_id,
        "attempts": row.attempts,
        "max_attempts": row.max_attempts,
    }


def _by_token(contexts: list[JobContext]) -> dict[str, list[str]]:
    """The job ids of `contexts` (a batch handler's, none finished yet) by their lease token."""
    by_token: dict[str, list[str]] = {}
    for ctx in contexts:
        if ctx._finished:
            raise RuntimeError("job already finished in an earlier transaction")
        by_token.setdefault(ctx._token, []).append(ctx.job_id)
    return by_token


async def finish_together(session: LeanSession, contexts: list[JobContext]) -> set[str]:
    """In the caller's transaction, finish (DONE) the jobs of `contexts` (a batch handler's chain) still
    leased to them, in one statement per lease token; their ids. The others' leases were lost: what the
    caller writes for them must not be written (another worker runs them). Once the transaction committed,
    the caller marks every one of them finished (`mark_finished`)."""
    by_token = _by_token(contexts)
    finished: set[str] = set()
    now = clock.real_now()
    for token, job_ids in by_token.items():
        finished |= await repository.finish_many_leased(session, job_ids=job_ids, token=token, now=now)
    return finished


async def run_together(
    contexts: list[JobContext], operation: LeanFirst[None], *, careful: bool = True
) -> None:
    """`operation` (a batch handler's work for all of `contexts`, one tenant's jobs under one lease token) in
    one transaction that also finishes every job, as `JobContext.run` does for one: first a lean
    transaction, raced, once more in an ORM one (`careful`; without it, raced, nothing is finished and the
    runner runs each job on its own: for work that must not hold its rows' locks across round trips in one
    ORM transaction, a batch of settlements). A lease lost meanwhile rolls it back, nothing finished: the
    runner then runs each job on its own (and that one finds its lease gone)."""
    first = contexts[0]
    try:
        try:
            async with first.db.lean_transaction() as lean_session:
                await operation.lean(lean_session)
                await _finish_all(lean_session, contexts)
        except Raced:  # rolled back, nothing finished: the careful attempt
            if not careful:
                return
            async with first.db.transaction() as session:
                await operation.careful(session)
                await _finish_all(session, contexts)
    except LeaseLost:
        return
    for ctx in contexts:
        ctx.mark_finished()


async def _finish_all(session: LeanSession, contexts: list[JobContext]) -> None:
    """Every job of the batch DONE in the caller's transaction, one statement per lease token (in a lean one
    deferred to its writes: a lease lost fails them, `Raced`, and the careful attempt finds it lost), or
    LeaseLost."""
    by_token = _by_token(contexts)
    now = clock.real_now()
    for token, job_ids in by_token.items():
        if not await repository.finish_all_leased(session, job_ids=job_ids, token=token, now=now):
            raise LeaseLost("a job of the batch is another worker's now")


async def reschedule_together(session: LeanSession, contexts: list[JobContext], *, reason: str = "") -> None:
    """In the caller's transaction, put the jobs of `contexts` (a batch handler's chain: one lane, one tenant)
    back in the queue, due now, their attempts reset, as each one's `reschedule_in` would, in one statement per
    lease token. Each is then finished for the runner: put back, or found leased to another worker."""
    if not contexts:
        return
    first = contexts[0]
    real_run_at, due_at = placement(None, lane=first.lane, tenant_id=first.tenant_id)
    by_token = _by_token(contexts)
    now = clock.real_now()
    for token, job_ids in by_token.items():
        await repository.reschedule_leased(
            session, job_ids=job_ids, token=token, now=now, run_at=real_run_at, due_at=due_at, error=reason
        )
    for ctx in contexts:
        ctx.mark_finished()


class JobRunner:
    """Claims and runs the jobs of every lane, or with `lanes` (names, checked: `registry.UnknownLane`) of
    those lanes only (`platpay worker --lanes webhooks`: a process that only delivers webhooks, beside
    workers that run the rest). Every lane needs some runner that claims it, or its jobs wait."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        *,
        name: str | None = None,
        listen: bool = True,
        lanes: Iterable[str] | None = None,
    ) -> None:
        self.db = db
        self.settings = settings
        self.name = name or f"runner-{uuid.uuid4().hex[:8]}"
        # None: every lane registered, read at each claim (a plugin's lane registered later included)
        self._only = None if lanes is None else tuple(lane.name for lane in registry.chosen_lanes(lanes))
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self._running: dict[str, set[asyncio.Task[None]]] = {}  # by lane
        # Lanes that may have due jobs. A claim that finds fewer than it asked for clears its lane's mark;
        # a commit queueing jobs in a lane, a job of the lane finishing (its key's slot is free) and every
        # poll set it again. A drained lane costs no claim transaction until then.
        self._maybe_due: set[str] = set()
        # Lanes marked by the periodic poll only (no commit or finished job since): their claim is skipped
        # when one autocommit read finds nothing claimable in them (an idle lane costs no transaction).
        self._polled: set[str] = set()
        self._last_maintenance = 0.0
        self._maintaining: asyncio.Task[None] | None = None  # the maintenance pass running, if any
        self._tasks_done = 0  # jobs this runner has finished running (run_until_idle: did one end meanwhile?)
        self.processed = 0
        if listen:  # a runner working for one call only (clocks: advance) does not listen to commits
            db.on_commit(self._on_commit)

    def _on_commit(self, session: LeanSession) -> None:
        lanes = session.info.pop(ENQUEUED_FLAG, None)
        if lanes and self._only is not None:
            lanes = set(lanes).intersection(self._only)  # another runner claims the others
        if lanes:
            self._maybe_due.update(lanes)
            self._polled.difference_update(lanes)
            self._wake.set()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        self._tasks_done += 1
        for lane, running in self._running.items():
            if task in running:
                running.discard(task)
                self._maybe_due.add(lane)  # a slot is free
        self._wake.set()

    def _all_running(self) -> set[asyncio.Task[None]]:
        return set().union(*self._running.values())

    def lanes(self) -> tuple[registry.Lane, ...]:
        """The lanes this runner claims."""
        if self._only is None:
            return registry.lanes()
        return tuple(lane for lane in registry.lanes() if lane.name in self._only)

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()

    @property
    def lease(self) -> timedelta:
        return timedelta(seconds=self.settings.job_lease_seconds)

    async def claim(
        self,
        limit: int,
        *,
        lane: str = registry.DEFAULT_LANE,
        tenant_id: str | None = None,
        due_by: datetime | None = None,
        chain: int = 1,
    ) -> list[tuple[dict[str, Any], str]]:
        """Lease up to `limit` due jobs of `lane` to this runner (with `tenant_id`: of that tenant's default
        lane only, due by `due_by` on its clock, in the order they are due). A keyed lane: up to `limit`
        chains of up to `chain` jobs of one key each, the jobs of a chain sharing a token."""
        definition = next(candidate for candidate in registry.lanes() if candidate.name == lane)
        key_cap = definition.key_cap(self.settings) if definition.key_cap is not None else None
        token = str(uuid.uuid4())
        if tenant_id is None and key_cap is None and not self.db.is_sqlite:
            # PostgreSQL: a lane's claim is one statement, its own transaction (the same claim as below)
            now = clock.real_now()
            leased, buried = await repository.claim_at_once(
                self.db,
                lane=lane,
                now=now,
                lease_until=now + self.lease,
                token=token,
                limit=limit,
                bury=lane == registry.DEFAULT_LANE,
            )
            if buried:
                log.warning("jobs.buried", count=buried)
            return [(_claimed(row, job_clock), token) for row, job_clock in leased]
        async with self.db.transaction() as session:
            # A keyed lane's claim waits for its turn first: its lease runs from when it got it.
            if tenant_id is None and key_cap is not None:
                await repository.lock_lane(session, lane=lane)
            now = clock.real_now()
            if lane == registry.DEFAULT_LANE:
                buried = await repository.bury_exhausted(session, now=now)
                if buried:
                    log.warning("jobs.buried", count=buried)
            lease_until = now + self.lease
            if tenant_id is not None:
                rows = await repository.claim_of_tenant(
                    session,
                    tenant_id=tenant_id,
                    now=now,
                    due_by=due_by or now,
                    lease_until=lease_until,
                    token=token,
                    limit=limit,
                )
            elif key_cap is None:
                rows = await repository.claim(
                    session, lane=lane, now=now, lease_until=lease_until, token=token, limit=limit
                )
            else:
                rows = await repository.claim_keyed(
                    session,
                    lane=lane,
                    now=now,
                    lease_until=lease_until,
                    token=token,
                    limit=limit,
                    key_cap=key_cap,
                    held=await definition.held(session, now) if definition.held is not None else None,
                    chain=chain,
                )
            clocks = await registry.load_clocks(session, {row.tenant_id for row in rows if row.tenant_id})
            claimed = [
                # a keyed lane's chains: a token each
                (_claimed(row, clocks.get(row.tenant_id or "")), row.lease_token or token)
                for row in rows
            ]
        return claimed

    async def _heartbeat(self, job_id: str | list[str], token: str) -> None:
        interval = max(self.settings.job_lease_seconds / 3, 0.05)
        while True:
            await asyncio.sleep(interval)
            try:
                async with self.db.transaction() as session:
                    lease_until = clock.real_now() + self.lease
                    if isinstance(job_id, list):  # a chain's
                        held = await repository.extend_leases(
                            session, job_ids=job_id, token=token, lease_until=lease_until
                        )
                    else:
                        held = await repository.extend_lease(
                            session, job_id=job_id, token=token, lease_until=lease_until
                        )
                    if not held:
                        return
            except Exception as error:
                # Unreachable database: try again at the next beat (two more fit in the lease).
                if unavailable_reason(error) is None:
                    log.error("job.heartbeat_failed", job_id=job_id, error=repr(error))

    def _failure_delay(self, attempts: int) -> timedelta:
        base = min(2 ** max(attempts - 1, 0), 300)
        return timedelta(seconds=base * (0.5 + random.random() / 2))

    async def execute_chain(self, chain: list[tuple[dict[str, Any], str]]) -> None:
        """A chain (one lease token: a keyed lane's jobs of one key, or another lane's jobs of one kind and
        tenant claimed together, `_chain_of`): together by their kind's batch handler if it has one, then
        whatever it left unfinished one by one. Its leases are kept alive together until the last is done."""
        if len(chain) == 1:
            await self.execute(*chain[0])
            return
        token = chain[0][1]
        heartbeat = asyncio.create_task(self._heartbeat([job["id"] for job, _ in chain], token))  # noqa: RUF006 (awaited below)
        try:
            kinds = {job["kind"] for job, _ in chain}
            batch = registry.get_batch(kinds.pop()) if len(kinds) == 1 else None
            finished: set[str] = set()
            if batch is not None:
                contexts = [self._context(job, job_token) for job, job_token in chain]
                # (on its tenant's clock in the default lane, else on real time, as `execute` runs them)
                default_lane = contexts[0].lane == registry.DEFAULT_LANE
                clock_token = clock.use(contexts[0].clock if default_lane else None)
                writer_token = replica.acting_for(contexts[0].tenant_id)
                try:
                    await batch(contexts)
                except Exception as error:  # what it did not finish runs one by one below
                    if unavailable_reason(error) is None:
                        log.error("job.batch_failed", kind=chain[0][0]["kind"], error=repr(error))
                finally:
                    replica.restore(writer_token)
                    clock.restore(clock_token)
                finished = {ctx.job_id for ctx in contexts if ctx.finished}
                self.processed += len(finished)
                JOB_RUNS.labels(chain[0][0]["kind"], "done").inc(len(finished))
            for job, job_token in chain:
                if job["id"] not in finished:
                    await self.execute(job, job_token)
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    def _context(self, job: dict[str, Any], token: str) -> JobContext:
        return JobContext(
            job_id=job["id"],
            kind=job["kind"],
            payload=job["payload"],
            tenant_id=job["tenant_id"],
            attempt=job["attempts"],
            db=self.db,
            settings=self.settings,
            _token=token,
            lane=job.get("lane", registry.DEFAULT_LANE),
            clock=job.get("clock"),
        )

    async def execute(self, job: dict[str, Any], token: str) -> None:
        ctx = self._context(job, token)
        handler = registry.get(job["kind"])
        # A default-lane job runs on its tenant's clock (kit/clock.now() in its handler reads it); the other
        # lanes (webhook deliveries, messages) on real time: their backoff is real (ctx.clock is there for
        # what must still read the tenant's time, such as a webhook's timestamp).
        clock_token = clock.use(ctx.clock if ctx.lane == registry.DEFAULT_LANE else None)
        writer_token = replica.acting_for(ctx.tenant_id)  # its tenant's next reads see what it wrote
        heartbeat = asyncio.create_task(self._heartbeat(job["id"], token))
        try:
            if handler is None:
                raise LookupError(f"no handler registered for job kind {job['kind']!r}")
            await handler(ctx)
            if not ctx._finished:
                async with ctx.transaction():
                    pass
            self.processed += 1
            JOB_RUNS.labels(job["kind"], "done").inc()
        except LeaseLost:
            log.warning("job.lease_lost", job_id=job["id"], kind=job["kind"])
            JOB_RUNS.labels(job["kind"], "lease_lost").inc()
        except RetryLater as retry:
            run_at, due_at = placement(retry.run_at, lane=ctx.lane, tenant_id=ctx.tenant_id)
            await self._reschedule(job, token, run_at=run_at, error=retry.reason, reset=True, due_at=due_at)
            JOB_RUNS.labels(job["kind"], "retry").inc()
        except Exception as error:  # a failing handler must not take the runner down
            if unavailable_reason(error) is not None:
                # Not the job's fault: again shortly, this attempt not counted.
                JOB_RUNS.labels(job["kind"], "db_unavailable").inc()
                await self._reschedule(
                    job,
                    token,
                    run_at=clock.real_now() + timedelta(seconds=OUTAGE_RETRY_SECONDS),
                    error=f"database unavailable: {unavailable_reason(error)}",
                    reset=False,
                    refund_attempt=True,
                )
                return
            dead = job["attempts"] >= job["max_attempts"]
            JOB_RUNS.labels(job["kind"], "dead" if dead else "failed").inc()
            log.error(
                "job.failed",
                job_id=job["id"],
                kind=job["kind"],
                attempt=job["attempts"],
                dead=dead,
                error=repr(error),
            )
            await self._reschedule(
                job,
                token,
                run_at=clock.real_now() + self._failure_delay(job["attempts"]),
                error="".join(traceback.format_exception_only(error))[:2000],
                reset=False,
                dead=dead,
            )
        finally:
            replica.restore(writer_token)
            clock.restore(clock_token)
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    async def _reschedule(
        self,
        job: dict[str, Any],
        token: str,
        *,
        run_at: datetime,
        error: str | None,
        reset: bool,
        dead: bool = False,
        refund_attempt: bool = False,
        due_at: datetime | None = None,
    ) -> None:
        """Put the job back (or bury it); if the database cannot take even that, its lease expires and
        it is claimed again later, as after a crash."""
        try:
            async with self.db.transaction() as session:
                await repository.reschedule(
                    session,
                    job_id=job["id"],
                    token=token,
                    now=clock.real_now(),
                    run_at=run_at,
                    error=error,
                    reset_attempts=reset,
                    refund_attempt=refund_attempt,
                    dead=dead,
                    due_at=due_at,
                )
        except Exception as failure:
            if unavailable_reason(failure) is None:
                raise
            log.info("job.left_to_lease", job_id=job["id"], kind=job["kind"])

    async def run_once(self, *, every_lane: bool = True) -> int:
        """In every lane (or only those that may have due jobs), claim what fits in its free slots and
        start it; returns how many were started."""
        started = 0
        for lane in self.lanes():
            if not every_lane and lane.name not in self._maybe_due:
                continue
            running = self._running.setdefault(lane.name, set())
            free = lane.concurrency(self.settings) - len(running)
            if free <= 0:
                continue
            wanted = min(free, self.settings.job_batch_size)
            self._maybe_due.discard(lane.name)
            if lane.name in self._polled:
                self._polled.discard(lane.name)
                if not await repository.anything_claimable(self.db, lane=lane.name, now=clock.real_now()):
                    continue  # nothing to claim there now; a commit queueing a job wakes the lane again
            size = lane.chain(self.settings) if lane.chain is not None else 1
            claimed = await self.claim(wanted, lane=lane.name, chain=size)
            chains: dict[str, list[tuple[dict[str, Any], str]]] = {}
            for job, token in claimed:
                # a keyed lane's chains share a token each; in another lane, the jobs of one kind and tenant
                # that the kind's batch handler takes together are one chain, and the rest run on their own
                chains.setdefault(_chain_of(lane, job, token), []).append((job, token))
            if (len(chains) if lane.chain is not None else len(claimed)) == wanted:
                self._maybe_due.add(lane.name)  # there may be more
            for jobs in chains.values():
                task = asyncio.create_task(self.execute_chain(jobs))
                running.add(task)
                task.add_done_callback(self._task_done)
            started += len(chains)
        return started

    async def run_until_idle(self, *, timeout: float = 30.0) -> int:
        """Run every due job (and jobs they enqueue) until none is due; for tests and the CLI."""
        deadline = clock.monotonic() + timeout
        started = 0
        while clock.monotonic() < deadline:
            done_before = self._tasks_done
            # A lane not known to have work (its last claim came back short, and none of its jobs has ended
            # since) is claimed only if one autocommit read finds a job to claim there, as the poll's: a
            # keyed lane's claim is a transaction of several statements, SQLite's takes the write lock.
            self._polled.update({lane.name for lane in self.lanes()} - self._maybe_due)
            count = await self.run_once()
            started += count
            running = self._all_running()
            if running:
                await asyncio.wait(running, return_when=asyncio.FIRST_COMPLETED)
            elif count == 0 and self._tasks_done == done_before:
                # (a job that ended while run_once was claiming in other lanes freed a slot of a lane
                # already passed over as full: one more round then)
                return started
        raise TimeoutError(f"jobs still due after {timeout}s")

    async def run_due_of_tenant(
        self, tenant_id: str, state: clock.TenantClock | None, *, timeout: float = 120.0
    ) -> int:
        """Run the tenant's due default-lane jobs (and the due ones they enqueue) here, in the order they are
        due on its clock (reading `state`), until none is due or running anywhere; how many ran here. The
        same claims and leases as every runner: beside other workers, no job runs twice. Jobs due at the
        same instant run concurrently on PostgreSQL (up to the lane's concurrency)."""
        deadline = clock.monotonic() + timeout
        ran = 0
        while clock.monotonic() < deadline:
            due_by = state.now() if state is not None else clock.real_now()
            claimed = await self.claim(self.settings.job_batch_size, tenant_id=tenant_id, due_by=due_by)
            if not claimed:
                async with self.db.read() as session:
                    busy = await repository.tenant_busy(session, tenant_id=tenant_id, now=clock.real_now())
                if not busy:
                    return ran
                await asyncio.sleep(0.02)  # another worker holds one of them: wait for it
                continue
            for job, _ in claimed:
                job["clock"] = state
            # SQLite has one writer: jobs run one after the other there (concurrent ones only contend)
            limit = 1 if self.db.is_sqlite else max(1, self.settings.job_concurrency)
            index = 0
            while index < len(claimed):
                due = claimed[index][0].get("due_at")
                group = [claimed[index]]
                index += 1
                while index < len(claimed) and len(group) < limit and claimed[index][0].get("due_at") == due:
                    group.append(claimed[index])
                    index += 1
                await asyncio.gather(*(self.execute(job, token) for job, token in group))
                ran += len(group)
        return ran

    async def _maintenance(self) -> None:
        """Start a maintenance pass every few minutes, as a task of its own beside the claims: a pass never
        holds up claiming or running jobs."""
        if clock.monotonic() - self._last_maintenance < MAINTENANCE_SECONDS:
            return
        if self._maintaining is not None and not self._maintaining.done():
            return
        self._last_maintenance = clock.monotonic()
        self._maintaining = asyncio.create_task(self._maintain_logged())

    async def _maintain_logged(self) -> None:
        try:
            await self.maintain()
        except Exception as error:  # the database went away: the next pass tries again
            if unavailable_reason(error) is None:
                log.error("jobs.maintenance_failed", error=repr(error))

    async def maintain(self, *, now: datetime | None = None) -> dict[str, int]:
        """One maintenance pass at `now` (the process clock's by default): expired idempotency keys, ended
        rate-limit windows and the domains' housekeeping in one transaction, then retention (`prune`). Safe
        to run concurrently in every worker. Rows pruned, by pruner."""
        now = now or clock.real_now()
        async with self.db.transaction() as session:
            await idempotency.purge_expired(session, before=now)
            await rate_limits.purge(session, now=now)
            for housekeeper in registry.housekeepers():
                await housekeeper(session, now)
        return await self.prune(now=now)

    async def prune(self, *, now: datetime | None = None) -> dict[str, int]:
        """Retention (docs/operations.md): every registered pruner's rows past its retention, at most
        `retention_batch_size` per statement, each batch its own short transaction, at most
        `retention_batches_per_pass` batches of each pruner per pass (what is left waits for the next pass,
        so a pass never holds locks long nor runs for minutes after a backlog built up). A pruner whose
        retention is 0 keeps its rows. Rows pruned, by pruner (those that ran)."""
        now = now or clock.real_now()
        size, most = self.settings.retention_batch_size, self.settings.retention_batches_per_pass
        pruned: dict[str, int] = {}
        for pruner in registry.pruners():
            days = pruner.retention(self.settings)
            if days <= 0:
                continue
            before, total = now - timedelta(days=days), 0
            for _ in range(most):
                async with self.db.transaction() as session:
                    count = await pruner.prune(session, before, size)
                total += count
                if count < size:  # nothing more is due (or another runner holds the rest of this batch)
                    break
            pruned[pruner.name] = total
        if any(pruned.values()):
            log.info("jobs.pruned", runner=self.name, **pruned)
        return pruned

    async def run_forever(self) -> None:
        log.info("jobs.runner_started", runner=self.name, lanes=[lane.name for lane in self.lanes()])
        every_lane_at = 0.0  # when every lane is next claimed, due or not (jobs due by time, other processes)
        while not self._stopping.is_set():
            if clock.monotonic() >= every_lane_at:
                names = {lane.name for lane in self.lanes()}
                self._polled.update(names - self._maybe_due)
                self._maybe_due.update(names)
                every_lane_at = clock.monotonic() + self.settings.job_poll_seconds
            self._wake.clear()  # before claiming: a wake-up while claiming is not lost
            try:
                started = await self.run_once(every_lane=False)
                await self._maintenance()
            except Exception as error:  # database briefly unreachable: back off, keep going
                if unavailable_reason(error) is None:
                    log.error("jobs.claim_failed", error=repr(error))
                started = 0
                every_lane_at = 0.0
                await asyncio.sleep(OUTAGE_RETRY_SECONDS)
            if started == 0:  # nothing due, or every lane with due work is full
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._wake.wait(), timeout=max(0.0, every_lane_at - clock.monotonic())
                    )
        if running := self._all_running():
            await asyncio.wait(running, timeout=self.settings.job_lease_seconds)
        if self._maintaining is not None and not self._maintaining.done():  # a pass is short: let it end
            await asyncio.wait({self._maintaining}, timeout=self.settings.job_lease_seconds)
            self._maintaining.cancel()
        log.info("jobs.runner_stopped", runner=self.name)


# The jobs' own retention (their table, their repository): finished jobs, and those given up, each after its
# setting's days.


async def _prune_done(session: AsyncSession, before: datetime, limit: int) -> int:
    return await repository.prune_finished(session, state=JobState.DONE, before=before, limit=limit)


async def _prune_dead(session: AsyncSession, before: datetime, limit: int) -> int:
    return await repository.prune_finished(session, state=JobState.DEAD, before=before, limit=limit)


registry.pruning(registry.Pruner("jobs_done", lambda settings: settings.job_retention_days, _prune_done))
registry.pruning(registry.Pruner("jobs_dead", lambda settings: settings.dead_job_retention_days, _prune_dead))
