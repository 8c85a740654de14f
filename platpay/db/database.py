"""Engine, sessions and the unit of work.

One `Database` per process holds the engine. Writes go through `transaction()`, reads through `read()`;
the GET lists and gets that need no read-your-writes guarantee through `replica_read()`, which uses a
standby when PLATPAY_DATABASE_READ_URL names one and it is fresh enough (platpay.db.replica).
`lean_transaction()` is the unit of work of an operation whose every statement is lean (platpay.db.lean).
On SQLite a write transaction starts with BEGIN IMMEDIATE (so a read never has to be upgraded to a write
lock, which SQLite refuses under contention) and in-process writers queue on an asyncio lock instead of
spinning in SQLite's busy handler; `busy_timeout` still covers other processes (the CLI, a worker), waited
out on the connection's thread, never on the event loop. A write transaction's BEGIN IMMEDIATE, lean
statements and COMMIT run inline on the event loop's thread while the connection holds the write lock, and
WAL checkpoints on a thread of their own (platpay.db.sqlite_inline).

Faults (platpay.db.faults): every wait on the database is bounded by `timeout` (connecting, a pooled
connection, SQLite's busy wait and write queue), a connection a fault touched never goes back to a pool,
and an outage surfaces from `transaction()`, `lean_transaction()`, `read()` and `fetch_first()` as
`DatabaseUnavailable` (503 with Retry-After), logged once per outage by the database's `OutageLog`.

A database that refuses writes (read-only, a hot standby, a full disk) fails writes that way and serves
reads. No connection whose session is read-only serves a write: one that met the refusal leaves its pool
(`_discard_refusing`), a write checks out a fresh connection in place of a pooled PostgreSQL one whose
session the server reports read-only (`_write_connection`), and a pooled SQLite connection opened on a
read-only file is replaced once the file is writable again (`_reopen_writable`). So writes succeed again
in the same process as soon as the database takes them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import itertools
import json
import os
import sqlite3
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import asyncpg
from sqlalchemy import event
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool
from sqlalchemy.util.concurrency import greenlet_spawn

from platpay.db import hosts, json_text, lean, sqlite_inline, sqlite_writes
from platpay.db.connect import ConnectionPolicy, connect_arguments, tune_socket
from platpay.db.faults import (
    DatabaseUnavailable,
    OutageLog,
    connection_lost,
    read_only_session,
    refuses_writes,
    sqlite_busy,
    timed_out,
    unavailable_reason,
)
from platpay.db.lean import Lean, LeanTransaction, convert
from platpay.db.lean_pool import LeanPool
from platpay.db.replica import RecentWrites, ReplicaRouter, current_writer
from platpay.db.unit_of_work import LeanFirst, LeanSession, Raced
from platpay.db.watch import Listener, SqliteChanges
from platpay.errors import ApiError
from platpay.loops import running_loop

WRITE_OPTION = "platpay_write"
DEFAULT_TIMEOUT_SECONDS = 5.0
REPLICA_CONNECT_TIMEOUT_SECONDS = 2.0  # a replica that does not answer soon is skipped (reads: the primary)
T = TypeVar("T")
# What a read on the replica may fail with and still be run on the primary (platpay.db.replica).
_REPLICA_ERRORS = (
    sa_exc.SQLAlchemyError,
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    OSError,
    TimeoutError,
)

# Called with the session after every successful write commit, by every Database; domains register here
# at import (e.g. the ledger caches ids it read only once they are known to be committed).
COMMIT_HOOKS: list[Callable[[LeanSession], None]] = []


def _sqlite_path(url: str) -> Path | None:
    database = make_url(url).database
    if not database or database == ":memory:":
        return None
    return Path(database)


# A pooled connection's record.info: how many times it was checked out (1: its first use, it is fresh), and
# for SQLite whether its file was read-only when it was opened.
_CHECKOUTS = "platpay_checkouts"
_OPENED_READ_ONLY = "platpay_opened_read_only"


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)


def _discard_refusing(engine: AsyncEngine) -> None:
    """A connection that met a refused write (its session or its file is read-only) leaves the pool, alone:
    the others may be fine (SQLAlchemy's disconnect handling, without invalidating the whole pool)."""

    @event.listens_for(engine.sync_engine, "handle_error")
    def _on_error(context: Any) -> None:
        if not context.is_disconnect and refuses_writes(context.original_exception):
            context.is_disconnect = True
            context.invalidate_pool_on_disconnect = False

    @event.listens_for(engine.sync_engine, "connect")
    def _opened(_dbapi_connection: Any, record: Any) -> None:
        record.info[_CHECKOUTS] = 0

    @event.listens_for(engine.sync_engine, "checkout")
    def _count(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        record.info[_CHECKOUTS] = record.info.get(_CHECKOUTS, 0) + 1


def build_engine(
    url: str,
    *,
    pool_size: int = 10,
    null_pool: bool = False,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    policy: ConnectionPolicy | None = None,
    checkpointer: sqlite_inline.Checkpointer | None = None,
) -> AsyncEngine:
    """The engine; `timeout` bounds connecting, waiting for a pooled connection and SQLite's busy wait;
    on PostgreSQL, `policy` (default: only `timeout`) bounds the rest (platpay.db.connect). SQLite: with a
    `checkpointer` (a server's: `Database`), its connections leave WAL checkpoints to it instead of running
    SQLite's automatic one in their COMMIT (platpay.db.sqlite_inline)."""
    if url.startswith("sqlite"):
        path = _sqlite_path(url)
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
        busy_ms = max(1, int(timeout * 1000))
        # Connections that run a write transaction's statements on the event loop's thread while they hold
        # SQLite's write lock, and everything else on aiosqlite's thread (platpay.db.sqlite_inline).
        engine = create_async_engine(
            url,
            json_serializer=json_text.compact_text,
            connect_args={
                "timeout": timeout,
                "async_creator_fn": functools.partial(sqlite_inline.connect, busy_timeout_ms=busy_ms),
            },
        )
        _discard_refusing(engine)

        @event.listens_for(engine.sync_engine, "checkout")
        def _reopen_writable(_dbapi_connection: Any, record: Any, _proxy: Any) -> None:
            # SQLite opens a file it may not write read-only, for good: once the file is writable again, a
            # connection opened that way is replaced (a system call, only for such connections).
            if record.info.get(_OPENED_READ_ONLY) and path is not None and _writable(path):
                raise sa_exc.DisconnectionError("the database file is writable again")

        @event.listens_for(engine.sync_engine, "connect")
        def _on_connect(dbapi_connection: Any, record: Any) -> None:
            record.info[_OPENED_READ_ONLY] = path is not None and path.exists() and not _writable(path)
            # Take transaction control away from the driver: we emit BEGIN ourselves below.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA journal_mode=WAL")
            journal = cursor.fetchone()
            driver = dbapi_connection.driver_connection
            if isinstance(driver, sqlite_inline.InlineConnection):
                # A file that cannot be in WAL mode (read-only when opened, a network filesystem) keeps
                # every statement on the thread: a rollback journal's COMMIT waits for readers.
                driver.wal = journal is not None and str(journal[0]).lower() == "wal"
                if driver.wal and checkpointer is not None:
                    cursor.execute("PRAGMA wal_autocheckpoint=0")
                    driver.checkpointer = checkpointer
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA synchronous=NORMAL")
            cursor.execute(f"PRAGMA busy_timeout={busy_ms}")
            cursor.close()

        @event.listens_for(engine.sync_engine, "begin")
        def _on_begin(conn: Any) -> None:
            write = bool(conn.get_execution_options().get(WRITE_OPTION))
            driver = conn.connection.driver_connection
            inline = isinstance(driver, sqlite_inline.InlineConnection)
            # Inline when it cannot wait (a deferred BEGIN; BEGIN IMMEDIATE with the write lock free), else
            # on the connection's thread, waiting up to the busy timeout there: never on the event loop.
            if inline and driver.try_begin(immediate=write):
                return
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")
            if inline and write:
                driver.began_write()

        return engine

    policy = policy or ConnectionPolicy(timeout=timeout)
    # hosts.connect: of a multi-host URL's servers, the writable one on the newest timeline (platpay.db.hosts).
    kwargs: dict[str, Any] = {
        "connect_args": {**policy.asyncpg_arguments(), "async_creator_fn": hosts.connect},
        "json_serializer": json_text.compact_text,
    }
    if null_pool:
        kwargs["poolclass"] = NullPool
    else:
        # No pre-ping round trip: a connection the server closed is known to asyncpg as soon as the event
        # loop reads the close (see _refuse_closed); one that fails in use is invalidated where it fails.
        kwargs.update(
            pool_size=pool_size, max_overflow=pool_size * 2, pool_pre_ping=False, pool_timeout=timeout
        )
    engine = create_async_engine(url, **kwargs)
    _discard_refusing(engine)

    @event.listens_for(engine.sync_engine, "connect")
    def _on_pg_connect(dbapi_connection: Any, _record: Any) -> None:
        tune_socket(dbapi_connection.driver_connection, policy)

    @event.listens_for(engine.sync_engine, "invalidate")
    def _drop_dead(dbapi_connection: Any, _record: Any, exception: BaseException | None) -> None:
        # A connection invalidated because it stopped answering (a statement past the client's timeout on a
        # half-open connection) cannot be closed politely: SQLAlchemy's graceful close would wait 2 s more
        # for a goodbye that never comes. Aborted here, its close returns at once.
        if dbapi_connection is not None and exception is not None and connection_lost(exception):
            dbapi_connection.driver_connection.terminate()

    @event.listens_for(engine.sync_engine, "checkout")
    def _refuse_closed(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        # A pooled connection whose server went away (restart, failover, pg_terminate_backend) is closed
        # on asyncpg's side once its socket's end was read: the pool discards it and checks out another
        # (or opens one). Costs an attribute check, not a round trip.
        if dbapi_connection.driver_connection.is_closed():
            raise sa_exc.DisconnectionError("the server closed this pooled connection")

    return engine


class _ReadOnlySession(Exception):
    """A write's pooled connection has a read-only session: nothing ran on it, take another."""


def _writes_on(driver: Any) -> bool:
    """A LeanPool's `reusable` for a write: not an idle connection whose session is read-only."""
    return not read_only_session(driver)


class Database:
    def __init__(
        self,
        url: str,
        *,
        pool_size: int = 10,
        null_pool: bool = False,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        outage: OutageLog | None = None,
        policy: ConnectionPolicy | None = None,
        read_url: str | None = None,
        read_max_lag_seconds: float = 2.0,
        recent_writes: Path | None = None,
        watch_max_age: float = 0.0,
    ) -> None:
        self.url = url
        # PostgreSQL: how long a watched read's row may be kept (platpay.db.watch; 0: never).
        self.watch_max_age = watch_max_age
        self._listeners: dict[tuple[asyncio.AbstractEventLoop, str], Listener] = {}
        self.policy = policy or ConnectionPolicy(timeout=timeout)
        self.timeout = timeout = self.policy.timeout
        # A starting command shares its own (platpay.db.startup): one event per outage, whatever failed.
        self.outage = outage or OutageLog()
        # SQLite file databases: WAL checkpoints on a thread of their own, off the event loop.
        parsed = make_url(url)
        sqlite_file = _sqlite_path(url) if url.startswith("sqlite") and not parsed.query else None
        self._checkpointer = sqlite_inline.Checkpointer(str(sqlite_file)) if sqlite_file else None
        self.engine = build_engine(
            url,
            pool_size=pool_size,
            null_pool=null_pool,
            timeout=timeout,
            policy=self.policy,
            checkpointer=self._checkpointer,
        )
        self.dialect = self.engine.dialect.name
        self.is_sqlite = self.dialect == "sqlite"
        self._write_engine = self.engine.execution_options(**{WRITE_OPTION: True})
        self._read_sessions = async_sessionmaker(self.engine, expire_on_commit=False, autoflush=False)
        self._write_sessions = async_sessionmaker(self._write_engine, expire_on_commit=False, autoflush=False)
        self._writes = (
            sqlite_writes.Writes(
                timeout=self.timeout,
                checkout=self._sqlite_checkout,
                release=self._sqlite_release,
                translate=functools.partial(lean.translated, self.engine.dialect),
            )
            if self.is_sqlite
            else None
        )
        self._after_commit: list[Callable[[LeanSession], None]] = []
        # Lean reads never open overflow connections: a burst of them would otherwise make the pool open
        # and close a connection every few requests. Per event loop, as asyncio primitives are.
        size = getattr(self.engine.pool, "size", None)
        self._lean_limit = max(1, size()) if callable(size) else None
        self._lean_slots: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )
        # PostgreSQL: lean reads run on asyncpg pools of their own, per event loop (see fetch_first).
        self._pg_pools: dict[asyncio.AbstractEventLoop, LeanPool] = {}
        self._pg_transaction_pools: dict[asyncio.AbstractEventLoop, LeanPool] = {}
        # SQLite file databases: lean reads run inline on a read-only connection per thread.
        self._inline_path = sqlite_file
        self._inline_readers: dict[int, sqlite3.Connection] = {}
        # (each reader's epoch: a reader opened again restarts its data_version counter; platpay.db.watch)
        self._inline_epochs: dict[int, int] = {}
        self._epochs = itertools.count(1)
        self._sqlite_changes: dict[tuple[int, str], SqliteChanges] = {}
        # PostgreSQL with PLATPAY_DATABASE_READ_URL: the reads endpoints choose may go to a standby.
        self.replica: ReplicaRouter | None = None
        if read_url and not self.is_sqlite:
            replica_policy = dataclasses.replace(
                self.policy, timeout=min(self.policy.timeout, REPLICA_CONNECT_TIMEOUT_SECONDS)
            )
            self.replica = ReplicaRouter(
                build_engine(read_url, pool_size=pool_size, null_pool=null_pool, policy=replica_policy),
                primary_lsn=self._primary_lsn,
                max_lag_seconds=read_max_lag_seconds,
                writes=RecentWrites(recent_writes),
            )

    @classmethod
    def from_settings(cls, settings: Any, **options: Any) -> Database:
        """A long-running process's database (serve, worker): the settings' pool size and bounds on every
        wait (platpay.db.connect.ConnectionPolicy)."""
        return cls(
            settings.database_url,
            pool_size=settings.db_pool_size,
            policy=ConnectionPolicy.from_settings(settings),
            read_url=settings.database_read_url,
            read_max_lag_seconds=settings.database_read_max_lag_seconds,
            # Every process of the machine (serve --workers, worker) shares who wrote when.
            recent_writes=Path(settings.var_dir) / "replica-writes.bin",
            watch_max_age=settings.credential_cache_seconds,
            **options,
        )

    def on_commit(self, callback: Callable[[LeanSession], None]) -> None:
        """Run `callback(session)` after every successful write commit (in-process wake-ups only)."""
        self._after_commit.append(callback)

    @contextlib.asynccontextmanager
    async def _sqlite_writer(self) -> AsyncIterator[None]:
        if self._writes is None:
            yield
            return
        async with self._writes.writer():
            yield

    def _unavailable(self, error: Exception) -> None:
        """Raise DatabaseUnavailable in place of `error` if it is an outage (and log the outage once)."""
        if isinstance(error, DatabaseUnavailable):
            self.outage.failed(error, error.reason)
            return
        if isinstance(error, ApiError):
            return
        reason = unavailable_reason(error)
        if reason is not None:
            raise self.outage.failed(error, reason) from error

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """The unit of work: commits once on success, rolls back on any exception.

        An outage (here or in the caller's statements) raises DatabaseUnavailable; one at COMMIT leaves
        the outcome unknown, which is what idempotency keys are for."""
        try:
            async with self._sqlite_writer():
                while True:
                    session = self._write_sessions()
                    try:
                        async with session.begin():
                            if not self.is_sqlite:
                                await self._write_connection(session)
                            yield session
                        break
                    except _ReadOnlySession:
                        continue
                    finally:
                        await session.close()
        except Exception as error:
            self._unavailable(error)
            raise
        self._committed(session)

    async def _write_connection(self, session: AsyncSession) -> None:
        """Raise _ReadOnlySession (its connection invalidated) when the write `session` was given a pooled
        connection whose session the server reports read-only: it was opened while the database was read
        -only and stays so for its life, though the database may take writes again. A connection opened
        just now is kept: its session says what the database says now (the write then fails as it must)."""
        connection = await session.connection()
        raw = await connection.get_raw_connection()
        if raw.info.get(_CHECKOUTS, 0) > 1 and read_only_session(raw.driver_connection):
            await connection.invalidate()
            raise _ReadOnlySession

    @contextlib.asynccontextmanager
    async def lean_transaction(self) -> AsyncIterator[LeanSession]:
        """A unit of work for an operation whose every statement is lean (`platpay.db.lean`): the same
        guarantees as `transaction()` (one commit on success, a rollback on any exception,
        DatabaseUnavailable for an outage, the commit hooks after the commit), without the ORM session's
        machinery (~140 µs of CPU per transaction: bench/README.md).

        PostgreSQL: a `LeanTransaction` on a connection of a pool of its own (`LeanPool`, as large as the
        engine's, per event loop): BEGIN … COMMIT, BEGIN sent with its first write (its writes deferred to
        the end, one statement without BEGIN: db/lean.py); a connection found dead at its first statement
        (nothing was done on it) is replaced and the statement sent again, once. SQLite: a LeanTransaction too, a
        member of a group commit (`_sqlite_lean_transaction`)."""
        if self.is_sqlite:
            async with self._sqlite_lean_transaction() as sqlite_tx:
                yield sqlite_tx
            return
        pool = self._pg_transaction_pool()
        try:
            async with pool.lease(reusable=_writes_on) as lease:
                lean_tx = LeanTransaction(lease.connection, self.engine.dialect, lease)
                try:
                    yield lean_tx
                    await lean.finish(lean_tx)  # its deferred writes (db/lean.py), COMMIT if BEGIN was sent
                except BaseException as error:
                    # A lost connection is discarded by the pool, its transaction with it; one that stopped
                    # answering (a statement past the command timeout) would make ROLLBACK wait as long
                    # again for the cancelled statement's end.
                    if not connection_lost(error, lean.driver_of(lean_tx)):
                        with contextlib.suppress(Exception):
                            await lean.abort(lean_tx)
                    raise
        except Exception as error:
            self._unavailable(error)
            raise
        self._committed(lean_tx)

    async def run(self, operation: LeanFirst[T]) -> T:
        """`operation` first in `lean_transaction()`; raced (`Raced`: rolled back), once more in
        `transaction()`. For a unit of work with nothing of its own to finish with it (a chain of webhook
        deliveries finishes its jobs in it: jobs.runner.finish_together); a job's runs through
        `JobContext.run`, a keyed request's through the idempotent runner."""
        try:
            async with self.lean_transaction() as lean_session:
                return await operation.lean(lean_session)
        except Raced:
            async with self.transaction() as session:
                return await operation.careful(session)

    @contextlib.asynccontextmanager
    async def _sqlite_lean_transaction(self) -> AsyncIterator[LeanSession]:
        """`lean_transaction()` on SQLite: a LeanTransaction on a connection straight from the engine's pool
        (no ORM session, no SQLAlchemy connection), its statements inline while the connection holds the write
        lock (platpay.db.sqlite_inline), itself a savepoint of a batch that concurrent lean transactions share
        and commit together (platpay.db.sqlite_writes): it returns once that COMMIT succeeded."""
        assert self._writes is not None
        try:
            async with self._writes.member() as driver:
                lean_tx = LeanTransaction(driver, self.engine.dialect)
                yield lean_tx
        except Exception as error:
            self._unavailable(error)
            raise
        self._committed(lean_tx)

    async def _sqlite_checkout(self) -> Any:
        return await greenlet_spawn(self._write_engine.sync_engine.raw_connection)

    @staticmethod
    async def _sqlite_release(proxy: Any, error: BaseException | None) -> None:
        # (a connection whose file refused a write is invalidated: platpay.db.faults.refuses_writes)
        if error is not None:
            await greenlet_spawn(proxy.invalidate, error)
        await greenlet_spawn(proxy.close)

    def _committed(self, session: LeanSession) -> None:
        """After a write transaction committed: the outage (if one was logged) is over; the commit hooks."""
        if self.outage.down_since is not None:
            self.outage.succeeded()
        if self.replica is not None and (writer := current_writer()) is not None:
            self.replica.writes.wrote(writer)  # its reads stay on the primary until the replica has it
        for callback in (*COMMIT_HOOKS, *self._after_commit):
            callback(session)

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        """A read-only session (one snapshot on PostgreSQL's REPEATABLE READ is not needed here)."""
        try:
            session = self._read_sessions()
            try:
                async with session.begin():
                    yield session
            finally:
                await session.close()
        except Exception as error:
            self._unavailable(error)
            raise

    async def replica_read(self, work: Callable[[AsyncSession], Awaitable[T]], *, tenant_id: str | None) -> T:
        """`work(session)` in a read-only session on the replica when one is configured, reachable, fresh,
        and `tenant_id` wrote nothing it may lack (platpay.db.replica); else, or when the replica fails, in
        `read()` on the primary. Only for reads that need no read-your-writes guarantee beyond that: GET
        lists and gets, never a read that decides a write."""
        router = self.replica
        if router is not None:
            outcome = router.choose(tenant_id)
            if outcome == "replica":
                try:
                    result: T = await router.run(work)
                except ApiError:
                    raise
                except _REPLICA_ERRORS as error:
                    router.failed(error)
                    router.count("failed")
                else:
                    router.count("replica")
                    return result
            else:
                router.count(outcome)
        async with self.read() as session:
            return await work(session)

    async def _primary_lsn(self) -> str | None:
        async with self._pg_lean_pool().connection() as driver:
            lsn: str | None = await driver.fetchval("SELECT pg_current_wal_lsn()::text")
        return lsn

    def _lean_slot(self) -> asyncio.Semaphore | contextlib.nullcontext[None]:
        if self._lean_limit is None:
            return contextlib.nullcontext()
        loop = running_loop()
        slots = self._lean_slots.get(loop)
        if slots is None:
            slots = self._lean_slots[loop] = asyncio.Semaphore(self._lean_limit)
        return slots

    def _inline_reader(self) -> sqlite3.Connection:
        """This thread's read-only SQLite connection: autocommit, and a busy timeout of 0 so that it
        never waits for a lock (the caller falls back to the pooled path instead)."""
        ident = threading.get_ident()
        reader = self._inline_readers.get(ident)
        if reader is None:
            assert self._inline_path is not None
            reader = sqlite3.connect(
                self._inline_path, timeout=0, isolation_level=None, check_same_thread=False
            )
            reader.execute("PRAGMA query_only=ON")
            self._inline_readers[ident] = reader
            self._inline_epochs[ident] = next(self._epochs)
        return reader

    def _drop_inline_reader(self) -> None:
        reader = self._inline_readers.pop(threading.get_ident(), None)
        if reader is not None:
            reader.close()

    def _data_version(self) -> tuple[int, int] | None:
        """(this thread's read-only connection's epoch, its `PRAGMA data_version`): it moves whenever another
        connection commits to the file (platpay.db.watch.SqliteChanges); None if it cannot be read."""
        try:
            reader = self._inline_reader()
            ((version,),) = reader.execute("PRAGMA data_version").fetchall()  # (stepped to its end)
        except sqlite3.Error:
            self._drop_inline_reader()
            return None
        return self._inline_epochs[threading.get_ident()], version

    async def fetch_first(self, query: Lean, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """The first row of `query`, or None: one statement in autocommit, without an ORM session.

        No BEGIN/COMMIT round trips and no unit of work, so it costs a fraction of `read()`; a single
        statement still reads one consistent snapshot and always sees every committed write (nothing is
        cached). For hot single-statement reads by key, such as authenticating each request.

        PostgreSQL: asyncpg on a pooled connection. SQLite: inline on the calling thread, on a read-only
        connection (a keyed lookup in WAL mode takes ~20 µs, a fraction of aiosqlite's two thread hops);
        if SQLite reports the database busy or locked, it takes the pooled aiosqlite path instead.
        """
        sql, args, results = query.args(self.engine.dialect, params)
        if self._inline_path is not None:
            try:
                # fetchall() steps the statement to its end, which ends SQLite's read transaction.
                rows = self._inline_reader().execute(sql, args).fetchall()
            except sqlite3.OperationalError as error:
                # Busy or locked: never wait on the event loop's thread. Anything else (the file could not
                # be read): this reader is closed, and opened again by the next read.
                if not sqlite_busy(error):
                    self._drop_inline_reader()
            else:
                return convert(rows[0], results) if rows else None
        try:
            if not self.is_sqlite:
                found: tuple[Any, ...] | None = await self._pg_fetch_first(sql, args, results)
            else:
                async with self._lean_slot(), self.engine.connect() as conn:
                    driver: Any = (await conn.get_raw_connection()).driver_connection  # aiosqlite's
                    rows = await driver.execute_fetchall(sql, args)  # one hop to aiosqlite's thread
                found = convert(rows[0], results) if rows else None
        except Exception as error:
            self._unavailable(error)
            raise
        if self.outage.down_since is not None:
            self.outage.succeeded(write=False)
        return found

    async def write_alone(self, query: Lean, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """Every row one writing statement returns, the statement its own transaction (autocommit, on a
        connection of the lean transactions' pool): for a change that is one statement whatever it finds
        (a job claim: jobs/repository.py `claim_at_once`), one round trip and no unit of work. PostgreSQL
        only (SQLite's writes go through its one writer: `lean_transaction()`). Never sent twice: a write
        whose answer was lost may have committed."""
        assert not self.is_sqlite, "write_alone: PostgreSQL only"
        sql, args, results = query.args(self.engine.dialect, params)
        try:
            async with self._pg_transaction_pool().connection(reusable=_writes_on) as driver:
                found = await driver.fetch(sql, *args)  # a prepared statement cached by asyncpg
        except Exception as error:
            self._unavailable(error)
            raise
        if self.outage.down_since is not None:
            self.outage.succeeded()
        return [convert(row, results) for row in found]

    async def _pg_fetch_first(self, sql: str, args: list[Any], results: tuple[Any, ...]) -> Any:
        """One statement on a lean-pool connection. A single autocommit read changes nothing, so one that
        failed because its connection was found dead (the server ended it just before: a restart, a
        failover) is simply run again, once, on a new connection; one that got no answer in time is not
        (its connection is discarded, the caller answers 503)."""
        for attempt in (1, 2):
            try:
                async with self._pg_lean_pool().connection() as driver:
                    row = await driver.fetchrow(sql, *args)  # a prepared statement cached by asyncpg
            except Exception as error:
                # (not after a timeout: the wait is spent, and another would double it)
                if attempt == 2 or not connection_lost(error) or timed_out(error):
                    raise
                continue
            return convert(row, results) if row is not None else None
        raise AssertionError("unreachable")

    def listener(self, channel: str) -> Listener | SqliteChanges | None:
        """This event loop's listener of `channel` (platpay.db.watch), started by the first call; on a SQLite
        file, this thread's `SqliteChanges`; None where nothing is kept (an in-memory SQLite database, or a max
        age of 0)."""
        if self.watch_max_age <= 0:
            return None
        if self.is_sqlite:
            if self._inline_path is None:
                return None
            thread_key = (threading.get_ident(), channel)
            changes = self._sqlite_changes.get(thread_key)
            if changes is None:
                changes = self._sqlite_changes[thread_key] = SqliteChanges(self._data_version)
            return changes
        key = (running_loop(), channel)
        listener = self._listeners.get(key)
        if listener is None:
            listener = self._listeners[key] = Listener(channel, self._open_pg_connection)
        return listener

    def _pg_transaction_pool(self) -> LeanPool:
        """This event loop's pool for lean transactions: as large as the engine's pool (a transaction holds
        its connection for all its statements), its connections set up as the lean reads' are."""
        loop = running_loop()
        pool = self._pg_transaction_pools.get(loop)
        if pool is None:
            pool = self._pg_transaction_pools[loop] = LeanPool(
                self._open_pg_connection, size=self._lean_limit or 8, timeout=self.timeout
            )
        return pool

    def _pg_lean_pool(self) -> LeanPool:
        """This event loop's pool for lean reads (platpay.db.lean_pool): its connections decode JSON
        exactly as the engine's do, and a use costs a fraction of a checkout through SQLAlchemy's pool.

        A quarter of the engine's pool size: a lean read holds its connection for one short statement, so
        a few serve every concurrent request (they queue briefly, first come first served), without
        doubling the process's share of PostgreSQL's max_connections."""
        loop = running_loop()
        pool = self._pg_pools.get(loop)
        if pool is None:
            pool = self._pg_pools[loop] = LeanPool(
                self._open_pg_connection, size=max(2, (self._lean_limit or 8) // 4), timeout=self.timeout
            )
        return pool

    async def _open_pg_connection(self) -> Any:
        # The URL as SQLAlchemy reads it (several hosts, target_session_attrs), opened as the engine's
        # connections are (platpay.db.hosts): they reach the same server.
        connection = await hosts.connect(
            **connect_arguments(self.engine.dialect, self.engine.url, self.policy)
        )
        try:
            tune_socket(connection, self.policy)
            # The engine's asyncpg dialect decodes json/jsonb to Python values at the driver: the same here,
            # so a Lean's result processors see the same values on both paths.
            await connection.set_type_codec(
                "json",
                encoder=str.encode,
                decoder=lambda v: json.loads(v.decode()),
                schema="pg_catalog",
                format="binary",
            )
            await connection.set_type_codec(
                "jsonb",
                encoder=lambda v: b"\x01" + v.encode(),
                decoder=lambda v: json.loads(v[1:].decode()),
                schema="pg_catalog",
                format="binary",
            )
        except BaseException:
            connection.terminate()
            raise
        return connection

    async def dispose(self) -> None:
        listeners, self._listeners = self._listeners, {}
        for (loop, _channel), listener in listeners.items():
            if loop is asyncio.get_running_loop():
                await listener.stop()
        self._sqlite_changes = {}
        readers, self._inline_readers = self._inline_readers, {}
        for reader in readers.values():
            reader.close()
        pools = [*self._pg_pools.items(), *self._pg_transaction_pools.items()]
        self._pg_pools, self._pg_transaction_pools = {}, {}
        for loop, pool in pools:
            if loop is asyncio.get_running_loop():
                await pool.close()
        if self.replica is not None:
            await self.replica.close()
        if self._writes is not None:
            await self._writes.close()
        await self.engine.dispose()
        if self._checkpointer is not None:
            await asyncio.to_thread(self._checkpointer.stop)
