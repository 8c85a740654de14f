"""All SQL on the jobs table. Claims and finishes are conditional on the lease so a job that a crashed or
slow worker lost can never be finished twice.

Two ways to claim: `claim` takes a lane's oldest due jobs (FOR UPDATE SKIP LOCKED: workers never wait
for each other); `claim_keyed` serves a lane whose jobs carry concurrency keys round-robin across keys,
never putting more than `key_cap` jobs of one key in flight. Its claims are serialized across workers
(`lock_lane`: a transaction-scoped advisory lock on PostgreSQL; SQLite has one writer anyway), which is
what makes the cap hold across every worker: a claim counts what is running and takes what fits in one
step, and leases from the moment it got the lane.
"""

from __future__ import annotations

import hashlib
import operator
import random
import uuid
from collections import Counter
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import (
    JSON,
    Integer,
    and_,
    bindparam,
    case,
    func,
    literal,
    or_,
    select,
    text,
    true,
    union_all,
    update,
)
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.portable import lean_in, lean_insert_ignore, only_if
from platpay.db.rows import batch_done, batch_of
from platpay.db.types import UtcDateTime
from platpay.db.unit_of_work import LeanSession
from platpay.jobs import registry
from platpay.jobs.models import JobRow
from platpay.jobs.state import JobState
from platpay.kit.clock import NEVER

if TYPE_CHECKING:
    from sqlalchemy import CursorResult, Select


QUEUED, RUNNING, DONE, DEAD = JobState.QUEUED, JobState.RUNNING, JobState.DONE, JobState.DEAD
# Lean inserts (the only way jobs are written): jobs are written on every money movement.
_INSERT = Lean(JobRow.__table__.insert())
_INSERT_UNLESS_DEDUPED = lean_insert_ignore(JobRow.__table__)


async def insert(session: LeanSession, values: dict[str, Any]) -> bool:
    """Insert a job; with a dedupe_key an existing job with that key wins. True if inserted."""
    if values.get("dedupe_key") is None:
        await lean.defer(session, _INSERT, values)  # PostgreSQL: with the next statement (db/lean.py)
        return True
    return bool(await lean.rows(session, _INSERT_UNLESS_DEDUPED, values))


def _claimable(now: datetime | Any, *, found_by_id: bool = False) -> Any:
    """Due queued jobs and crashed ones whose lease expired, at `now` (a value, or a bind parameter). With
    `found_by_id`, a check of jobs a statement finds by their ids: the states as `only_if`, which no index
    serves."""
    state_is = only_if if found_by_id else operator.eq
    return or_(
        and_(state_is(JobRow.state, QUEUED), JobRow.run_at <= now),
        and_(state_is(JobRow.state, RUNNING), JobRow.lease_until < now),
    )


_BURY = Lean(
    update(JobRow)
    .where(
        JobRow.state == RUNNING,
        JobRow.lease_until < bindparam("now", type_=UtcDateTime()),
        JobRow.attempts >= JobRow.max_attempts,
    )
    .values(
        state=DEAD,
        finished_at=bindparam("now", type_=UtcDateTime()),
        updated_at=bindparam("now", type_=UtcDateTime()),
        last_error="lease expired on the last attempt",
    )
    .returning(JobRow.id)
)


async def bury_exhausted(session: AsyncSession, *, now: datetime) -> int:
    """Jobs whose worker died on every one of their attempts are given up (DEAD) instead of re-claimed
    (lean: every claim of the default lane runs it first)."""
    return len(await lean.rows(session, _BURY, {"now": now}))


_NOW = bindparam("now", type_=UtcDateTime())
# Lean: a lane's claim runs whenever a commit queues a job there (an OTP email per wallet login challenge).
# Two locking reads, each one range of an index read in its order, instead of one with an OR of both: that
# one had PostgreSQL bitmap-scan and sort the lane's whole due backlog on every claim (thousands of
# settlement steps while a backlog waits) to return a few ids.
_EXPIRED_OF_LANE = Lean(  # crashed workers' jobs first: they were due before anything queued since
    select(JobRow.id)
    .where(JobRow.lane == bindparam("lane"), JobRow.state == RUNNING, JobRow.lease_until < _NOW)
    .order_by(JobRow.run_at)
    .limit(bindparam("limit", type_=Integer()))
    .with_for_update(skip_locked=True)  # PostgreSQL; SQLite has a single writer anyway
)
_QUEUED_OF_LANE = Lean(
    select(JobRow.id)
    .where(JobRow.lane == bindparam("lane"), JobRow.state == QUEUED, JobRow.run_at <= _NOW)
    .order_by(JobRow.run_at)
    .limit(bindparam("limit", type_=Integer()))
    .with_for_update(skip_locked=True)
)


