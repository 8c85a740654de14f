"""A small first-come-first-served pool of asyncpg connections for lean reads (`Database.fetch_first`) and
lean transactions (`Database.lean_transaction`, a pool of its own).

A lean read is one autocommit statement and a lean transaction ends (COMMIT or ROLLBACK) before its
connection comes back, so a connection carries no session state between uses and needs no reset (one
that comes back still inside a transaction is discarded); what matters is the cost per use and fairness
under load:

- asyncpg's own pool lets a newcomer take a connection handed back before the waiter it was handed to
  wakes; that waiter then queues again at the back, so under saturation some requests wait many turns (a
  p99 of ten times the median on GET /config at 64 connections). Here a released connection goes straight
  to the longest waiter.
- asyncpg's pool wraps every use in a proxy, a holder, a timeout and a release task (~10% of an
  authenticated request's CPU); here a use is a deque pop and push.

A connection that fails in any way other than the server refusing the statement (a PostgresError, after
which an autocommit connection is as good as before) is terminated and replaced on demand, as is one that
a cancelled caller left mid-statement, one whose error says the server ended it (a restart, a failover,
pg_terminate_backend: SQLSTATE classes 08 and 57P) or that its session refuses writes (SQLSTATE 25006:
read-only by default, a hot standby), and an idle one that the server closed meanwhile (checked when it
is taken: an attribute read, not a round trip). A caller may also refuse an idle connection when it takes
one (`reusable`: a write refuses one whose session is read-only, which a new connection may not be). Opening a connection and waiting for one
are both bounded by `timeout`.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import asyncpg

from platpay.db.faults import connection_lost, refuses_writes
from platpay.loops import running_loop


class LeanPool:
    def __init__(
        self,
        connect: Callable[[], Awaitable[Any]],
        *,
        size: int,
        timeout: float = 5.0,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one connection")
        self._connect = connect
        self.size = size
        self.timeout = timeout
        self._opened = 0  # connections open or being opened
        self._idle: collections.deque[Any] = collections.deque()
        # Waiters get a connection, or None: "a slot is free, open a connection yourself".
        self._waiters: collections.deque[asyncio.Future[Any]] = collections.deque()
        self._closed = False

    @contextlib.asynccontextmanager
    async def connection(self, *, reusable: Callable[[Any], bool] | None = None) -> AsyncIterator[Any]:
        """A connection; `reusable(connection)` False: an idle connection not to use (it is closed and a
        new one opened in its place; a new one is never refused)."""
        async with self.lease(reusable=reusable) as lease:
            yield lease.connection

    @contextlib.asynccontextmanager
    async def lease(self, *, reusable: Callable[[Any], bool] | None = None) -> AsyncIterator[Lease]:
        """`connection()`, held by a `Lease` whose connection can be renewed (`Lease.renew`)."""
        lease = Lease(self, await self._acquire(reusable))
        try:
            yield lease
        except asyncpg.PostgresError as error:
            if connection_lost(error, lease.connection) or refuses_writes(error):
                self._discard(lease.connection)
            else:
                self._release(lease.connection)  # the server refused the statement; the connection is fine
            raise
        except BaseException:
            self._discard(lease.connection)
            raise
        else:
            self._release(lease.connection)

    async def _acquire(self, reusable: Callable[[Any], bool] | None = None) -> Any:
        if self._closed:
            raise RuntimeError("the lean pool is closed")
        while self._idle and not self._waiters:
            idle = self._idle.popleft()
            if not idle.is_closed() and (reusable is None or reusable(idle)):
                return idle
            self._discard(idle)  # the server closed it while it sat idle, or the caller refused it
        if self._opened < self.size and not self._waiters:
            return await self._open()
        waiter = running_loop().create_future()
        self._waiters.append(waiter)
        async with asyncio.timeout(self.timeout):  # a wait cut short here raises TimeoutError
            try:
                handed = await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():  # handed over as we were cancelled: pass it on
                    granted = waiter.result()
                    if granted is None:
                        self._opened -= 1
                        self._hand_over(None)
                    else:
                        self._release(granted)
                else:
                    with contextlib.suppress(ValueError):
                        self._waiters.remove(waiter)
                raise
        if handed is not None and (handed.is_closed() or (reusable is not None and not reusable(handed))):
            handed.terminate()  # closed while idle, or refused: open a new one in its slot, ours now
            handed = None
        return handed if handed is not None else await self._open(counted=True)

    async def _open(self, *, counted: bool = False) -> Any:
        """Open a connection; `counted`: in a slot a releaser already counted for the caller."""
        if not counted:
            self._opened += 1
        try:
            return await self._connect()
        except BaseException:
            self._opened -= 1
            self._hand_over(None)  # a waiter may try in this slot
            raise

    def _hand_over(self, connection: Any) -> bool:
        """Give `connection` (or, if None, a free slot) to the longest waiter; False if none waits."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                if connection is None:
                    self._opened += 1  # the slot is the waiter's now: nobody else may open in it
                waiter.set_result(connection)
                return True
        return False

    def _release(self, connection: Any) -> None:
        if self._closed or connection.is_closed() or connection.is_in_transaction():
            self._discard(connection)
        elif not self._hand_over(connection):
            self._idle.append(connection)

    def _discard(self, connection: Any) -> None:
        connection.terminate()
        self._opened -= 1
        if not self._closed:
            self._hand_over(None)

    async def close(self) -> None:
        self._closed = True
        idle, self._idle = list(self._idle), collections.deque()
        for connection in idle:
            self._opened -= 1
            with contextlib.suppress(Exception):
                await connection.close(timeout=5)
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_exception(RuntimeError("the lean pool is closed"))
        self._waiters.clear()


class Lease:
    """A connection taken from a `LeanPool` (`LeanPool.lease`). `renew()` replaces one found lost before
    anything was done on it (a pooled connection whose server restarted since: its first statement failed)
    with a new one in the same slot, which the lease then gives back."""

    __slots__ = ("connection", "pool")

    def __init__(self, pool: LeanPool, connection: Any) -> None:
        self.pool, self.connection = pool, connection

    async def renew(self) -> Any:
        self.connection.terminate()
        try:
            self.connection = await self.pool._connect()
        except BaseException:
            self.connection = _Gone()  # given back as a closed one: its slot is freed then, once
            raise
        return self.connection


class _Gone:
    """A lease's connection after a failed renewal: closed, so giving it back frees its slot."""

    def terminate(self) -> None:
        pass

    def is_closed(self) -> bool:
        return True

    def is_in_transaction(self) -> bool:
        return False
