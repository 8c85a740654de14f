"""Lean statements: fixed Core statements for the hot paths, run straight on the driver.

A `Lean` wraps a Core statement built once at import (a module constant): a SELECT, or an INSERT/UPDATE
with or without RETURNING. It is compiled once per dialect; binds and results go through the column
types' own SQLAlchemy processors (JSON, aware UTC timestamps), so values go in and come back exactly as
through the ORM; rows are plain tuples in the order of the statement's columns.

`rows`, `first` and `execute_many` run one inside the caller's session transaction, on its connection's
driver (asyncpg, aiosqlite — inline on the event loop's thread while the connection holds SQLite's write lock,
platpay.db.sqlite_inline): same connection, same transaction and savepoints as the ORM statements around
it, without the session's per-statement machinery (ORM execution context, compiled-cache lookup, result
objects), which costs several times the driver call itself on the money paths. Driver errors are raised
as SQLAlchemy's (`IntegrityError`, `OperationalError`, ...), as `session.execute` would raise them; one
that shows the connection is lost (the server ended it, the network dropped it) or read-only (its writes
refused: platpay.db.faults.refuses_writes) also invalidates it, as `session.execute` would, so that it
never goes back to the pool.

Nothing here bypasses the unit of work's guarantees: a lean write commits or rolls back with the session.
The ORM does not see lean writes; `add` and `get` are the ORM's own insert and lookup of an instance, leanly,
with the same identity-map semantics.

`LeanTransaction` goes one step further for a path whose every statement is lean (a transfer, a card
authorization): a transaction straight on a driver connection (`Database.lean_transaction()`, PostgreSQL
and SQLite), with no ORM session at all (its begin, connection checkout and commit cost several times the
statements' own driver calls). Rows it inserts or reads are snapshots, never attached; an ORM call on it
raises at once.

Lean statements are for the hot paths a benchmark shows they matter on (bench/README.md), and only inside
the repositories of the domains that own those tables: the ledger, the outbox (events, deliveries), jobs,
idempotency keys and payments' transactions; the transfer path's one read of its two accounts and their
owner (accounts' repository, the owner's part built by customers'); a card authorization's card read (with
its sources' accounts and balances appended by their domains) and card transaction INSERT (cards'
repository); an agent's money request's agent and usage, action and audit append (agents' repository); plus
authentication's one read per request (`Database.fetch_first`, or none while the process keeps the
credential: db/watch.py). Every other repository uses the ORM (or Core through the session).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Engine, bindparam, column, event, exc, select, table
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import Dialect
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.orm import Session, SessionTransaction, make_transient_to_detached
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement, Executable, TableClause
from sqlalchemy.sql.util import find_tables
from sqlalchemy.util import await_only

from platpay.db.faults import connection_lost, refuses_writes, timed_out
from platpay.db.sqlite_inline import InlineConnection
from platpay.db.unit_of_work import LeanSession, Raced

Plan = tuple[str, tuple[tuple[str, Any, Any], ...], tuple[Any, ...]]


class Lean:
    """A fixed Core statement, compiled once per dialect, executed on the driver (see the module).
    `dialects`: the statement to run instead on the dialects it names, for one spelled differently there
    (`platpay.db.portable`)."""

    __slots__ = ("_dialects", "_plans", "_tables", "outside_transaction", "statement")

    def __init__(
        self,
        statement: Executable,
        *,
        dialects: Mapping[str, Executable] | None = None,
        outside_transaction: bool = False,
    ) -> None:
        """`outside_transaction`: a SELECT that takes a transaction-scoped advisory lock, which may still run
        before a LeanTransaction's BEGIN (in autocommit: the lock then guards only the read itself; see
        `LeanTransaction`). Any other SELECT without row locks may, and no other statement."""
        self.statement = statement
        self._dialects = dict(dialects or {})
        self._plans: dict[str, Plan] = {}
        self._tables: frozenset[str] | None = None
        self.outside_transaction = outside_transaction

    def tables(self) -> frozenset[str]:
        """The names of the tables the statement reads or writes (PostgreSQL's write buffer: a statement
        that touches none of the tables with deferred writes carries them, see `defer`)."""
        if self._tables is None:
            self._tables = frozenset(
                table.name
                for table in find_tables(
                    cast(ClauseElement, self.statement),
                    include_crud=True,
                    include_joins=True,
                    include_aliases=True,
                    check_columns=True,
                )
                if table is not None  # (a column of no table: count(*))
            )
        return self._tables

    def plan(self, dialect: Dialect) -> Plan:
        """(SQL, per-parameter (name, default, bind processor), per-result-column processors)."""
        plan = self._plans.get(dialect.name)
        if plan is None:
            statement = self._dialects.get(dialect.name, self.statement)
            # (a Select, an Insert or an Update: an Executable and a ClauseElement, compiled by a SQLCompiler)
            compiled = cast("SQLCompiler", cast(ClauseElement, statement).compile(dialect=dialect))
            binds = tuple(
                (
                    name,
                    compiled.binds[name].value,
                    compiled.binds[name].type.dialect_impl(dialect).bind_processor(dialect),
                )
                for name in compiled.positiontup or ()
            )
            columns = getattr(statement, "exported_columns", ())
            results = tuple(
                column.type.dialect_impl(dialect).result_processor(dialect, None) for column in columns
            )
            plan = self._plans[dialect.name] = (compiled.string, binds, results)
        return plan

    def args(self, dialect: Dialect, params: dict[str, Any]) -> tuple[str, list[Any], tuple[Any, ...]]:
        sql, binds, results = self.plan(dialect)
        args = []
        for name, default, process in binds:
            value = params.get(name, default)
            args.append(process(value) if process is not None else value)
        return sql, args, results


def convert(row: Any, results: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(
        value if process is None else process(value) for value, process in zip(row, results, strict=True)
    )


_DRIVER = "platpay_lean_driver"  # session.info: the driver of the session's current transaction
_UNBEGUN = "platpay_lean_unbegun"  # LeanTransaction.info: BEGIN not sent yet
_FRESH = "platpay_lean_fresh"  # LeanTransaction.info: the connection's lease, until its first statement
_TRANSACTION = "platpay_lean_transaction"  # LeanTransaction.info: the driver's transaction, once begun


@event.listens_for(Session, "after_transaction_end")
def _forget_driver(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:  # the root transaction ended: its connection goes back to the pool
        session.info.pop(_DRIVER, None)
        pending: _Pending | None = session.info.pop(_PENDING, None)
        if pending is not None:  # (sent at COMMIT, dropped at a rollback; emptied here whatever happened, so
            pending.clear()  # the connection's info, which holds it too, never sends it later)


@event.listens_for(Session, "after_transaction_create")
def _savepoint_at_once(session: Session, transaction: SessionTransaction) -> None:
    """A nested transaction's SAVEPOINT is sent when `begin_nested()` is called, not with SQLAlchemy's next
    own statement: a lean statement goes straight to the driver, and one sent in between would otherwise
    precede the SAVEPOINT and survive a rollback to it. (Runs inside the session's greenlet.)"""
    if transaction.nested and _DRIVER in session.info:  # lean statements ran on this transaction
        session.connection()


Driver = tuple[Any, Any, Dialect, AsyncConnection]


class LeanTransaction:
    """A transaction on a driver connection with no ORM session (`Database.lean_transaction()`): what the
    lean functions of this module need of a session — its `info`, which also carries what a transaction
    records for the commit hooks (jobs queued, ids read) — and nothing else. On PostgreSQL driver errors
    come back as asyncpg raised them (as from `Database.fetch_first`); on SQLite as SQLAlchemy's, and BEGIN
    IMMEDIATE, the statements and COMMIT run inline while the write lock is free (platpay.db.sqlite_inline),
    every write at once, the transaction a savepoint in a group commit (platpay.db.sqlite_writes): what
    follows is PostgreSQL's.

    BEGIN is sent lazily (`lease`: the pool's lease of the connection, `platpay.db.lean_pool`): reads
    without row locks run before it, in autocommit, each its own snapshot as in READ COMMITTED; the first
    statement that writes or locks sends BEGIN first, and `finish` COMMITs. An operation whose writes are
    all deferred (`defer`, `defer_returning`, `expect`) never needs BEGIN: `finish` sends its writes as one
    statement, which is its own transaction — one round trip for every write, the row locks its UPDATEs take
    held only while that statement runs. (An `outside_transaction` read's advisory lock guards only that
    read then: an Idempotency-Key's duplicate is caught by the key's primary key instead, kit/idempotency.py.)
    The first statement on the connection, a read or BEGIN, is sent once more on a new connection if the
    pooled one is found lost (nothing was done on it)."""

    __slots__ = ("info",)

    def __init__(self, driver: Any, dialect: Dialect, lease: Any = None) -> None:
        self.info: dict[str, Any] = {_DRIVER: (None, driver, dialect, None)}
        if lease is not None:
            self.info[_UNBEGUN] = True
            self.info[_FRESH] = lease

    def __getattr__(self, name: str) -> Any:
        raise TypeError(
            f"a lean transaction has no ORM session: {name!r} is not available (only lean statements run here)"
        )


async def _driver(session: LeanSession) -> Driver:
    """(adapted DBAPI connection, driver connection, dialect, SQLAlchemy connection) of the session's
    transaction, begun; looked up once per transaction (each lookup is two greenlet round trips into
    SQLAlchemy)."""
    known: Driver | None = session.info.get(_DRIVER)
    if known is not None:
        return known
    assert isinstance(session, AsyncSession)  # a LeanTransaction knows its driver from its start
    connection = await session.connection()
    fairy = await connection.get_raw_connection()
    adapted: Any = fairy.dbapi_connection  # SQLAlchemy's adapter of the driver's connection
    dialect = connection.dialect
    known = (adapted, fairy.driver_connection, dialect, connection)
    # asyncpg: SQLAlchemy's adapter sends BEGIN lazily, with the first statement it executes itself. A
    # statement sent straight to the driver before that would run outside the transaction (autocommit),
    # so begin it here exactly as the adapter would. (SQLite's BEGIN IMMEDIATE is sent by the engine's
    # "begin" hook when session.connection() starts the transaction.)
    if dialect.name == "postgresql" and getattr(adapted, "_transaction", True) is None:
        try:
            await adapted._start_transaction()
        except Exception as error:
            raise await _failed(known, "BEGIN", (), error) from error
    session.info[_DRIVER] = known
    return known


def _translated(dialect: Dialect, adapted: Any, sql: str, args: Any, error: Exception) -> Exception:
    """The SQLAlchemy exception `session.execute` would have raised for this driver error."""
    dbapi_error: Exception = error
    if dialect.name == "postgresql":
        try:
            adapted._handle_exception(error)  # raises the DBAPI-level (adapted) error
        except Exception as adapted_error:
            dbapi_error = adapted_error
    dbapi = dialect.loaded_dbapi
    if not isinstance(dbapi_error, dbapi.Error):
        return error
    return exc.DBAPIError.instance(sql, args, dbapi_error, dbapi.Error, dialect=dialect)


async def _failed(known: Driver, sql: str, args: Any, error: Exception) -> Exception:
    """The exception to raise for a driver error; a connection the error shows lost is invalidated first
    (SQLAlchemy's own execution path does the same), so the pool discards it instead of handing it out."""
    adapted, driver, dialect, connection = known
    if connection is None:
        # A LeanTransaction. PostgreSQL: the driver's error (its pool discards a lost connection as the error
        # leaves it). SQLite: SQLAlchemy's, as an ORM session's statement raises it.
        return error if dialect.name == "postgresql" else _translated(dialect, adapted, sql, args, error)
    translated = _translated(dialect, adapted, sql, args, error)
    if connection_lost(error, driver):
        if isinstance(translated, exc.DBAPIError):
            translated.connection_invalidated = True
        if not connection.invalidated:
            await connection.invalidate(error)
    elif refuses_writes(error) and not connection.invalidated:
        await connection.invalidate(error)  # its session (or SQLite's file) is read-only: not to be reused
    return translated


async def rows(session: LeanSession, lean: Lean, params: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Run `lean` in the session's transaction; the rows it returns (none for DML without RETURNING)."""
    known = await _driver(session)
    _, driver, dialect, _ = known
    sql, args, results = lean.args(dialect, params)
    deferred: _Pending | None = session.info.get(_PENDING)
    kept: dict[Lean, tuple[dict[str, Any], list[tuple[Any, ...]]]] | None = session.info.get(_KEPT)
    if kept is not None:
        if (deferred is not None and deferred.parts) or not _plain_read(sql):
            session.info.pop(_KEPT)  # writes since, or this statement's, may change what they read
        elif lean in kept and kept[lean][0] == params:  # read with an earlier statement (see `prefetch`)
            return kept.pop(lean)[1]
    behind: _Behind | None = None
    if _BEHIND in session.info and _carries_ahead(sql) and (deferred is None or not deferred.parts):
        behind = session.info.pop(_BEHIND)
        if behind.lean is lean and behind.params == params:
            behind = None  # asked for before anything carried it: sent now, as this statement
        else:
            sql, args, results = _behind_combined(behind, dialect, sql, args, results)
    waiting: _Ahead | None = session.info.pop(_AHEAD, None)
    if waiting is not None:  # a read sent ahead of this statement (see `ahead`)
        if _carries_ahead(sql) and (deferred is None or not deferred.parts):
            found = await _with_ahead(session, known, waiting, sql, args, results)
            return found if behind is None else _keep_behind(session, behind, found)
        await waiting.check(await first(session, waiting.lean, waiting.params))
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is not None and not pending.parts:
        pending = None
    if pending is not None:
        session.info.pop(_KEPT, None)  # writes go out with or before this statement
    if (
        pending is not None
        and (pending.expects or pending.expects_last or _UNBEGUN in session.info)
        and _plain_read(sql)
        and pending.tables.isdisjoint(lean.tables())
    ):
        pending = None  # a read that needs none of them: they stay deferred (to one statement, at the end)
    if _UNBEGUN in session.info and (pending is not None or not _outside(sql, lean)):
        await _begin(session)  # a write or a lock (see LeanTransaction)
        known = session.info[_DRIVER]
    if pending is not None:  # PostgreSQL's deferred writes go first (see `defer`)
        if (
            not pending.expects
            and not pending.expects_last
            and pending.tables.isdisjoint(lean.tables())
            and not sql.startswith("WITH RECURSIVE")
        ):
            sql, args = pending.take(sql, args)  # carried by this statement
        else:
            await _send(pending)
    try:
        if dialect.name == "postgresql":
            found = await _fetch(session, known, sql, args)  # a prepared statement cached by asyncpg
        elif isinstance(driver, InlineConnection) and driver.holds_write_lock():
            found = driver.fetchall_now(sql, args)  # inline: it waits for no lock (platpay.db.sqlite_inline)
        else:
            found = await driver.execute_fetchall(sql, args)  # one hop to aiosqlite's thread
    except Exception as error:
        raise await _failed(known, sql, args, error) from error
    converted = [convert(row, results) for row in found] if results else []
    return converted if behind is None else _keep_behind(session, behind, converted)


async def first(session: LeanSession, lean: Lean, params: dict[str, Any]) -> tuple[Any, ...] | None:
    found = await rows(session, lean, params)
    return found[0] if found else None


async def execute_many(session: LeanSession, lean: Lean, params: list[dict[str, Any]]) -> None:
    """Run a DML `lean` (no RETURNING) once per parameter set, in one driver call."""
    if not params:
        return
    if len(params) == 1:
        await rows(session, lean, params[0])
        return
    known = await _driver(session)
    await _begin(session)
    _, driver, dialect, _ = known = session.info[_DRIVER]
    await flush(session)
    batches = [lean.args(dialect, p) for p in params]
    sql = batches[0][0]
    try:
        if isinstance(driver, InlineConnection) and driver.holds_write_lock():
            driver.executemany_now(sql, [args for _, args, _ in batches])
        else:
            await driver.executemany(sql, [args for _, args, _ in batches])
    except Exception as error:
        raise await _failed(known, sql, [a for _, a, _ in batches], error) from error


# PostgreSQL's write buffer: a transaction's INSERTs whose results nobody reads (a journal entry and its
# postings, an event, a job, a transaction's row, ...) are deferred by their repositories (`defer`) and sent
# together, as data-modifying CTEs (`WITH w0 AS (INSERT ...), w1 AS (INSERT ...) <statement>`), with the
# next lean statement that touches none of their tables (a balance's UPDATE, the idempotency key's INSERT),
# else on their own just before it, before any statement SQLAlchemy sends on the connection (an ORM flush or
# query), before a SAVEPOINT and before COMMIT; a rollback drops them. So a money movement's writes cost one
# round trip, not one each, and run in statement order as before. SQLite runs them at once (in process).
# A deferred write's error (a constraint) surfaces from the statement that sends it.

_PENDING = "platpay_lean_pending"  # session.info, and the SQLAlchemy connection's info: the _Pending
_PARAMETER = re.compile(r"\$(\d+)")


@functools.lru_cache(maxsize=512)
def _renumber(sql: str, offset: int) -> str:
    """`sql` with its parameters $1, $2, ... numbered from offset + 1 (a few shapes per process: cached)."""
    if not offset:
        return sql
    return _PARAMETER.sub(lambda match: f"${int(match.group(1)) + offset}", sql)


@functools.lru_cache(maxsize=512)
def _combined(parts: tuple[str, ...], main: str | None, offset: int, expects: tuple[str, ...] = ()) -> str:
    """The deferred writes `parts` as CTEs of `main` (its parameters numbered after theirs: `offset`), or
    alone (None), then checking `expects`; cached, as the few combinations a process sends are."""
    if main is None and len(parts) == 1 and not expects:
        return parts[0]
    ctes = ", ".join(f"w{n} AS ({part})" for n, part in enumerate(parts))
    if expects:
        assert main is None
        return f"WITH {ctes} SELECT platpay_expect({' AND '.join(expects)})"
    if main is None:
        return f"WITH {ctes} SELECT 1"
    main = _renumber(main, offset)
    if main[:5].upper() == "WITH ":
        return f"WITH {ctes}, {main[5:]}"
    return f"WITH {ctes} {main}"


# A deferred statement's bounds: PostgreSQL takes at most 32,767 parameters per statement, and a CTE per
# row of a bulk write would make statements nobody reuses (their plans and the cache of shapes). A money
# operation defers about eight writes; more than this many are sent in several statements.
_MAX_DEFERRED = 32
_MAX_DEFERRED_ARGS = 16_000


class _Pending:
    """The writes a PostgreSQL transaction deferred, in order, with their parameters numbered as one
    statement's; `expects`: the conditions they stand on (`defer_returning`, `expect`), checked by the
    statement that sends them; `sent`: how many times it was emptied (a `Returned` names a CTE of one
    batch)."""

    __slots__ = ("args", "expects", "expects_last", "known", "parts", "rows", "sent", "tables")

    def __init__(self, known: Driver) -> None:
        self.known = known
        self.parts: list[str] = []
        self.args: list[Any] = []
        self.tables: set[str] = set()
        self.expects: list[str] = []
        self.expects_last: list[str] = []  # checked after `expects` (see `defer_returning`)
        self.rows: set[tuple[Lean, str]] = set()  # the rows a deferred conditional write changes
        self.sent = 0

    def add(self, sql: str, args: list[Any], tables: frozenset[str]) -> str:
        """Defer `sql`; the name of its CTE in the statement that will send it."""
        self.parts.append(_renumber(sql, len(self.args)))
        self.args.extend(args)
        self.tables |= tables
        return f"w{len(self.parts) - 1}"

    def clear(self) -> None:
        self.parts, self.args, self.tables, self.rows = [], [], set(), set()
        self.expects, self.expects_last = [], []
        self.sent += 1

    def take(self, sql: str | None, args: Sequence[Any]) -> tuple[str, list[Any]]:
        """The deferred writes followed by `sql` (None: the writes alone, with their expectations) as one
        statement; emptied. (A statement of the caller's never carries expectations: see `rows`.)"""
        parts, every, expects = self.parts, self.args, self.expects + self.expects_last
        self.clear()
        combined = _combined(tuple(parts), sql, len(every), tuple(expects))
        every.extend(args)
        return combined, every


# platpay_expect (migration 0027_expect) raises this SQLSTATE when a deferred write's condition fails
_EXPECTATION_FAILED = "PP001"


# A statement of deferred writes with conditions that meets a concurrent transaction this way (a deadlock, or a
# serialization failure) wrote nothing: the careful attempt runs, as for a failed condition.
_CONCURRENT = frozenset({"40P01", "40001"})


async def _send(pending: _Pending) -> None:
    expected = bool(pending.expects or pending.expects_last)
    sql, args = pending.take(None, ())
    _, driver, _, _ = pending.known
    try:
        await driver.execute(sql, *args)
    except Exception as error:
        if getattr(error, "sqlstate", None) == _EXPECTATION_FAILED:
            raise Raced("a deferred write found its rows changed (platpay_expect)") from error
        if expected and getattr(error, "sqlstate", None) in _CONCURRENT:
            raise Raced("deferred conditional writes met a concurrent transaction") from error
        raise await _failed(pending.known, sql, args, error) from error


async def defer(
    session: LeanSession, lean: Lean, params: dict[str, Any], *, reading: Returned | None = None
) -> None:
    """Run a DML `lean` (no RETURNING) whose result nobody reads in the session's transaction: on PostgreSQL
    deferred to the transaction's write buffer (above), on SQLite at once. `reading`: what an earlier
    deferred write of this transaction returns (`defer_returning`), which `lean` selects from through
    `Returned.stand_in` (PostgreSQL only)."""
    known = await _driver(session)
    _, _, dialect, _ = known
    if dialect.name != "postgresql":
        assert reading is None, "a Returned exists only on PostgreSQL"
        await rows(session, lean, params)
        return
    pending = await _buffer(session, known, lean, params)
    sql, args, _ = lean.args(dialect, params)
    if reading is not None:
        if reading.pending is not pending or reading.batch != pending.sent:  # (sent since: a bulk write)
            raise Raced("a deferred write's RETURNING was sent before the write reading it")
        sql = sql.replace(_STAND_IN, reading.name)
    pending.add(sql, args, lean.tables())


async def _buffer(session: LeanSession, known: Driver, lean: Lean, params: dict[str, Any]) -> _Pending:
    """The transaction's write buffer, with room for `lean`'s write (a full one is sent first)."""
    _, _, dialect, connection = known
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is None:
        pending = session.info[_PENDING] = _Pending(known)
        if connection is not None:  # an ORM session: what SQLAlchemy sends on it sends these first
            cast(Any, connection.sync_connection).info[_PENDING] = pending
    if pending.parts and (
        len(pending.parts) >= _MAX_DEFERRED
        or len(pending.args) + len(lean.plan(dialect)[1]) > _MAX_DEFERRED_ARGS
    ):  # a bulk write (a backlog's events, hundreds of jobs): sent in statements of bounded size
        await _begin(session)
        await _send(pending)
    return pending


# What a deferred write returns, for a later deferred write of the same statement to read: the UPDATE of a
# balance (the ledger) returns the balance after it, which the event announcing it carries. A statement
# that reads it selects from `Returned.stand_in(...)`, a table of that name, renamed to the CTE's when
# deferred; it must then return exactly one row, or the whole statement fails (`platpay_expect`) and the
# operation runs again in an ORM session (`Raced`): an UPDATE that found no row to change (a balance
# that cannot pay) is the careful attempt's to explain.
_STAND_IN = "platpay_lean_returned"


class Returned:
    __slots__ = ("batch", "name", "pending")

    def __init__(self, pending: _Pending, name: str) -> None:
        self.pending, self.name, self.batch = pending, name, pending.sent

    @staticmethod
    def stand_in(lean: Lean) -> TableClause:
        """A table with the columns `lean` returns, to select them from in a statement `defer`red with
        `reading=` the Returned of `lean`."""
        returned = cast(Any, lean.statement).exported_columns
        return table(_STAND_IN, *(column(c.key, c.type) for c in returned))


async def defer_returning(
    session: LeanSession,
    lean: Lean,
    params: dict[str, Any],
    *,
    row: str,
    last: bool = False,
    returns: int = 1,
) -> Returned | None:
    """Defer a DML `lean` with RETURNING that must return exactly one row (an UPDATE that must find its
    row, `row` naming it; `returns`: exactly that many, an UPDATE of several rows that must find them all),
    in a PostgreSQL LeanTransaction: what it returns is for later deferred writes to read (`defer`'s
    `reading`); if it returns another number of rows, the statement that sends it fails and `Raced` is
    raised. Elsewhere (SQLite, an ORM session, where each condition is checked as it comes), or when a
    deferred write already changes `row` (one statement must not change a row twice): None, run it now.

    The statement checks its conditions, and so takes their rows' locks, in the order they were made, but
    those made `last` after all others (a balance's row: every path locks it after the rows it decides by,
    so no two transactions wait on each other)."""
    if not defers_checks(session):
        return None
    known = await _driver(session)
    pending = await _buffer(session, known, lean, params)
    key = (lean, row)
    if key in pending.rows:
        return None
    sql, args, _ = lean.args(known[2], params)
    name = pending.add(sql, args, lean.tables())
    pending.rows.add(key)
    condition = f"(SELECT count(*) FROM {name}) = {int(returns)}"  # noqa: S608  (a CTE name of ours: "w<n>")
    (pending.expects_last if last else pending.expects).append(condition)
    return Returned(pending, name)


async def derive(session: LeanSession, lean: Lean, params: dict[str, Any], *, reading: Returned) -> Returned:
    """A SELECT `lean` over what `reading` returns (through `Returned.stand_in`), deferred with the
    transaction's writes as a value of its own for later deferred writes to read, as they read `reading`
    (the ledger: one account's balance after one entry of several that one UPDATE applied together)."""
    known = await _driver(session)
    pending = await _buffer(session, known, lean, params)
    if reading.pending is not pending or reading.batch != pending.sent:  # (sent since: a bulk write)
        raise Raced("a deferred write's RETURNING was sent before the value derived from it")
    sql, args, _ = lean.args(known[2], params)
    return Returned(pending, pending.add(sql.replace(_STAND_IN, reading.name), args, frozenset()))


def defers_checks(session: LeanSession) -> bool:
    """Whether `session` can defer a conditional write (`defer_returning`, `expect`): a PostgreSQL
    LeanTransaction (SQLite's runs each statement at once)."""
    return isinstance(session, LeanTransaction) and session.info[_DRIVER][2].name == "postgresql"


@dataclass(frozen=True, slots=True)
class Filled:
    """JSON values a deferred INSERT takes from what an earlier deferred write returns: for each path into
    the JSON it stores, SQL over `Returned.stand_in`'s columns (the ledger's balance after a change, in the
    event announcing it)."""

    returned: Returned
    paths: tuple[tuple[tuple[str, ...], Any], ...]


async def expect(session: LeanSession, lean: Lean, params: dict[str, Any]) -> None:
    """A condition the transaction's deferred writes stand on, as a SELECT of one boolean (`lean`), checked
    by the statement that sends them: false, NULL or no row fails it and `Raced` is raised. PostgreSQL
    LeanTransaction only (see `defer_returning`)."""
    known = await _driver(session)
    assert known[3] is None and known[2].name == "postgresql", "expect: a PostgreSQL LeanTransaction only"
    pending = await _buffer(session, known, lean, params)
    sql, args, _ = lean.args(known[2], params)
    name = pending.add(sql, args, frozenset())
    pending.expects.append(f"(SELECT * FROM {name})")  # noqa: S608  (a CTE name of ours: "w<n>")


async def defer_many(session: LeanSession, lean: Lean, params: list[dict[str, Any]]) -> None:
    """`defer` once per parameter set (one round trip on PostgreSQL, one driver call on SQLite)."""
    known = await _driver(session)
    if known[2].name != "postgresql":
        await execute_many(session, lean, params)
        return
    for one in params:
        await defer(session, lean, one)


async def flush(session: LeanSession) -> None:
    """Send the transaction's deferred writes now, and a read still waiting to go ahead of the next
    statement (`ahead`) before them."""
    waiting: _Ahead | None = session.info.pop(_AHEAD, None)
    if waiting is not None:
        await waiting.check(await first(session, waiting.lean, waiting.params))
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is not None and pending.parts:
        await _begin(session)
        await _send(pending)


async def finish(session: LeanSession) -> None:
    """Commit a LeanTransaction (`Database.lean_transaction`): a read still waiting goes, then its deferred
    writes and COMMIT; or, when BEGIN was never sent, its deferred writes as one statement, its own
    transaction (see LeanTransaction)."""
    if _UNBEGUN in session.info:
        waiting: _Ahead | None = session.info.pop(_AHEAD, None)
        if waiting is not None:
            await waiting.check(await first(session, waiting.lean, waiting.params))
    if _UNBEGUN in session.info:
        pending: _Pending | None = session.info.get(_PENDING)
        if pending is not None and pending.parts:
            session.info.pop(_FRESH, None)  # a write: never sent twice
            await _send(pending)
        return
    await flush(session)
    await session.info[_TRANSACTION].commit()


def translated(dialect: Dialect, sql: str, error: BaseException) -> BaseException:
    """The SQLAlchemy exception for a driver error of `sql` run outside a statement of this module (SQLite's
    BEGIN IMMEDIATE, SAVEPOINT, COMMIT: platpay.db.sqlite_writes)."""
    if not isinstance(error, Exception):
        return error
    return _translated(dialect, None, sql, (), error)


async def abort(session: LeanSession) -> None:
    """Roll a LeanTransaction back: its deferred writes are dropped, and ROLLBACK sent if BEGIN was."""
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is not None:
        pending.clear()
    transaction = session.info.get(_TRANSACTION)
    if transaction is not None:
        await transaction.rollback()


def driver_of(session: LeanSession) -> Any:
    """The driver connection a LeanTransaction runs on now."""
    return session.info[_DRIVER][1]


async def _begin(session: LeanSession) -> None:
    """Send a LeanTransaction's BEGIN if it was not sent yet (on a new connection if the pooled one is found
    lost before anything ran on it)."""
    if session.info.pop(_UNBEGUN, None) is None:
        return
    lease = session.info.pop(_FRESH, None)
    driver = session.info[_DRIVER][1]
    try:
        transaction = driver.transaction()
        await transaction.start()
    except Exception as error:
        if lease is None or not connection_lost(error, driver) or timed_out(error):
            raise
        transaction = (await _renewed(session, lease)).transaction()
        await transaction.start()
    session.info[_TRANSACTION] = transaction


async def _renewed(session: LeanSession, lease: Any) -> Any:
    """A new connection in place of the LeanTransaction's, found lost at its first statement."""
    driver = await lease.renew()
    # (a LeanTransaction has no SQLAlchemy connection)
    known = cast(Driver, (None, driver, session.info[_DRIVER][2], None))
    session.info[_DRIVER] = known
    pending: _Pending | None = session.info.get(_PENDING)
    if pending is not None:
        pending.known = known
    return driver


async def _fetch(session: LeanSession, known: Driver, sql: str, args: Sequence[Any]) -> Any:
    """`fetch` on PostgreSQL; a LeanTransaction's first statement (a read before BEGIN: see `_begin`) is
    sent once more on a new connection if the pooled one is found lost."""
    lease = session.info.pop(_FRESH, None)
    driver = known[1]
    try:
        return await driver.fetch(sql, *args)
    except Exception as error:
        if lease is None or not connection_lost(error, driver) or timed_out(error):
            raise
    return await (await _renewed(session, lease)).fetch(sql, *args)


@functools.lru_cache(maxsize=256)
def _plain_read(sql: str) -> bool:
    """A SELECT without row locks or advisory locks (what may run before a LeanTransaction's BEGIN)."""
    return _carries_ahead(sql) and "advisory" not in sql.lower()


def _outside(sql: str, lean: Lean) -> bool:
    return _plain_read(sql) or (lean.outside_transaction and sql[:7].upper() == "SELECT ")


# A read sent ahead: a LeanTransaction's first read whose answer decides whether the operation goes on (the
# Idempotency-Key's lock and stored answer, kit/idempotency.py) rides with the transaction's next statement
# when that is a plain SELECT (the operation's first read: a transfer's accounts), as one statement:
# `SELECT * FROM (<ahead>) AS ahead LEFT JOIN LATERAL (SELECT true, main.* FROM (<next>) AS main) ON true`.
# Its check runs on its row before the next statement's rows are returned, and may raise (the operation then
# stops at that statement, its transaction rolled back): one round trip fewer, the same outcome. Anything
# else comes first: a statement that is not a plain SELECT, deferred writes, a flush and COMMIT send it alone.

_AHEAD = "platpay_lean_ahead"  # LeanTransaction.info: the _Ahead waiting for the next statement
_LOCKING = re.compile(r"\bFOR\s+(UPDATE|NO KEY UPDATE|SHARE|KEY SHARE)\b", re.IGNORECASE)


class _Ahead:
    __slots__ = ("check", "lean", "params")

    def __init__(
        self, lean: Lean, params: dict[str, Any], check: Callable[[tuple[Any, ...] | None], Awaitable[None]]
    ) -> None:
        self.lean, self.params, self.check = lean, params, check


async def ahead(
    session: LeanSession,
    lean: Lean,
    params: dict[str, Any],
    check: Callable[[tuple[Any, ...] | None], Awaitable[None]],
) -> None:
    """Run the SELECT `lean` (at most one row) in the session's transaction and hand its row (None: no row) to
    `check`, which may raise. In a PostgreSQL LeanTransaction it goes with the transaction's next statement
    (above): `check` then runs inside that statement's call, and what it raises comes out of it. Elsewhere
    (an ORM session, SQLite), or with a read already waiting, now."""
    known = await _driver(session)
    if known[3] is not None or known[2].name != "postgresql" or _AHEAD in session.info:
        await check(await first(session, lean, params))
        return
    session.info[_AHEAD] = _Ahead(lean, params, check)


@functools.lru_cache(maxsize=64)
def _carries_ahead(sql: str) -> bool:
    """Whether a statement can carry a read ahead of it: a plain SELECT without row locks (a locking read in a
    lateral subquery of an outer join is refused, and a data-modifying one must run as written)."""
    return sql[:7].upper() == "SELECT " and not _LOCKING.search(sql)


@functools.lru_cache(maxsize=64)
def _ahead_sql(first_sql: str, main: str, offset: int) -> str:
    # Both are compiled statements (Lean), their values bound as parameters: no value is spliced in here.
    outer = "SELECT * FROM ({}) AS ahead LEFT OUTER JOIN LATERAL (SELECT true AS ahead_main, main.* FROM ({}) AS main) AS main ON true"
    return outer.format(first_sql, _renumber(main, offset))


async def _with_ahead(
    session: LeanSession,
    known: Driver,
    waiting: _Ahead,
    sql: str,
    args: list[Any],
    results: tuple[Any, ...],
) -> list[tuple[Any, ...]]:
    """Run the read `waiting` and the SELECT `sql` as one statement; `waiting.check` its row, then `sql`'s rows."""
    dialect = known[2]
    first_sql, first_args, first_results = waiting.lean.args(dialect, waiting.params)
    if _UNBEGUN in session.info and not (_outside(first_sql, waiting.lean) and _plain_read(sql)):
        await _begin(session)
        known = session.info[_DRIVER]
    combined = _ahead_sql(first_sql, sql, len(first_args))
    every = [*first_args, *args]
    try:
        found = await _fetch(session, known, combined, every)
    except Exception as error:
        raise await _failed(known, combined, every, error) from error
    width = len(first_results)
    await waiting.check(convert(tuple(found[0])[:width], first_results) if found else None)
    return [convert(tuple(row)[width + 1 :], results) for row in found if row[width] is not None]


# A read sent behind: one the operation will ask for later (`first` with the same statement and parameters)
# but may send now, because nothing it does before asking can change what the read finds (an agent's money
# request: the transfer's accounts, read with the agent and its usage). In a PostgreSQL LeanTransaction it
# rides with the transaction's next plain SELECT, as one statement (the read ahead, if one waits, around
# both): `SELECT * FROM (SELECT 1) AS behind_one LEFT JOIN LATERAL (SELECT true, kept.* FROM (<read>) AS kept
# LIMIT 1) ON true LEFT JOIN LATERAL (SELECT true, main.* FROM (<next>) AS main) ON true`. Its row is kept
# until it is asked for, and forgotten when a statement that is not a plain read runs first (that one may
# change it): it is then read again when asked. One round trip fewer, the same rows: every statement before
# the ask is a plain read of the same (autocommit, or one) snapshot's data.

_BEHIND = "platpay_lean_behind"  # LeanTransaction.info: the _Behind waiting for the next statement
_KEPT = "platpay_lean_kept"  # LeanTransaction.info: the rows of reads sent behind, until asked for


class _Behind:
    __slots__ = ("lean", "params")

    def __init__(self, lean: Lean, params: dict[str, Any]) -> None:
        self.lean, self.params = lean, params


def prefetch(session: LeanSession, lean: Lean, params: dict[str, Any]) -> None:
    """Send the SELECT `lean` (at most one row) with the transaction's next plain SELECT, and keep its row
    until `first(session, lean, params)` asks for it (see above): for a read whose answer nothing before
    the ask can change. Only in a PostgreSQL LeanTransaction, with no other read waiting to go behind;
    elsewhere nothing: the ask reads it then."""
    if not defers_checks(session) or _BEHIND in session.info:
        return
    if _carries_ahead(lean.plan(session.info[_DRIVER][2])[0]):  # (a locking read is read when asked)
        session.info[_BEHIND] = _Behind(lean, params)


@functools.lru_cache(maxsize=64)
def _behind_sql(kept_sql: str, main: str, offset: int) -> str:
    # Both are compiled statements (Lean), their values bound as parameters: no value is spliced in here.
    outer = (
        "SELECT * FROM (SELECT 1 AS behind_one) AS behind_one"
        " LEFT OUTER JOIN LATERAL (SELECT true AS kept_row, kept.* FROM ({}) AS kept LIMIT 1) AS kept ON true"
        " LEFT OUTER JOIN LATERAL (SELECT true AS behind_main, main.* FROM ({}) AS main) AS main ON true"
    )
    return outer.format(kept_sql, _renumber(main, offset))


def _behind_combined(
    behind: _Behind, dialect: Dialect, sql: str, args: list[Any], results: tuple[Any, ...]
) -> tuple[str, list[Any], tuple[Any, ...]]:
    """The statement carrying `behind` and `sql`, its arguments and its columns' processors."""
    kept_sql, kept_args, kept_results = behind.lean.args(dialect, behind.params)
    combined = _behind_sql(kept_sql, sql, len(kept_args))
    processors = (None, None, *kept_results, None, *results)
    return combined, [*kept_args, *args], processors


def _keep_behind(
    session: LeanSession, behind: _Behind, found: list[tuple[Any, ...]]
) -> list[tuple[Any, ...]]:
    """Keep the row read behind (from the first row: every row repeats it) and return the main rows."""
    width = len(behind.lean.plan(session.info[_DRIVER][2])[2])
    if found:
        row = found[0]
        kept_rows = [tuple(row[2 : 2 + width])] if row[1] is not None else []
        session.info.setdefault(_KEPT, {})[behind.lean] = (behind.params, kept_rows)
    return [tuple(row[3 + width :]) for row in found if row[2 + width] is not None]


def _pending_of(conn: Any) -> _Pending | None:
    # An invalidated connection (lost, or it refused a write) has no info to read (SQLAlchemy raises
    # PendingRollbackError) and nothing to send: its DBAPI connection is discarded, and the pool clears
    # the info when it connects again.
    if conn.dialect.name != "postgresql" or conn.invalidated:
        return None
    pending: _Pending | None = conn.info.get(_PENDING)
    return pending


@event.listens_for(Engine, "before_cursor_execute")
def _send_before_statement(
    conn: Any, cursor: Any, statement: Any, parameters: Any, context: Any, many: Any
) -> None:
    pending = _pending_of(conn)
    if pending is not None and pending.parts:  # an ORM statement after deferred writes: they go first
        await_only(_send(pending))


@event.listens_for(Engine, "savepoint")
def _send_before_savepoint(conn: Any, name: Any) -> None:
    pending = _pending_of(conn)
    if pending is not None and pending.parts:  # a rollback to the savepoint must keep what came before
        await_only(_send(pending))


@event.listens_for(Engine, "rollback_savepoint")
def _drop_after_savepoint(conn: Any, name: Any, context: Any) -> None:
    pending = _pending_of(conn)
    if pending is not None:  # what was deferred since the savepoint (earlier writes were sent at it)
        pending.clear()


@event.listens_for(Engine, "commit")
def _send_before_commit(conn: Any) -> None:
    pending = _pending_of(conn)
    if pending is not None:
        conn.info.pop(_PENDING, None)
    if pending is not None and pending.parts:
        await_only(_send(pending))


@event.listens_for(Engine, "rollback")
def _drop_at_rollback(conn: Any) -> None:
    if _pending_of(conn) is not None:
        conn.info.pop(_PENDING, None)


# ORM instances, leanly: for the repositories whose rows are read and written on every money movement
# (payments' transactions). An instance read or inserted here is in the session's identity map exactly as
# if the ORM had loaded it, so later changes to it flush as UPDATEs with the unit of work.

_COLUMNS: dict[type, tuple[tuple[str, str, Any], ...]] = {}


def _insert_columns(cls: type[Any]) -> tuple[tuple[str, str, Any], ...]:
    """(column name, attribute name, scalar default or None) of every mapped column of `cls`."""
    columns = _COLUMNS.get(cls)
    if columns is None:
        columns = _COLUMNS[cls] = tuple(
            (
                attr.columns[0].name,
                attr.key,
                attr.columns[0].default.arg
                if attr.columns[0].default is not None and attr.columns[0].default.is_scalar
                else None,
            )
            for attr in sa_inspect(cls).column_attrs
        )
    return columns


async def add(session: LeanSession, insert: Lean, cls: type[Any], values: Mapping[str, Any]) -> Any:
    """`session.add(cls(**values))` and its flush, leanly: insert a new row with `insert` (its table's lean
    INSERT) and return it as a persistent `cls` instance in `session`, as if loaded (later changes to it flush
    as UPDATEs). `values` by attribute name; a column it leaves out or None takes its scalar default (or
    NULL). Built as the ORM's loader builds an instance, without __init__'s per-attribute events."""
    columns = _insert_columns(cls)
    unknown = values.keys() - {key for _, key, _ in columns}
    if unknown:
        raise TypeError(f"{cls.__name__} has no column attribute {sorted(unknown)}")
    params, state = {}, {}
    for name, key, default in columns:
        value = values.get(key)
        if value is None:
            value = default
        params[name] = state[key] = value  # every attribute set (an unset one would be expired on attach)
    await defer(session, insert, params)
    row = sa_inspect(cls).class_manager.new_instance()
    row.__dict__.update(state)
    _attach(session, row)
    return row


def _instance(session: LeanSession, cls: type[Any], values: dict[str, Any]) -> Any:
    """The persistent `cls` instance for a row a lean SELECT read (`values` by attribute name): the one
    already in the session's identity map, else a new one attached as if the ORM had loaded it."""
    mapper = sa_inspect(cls)
    if not isinstance(session, AsyncSession):  # a LeanTransaction, no ORM session: a snapshot
        row = mapper.class_manager.new_instance()
        row.__dict__.update(values)
        return row
    key = mapper.identity_key_from_primary_key([values[c.key] for c in mapper.primary_key])
    existing = session.identity_map.get(key)
    if existing is not None:
        return existing
    # What the ORM's loader does, without __init__'s per-attribute instrumentation events.
    row = mapper.class_manager.new_instance()
    row.__dict__.update(values)
    _attach(session, row)
    return row


_GETS: dict[tuple[Any, ...], tuple[Lean, tuple[str, ...]]] = {}
_MISSING = object()


async def get(session: LeanSession, cls: type[Any], *, for_update: bool = False, **where: Any) -> Any:
    """`session.scalar(select(cls).where(cls.a == a, cls.b.is_(None), ...))`, leanly: the one row matching
    every column = value (`None`: IS NULL) as a persistent instance, or None. Same identity-map semantics
    as the ORM's query: an instance already in the session is returned as it is."""
    shape = (cls, for_update, tuple(sorted((name, value is None) for name, value in where.items())))
    found = _GETS.get(shape)
    if found is None:
        table = cls.__table__
        attrs = sa_inspect(cls).column_attrs
        query = select(*(attr.columns[0] for attr in attrs)).where(
            *(
                table.c[name].is_(None) if is_null else table.c[name] == bindparam(name)
                for name, is_null in shape[2]
            )
        )
        if for_update:
            query = query.with_for_update()
        found = _GETS[shape] = (Lean(query), tuple(attr.key for attr in attrs))
    statement, keys = found
    if not for_update and isinstance(session, AsyncSession):
        # Like session.get: an instance this session already holds is the answer, without a query (a
        # query would return that same instance, unrefreshed, anyway).
        mapper = sa_inspect(cls)
        pk = [where.get(column.key) for column in mapper.primary_key]
        held = session.identity_map.get(mapper.identity_key_from_primary_key(pk)) if all(pk) else None
        if held is not None and all(
            held.__dict__.get(name, _MISSING) == value for name, value in where.items()
        ):
            return held
    row = await first(session, statement, where)
    return None if row is None else _instance(session, cls, dict(zip(keys, row, strict=True)))


def columns_of(cls: type[Any]) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """An ORM class's mapped columns and their attribute names, in the same order: what a lean SELECT of its
    rows selects, and the names `snapshot` gives the values it returns."""
    attrs = sa_inspect(cls).column_attrs
    return tuple(attr.columns[0] for attr in attrs), tuple(attr.key for attr in attrs)


def snapshot(cls: type[Any], keys: tuple[str, ...], values: Sequence[Any]) -> Any:
    """A `cls` instance holding the values a lean SELECT read (`keys` from `columns_of`), outside any session:
    a row for reading, as the ORM's loader builds it but never attached, so it costs no identity-map or
    unit-of-work bookkeeping (a change to it is not saved)."""
    row = sa_inspect(cls).class_manager.new_instance()
    row.__dict__.update(zip(keys, values, strict=True))
    return row


def set_in_snapshot(row: Any, **values: Any) -> None:
    """Give a `snapshot` new values (by attribute name) as it was given its own: without the attribute
    events an ORM instance's changes fire (it is in no session; the change is not saved)."""
    row.__dict__.update(values)


def _attach(session: LeanSession, row: Any) -> None:
    """Make an instance inserted by a lean INSERT persistent in `session`, as if loaded: later changes
    to it flush as UPDATEs with the unit of work. In a LeanTransaction there is no session: the row stays a
    snapshot (a change to it is not saved)."""
    if not isinstance(session, AsyncSession):
        return
    make_transient_to_detached(row)
    session.add(row)