# Whether a lane has anything a claim could take (a due job, or a crashed one whose lease expired): run
# alone in autocommit (Database.fetch_first) before a periodic claim, so that polling an idle lane costs one
# indexed read instead of a claim transaction.
_CLAIMABLE_IN_LANE = Lean(
    select(JobRow.id).where(JobRow.lane == bindparam("lane"), _claimable(_NOW)).limit(1)
)


async def anything_claimable(db: Database, *, lane: str, now: datetime) -> bool:
    """Whether the lane has a job to claim now: one autocommit read, no transaction (the poll's)."""
    return await db.fetch_first(_CLAIMABLE_IN_LANE, {"lane": lane, "now": now}) is not None


async def claim(
    session: AsyncSession, *, lane: str, now: datetime, lease_until: datetime, token: str, limit: int
) -> list[JobRow]:
    """The lane's `limit` oldest due jobs, leased to `token`: crashed ones whose lease expired first, then
    queued ones due by `now`, oldest first."""
    # Lock the ids first, then update exactly those. As one `UPDATE … WHERE id IN (SELECT … LIMIT n FOR
    # UPDATE SKIP LOCKED)` PostgreSQL may plan a nested-loop semi join that rescans the locking subquery
    # per outer row, claiming the whole queue instead of `limit` jobs.
    params = {"lane": lane, "now": now, "limit": limit}
    ids = [row[0] for row in await lean.rows(session, _EXPIRED_OF_LANE, params)]
    if len(ids) < limit:
        params["limit"] = limit - len(ids)
        ids += [row[0] for row in await lean.rows(session, _QUEUED_OF_LANE, params)]
    return await _lease(session, ids, now=now, lease_until=lease_until, token=token)


# PostgreSQL: a lane's claim as one statement, its own transaction (`Database.write_alone`): one round trip
# where the claim above costs seven in a transaction (BEGIN, the bury, both locking reads, the lease, the
# clocks' read, COMMIT). The same claim: in the default lane jobs that died on their last attempt are buried
# first (those the crashed-first read then leaves out: one statement must not change a row twice); crashed
# jobs first, then queued ones, oldest first, at most `limit`, each read locked SKIP LOCKED and MATERIALIZED
# (run once, whatever plan the UPDATE gets: see `claim`); the jobs leased; each with its tenant's clock's
# columns (`registry.ClockColumns`). One row comes back even when nothing was leased, with the count buried.
_CLAIMS_AT_ONCE: dict[tuple[bool, int], Lean] = {}


