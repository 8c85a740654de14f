"""Read replicas: reads that need no read-your-writes guarantee, served by a streaming standby.

`PLATPAY_DATABASE_READ_URL` names a PostgreSQL standby of the primary (`PLATPAY_DATABASE_URL`). Only the reads
an endpoint chooses go there (`Database.replica_read`: GET lists and gets); everything else (every write,
everything inside a transaction, idempotent replays, authentication, jobs) stays on the primary. A read goes
to the replica only when all of these hold, else it is served by the primary, never failed:

- the replica is reachable: a failed connection or statement there runs the read again on the primary, and
  the replica is left alone (logged once) until a retry after a backoff (0.5 s doubling to 4 s) finds it back;
- the replica is fresh: a sampler (at most every `SAMPLE_INTERVAL_SECONDS`, started by reads, never per
  request) reads the primary's `pg_current_wal_lsn()` at t and then the replica's `pg_last_wal_replay_lsn()`;
  the replica then holds every write committed before t for the newest such t whose LSN it has replayed
  (`reached_at`). The replica serves only while `now - reached_at <= PLATPAY_DATABASE_READ_MAX_LAG_SECONDS`:
  an idle primary (no new WAL) keeps it fresh, a paused or slow replay makes reads fall back;
- the tenant did not write since `reached_at`: every write commit records its tenant's time (`RecentWrites`,
  the tenant of the request or job: `acting_for`), so a tenant's read right after its own write stays on the
  primary until the replica has replayed a primary LSN sampled after that commit — an LSN comparison, not a
  time window. `RecentWrites` lives in a file under PLATPAY_VAR_DIR shared by every process of the machine
  (`serve --workers`, `worker`), so a write in one process and a read in another are ordered too. A write by
  a process on another machine is only bounded by the lag: visible on the replica within max-lag seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import mmap
import struct
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar, Token
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from platpay.db.faults import connection_lost, refuses_writes
from platpay.metrics import DB_REPLICA_READS

log = structlog.get_logger("platpay.db")

SAMPLE_INTERVAL_SECONDS = 0.5
RETRY_BACKOFF_SECONDS = (0.5, 1.0, 2.0, 4.0)
SLOTS = 8192  # tenants hash into these; a collision only sends more reads to the primary
_SLOT = struct.Struct("<q")

_acting_for: ContextVar[str | None] = ContextVar("platpay_writer", default=None)


def acting_for(tenant_id: str | None) -> Token[str | None]:
    """Whose writes the current request or job commits (read-your-writes is kept per tenant)."""
    return _acting_for.set(tenant_id)


def restore(token: Token[str | None]) -> None:
    _acting_for.reset(token)


def current_writer() -> str | None:
    return _acting_for.get()


def parse_lsn(text: str) -> int:
    high, _, low = text.partition("/")
    return (int(high, 16) << 32) | int(low, 16)


class RecentWrites:
    """When each tenant last committed a write (`time.monotonic_ns()`, one clock for every process of a
    machine on Linux), in `SLOTS` 8-byte slots: in memory, or in a file every process of the machine maps
    (a slot only grows; an aligned 8-byte store is one machine write)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path
        self._buffer: Any
        if path is None:
            self._buffer = bytearray(SLOTS * _SLOT.size)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a+b") as file:
            if file.seek(0, 2) < SLOTS * _SLOT.size:
                file.truncate(SLOTS * _SLOT.size)
            self._buffer = mmap.mmap(file.fileno(), SLOTS * _SLOT.size)

    @staticmethod
    def _offset(tenant_id: str) -> int:
        return (zlib.crc32(tenant_id.encode()) % SLOTS) * _SLOT.size

    def wrote(self, tenant_id: str, at_ns: int | None = None) -> None:
        at_ns = time.monotonic_ns() if at_ns is None else at_ns
        offset = self._offset(tenant_id)
        if _SLOT.unpack_from(self._buffer, offset)[0] < at_ns:
            _SLOT.pack_into(self._buffer, offset, at_ns)

    def last(self, tenant_id: str) -> int:
        return int(_SLOT.unpack_from(self._buffer, self._offset(tenant_id))[0])

    def close(self) -> None:
        if isinstance(self._buffer, mmap.mmap):
            with contextlib.suppress(BufferError):
                self._buffer.close()


