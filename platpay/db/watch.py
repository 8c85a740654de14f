"""Keyed reads kept in the process while PostgreSQL tells it of every change to the tables they come from.

A `Watched` read (the credential every request authenticates with: an API token or an agent's access token,
with its tenant) is answered from this process's memory when all of these hold, and read from the database
otherwise:

- the process listens on the read's channel (`LISTEN`, one connection per database and event loop, opened
  by the first watched read); a trigger on each table the read comes from (migration 0029_watch) sends a
  notification on the channel when a transaction that changed the table commits;
- no notification (and no commit of this process that changed one of those tables, see below) has come
  since the row was read: every one moves the channel's *generation* and empties what was kept;
- the listening connection has stayed open since the row was read (losing it moves the generation too:
  a notification may have been missed, so nothing read before counts);
- the row is younger than `max_age` seconds: the bound if the listening connection is silently gone
  (a network that drops packets: keepalives and the socket's user timeout find that out in seconds).

Requests that miss the same key at once share one read (`pending`): when a kept row's age runs out, or a
notification empties what was kept, the requests in flight on every connection would otherwise each read
it (64 connections: 64 reads queued for the lean pool's 8 connections, every `max_age` seconds). A request
joins a read only if it began under the generation it sees: after this process's own commit (or a
notification), a new read is made. If the shared read fails or its request is cancelled, those that joined
it read for themselves.

A row read while the generation moved is not kept, so a read that raced a change never keeps the old row.

This process's own commits do not wait for the notification: a session that changed a watched table moves
the generation in its `after_commit` (before the request that committed answers), so a token deleted
through this process stops authenticating in it at once. Other processes see the change when PostgreSQL's
notification reaches them, a few milliseconds after the commit.

Only rows that were found are kept: a key nothing matches is read every time (so what is created is seen
at once, and unknown keys cannot fill the memory).

SQLite has no notifications; it has a counter instead. `PRAGMA data_version` on a connection moves whenever
any other connection (of this process or another: `platpay worker`, a CLI command) commits to the database
file, whatever the table. A SQLite file database keeps watched rows (`SqliteChanges`) on the read-only
connection its inline reads use (`Database.fetch_first`), tagged with the counter read just before the row:
a request reads the counter (~3 µs in process, where the credential's read took ~35) and is answered from
memory only if nothing at all was committed since. A change is therefore seen by the very next request, in
every process; a busy database (every commit moves the counter) costs one counter read more per request.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import structlog
from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session, UOWTransaction

from platpay.db.lean import Lean
from platpay.loops import running_loop

if TYPE_CHECKING:
    from platpay.db.database import Database

log = structlog.get_logger("platpay.db")

# The channels and the tables whose committed changes each one announces: the triggers of migration
# 0029_watch (tests/db/test_watch.py checks that they match).
CHANNELS: dict[str, tuple[str, ...]] = {
    "platpay_credentials": ("api_tokens", "agents", "tenants", "platforms", "sandbox_clocks"),
}
_CHANNEL_OF_TABLE = {table: channel for channel, tables in CHANNELS.items() for table in tables}

# Kept rows per channel and process at most (all are dropped when there would be more).
MAX_ENTRIES = 10_000
RECONNECT_SECONDS = (0.2, 0.5, 1.0, 2.0, 5.0)

_LISTENERS: weakref.WeakSet[Listener] = weakref.WeakSet()


class Listener:
    """One channel of one database on one event loop: a connection that LISTENs, the generation, the rows
    kept. Started by `Database.listener`; stopped by `Database.dispose`."""

    def __init__(self, channel: str, connect: Callable[[], Any]) -> None:
        self.channel = channel
        self.generation = 0
        self.entries: dict[Any, tuple[Any, float, tuple[Any, ...]]] = {}
        self.pending: dict[Any, tuple[Any, asyncio.Future[tuple[Any, ...] | None]]] = {}
        self._connect = connect
        self._connection: Any = None
        self._lost = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._listen(), name=f"listen {channel}")
        _LISTENERS.add(self)

    @property
    def live(self) -> bool:
        connection = self._connection
        return connection is not None and not connection.is_closed()

    def changed(self, *_: Any) -> None:
        """Something the kept rows come from may have changed: none of them counts any more."""
        self.generation += 1
        self.entries.clear()

    def current(self) -> int | None:
        """The generation kept rows must carry to count now; None while not listening (nothing counts)."""
        return self.generation if self.live else None

    async def _listen(self) -> None:
        failures = 0
        while True:
            connection = None
            try:
                connection = await self._connect()
                self._lost.clear()
                connection.add_termination_listener(self._terminated)
                await connection.add_listener(self.channel, self.changed)
            except asyncio.CancelledError:
                if connection is not None:
                    connection.terminate()
                raise
            except Exception as error:
                if connection is not None:
                    connection.terminate()
                delay = RECONNECT_SECONDS[min(failures, len(RECONNECT_SECONDS) - 1)]
                failures += 1
                log.info("watch.unavailable", channel=self.channel, error=repr(error), retry_in=delay)
                await asyncio.sleep(delay)
                continue
            failures = 0
            self.changed()  # what was read before we listened may have missed a notification
            self._connection = connection
            try:
                await self._lost.wait()
            finally:
                self._connection = None
                self.changed()
                connection.terminate()

    def _terminated(self, _connection: Any) -> None:
        self._connection = None
        self.changed()
        self._lost.set()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        self._connection = None
        self.changed()


class SqliteChanges:
    """SQLite's stand-in for a `Listener` (see the module's docstring): the rows kept on one thread, valid
    while `PRAGMA data_version` of that thread's read-only connection (`version`: (the connection's epoch,
    its counter), or None when it cannot be read) has not moved."""

    def __init__(self, version: Callable[[], tuple[int, int] | None]) -> None:
        self.entries: dict[Any, tuple[Any, float, tuple[Any, ...]]] = {}
        self.pending: dict[Any, tuple[Any, asyncio.Future[tuple[Any, ...] | None]]] = {}
        self._version = version
        self._seen: tuple[int, int] | None = None

    def current(self) -> tuple[int, int] | None:
        """The counter now; a move drops every row kept (none of them counts any more)."""
        version = self._version()
        if version != self._seen:
            self.entries.clear()
            self._seen = version
        return version


class Watched:
    """A keyed `Lean` read whose found rows the process keeps while `channel` is listened to (see the
    module's docstring), for the database's `watch_max_age` seconds at most (0: never kept)."""

    def __init__(self, query: Lean, channel: str) -> None:
        if channel not in CHANNELS:
            raise ValueError(f"no trigger announces changes on channel {channel!r}")
        self.query = query
        self.channel = channel

    async def first(self, db: Database, params: dict[str, Any], key: Any) -> tuple[Any, ...] | None:
        watch = db.listener(self.channel)
        if watch is None:
            return await db.fetch_first(self.query, params)
        now = time.monotonic()
        generation = watch.current()  # taken before the row is read: a change after it moves it
        if generation is not None:
            kept = watch.entries.get((self, key))
            if kept is not None and kept[0] == generation and now - kept[1] < db.watch_max_age:
                return kept[2]
            shared = watch.pending.get((self, key))
            if shared is not None and shared[0] == generation:
                read = shared[1]
                await asyncio.wait((read,))
                if not read.cancelled() and read.exception() is None:
                    return read.result()
                # (it failed or its request was cancelled: this request reads for itself)
        if generation is None:
            return await db.fetch_first(self.query, params)
        return await self._read(db, watch, params, key, generation, now)

    async def _read(
        self,
        db: Database,
        watch: Listener | SqliteChanges,
        params: dict[str, Any],
        key: Any,
        generation: Any,
        now: float,
    ) -> tuple[Any, ...] | None:
        """Read the row, letting requests for the same key under the same generation share the read, and
        keep it if nothing moved the generation meanwhile."""
        read: asyncio.Future[tuple[Any, ...] | None] = running_loop().create_future()
        shared = watch.pending[(self, key)] = (generation, read)
        try:
            row = await db.fetch_first(self.query, params)
        except BaseException:
            read.cancel()
            raise
        finally:
            if watch.pending.get((self, key)) is shared:
                del watch.pending[(self, key)]
        read.set_result(row)
        if row is not None and watch.current() == generation:
            if len(watch.entries) >= MAX_ENTRIES:
                watch.entries.clear()
            watch.entries[(self, key)] = (generation, now, row)
        return row


def changed_locally(channel: str) -> None:
    """This process committed a change to a table of `channel`: every listener of it drops what it kept
    (before the change's notification comes back)."""
    for listener in list(_LISTENERS):
        if listener.channel == channel:
            listener.changed()


# ---- this process's own commits --------------------------------------------------------------------------

_TOUCHED = "platpay_watch_channels"


def _mark(session: Session, table: str | None) -> None:
    channel = _CHANNEL_OF_TABLE.get(table or "")
    if channel is not None:
        session.info.setdefault(_TOUCHED, set()).add(channel)


@event.listens_for(Session, "after_flush")
def _flushed(session: Session, _flush: UOWTransaction) -> None:
    for kind in {type(instance) for instance in (*session.new, *session.dirty, *session.deleted)}:
        _mark(session, getattr(getattr(kind, "__table__", None), "name", None))


@event.listens_for(Session, "do_orm_execute")
def _executed(state: ORMExecuteState) -> None:
    if state.is_select:
        return
    table = getattr(state.statement, "table", None)
    _mark(state.session, getattr(table, "name", None))


# (A session that changed such a table and rolled back keeps its mark: dropping kept rows once too often
# costs a read; once too few would answer from a row that changed.)
@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    for channel in session.info.pop(_TOUCHED, ()):
        changed_locally(channel)
