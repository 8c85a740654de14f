"""Database faults: telling an outage (connection lost, refused, timed out, server restarting, SQLite busy)
from a bug, and what the service answers while it lasts.

A database that is unreachable or restarting is not the client's fault and not a crash: requests answer
503 SERVICE_UNAVAILABLE with `Retry-After` (`DatabaseUnavailable`), pools drop every connection such a
fault touched, and the service recovers by itself once the database answers again. A request whose
COMMIT was cut off also answers 503: its outcome is unknown to us, and the client's retry with the same
Idempotency-Key either replays what committed or runs the operation once (see `platpay.kit.idempotency`).

A database that refuses writes but still reads (PostgreSQL's `default_transaction_read_only`, a hot
standby not yet promoted: SQLSTATE 25006; SQLite on a file it opened read-only: SQLITE_READONLY; a full
disk: SQLSTATE 53100, SQLITE_FULL) is the same kind of outage for a write: 503 naming the reason
(`READ_ONLY`, `DISK_FULL`), the transaction rolled back whole, nothing stored under its Idempotency-Key.
Reads go on. A connection whose session is read-only never serves a write again (`refuses_writes`: the
pools discard it), so writes succeed again, in the same process, as soon as the database takes them.

Each process logs one `database.unavailable` line when an outage starts and one `database.recovered`
when an operation succeeds again (`OutageLog`; for an outage that only refuses writes, a write), not a
stack trace per request.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from typing import Any

import asyncpg
import structlog
from sqlalchemy import exc as sa_exc

from platpay.errors import ApiError, ServiceUnavailable

log = structlog.get_logger("platpay.db")

RETRY_AFTER_SECONDS = 1

# SQLSTATE classes and codes that mean the server cannot serve this connection (or any, right now).
_CONNECTION_CLASSES = ("08",)  # connection exception: the connection is gone
# Admin shutdown (pg_terminate_backend, a fast stop), crash shutdown, cannot connect now (starting up).
_SHUTDOWN_CODES = {"57P01", "57P02", "57P03"}
# The server ended a session left idle inside a transaction (idle_in_transaction_session_timeout).
_IDLE_ENDED = "25P03"
_STATEMENT_TIMEOUT = "57014"  # query_canceled: statement_timeout (platpay.db.connect) or a cancel request
# Deadlock detected, serialization failure: the server aborted one transaction of two that conflicted; the
# same request again (with its Idempotency-Key) runs afresh. Lock order keeps these rare (docs/architecture.md).
_CONFLICT_CODES = {"40P01", "40001"}
_RESOURCE_CLASS = "53"  # insufficient resources: too many connections, disk full, out of memory
_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
_SQLITE_DOWN = ("unable to open database file", "disk i/o error")
_READ_ONLY_CODE = "25006"  # read_only_sql_transaction: default_transaction_read_only, a hot standby
_DISK_FULL_CODE = "53100"  # disk_full
_SQLITE_READ_ONLY = "attempt to write a readonly database"
_SQLITE_FULL = "database or disk is full"

# Reasons of the outages that refuse writes only: reads still succeed meanwhile.
READ_ONLY = "the database is read-only"
DISK_FULL = "the database's disk is full"
WRITES_REFUSED = frozenset({READ_ONLY, DISK_FULL})


class DatabaseUnavailable(ServiceUnavailable):
    """503: the database could not serve this request; retrying shortly is safe (with the same
    Idempotency-Key for a request that moves money)."""

    def __init__(self, reason: str) -> None:
        super().__init__(
            f"the database is unavailable ({reason}); retry in a moment",
            details={"dependency": "database", "reason": reason},
            headers={"Retry-After": str(RETRY_AFTER_SECONDS)},
        )
        self.reason = reason


def _causes(error: BaseException) -> Iterator[BaseException]:
    """`error`, the driver error it wraps and what it was raised from or during, most specific last. An
    ApiError met on the way ends the walk: what it was raised during is its own business."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is None or id(current) in seen or len(seen) > 16:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, ApiError) and current is not error:
            continue
        pending.extend((getattr(current, "orig", None), current.__context__, current.__cause__))