def _claim_at_once(bury: bool) -> Lean:
    """The statement, built at first use (the clocks domain registers its columns at import)."""
    clocks = registry.clock_columns_of()
    key = (bury, id(clocks))
    found = _CLAIMS_AT_ONCE.get(key)
    if found is not None:
        return found
    limit = bindparam("limit", type_=Integer())
    expired = [JobRow.lane == bindparam("lane"), JobRow.state == RUNNING, JobRow.lease_until < _NOW]
    buried_count: Any = literal(0)
    if bury:
        buried = cast(Any, _BURY.statement).cte("buried")
        buried_count = select(func.count()).select_from(buried).scalar_subquery()
        expired.append(JobRow.attempts < JobRow.max_attempts)  # the buried ones
    crashed = (
        select(JobRow.id, JobRow.run_at, literal(0).label("turn"))
        .where(*expired)
        .order_by(JobRow.run_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("crashed")
        .prefix_with("MATERIALIZED")
    )
    queued = (
        select(JobRow.id, JobRow.run_at, literal(1).label("turn"))
        .where(JobRow.lane == bindparam("lane"), JobRow.state == QUEUED, JobRow.run_at <= _NOW)
        .order_by(JobRow.run_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .cte("queued")
        .prefix_with("MATERIALIZED")
    )
    both = union_all(select(crashed), select(queued)).subquery("due")
    picked = select(both.c.id).order_by(both.c.turn, both.c.run_at).limit(limit).cte("picked")
    leased = _leasing(JobRow.id == picked.c.id).cte("leased")
    anchor = select(buried_count.label("buried")).cte("anchor")
    jobs = [leased.c[key] for key in _JOB_KEYS]
    stmt: Any = select(anchor.c.buried, *jobs).select_from(anchor.outerjoin(leased, true()))
    if clocks is not None:
        stmt = clocks.join(stmt, leased.c.tenant_id)
    found = _CLAIMS_AT_ONCE[key] = Lean(stmt.order_by(leased.c.run_at))
    return found


async def claim_at_once(
    db: Database, *, lane: str, now: datetime, lease_until: datetime, token: str, limit: int, bury: bool
) -> tuple[list[tuple[JobRow, Any]], int]:
    """PostgreSQL: what `bury_exhausted` (with `bury`) then `claim` do, as one statement that is its own
    transaction; the leased jobs (read-only snapshots) each with its tenant's clock (or None), and how many
    jobs were buried."""
    params = {
        "lane": lane,
        "now": now,
        "limit": limit,
        "new_lease_until": lease_until,
        "new_lease_token": token,
    }
    found = await db.write_alone(_claim_at_once(bury), params)
    clocks = registry.clock_columns_of()
    jobs: list[tuple[JobRow, Any]] = []
    for row in found:
        if row[1] is None:  # the anchor's row alone: nothing leased
            continue
        values = row[1 : 1 + len(_JOB_KEYS)]
        job = lean.snapshot(JobRow, _JOB_KEYS, values)
        clock = clocks.of(job.tenant_id, *row[1 + len(_JOB_KEYS) :]) if clocks and job.tenant_id else None
        jobs.append((job, clock))
    return jobs, (found[0][0] if found else 0)


def _lane_lock_id(lane: str) -> int:
    return int.from_bytes(hashlib.sha256(f"jobs-lane\x00{lane}".encode()).digest()[:8], "big", signed=True)


async def lock_lane(session: AsyncSession, *, lane: str) -> None:
    """Serialize the claims of a keyed lane across every worker, until the transaction ends (PostgreSQL: a
    transaction-scoped advisory lock; SQLite has one writer anyway). Taken before the claim reads the time:
    a claim that waited here leases from when it got the lane, not from when it began waiting (else a long
    wait would hand out a lease that is already running out, and another worker would take the job again
    while the first still runs it).

    On PostgreSQL it also turns sorts off for the rest of the transaction (SET LOCAL enable_sort = off, in
    the lock's own statement): the planner then sorts only where no index can answer, so the claim's key walk
    (_DUE_KEYS) and each key's oldest jobs (_heads_of_key) are read in the key index's order, whatever the
    statistics say of the lane's backlog (on a fresh database under load they said it was empty, and a plan
    that sorted every due job of the lane looked free). Hold it only in a claim's transaction."""
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        await session.execute(
            select(
                func.pg_advisory_xact_lock(_lane_lock_id(lane)),
                func.set_config("enable_sort", "off", literal(True)),
            )
        )


# The concurrency keys with due jobs, walked through the (lane, state, concurrency_key, run_at, id) index
# one key at a time (a loose index scan): a cost in keys, not in jobs, however long one key's backlog is.
# Each step, the first too, takes the next key above the one before in the key's order (the walk starts
# from '', below every key and never one: keys are endpoint ids), and the claim's transaction forbids sorts
# where an index can answer (`lock_lane`): the key index read in its order is then the one plan, whatever
# the statistics say. A plain min() over the lane's due jobs let PostgreSQL, on statistics taken before the
# backlog grew (a fresh database under load), read every due job of the lane on every claim: 33-47 ms and
# ~25,000 buffers per claim with 45,000 deliveries waiting (bench/README.md).
# Built once at import; the state is the enum's value, not input.
_DUE_KEYS = text(
    f"""
    WITH RECURSIVE due_keys(key) AS (
        SELECT CAST('' AS VARCHAR)
        UNION ALL
        SELECT (
            SELECT later.concurrency_key FROM jobs AS later
            WHERE later.lane = :lane AND later.state = '{QUEUED.value}' AND later.run_at <= :now
              AND later.concurrency_key > due_keys.key
            ORDER BY later.concurrency_key LIMIT 1
        )
        FROM due_keys WHERE due_keys.key IS NOT NULL
    )
    SELECT key FROM due_keys WHERE key IS NOT NULL AND key <> '' LIMIT :most
    """  # noqa: S608
).bindparams(bindparam("now", type_=UtcDateTime()))
_MOST_KEYS = 256  # examined per claim; beyond, a random sample of them is served first next time too


def _heads_of_key(*, lane: str, key: str, now: datetime, room: int) -> Select[datetime, str]:
    """The key's `room` oldest due jobs (run_at, id), in the order they are run: a range of the
    (lane, state, concurrency_key, run_at, id) index, however long the key's backlog."""
    return (
        select(JobRow.run_at, JobRow.id)
        .where(
            JobRow.lane == lane,
            JobRow.state == QUEUED,
            JobRow.concurrency_key == key,
            JobRow.run_at <= now,
        )
        .order_by(JobRow.run_at, JobRow.id)
        .limit(room)
    )


async def claim_keyed(
    session: AsyncSession,
    *,
    lane: str,
    now: datetime,
    lease_until: datetime,
    token: str,
    limit: int,
    key_cap: int,
    held: dict[str, str | None] | None = None,
    chain: int = 1,
) -> list[JobRow]:
    """Up to `limit` chains of due jobs of the lane, round-robin across concurrency keys (every key's
    oldest due job first, then every key's second, ...), taking no key past `key_cap` chains in flight; a
    chain is up to `chain` jobs of one key leased under one token of its own (the runner runs a chain's jobs
    one after the other, so a key's chains in flight are its jobs running at once). A job without a key is
    a key of its own. Of a key in `held`, only the job it names may be taken (alone). In a transaction that
    holds `lock_lane(lane)`, taken before reading `now` and `held`. The jobs in chain order (by token)."""
    held = held or {}
    key = func.coalesce(JobRow.concurrency_key, JobRow.id)
    # The lane's running jobs: under a live lease they are in flight (a key's chains: its distinct lease
    # tokens, one row each here however long the chain), those whose lease expired belong to a worker that
    # died and may be taken again (a row each).
    tokens: dict[str, set[str | None]] = {}
    candidates: list[tuple[int, datetime, str, str]] = []  # (rank within its key, run_at, id, key)
    live = and_(JobRow.lease_until.is_not(None), JobRow.lease_until >= now)
    running = await session.execute(
        select(
            live.label("live"),
            key,
            JobRow.lease_token,
            case((live, None), else_=JobRow.id),
            case((live, None), else_=JobRow.run_at),
        )
        .where(JobRow.lane == lane, JobRow.state == RUNNING)
        .distinct()
    )
    for is_live, job_key, lease_token, job_id, run_at in running.all():
        if is_live:
            tokens.setdefault(job_key, set()).add(lease_token)
        elif job_key not in held or held[job_key] == job_id:
            candidates.append((1, run_at, job_id, job_key))
    in_flight: Counter[str] = Counter({job_key: len(found) for job_key, found in tokens.items()})
    keyless = await session.execute(  # jobs without a key (manual webhook redeliveries): a key each
        select(JobRow.run_at, JobRow.id)
        .where(
            JobRow.lane == lane,
            JobRow.state == QUEUED,
            JobRow.concurrency_key.is_(None),
            JobRow.run_at <= now,
        )
        # (the same order as run_at's alone, all keys being NULL) the order of the (lane, state,
        # concurrency_key, run_at) index: a range of it, never a walk of the lane's whole backlog through
        # (lane, state, run_at) filtering on the key, which PostgreSQL chose (thousands of rows per claim)
        .order_by(JobRow.concurrency_key, JobRow.run_at)
        .limit(limit)
    )
    candidates += [(1, run_at, job_id, job_id) for run_at, job_id in keyless.all()]
    keys = list((await session.scalars(_DUE_KEYS, {"lane": lane, "now": now, "most": _MOST_KEYS})).all())
    random.shuffle(keys)  # if there are more keys than room this time, none is always last
    for due_key in keys:
        room = (key_cap - in_flight[due_key]) * chain
        if room <= 0 or (due_key in held and held[due_key] is None):
            continue
        heads_of_key = _heads_of_key(lane=lane, key=due_key, now=now, room=room)
        if due_key in held:
            heads_of_key = heads_of_key.where(JobRow.id == held[due_key])
        heads = (await session.execute(heads_of_key)).all()
        candidates += [(rank, run_at, job_id, due_key) for rank, (run_at, job_id) in enumerate(heads, 1)]
        if sum(1 for candidate in candidates if candidate[0] == 1) >= limit:
            break  # enough keys to fill every free slot with each one's oldest
    # Every key's first job opens a chain (round-robin: each key gets its first before any its second), up
    # to `limit` chains and `key_cap` per key; later jobs of a key join its shortest chain with room. A held
    # key's job runs alone.
    chains: list[list[str]] = []
    open_chains: dict[str, list[list[str]]] = {}
    for _, _, job_id, job_key in sorted(candidates):
        of_key = open_chains.setdefault(job_key, [])
        if in_flight[job_key] < key_cap and len(chains) < limit:
            in_flight[job_key] += 1
            chains.append([job_id])
            if job_key not in held:
                of_key.append(chains[-1])
            continue
        roomy = [found for found in of_key if len(found) < chain]
        if roomy:
            min(roomy, key=len).append(job_id)
    if len(chains) <= 1:  # one chain: the claim's own token
        ids = chains[0] if chains else []
        order = {job_id: index for index, job_id in enumerate(ids)}
        rows = await _lease(session, ids, now=now, lease_until=lease_until, token=token)
        return sorted(rows, key=lambda row: order[row.id])
    return await _lease_chains(session, chains, now=now, lease_until=lease_until, token=token)


async def _lease_chains(
    session: AsyncSession, chains: list[list[str]], *, now: datetime, lease_until: datetime, token: str
) -> list[JobRow]:
    """Lease each chain under a token of its own (`token` plus its index, hashed to a UUID's form); the
    leased jobs, chain by chain, each chain in its order."""
    by_id: dict[str, str] = {}
    for index, ids in enumerate(chains):
        chain_token = str(uuid.uuid5(uuid.UUID(token), str(index)))
        by_id.update((job_id, chain_token) for job_id in ids)
    if not by_id:
        return []
    leased = {row.id: row for row in await _lease_pairs(session, by_id, now=now, lease_until=lease_until)}
    return [leased[job_id] for ids in chains for job_id in ids if job_id in leased]


_JOB_COLUMNS, _JOB_KEYS = lean.columns_of(JobRow)


def _leasing(picked: Any, token: Any = None) -> Any:
    """The UPDATE leasing the jobs `picked` (a condition) chooses that are still claimable, each to `token`
    (an expression; by default the one bound as `new_lease_token`), returning them."""
    return (
        update(JobRow)
        .where(picked, _claimable(_NOW, found_by_id=True))
        .values(
            state=RUNNING,
            lease_until=bindparam("new_lease_until", type_=UtcDateTime()),
            lease_token=bindparam("new_lease_token", type_=JobRow.lease_token.type)
            if token is None
            else token,
            attempts=JobRow.attempts + 1,
            updated_at=_NOW,
        )
        .returning(*_JOB_COLUMNS)
    )


# The lease of claimed jobs, each under its token (a keyed claim's chains each have their own), as one
# statement of one text whatever the number of jobs (up to `limit` chains of `chain` jobs: hundreds): the
# (id, token) pairs bound as two arrays on PostgreSQL, as one JSON object on SQLite. Built per count (an IN
# list, and a CASE of one branch per job), each claim was a statement text of its own: compiled by
# SQLAlchemy, prepared by asyncpg and planned by PostgreSQL anew, evicting the steady statements from the
# connection's cache of prepared ones.
_PAIRS_ARRAYS = (
    func.unnest(
        bindparam("ids", type_=postgresql.ARRAY(JobRow.id.type)),
        bindparam("tokens", type_=postgresql.ARRAY(JobRow.lease_token.type)),
    )
    .table_valued("id", "token")
    .render_derived(name="picked")
)
_PAIRS_OBJECT = func.json_each(bindparam("pairs", type_=JSON)).table_valued("key", "value").alias("picked")
_LEASE_PAIRS = Lean(
    _leasing(JobRow.id == _PAIRS_OBJECT.c.key, _PAIRS_OBJECT.c.value),
    dialects={"postgresql": _leasing(JobRow.id == _PAIRS_ARRAYS.c.id, _PAIRS_ARRAYS.c.token)},
)


async def _lease_pairs(
    session: AsyncSession, tokens: dict[str, str], *, now: datetime, lease_until: datetime
) -> list[JobRow]:
    """Lease each job of `tokens` (those still claimable) to its token; the leased jobs, as read-only
    snapshots, in no particular order."""
    params = {
        "ids": list(tokens),
        "tokens": list(tokens.values()),
        "pairs": tokens,
        "now": now,
        "new_lease_until": lease_until,
    }
    return [lean.snapshot(JobRow, _JOB_KEYS, row) for row in await lean.rows(session, _LEASE_PAIRS, params)]


async def _lease(
    session: AsyncSession, ids: list[str], *, now: datetime, lease_until: datetime, token: str
) -> list[JobRow]:
    """Lease `ids` (those still claimable) to `token`; the leased jobs, as read-only snapshots, in the order
    of `ids`."""
    if not ids:
        return []
    leased = await _lease_pairs(session, dict.fromkeys(ids, token), now=now, lease_until=lease_until)
    order = {job_id: index for index, job_id in enumerate(ids)}
    return sorted(leased, key=lambda row: order[row.id])


async def hasten(session: AsyncSession, *, lane: str, key: str, now: datetime, run_at: datetime) -> int:
    """Every queued job of `key` due later than `run_at` due at `run_at`; how many."""
    result = await session.execute(
        update(JobRow)
        .where(
            JobRow.lane == lane,
            JobRow.concurrency_key == key,
            JobRow.state == QUEUED,
            JobRow.run_at > run_at,
        )
        .values(run_at=run_at, updated_at=now)
    )
    return cast("CursorResult[Any]", result).rowcount or 0


async def reschedule_oldest(
    session: AsyncSession, *, lane: str, key: str, now: datetime, run_at: datetime
) -> str | None:
    """The oldest queued job of `key`, now due at `run_at`; its id, or None if none is queued."""
    job_id = await session.scalar(
        select(JobRow.id)
        .where(JobRow.lane == lane, JobRow.state == QUEUED, JobRow.concurrency_key == key)
        .order_by(JobRow.run_at, JobRow.id)
        .limit(1)
    )
    if job_id is not None:
        await session.execute(update(JobRow).where(JobRow.id == job_id).values(run_at=run_at, updated_at=now))
    return job_id


async def finish_many(session: AsyncSession, *, job_ids: list[str], now: datetime) -> int:
    """Mark queued jobs done without running them: their work was given up."""
    if not job_ids:
        return 0
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id.in_(job_ids), only_if(JobRow.state, QUEUED))
        .values(state=DONE, finished_at=now, updated_at=now)
    )
    return cast("CursorResult[Any]", result).rowcount or 0


