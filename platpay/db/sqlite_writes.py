"""SQLite's writers in one process: one at a time, and lean transactions committed in groups.

SQLite has one writer per file. In a process every write transaction queues on one asyncio lock (FIFO), so
the event loop never waits on SQLite's own lock for a writer of its own (`Writes.writer`, the ORM's
`Database.transaction()`).

A lean transaction (`Database.lean_transaction()`: a transfer, a card authorization, an agent's money request)
is a member of a *batch* instead (`Writes.member`): one SQLite transaction (BEGIN IMMEDIATE … COMMIT) on one
pooled connection. The member that opens a batch works alone in it (it holds the lock) and needs no
savepoint; each member that joins works inside a SAVEPOINT of its own, and one that fails is rolled back to
it (ROLLBACK TO, RELEASE) and raises, the others' work stays. A member that is through does not COMMIT: the
first one starts a committer task, queued behind the writers queued already and behind the requests ready to
run — a lean transaction's statements run inline, so nothing else runs while it works, and others join only
after it — which COMMITs the batch once they are through. A writer that is not a member (an ORM
transaction) COMMITs an open batch before it begins. Every member returns only once the COMMIT of its batch
succeeded (`done`): its answer is never sent before its data is committed; a failed COMMIT (or a batch SQLite
rolled back whole: a full disk, an I/O error; or one whose opening member failed) fails every member whose
work it held. A lone request pays a task and a loop iteration for it (bench/README.md).

Why: a COMMIT in WAL mode writes every page the transaction changed into the WAL (no fsync:
`synchronous=NORMAL`, platpay.db.sqlite_inline) — 250-315 µs of CPU for a transfer, whose rows and their
indexes span seven tables. Concurrent transfers change mostly the same pages (the tables' last leaves, their
indexes'), so one COMMIT for several writes far fewer pages than one COMMIT each: at 8 connections batches
held ~3 transfers, and a transfer took ~12% less server CPU (bench/README.md). Durability is unchanged: what
a member was told committed is in the WAL, as before.

A member cancelled while its batch commits is committed with it, as a request cancelled after its COMMIT was
sent; one cancelled while it works is rolled back to its savepoint.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from platpay.db.faults import DatabaseUnavailable, refuses_writes
from platpay.loops import running_loop


class _Batch:
    __slots__ = ("broken", "committer", "done", "driver", "fairy", "members")

    def __init__(self, fairy: Any, done: asyncio.Future[None]) -> None:
        self.fairy = fairy  # the pooled connection (SQLAlchemy's proxy), back to the pool when the batch ends
        self.driver = fairy.driver_connection  # platpay.db.sqlite_inline.InlineConnection
        self.done = done  # the batch's COMMIT: its result, or what failed it
        self.members = 0  # savepoints taken (their names: pp_<n>)
        self.broken: BaseException | None = None  # what makes it roll back whole (no member of it commits)
        self.committer: asyncio.Task[None] | None = None


class Writes:
    """The write lock of a SQLite `Database` and its open batch (see the module). `checkout()` gives a pooled
    connection (SQLAlchemy's proxy), `release(proxy, error)` gives it back (invalidated when `error` says the
    file refuses writes); `translate(sql, error)` turns a driver error into SQLAlchemy's."""

    def __init__(
        self,
        *,
        timeout: float,
        checkout: Callable[[], Awaitable[Any]],
        release: Callable[[Any, BaseException | None], Awaitable[None]],
        translate: Callable[[str, BaseException], BaseException],
    ) -> None:
        self.timeout = timeout
        self._checkout, self._release, self._translate = checkout, release, translate
        self._lock: asyncio.Lock | None = None
        self._waiting = 0  # writers queued on the lock (the committer included)
        self._batch: _Batch | None = None
        self.commits = 0  # batches committed (tests, benchmarks)
        self.members = 0  # lean transactions committed in them

    # ---- the lock ---------------------------------------------------------------------------------------

    async def _acquire(self, *, timeout: bool = True) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        self._waiting += 1
        try:
            if not timeout:
                await self._lock.acquire()
                return self._lock
            async with asyncio.timeout(self.timeout):
                await self._lock.acquire()
        except TimeoutError:
            raise DatabaseUnavailable(
                f"the database is busy: no write slot within {self.timeout:g}s"
            ) from None
        finally:
            self._waiting -= 1
        return self._lock

    @contextlib.asynccontextmanager
    async def writer(self) -> AsyncIterator[None]:
        """The lock for a write transaction of its own (an ORM session): an open batch is committed first (its
        failure is its members', not this writer's)."""
        lock = await self._acquire()
        try:
            if self._batch is not None:
                await self._end(self._batch)
            yield
        finally:
            lock.release()

    async def close(self) -> None:
        """Commit an open batch (before the engine is disposed)."""
        if self._batch is not None:
            async with self.writer():
                pass

    # ---- members ----------------------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def member(self) -> AsyncIterator[Any]:
        """A lean transaction's place in a batch: yields the batch's driver connection (inside a savepoint of
        its own when it joins an open batch); returns once the batch committed (raises what failed it)."""
        lock = await self._acquire()
        try:
            opening = self._batch is None
            batch = await self._open() if opening else self._batch
            assert batch is not None
            batch.members += 1
            # The member that opens a batch is alone in it while it works (it holds the lock): it needs no
            # savepoint, its failure rolls the whole transaction back. One that joins needs its own.
            name = None if opening else f"pp_{batch.members}"
            try:
                if name is not None:
                    await self._control(batch, f"SAVEPOINT {name}")
                yield batch.driver
                if name is not None:
                    await self._control(batch, f"RELEASE {name}")
            except BaseException as error:
                if name is None or refuses_writes(error):  # (read-only: the connection leaves the pool)
                    batch.broken = batch.broken or error
                else:
                    await self._undo(batch, name)
                await self._leave(batch)
                raise
            await self._leave(batch)
        finally:
            lock.release()
        await asyncio.shield(batch.done)
        self.members += 1

    async def _open(self) -> _Batch:
        fairy = await self._checkout()
        try:
            await fairy.driver_connection.begin_write()  # BEGIN IMMEDIATE (platpay.db.sqlite_inline)
        except BaseException as error:
            await self._release(fairy, error)
            if isinstance(error, Exception):
                raise self._translate("BEGIN IMMEDIATE", error) from error
            raise
        self._batch = _Batch(fairy, running_loop().create_future())
        return self._batch

    async def _control(self, batch: _Batch, sql: str) -> None:
        try:
            await batch.driver.control(sql)
        except Exception as error:
            raise self._translate(sql, error) from error

    async def _undo(self, batch: _Batch, name: str) -> None:
        """Roll a failed member back to its savepoint; a batch SQLite rolled back whole (or that cannot be
        rolled back to it) is broken: no member of it commits."""
        try:
            if batch.driver.in_transaction:
                await batch.driver.control(f"ROLLBACK TO {name}")
                await batch.driver.control(f"RELEASE {name}")
        except Exception as error:
            batch.broken = batch.broken or error
        if not batch.driver.in_transaction:
            batch.broken = batch.broken or DatabaseUnavailable(
                "the database rolled the transaction back (its file failed a write)"
            )

    async def _leave(self, batch: _Batch) -> None:
        """A member is through, the lock still held: the batch stays open for whoever reaches the lock before
        its committer, a task queued now — behind the writers queued already and the requests ready to run
        (a lean transaction's statements run inline: nothing else runs while it works, so others can only
        join after it). A broken batch ends now."""
        if batch.broken is None:
            if batch.committer is None:
                batch.committer = running_loop().create_task(self._commit_later(batch))
            return
        await self._end(batch)

    async def _commit_later(self, batch: _Batch) -> None:
        lock = await self._acquire(timeout=False)  # behind every writer queued before it
        try:
            if self._batch is batch:
                await self._end(batch)
        finally:
            lock.release()

    async def _end(self, batch: _Batch) -> None:
        """COMMIT the batch (or roll back a broken one), resolve `done`, give the connection back."""
        if self._batch is batch:
            self._batch = None
        failure: BaseException | None = batch.broken
        if failure is None:
            try:
                await batch.driver.commit()
                self.commits += 1
            except Exception as error:
                failure = self._translate("COMMIT", error)
                failure.__cause__ = error
        if failure is not None:
            with contextlib.suppress(Exception):
                await batch.driver.rollback()
            if not batch.done.done():
                batch.done.set_exception(failure)
                batch.done.exception()  # (retrieved: a batch whose members all failed has no one awaiting it)
        elif not batch.done.done():
            batch.done.set_result(None)
        await self._release(batch.fairy, failure if failure is not None and refuses_writes(failure) else None)