def connection_lost(error: BaseException, driver_connection: Any = None) -> bool:
    """True when the connection that raised `error` can never be used again: the server ended it or the
    network dropped it. Such a connection must leave its pool, never return to it."""
    if driver_connection is not None and _is_closed(driver_connection):
        return True
    for cause in _causes(error):
        if isinstance(cause, sa_exc.DBAPIError) and cause.connection_invalidated:
            return True
        sqlstate = getattr(cause, "sqlstate", None) or ""
        if sqlstate[:2] in _CONNECTION_CLASSES or sqlstate in _SHUTDOWN_CODES or sqlstate == _IDLE_ENDED:
            return True
        if isinstance(cause, asyncpg.InterfaceError) and "closed" in str(cause):
            return True
        if isinstance(cause, asyncpg.InternalClientError):
            # The protocol's state no longer matches the server's: seen when the server's goodbye (a
            # terminated backend's FATAL message) arrives on an idle connection just before it is used.
            return True
        if isinstance(cause, (ConnectionError, TimeoutError)):
            return True
    return False


def timed_out(error: BaseException) -> bool:
    """True when `error` is the client's own bound running out: a statement that got no answer within the
    command timeout (platpay.db.connect), a connection attempt that did not complete. The wait is spent:
    the operation is not tried again on another connection (which would double it), the caller answers
    503 and its client retries."""
    return any(isinstance(cause, TimeoutError) for cause in _causes(error))


def refuses_writes(error: BaseException) -> bool:
    """True when `error` says the connection's database refuses writes: a read-only session (its default
    is fixed when it connects: only a new connection sees writes allowed again), a hot standby, SQLite on a
    file opened read-only (it stays so on that connection). Such a connection must leave its pool."""
    return any(_refusal(cause) == READ_ONLY for cause in _causes(error))


def sqlite_busy(error: BaseException) -> bool:
    """True when `error` is SQLite's "locked" or "busy": another connection holds the lock it needed."""
    message = str(error).lower()
    return isinstance(error, sqlite3.OperationalError) and any(marker in message for marker in _SQLITE_BUSY)


def read_only_session(driver_connection: Any) -> bool:
    """True when an asyncpg connection's session is read-only by default or on a hot standby, as the server
    reported it (PostgreSQL 14 and later report both settings as they change: no round trip). A pooled
    connection opened while the database was read-only stays so after the database takes writes again."""
    server_parameters = driver_connection.get_settings  # asyncpg's (not platpay's settings)
    settings = server_parameters()
    return "on" in (
        getattr(settings, "default_transaction_read_only", "off"),
        getattr(settings, "in_hot_standby", "off"),
    )


def _refusal(cause: BaseException) -> str | None:
    """READ_ONLY or DISK_FULL when this one error (not its chain) says so."""
    sqlstate = getattr(cause, "sqlstate", None) or ""
    if sqlstate == _READ_ONLY_CODE:
        return READ_ONLY
    if sqlstate == _DISK_FULL_CODE:
        return DISK_FULL
    if isinstance(cause, sqlite3.Error):
        name = getattr(cause, "sqlite_errorname", "") or ""
        message = str(cause).lower()
        if name.startswith("SQLITE_READONLY") or _SQLITE_READ_ONLY in message:
            return READ_ONLY
        if name == "SQLITE_FULL" or _SQLITE_FULL in message:
            return DISK_FULL
    return None


def _is_closed(driver_connection: Any) -> bool:
    is_closed = getattr(driver_connection, "is_closed", None)
    return bool(is_closed()) if callable(is_closed) else False