async def extend_leases(
    session: AsyncSession, *, job_ids: list[str], token: str, lease_until: datetime
) -> int:
    """A chain's leases extended (those of `job_ids` still held by `token`); how many."""
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id.in_(job_ids), only_if(JobRow.lease_token, token), only_if(JobRow.state, RUNNING))
        .values(lease_until=lease_until)
    )
    return cast("CursorResult[Any]", result).rowcount or 0


def _of_lease(**values: Any) -> Lean:
    """An UPDATE of those of the jobs bound as `job_ids` (one list: one statement text whatever their number, a
    chain's up to `webhook_batch_size`) still leased to `token`, returning their ids."""
    return lean_in(
        lambda picked: (
            update(JobRow)
            .where(
                picked,
                only_if(JobRow.lease_token, bindparam("token", type_=JobRow.lease_token.type)),
                only_if(JobRow.state, RUNNING),
            )
            .values(**values)
            .returning(JobRow.id)
        ),
        JobRow.id,
        "job_ids",
    )


# The finish of the jobs of one lease.
_FINISH_LEASED = _of_lease(state=DONE, finished_at=_NOW, updated_at=_NOW, lease_token=None, lease_until=None)


async def finish_many_leased(
    session: LeanSession, *, job_ids: list[str], token: str, now: datetime
) -> set[str]:
    """Finish (DONE) those of `job_ids` still leased to `token`, in one statement; their ids (lean: a chain of
    webhook deliveries finishes its jobs so)."""
    params = {"job_ids": list(job_ids), "token": token, "now": now}
    return {job_id for (job_id,) in await lean.rows(session, _FINISH_LEASED, params)}


