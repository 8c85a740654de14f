"""SQLite's server connection: aiosqlite's, with a write transaction's own work run on the event loop's thread.

aiosqlite runs every call on a thread of its own per connection: a future, a queue put, the thread's wake-up,
a `call_soon_threadsafe` back and two GIL hand-offs per call — several times the CPU of the statement itself
(a keyed SQLite statement takes 10-50 µs). A transfer-out made 15 such hops (BEGIN IMMEDIATE alone three:
cursor, execute, close). Here a call runs inline, on the calling (event loop's) thread, when it cannot wait
for a lock held by another connection — in-process writers already queue on `Database`'s write lock, and
the event loop must never wait on a lock another process (`platpay worker`, a CLI command) holds:

- BEGIN IMMEDIATE is tried inline with SQLite's busy timeout at 0 (`try_begin`); when another connection
  holds the write lock it fails at once and the caller sends it to the thread instead, where it waits up
  to the busy timeout as before. A deferred BEGIN takes no lock at all.
- While this connection holds the write lock — its BEGIN IMMEDIATE succeeded, the file is in WAL mode and the
  transaction is still open — lean statements (`fetchall_now`, `executemany_now`: fixed keyed statements,
  platpay.db.lean) run inline: in WAL mode a writer holding the lock waits for no one.
- COMMIT and ROLLBACK run inline in WAL mode: a transaction that wrote already holds the write lock, and a
  COMMIT appends it to the WAL (`synchronous=NORMAL`: no fsync there; checkpoints: below).
- Creating or closing a cursor and ROLLBACK outside a transaction (the pool's reset) touch no lock.

A COMMIT inline must not copy the WAL into the database file on the event loop either: SQLite's automatic
checkpoint (every 1000 WAL pages, in the COMMIT that crosses them) writes those pages and fsyncs twice,
milliseconds to tens of milliseconds on a busy disk. So these connections turn it off and a
`Checkpointer` runs the same PASSIVE checkpoint on a thread of its own, after every `EVERY_COMMITS` commits
or `EVERY_SECONDS` with at least one: it waits for no reader and no writer, a writer goes on appending
meanwhile. Durability is SQLite's `synchronous=NORMAL` in WAL mode as before (docs/architecture.md): a
committed transaction survives the process; one committed since the last checkpoint's fsync may be lost to
a power cut or an OS crash — a window bounded as before (then: 1000 pages, ~100 transfers; now 100 commits
or 1 s, whichever comes first). Every process with a `Database` (serve, `platpay worker`, CLI commands)
checkpoints its own commits so; SQLite also checkpoints when a file's last connection closes.

Everything else — the ORM's statements, reads, anything outside a write transaction, any file not in WAL
mode (a rollback journal's COMMIT waits for readers) — goes to the connection's thread as before. A call runs
inline only while the thread has nothing queued or running for this connection (a cancelled caller may have
left a call running there): otherwise it queues behind it, in order, so the connection is never used from
two threads at once (it is opened with `check_same_thread=False` for that reason only).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

import aiosqlite
from aiosqlite.context import contextmanager

from platpay.db.faults import sqlite_busy


class Checkpointer:
    """The WAL checkpoints of one database file's server connections, on a daemon thread of its own (see the
    module). `committed()` is called by the connections after each COMMIT; `stop()` ends the thread (a later
    commit starts another: a disposed engine may be used again)."""

    EVERY_COMMITS = 100
    EVERY_SECONDS = 1.0

    def __init__(self, path: str) -> None:
        self.path = path
        self.checkpoints = 0  # checkpoints run (for tests and benchmarks)
        self._commits = 0  # since the last checkpoint began (a lost count between threads is harmless)
        self._wake = threading.Event()
        self._running: tuple[threading.Thread, threading.Event] | None = None

    def committed(self) -> None:
        self._commits += 1
        if self._running is None:
            stop = threading.Event()
            thread = threading.Thread(
                target=self._run, args=(stop,), name="platpay-sqlite-checkpoint", daemon=True
            )
            self._running = (thread, stop)
            thread.start()
        if self._commits >= self.EVERY_COMMITS:
            self._wake.set()

    def _run(self, stop: threading.Event) -> None:
        connection: sqlite3.Connection | None = None
        try:
            while True:
                self._wake.wait(timeout=self.EVERY_SECONDS)
                if stop.is_set():
                    return
                self._wake.clear()
                if self._commits == 0:
                    continue
                self._commits = 0
                try:
                    if connection is None:
                        connection = sqlite3.connect(
                            self.path, timeout=0, isolation_level=None, check_same_thread=False
                        )
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                    self.checkpoints += 1
                except sqlite3.Error:  # the file is unreadable or gone: try again next time, afresh
                    if connection is not None:
                        connection.close()
                    connection = None
        finally:
            if connection is not None:
                connection.close()

    def stop(self) -> None:
        running, self._running = self._running, None
        if running is not None:
            thread, stop = running
            stop.set()
            self._wake.set()
            thread.join(timeout=5)


class InlineCursor(aiosqlite.Cursor):
    async def close(self) -> None:
        connection = self._conn
        if isinstance(connection, InlineConnection) and connection.idle():
            self._cursor.close()
        else:
            await super().close()


class InlineConnection(aiosqlite.Connection):
    """An aiosqlite connection that runs a write transaction's statements inline (see the module)."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], *, busy_timeout_ms: int) -> None:
        super().__init__(connector, 64)
        self._thread.daemon = True  # as aiosqlite.connect's callers (SQLAlchemy) set it
        self.busy_timeout_ms = busy_timeout_ms
        self.wal = False  # set by the engine's connect hook: whether the file is in WAL mode
        self._queued = 0  # calls sent to the thread (counted on the event loop's thread)
        self._finished = 0  # calls the thread finished (counted on the thread)
        self._write_locked = False  # this connection's BEGIN IMMEDIATE succeeded; no COMMIT/ROLLBACK since
        self.checkpointer: Checkpointer | None = None  # set with `wal`: it checkpoints in SQLite's place

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        self._queued += 1

        def counted() -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                self._finished += 1

        return await super()._execute(counted)  # type: ignore[no-untyped-call]

    def idle(self) -> bool:
        """Nothing queued or running on the connection's thread: the calling thread may use it."""
        return self._queued == self._finished and self._connection is not None

    def holds_write_lock(self) -> bool:
        """Inline statements are allowed: idle, WAL, inside a write transaction this connection began."""
        connection = self._connection
        return (
            self._write_locked
            and self._queued == self._finished
            and connection is not None
            and connection.in_transaction
        )

    # ---- transaction control -------------------------------------------------------------------------

    def try_begin(self, *, immediate: bool) -> bool:
        """BEGIN [IMMEDIATE] inline; False (nothing begun) when it has to go to the thread: the thread is
        busy, the file is not in WAL mode (a write there), or the write lock is held elsewhere (or BEGIN
        failed otherwise: the thread's attempt raises it as the engine translates errors)."""
        self._write_locked = False
        connection = self._connection
        if connection is None or not self.idle():
            return False
        if not immediate:
            try:
                connection.execute("BEGIN")
            except sqlite3.Error:  # pragma: no cover - not seen: the thread's attempt raises it, translated
                return False
            return True
        if not self.wal:
            return False
        connection.execute("PRAGMA busy_timeout=0")
        try:
            connection.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            if not sqlite_busy(error) and connection.in_transaction:  # pragma: no cover - not seen
                connection.rollback()
            return False
        finally:
            connection.execute(f"PRAGMA busy_timeout={self.busy_timeout_ms}")
        self._write_locked = True
        return True

    async def begin_write(self) -> None:
        """BEGIN IMMEDIATE: inline when the write lock is free, else on the connection's thread, waiting up
        to the busy timeout there (never on the event loop). This connection then holds the write lock."""
        if self.try_begin(immediate=True):
            return
        await self._execute(self._conn.execute, "BEGIN IMMEDIATE")
        self.began_write()

    async def control(self, sql: str) -> None:
        """A transaction-control statement (SAVEPOINT, RELEASE, ROLLBACK TO: platpay.db.sqlite_writes): inline
        while this connection holds the write lock, else on its thread."""
        if self.holds_write_lock():
            self._conn.execute(sql)
        else:
            await self._execute(self._conn.execute, sql)

    def began_write(self) -> None:
        """The thread's BEGIN IMMEDIATE succeeded: this connection holds the write lock."""
        self._write_locked = self.wal

    async def commit(self) -> None:
        # In WAL mode a COMMIT waits for no lock (a transaction that wrote holds the write lock already) and,
        # with the automatic checkpoint off, does no fsync: inline whenever the thread is idle.
        connection = self._connection
        if connection is not None and self.wal and self.checkpointer is not None and self.idle():
            self._write_locked = False
            connection.commit()
        else:
            self._write_locked = False
            await super().commit()
        if self.checkpointer is not None:
            self.checkpointer.committed()

    async def rollback(self) -> None:
        connection = self._connection
        if connection is not None and self.idle() and (self.wal or not connection.in_transaction):
            self._write_locked = False
            connection.rollback()
            return
        self._write_locked = False
        await super().rollback()

    @contextmanager
    async def cursor(self) -> aiosqlite.Cursor:
        if self.idle():
            return InlineCursor(self, self._conn.cursor())
        return InlineCursor(self, await self._execute(self._conn.cursor))

    # ---- lean statements (platpay.db.lean), inline: only while holds_write_lock() ----------------------

    def fetchall_now(self, sql: str, args: Sequence[Any]) -> list[Any]:
        return self._conn.execute(sql, args).fetchall()

    def executemany_now(self, sql: str, args: Iterable[Sequence[Any]]) -> None:
        self._conn.executemany(sql, args)


def connect(database: str, *, busy_timeout_ms: int, **kwargs: Any) -> InlineConnection:
    """`aiosqlite.connect`'s counterpart (SQLAlchemy's `async_creator_fn`): awaiting it opens the file."""
    kwargs["check_same_thread"] = False  # used from the event loop's thread too, never at once (see above)
    return InlineConnection(partial(sqlite3.connect, database, **kwargs), busy_timeout_ms=busy_timeout_ms)