def unavailable_reason(error: BaseException) -> str | None:
    """Why the database could not serve, when `error` is an outage rather than a bug; else None."""
    for cause in _causes(error):
        if isinstance(cause, DatabaseUnavailable):
            return cause.reason
        if isinstance(cause, ApiError):
            return None
        if isinstance(cause, sa_exc.TimeoutError):  # the pool had no connection to give in time
            return "no database connection became free in time"
        refusal = _refusal(cause)
        if refusal is not None:
            return refusal
        if isinstance(cause, sa_exc.DBAPIError) and cause.connection_invalidated:
            # Invalidated for refusing writes (its session is read-only), or lost.
            wrapped = (_refusal(inner) for inner in _causes(cause) if not isinstance(inner, ApiError))
            return next((found for found in wrapped if found), "the connection to the database was lost")
        sqlstate = getattr(cause, "sqlstate", None) or ""
        if sqlstate[:2] in _CONNECTION_CLASSES:
            return "the connection to the database was lost"
        if sqlstate in _SHUTDOWN_CODES or sqlstate == _IDLE_ENDED:
            return "the database is restarting or ended the connection"
        if sqlstate == _STATEMENT_TIMEOUT:
            return "the database did not finish the statement in time (statement timeout)"
        if sqlstate in _CONFLICT_CODES:
            return "the database aborted the transaction to resolve a conflict with a concurrent one"
        if sqlstate[:2] == _RESOURCE_CLASS:
            return "the database is out of resources (connections, memory or disk)"
        if isinstance(cause, asyncpg.InterfaceError) and "closed" in str(cause):
            return "the connection to the database was lost"
        if isinstance(cause, asyncpg.TargetServerAttributeNotMatched):  # a subclass of the next
            return "no listed database server accepts writes (a failover in progress?)"
        if isinstance(cause, asyncpg.InternalClientError):
            return "the connection to the database broke"
        if isinstance(cause, sqlite3.OperationalError):
            message = str(cause).lower()
            if any(marker in message for marker in _SQLITE_BUSY):
                return "the database is busy (locked by another writer) beyond the timeout"
            if any(marker in message for marker in _SQLITE_DOWN):
                return "the database file cannot be used"
        if isinstance(cause, ConnectionRefusedError):
            return "the database refused the connection"
        if isinstance(cause, TimeoutError):
            return "the database did not answer in time"
        if isinstance(cause, OSError):
            return f"the database cannot be reached ({type(cause).__name__})"
    return None


class OutageLog:
    """One process's view of the database's availability: logs the start and the end of each outage once,
    however many operations fail during it."""

    def __init__(self) -> None:
        self.down_since: float | None = None
        self.failures = 0
        # The reason the outage started with; while it only refuses writes (WRITES_REFUSED), a read that
        # succeeds does not end it.
        self.reason: str | None = None

    @property
    def writes_refused(self) -> str | None:
        """The reason, while the database is known (to this process) to refuse writes but still read."""
        return self.reason if self.down_since is not None and self.reason in WRITES_REFUSED else None

    def failed(self, error: BaseException, reason: str) -> DatabaseUnavailable:
        """Record a failed operation; the error to raise in its place."""
        self.failures += 1
        if self.down_since is None:
            self.down_since = time.monotonic()
            self.reason = reason
            log.warning("database.unavailable", reason=reason, error=repr(error)[:500])
        elif reason not in WRITES_REFUSED:
            self.reason = reason  # reads fail too now: the next success of any kind ends it
        return DatabaseUnavailable(reason)

    def succeeded(self, *, write: bool = True) -> None:
        """An operation succeeded: a write ends any outage, a read one that did not only refuse writes."""
        if self.down_since is not None and (write or self.reason not in WRITES_REFUSED):
            log.warning(
                "database.recovered",
                down_seconds=round(time.monotonic() - self.down_since, 3),
                failed_operations=self.failures,
            )
            self.down_since = None
            self.failures = 0
            self.reason = None