async def finish_all_leased(session: LeanSession, *, job_ids: list[str], token: str, now: datetime) -> bool:
    """Finish (DONE) every one of `job_ids` if `token` still holds each one's lease, in one statement; False
    when some lease was lost (the caller rolls back). In a PostgreSQL lean transaction deferred to the
    statement that sends its writes, which then fails if a lease was lost (`Raced`), as `finish` does."""
    params = {"job_ids": list(job_ids), "token": token, "now": now}
    key = f"{token}:{job_ids[0]}" if job_ids else token
    if await lean.defer_returning(session, _FINISH_LEASED, params, row=key, returns=len(job_ids)) is not None:
        return True
    return len(await lean.rows(session, _FINISH_LEASED, params)) == len(set(job_ids))


async def extend_lease(session: AsyncSession, *, job_id: str, token: str, lease_until: datetime) -> bool:
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id == job_id, JobRow.lease_token == token, JobRow.state == RUNNING)
        .values(lease_until=lease_until)
    )
    return bool(cast("CursorResult[Any]", result).rowcount)


# Lean: every job finishes once (an OTP email's send job on every EMAIL_OTP login challenge).
_FINISH = Lean(
    update(JobRow)
    .where(
        JobRow.id == bindparam("job_id"),
        JobRow.lease_token == bindparam("token"),
        JobRow.state == RUNNING,
    )
    .values(
        state=DONE,
        finished_at=bindparam("now", type_=JobRow.finished_at.type),
        updated_at=bindparam("now", type_=JobRow.updated_at.type),
        lease_token=None,
        lease_until=None,
    )
    .returning(JobRow.id)
)