class ReplicaRouter:
    """Chooses, per read, the replica or the primary (module docstring); counts what it chose."""

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        primary_lsn: Callable[[], Awaitable[str | None]],
        max_lag_seconds: float,
        writes: RecentWrites,
    ) -> None:
        self.engine = engine
        self.sessions = async_sessionmaker(engine, expire_on_commit=False, autoflush=False)
        self._primary_lsn = primary_lsn
        self.max_lag_ns = int(max_lag_seconds * 1e9)
        self.writes = writes
        # Primary LSNs sampled at monotonic times, oldest first; the replica has not replayed them all yet.
        self._samples: deque[tuple[int, int]] = deque()
        self.reached_at: int | None = None  # newest sample time whose primary LSN the replica replayed
        self._sampled_at = 0
        self._sampler: asyncio.Task[None] | None = None
        self.down_since: float | None = None
        self._failures = 0
        self._retry_at = 0
        self._lagging = False
        # What the reads chose: "replica", or the reason they stayed on the primary; added to the metric
        # platpay_db_replica_reads_total with each sample (not per read: a metric write costs per request).
        self.counts: dict[str, int] = {}
        self._published: dict[str, int] = {}

    # -- the choice ------------------------------------------------------------------------------------

    def choose(self, tenant_id: str | None) -> str:
        """ "replica", or why this read stays on the primary ("down", "lagging", "unknown", "wrote")."""
        now = time.monotonic_ns()
        self._maybe_sample(now)
        if self.down_since is not None:
            return "down"
        reached = self.reached_at
        if reached is None:
            return "unknown"
        if now - reached > self.max_lag_ns:
            return "lagging"
        if tenant_id is not None and self.writes.last(tenant_id) >= reached:
            return "wrote"
        return "replica"

    def count(self, outcome: str) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + 1

    def failed(self, error: BaseException) -> None:
        """A read on the replica failed for want of the replica: leave it alone until the next retry."""
        if refuses_writes(error) or not (connection_lost(error) or isinstance(error, OSError)):
            # The statement failed there (a recovery conflict: 40001...; something a standby never runs, 25006,
            # whose connection the engine discards as any that met a refused write): that read moves, the
            # replica stays.
            return
        self._mark_down(error)

    # -- sampling ----------------------------------------------------------------------------------------

    def _maybe_sample(self, now: int) -> None:
        loop = asyncio.get_running_loop()
        sampler = self._sampler
        if sampler is not None and not sampler.done() and sampler.get_loop() is loop:
            return  # (one left pending by a loop that closed does not count)
        if self.down_since is not None and now < self._retry_at:
            return
        if now - self._sampled_at < SAMPLE_INTERVAL_SECONDS * 1e9:
            return
        self._sampled_at = now
        self._sampler = loop.create_task(self.sample())

    def publish(self) -> None:
        """Add the choices counted since the last call to the metric."""
        for choice, count in list(self.counts.items()):
            delta = count - self._published.get(choice, 0)
            if delta:
                DB_REPLICA_READS.labels(choice).inc(delta)
                self._published[choice] = count

    async def sample(self) -> None:
        """One sample: the primary's current LSN, then the replica's replayed LSN."""
        self.publish()
        started = time.monotonic_ns()
        try:
            primary = await self._primary_lsn()
        except Exception:  # the primary's own outage is the reads' business there, not the replica's
            return
        if primary is not None:
            self._samples.append((started, parse_lsn(primary)))
        try:
            async with self.engine.connect() as conn:  # the driver's own call: one statement, no BEGIN
                driver = (await conn.get_raw_connection()).driver_connection
                assert driver is not None
                replayed = await driver.fetchval("SELECT pg_last_wal_replay_lsn()::text")
        except Exception as error:
            self._mark_down(error)
            return
        if replayed is None:  # not a standby (promoted, or a primary named by mistake): never read from it
            self._mark_down(RuntimeError("the read URL's server is not in recovery"))
            return
        self._back()
        lsn = parse_lsn(replayed)
        while self._samples and self._samples[0][1] <= lsn:
            self.reached_at = self._samples.popleft()[0]
        lagging = self.reached_at is None or time.monotonic_ns() - self.reached_at > self.max_lag_ns
        if lagging != self._lagging:
            self._lagging = lagging
            if lagging:
                log.warning("db.replica_lagging", max_lag_seconds=self.max_lag_ns / 1e9)
            else:
                log.info("db.replica_caught_up")

    def _mark_down(self, error: BaseException) -> None:
        now = time.monotonic_ns()
        if self.down_since is None:
            self.down_since = time.time()
            log.warning("db.replica_unavailable", error=repr(error)[:300], reads="primary")
        delay = RETRY_BACKOFF_SECONDS[min(self._failures, len(RETRY_BACKOFF_SECONDS) - 1)]
        self._failures += 1
        self._retry_at = now + int(delay * 1e9)
        self._sampled_at = 0

    def _back(self) -> None:
        if self.down_since is not None:
            log.info("db.replica_back", down_seconds=round(time.time() - self.down_since, 3))
            self.down_since = None
        self._failures = 0

    async def run(self, work: Callable[[AsyncSession], Awaitable[Any]]) -> Any:
        """`work` in a read session on the replica (the caller falls back on any database error)."""
        session = self.sessions()
        try:
            async with session.begin():
                return await work(session)
        finally:
            await session.close()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.publish()
        sampler, self._sampler = self._sampler, None
        if sampler is not None and not sampler.done():
            sampler.cancel()
            with contextlib.suppress(BaseException):
                await sampler
        await self.engine.dispose()  # reusable afterwards, as the primary's engine is
