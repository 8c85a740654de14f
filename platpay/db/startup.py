"""A command starting while the database is down or restarting waits for it, up to a deadline.

`platpay serve`, `worker`, `migrate` and the other commands that use the database run their first database
steps (reaching it, migrating, bootstrapping) through one `StartupWait`:

- an outage (`faults.unavailable_reason`: connection refused or reset, the server starting up or shutting
  down, SQLSTATE 57P01/57P03, out of connections) is retried with backoff until the deadline
  (PLATPAY_DB_STARTUP_TIMEOUT_SECONDS), logged once as `database.unavailable` and once as
  `database.recovered`, the events a running process logs for an outage (`faults.OutageLog`);
- anything else (bad credentials, a missing database, a failing migration) is not going to get better by
  waiting: it fails at once;
- either failure is a `StartupFailed` carrying one line for the operator, which the CLI prints instead of
  a traceback before it exits 1.

Retrying a migration is safe: on PostgreSQL the migrations run under an advisory lock in one transaction
(migrations/env.py), so a connection cut midway leaves the schema where it was and the next attempt
starts from there; so is retrying the first-start bootstrap, which creates a platform only if none exists.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import text
from sqlalchemy.engine import make_url

from platpay.db.database import build_engine
from platpay.db.faults import OutageLog, unavailable_reason
from platpay.logging import scrub_urls

T = TypeVar("T")

FIRST_DELAY_SECONDS = 0.1
MAX_DELAY_SECONDS = 1.0  # a database back from a restart is used within about a second
MAX_MESSAGE_CHARS = 300

# SQLSTATEs whose fix is in the configuration, with what to check.
_HINTS = {
    "28P01": "check the user and password in PLATPAY_DATABASE_URL",
    "28000": "check the user in PLATPAY_DATABASE_URL and the server's pg_hba.conf",
    "3D000": "create the database or fix its name in PLATPAY_DATABASE_URL",
}


class StartupFailed(Exception):
    """Why a command could not start, in one line."""


def describe(error: BaseException) -> str:
    """`error` in one line: the driver's own message (what PostgreSQL or SQLite said) rather than
    SQLAlchemy's wrapper around it with its statement and links; URLs' credentials scrubbed."""
    inner = error
    for _ in range(8):
        deeper = getattr(inner, "orig", None) or inner.__cause__
        if deeper is None:
            break
        inner = deeper
    message = " ".join(str(inner).split())
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[: MAX_MESSAGE_CHARS - 3] + "..."
    line = f"{type(inner).__name__}: {message}" if message else type(inner).__name__
    hint = _HINTS.get(getattr(inner, "sqlstate", None) or "")
    return scrub_urls(f"{line} ({hint})" if hint else line)


class StartupWait:
    """One command's start: every step it runs shares one deadline and one outage log."""

    def __init__(self, url: str, *, timeout_seconds: float, connect_timeout_seconds: float) -> None:
        self.url = url
        self.timeout_seconds = timeout_seconds
        self.connect_timeout_seconds = connect_timeout_seconds
        self.deadline = time.monotonic() + timeout_seconds
        self.outage = OutageLog()  # give it to a Database the steps use: one event per outage in all

    def run(self, step: str, action: Callable[[], T]) -> T:
        """`action()`, again with backoff while the database is unavailable, until the deadline.

        `step` names what it does ("migrating the database") for the failure's line."""
        delay = FIRST_DELAY_SECONDS
        while True:
            try:
                result = action()
            except StartupFailed:
                raise  # already the operator's line (a database migrated by a newer platpay)
            except Exception as error:
                reason = unavailable_reason(error)
                if reason is None:
                    raise StartupFailed(f"{step} failed: {describe(error)}") from error
                self.outage.failed(error, reason)
                remaining = self.deadline - time.monotonic()
                if remaining <= 0:
                    where = make_url(self.url).render_as_string(hide_password=True)
                    raise StartupFailed(
                        f"{step} failed: the database at {where} is still unavailable after "
                        f"{self.timeout_seconds:g}s (PLATPAY_DB_STARTUP_TIMEOUT_SECONDS): {reason}; "
                        f"last error {describe(error)}"
                    ) from error
                # Jittered: processes started together by one restart do not retry in step.
                time.sleep(min(delay * random.uniform(0.8, 1.2), remaining))
                delay = min(delay * 2, MAX_DELAY_SECONDS)
                continue
            if self.outage.down_since is not None:
                self.outage.succeeded()
            return result

    def until_reachable(self) -> None:
        """Wait until the database accepts a connection and answers a query."""
        self.run("connecting to the database", lambda: asyncio.run(self._probe()))

    async def _probe(self) -> None:
        engine = build_engine(self.url, null_pool=True, timeout=self.connect_timeout_seconds)
        try:
            async with engine.connect() as connection:
                await connection.execute(text("SELECT 1"))
        finally:
            await engine.dispose()