async def finish(session: LeanSession, *, job_id: str, token: str, now: datetime) -> bool:
    """DONE, if `token` still holds the job's lease. In a PostgreSQL lean transaction deferred to the
    statement that sends its writes, which then fails if the lease was lost (`Raced`: the careful attempt
    finds it lost)."""
    params = {"job_id": job_id, "token": token, "now": now}
    if await lean.defer_returning(session, _FINISH, params, row=job_id) is not None:
        return True
    return bool(await lean.rows(session, _FINISH, params))


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
    due_at: datetime | None = None,
) -> bool:
    """Back to QUEUED at `run_at` (or DEAD), if `token` still holds the lease; `due_at`: when it is due on
    its tenant's clock, for a job that follows it. `reset_attempts`: the handler asked to run later (a fresh
    start); `refund_attempt`: this attempt did not count (the database was unavailable)."""
    values: dict[str, Any] = {
        "state": DEAD if dead else QUEUED,
        "run_at": run_at,
        "due_at": due_at,
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
    return bool(cast("CursorResult[Any]", result).rowcount)


# Jobs of one lease put back to QUEUED at once, as `reschedule` with reset_attempts puts back one: the rest
# of a chain its handler did not get to (a webhook chain ended by a failure: up to `webhook_batch_size`
# jobs), one statement whatever their number, so that a long chain's rest holds no lock (SQLite's single
# writer above all) for a statement per job.
_RESCHEDULE_LEASED = _of_lease(
    state=QUEUED,
    run_at=bindparam("run_at", type_=UtcDateTime()),
    due_at=bindparam("due_at", type_=UtcDateTime()),
    updated_at=_NOW,
    lease_token=None,
    lease_until=None,
    last_error=bindparam("error", type_=JobRow.last_error.type),
    attempts=0,
)


async def reschedule_leased(
    session: LeanSession,
    *,
    job_ids: list[str],
    token: str,
    now: datetime,
    run_at: datetime,
    due_at: datetime | None,
    error: str | None,
) -> set[str]:
    """Back to QUEUED at `run_at` with their attempts reset, those of `job_ids` still leased to `token`, in
    one statement; their ids."""
    params = {
        "job_ids": list(job_ids),
        "token": token,
        "now": now,
        "run_at": run_at,
        "due_at": due_at,
        "error": error,
    }
    return {job_id for (job_id,) in await lean.rows(session, _RESCHEDULE_LEASED, params)}


async def queue_stats(session: AsyncSession, *, now: datetime) -> dict[str, Any]:
    """Depth by state, and by lane the age of its oldest due job (seconds), for /metrics."""
    rows = (
        await session.execute(
            select(JobRow.state, func.count()).where(JobRow.state != DONE).group_by(JobRow.state)
        )
    ).all()
    ages = {}
    for lane in registry.lanes():  # one index range per lane
        oldest_due = await session.scalar(
            select(func.min(JobRow.run_at)).where(
                JobRow.lane == lane.name, JobRow.state == QUEUED, JobRow.run_at <= now
            )
        )
        if oldest_due is not None:
            oldest_due = oldest_due if oldest_due.tzinfo else oldest_due.replace(tzinfo=now.tzinfo)
        ages[lane.name] = max(0.0, (now - oldest_due).total_seconds()) if oldest_due is not None else 0.0
    return {
        "by_state": {state: count for state, count in rows},
        "oldest_due_age_seconds_by_lane": ages,
        "oldest_due_age_seconds": max(ages.values(), default=0.0),
    }


async def get(session: AsyncSession, job_id: str) -> JobRow | None:
    return await session.get(JobRow, job_id)


async def prune_finished(session: AsyncSession, *, state: JobState, before: datetime, limit: int) -> int:
    """Delete at most `limit` jobs in `state` (DONE or DEAD) that finished before `before`, oldest first
    (ix_jobs_finished: only finished jobs are in it); how many. Never a queued or running job."""
    if state not in (DONE, DEAD):
        raise ValueError(f"only finished jobs are pruned, not {state}")
    batch = batch_of(
        JobRow.id,
        JobRow.state == state,
        JobRow.finished_at < before,
        order_by=JobRow.finished_at,
        limit=limit,
    )
    return await batch_done(session, JobRow.__table__.delete().where(JobRow.id.in_(batch)), JobRow.id)


# Jobs following their tenant's clock (jobs.service.follow_clock, clocks.service).


def _follows_clock(tenant_id: str) -> tuple[Any, ...]:
    return (
        JobRow.tenant_id == tenant_id,
        JobRow.state == QUEUED,
        JobRow.lane == registry.DEFAULT_LANE,
        JobRow.due_at.is_not(None),
    )


_SET_RUN_AT = (
    JobRow.__table__.update()
    .where(JobRow.__table__.c.id == bindparam("b_id"))
    .values(run_at=bindparam("b_run_at", type_=UtcDateTime()))
)


async def follow_clock(
    session: AsyncSession,
    *,
    tenant_id: str,
    tenant_now: datetime,
    real_now: datetime,
    frozen: bool,
    offset: timedelta | None,
) -> None:
    """run_at of the tenant's queued clock-following jobs recomputed for its clock reading `tenant_now`:
    those due by then run now; later ones never while frozen, else when real time reaches due_at - offset."""
    await session.execute(
        update(JobRow)
        .where(*_follows_clock(tenant_id), JobRow.due_at <= tenant_now, JobRow.run_at > real_now)
        .values(run_at=real_now)
        .execution_options(synchronize_session=False)
    )
    if frozen:
        await session.execute(
            update(JobRow)
            .where(*_follows_clock(tenant_id), JobRow.due_at > tenant_now, JobRow.run_at < NEVER)
            .values(run_at=NEVER)
            .execution_options(synchronize_session=False)
        )
        return
    later = await session.execute(
        select(JobRow.id, JobRow.due_at, JobRow.run_at).where(
            *_follows_clock(tenant_id), JobRow.due_at > tenant_now
        )
    )
    shift = offset or timedelta(0)
    changes = [
        {"b_id": job_id, "b_run_at": due_at - shift}
        for job_id, due_at, run_at in later.all()
        if due_at is not None and run_at != due_at - shift  # (the query already excludes NULL due_at)
    ]
    if changes:
        await session.execute(_SET_RUN_AT, changes)


async def next_due(
    session: AsyncSession, *, tenant_id: str, after: datetime, until: datetime
) -> datetime | None:
    found = await session.scalar(
        select(func.min(JobRow.due_at)).where(
            *_follows_clock(tenant_id), JobRow.due_at > after, JobRow.due_at <= until
        )
    )
    if found is not None and found.tzinfo is None:
        found = found.replace(tzinfo=after.tzinfo)
    return found


async def claim_of_tenant(
    session: AsyncSession,
    *,
    tenant_id: str,
    now: datetime,
    due_by: datetime,
    lease_until: datetime,
    token: str,
    limit: int,
) -> list[JobRow]:
    """Like `claim`, of one tenant's default-lane jobs only, in the order they are due on its clock: its
    queued jobs due by `due_by` (its clock's now) in due_at order (a range of the (tenant_id, state,
    due_at) index, read in order: only default-lane jobs have a due_at), then, if that leaves room, its
    other claimable ones (failed attempts waiting on real time, crashed workers' expired leases)."""
    by_due = (
        select(JobRow.id)
        .where(JobRow.tenant_id == tenant_id, JobRow.state == QUEUED, JobRow.due_at <= due_by)
        .order_by(JobRow.due_at)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    ids = list((await session.scalars(by_due)).all())
    if len(ids) < limit:
        rest = (
            select(JobRow.id)
            .where(
                JobRow.tenant_id == tenant_id,
                JobRow.lane == registry.DEFAULT_LANE,
                _claimable(now),
                or_(JobRow.due_at.is_(None), JobRow.state == RUNNING),
            )
            .order_by(JobRow.run_at)
            .limit(limit - len(ids))
            .with_for_update(skip_locked=True)
        )
        ids += list((await session.scalars(rest)).all())
    rows = await _lease(session, ids, now=now, lease_until=lease_until, token=token)
    order = {job_id: index for index, job_id in enumerate(ids)}
    return sorted(rows, key=lambda row: order[row.id])


async def tenant_busy(session: AsyncSession, *, tenant_id: str, now: datetime) -> bool:
    """Whether a default-lane job of the tenant is due or running (another worker's, under its lease)."""
    found = await session.scalar(
        select(JobRow.id)
        .where(
            JobRow.tenant_id == tenant_id,
            JobRow.lane == registry.DEFAULT_LANE,
            or_(JobRow.state == RUNNING, and_(JobRow.state == QUEUED, JobRow.run_at <= now)),
        )
        .limit(1)
    )
    return found is not None
