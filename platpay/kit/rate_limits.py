"""Fixed-window rate limits with their counters in the database, so that a limit holds across every server
process (ARCHITECTURE §1: no correctness in process memory).

`await rate_limits.hit(db, limits=[Limit(key, count, window)], now=...)` counts one attempt against each
limit in a transaction of its own (an attempt counts even when the request then fails: that is what a limit
on bad OTPs is for) and raises 429 RATE_LIMITED with `Retry-After` (seconds until the fullest window ends)
once any count passes its maximum; `record` does the counting in a transaction the caller opens (and
commits) for it. One upsert for all the limits (INSERT … ON CONFLICT DO UPDATE … RETURNING, on SQLite
and PostgreSQL alike; a lean statement, db/lean.py: wallet logins count on every call); the job runner's
housekeeping deletes ended windows (`purge`).

A repository whose statement also reads what a limit's key is made of (a wallet's credential and its
account) counts in that same statement on PostgreSQL: `counting` builds the upsert as a data-modifying CTE
over the rows it reads, `window_of` gives each limit's window, and `refusal` judges the counts it returned.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import BigInteger, Integer, String, bindparam, delete, literal, select, union_all
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db import lean
from platpay.db.base import Base
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.unit_of_work import LeanSession
from platpay.errors import RateLimited

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


class RateLimitCounterRow(Base):
    __tablename__ = "rate_limit_counters"

    key: Mapped[str] = mapped_column(String(200), primary_key=True)  # what is limited, tenant included
    window_start: Mapped[int] = mapped_column(BigInteger, primary_key=True)  # epoch seconds
    window_end: Mapped[int] = mapped_column(BigInteger, index=True)
    count: Mapped[int] = mapped_column(Integer)


_COUNTERS = RateLimitCounterRow.__table__


@dataclass(frozen=True, slots=True)
class Limit:
    key: str  # e.g. "wallets.verify:credential:<id>"; include the tenant where ids could collide
    maximum: int  # attempts allowed per window
    window_seconds: int
    what: str = "requests"  # for the message: "verification attempts for this credential"


def _upsert_for(module: Any, count: int) -> Any:
    rows = [
        {
            "key": bindparam(f"key_{index}", type_=_COUNTERS.c.key.type),
            "window_start": bindparam(f"window_start_{index}", type_=_COUNTERS.c.window_start.type),
            "window_end": bindparam(f"window_end_{index}", type_=_COUNTERS.c.window_end.type),
            "count": 1,
        }
        for index in range(count)
    ]
    return (
        module.insert(_COUNTERS)
        .values(rows)
        .on_conflict_do_update(
            index_elements=[_COUNTERS.c.key, _COUNTERS.c.window_start],
            set_={"count": _COUNTERS.c.count + 1},
        )
        .returning(_COUNTERS.c.key, _COUNTERS.c.count)
    )


# The upsert of n limits at once (a lean statement: every wallet verify and challenge counts two), per n.
_UPSERTS: dict[int, Lean] = {}


def _upsert(count: int) -> Lean:
    found = _UPSERTS.get(count)
    if found is None:
        found = _UPSERTS[count] = Lean(
            _upsert_for(postgresql, count), dialects={"sqlite": _upsert_for(sqlite, count)}
        )
    return found


def window_of(limit: Limit, now: datetime) -> tuple[int, int]:
    """(start, end) in epoch seconds of the window of `limit` that `now` falls in."""
    start = int(now.timestamp() // limit.window_seconds) * limit.window_seconds
    return start, start + limit.window_seconds


def counting(source: Any, keys: Sequence[tuple[Any, Any, Any]]) -> Any:
    """PostgreSQL: the upsert counting one attempt against each (key, window start, window end) of `keys`
    (SQL expressions over the columns of `source`, a CTE), as a data-modifying CTE `counted` returning
    (key, count); one count per row of `source` — none when `source` finds no row."""
    rows = [
        select(
            key.label("key"), start.label("window_start"), end.label("window_end"), literal(1)
        ).select_from(source)
        for key, start, end in keys
    ]
    upsert = (
        postgresql.insert(_COUNTERS)
        .from_select(["key", "window_start", "window_end", "count"], union_all(*rows))
        .on_conflict_do_update(
            index_elements=[_COUNTERS.c.key, _COUNTERS.c.window_start],
            set_={"count": _COUNTERS.c.count + 1},
        )
        .returning(_COUNTERS.c.key, _COUNTERS.c.count)
    )
    return upsert.cte("counted")


def refusal(limits: Sequence[Limit], counts: dict[str, int], now: datetime) -> RateLimited | None:
    """The 429 for the counts an upsert returned (by key), when one passes its limit's maximum (else None)."""
    exceeded = [limit for limit in limits if counts.get(limit.key, 0) > limit.maximum]
    if not exceeded:
        return None
    epoch = now.timestamp()
    limit = max(exceeded, key=lambda item: window_of(item, now)[1])
    retry_after = max(1, math.ceil(window_of(limit, now)[1] - epoch))
    return RateLimited(
        f"too many {limit.what}: at most {limit.maximum} per {limit.window_seconds} s; retry after {retry_after} s",
        headers={"Retry-After": str(retry_after)},
        details={"limit": limit.maximum, "windowSeconds": limit.window_seconds, "retryAfter": retry_after},
    )


async def record(session: LeanSession, *, limits: Sequence[Limit], now: datetime) -> RateLimited | None:
    """Count one attempt against every limit, in one statement of the caller's transaction — which must
    commit whatever the request then does (a transaction of its own: an attempt that fails still counts);
    the 429 to raise once it has committed, when a limit is exceeded (else None)."""
    if not limits:
        return None
    params: dict[str, Any] = {}
    for index, limit in enumerate(limits):
        start, end = window_of(limit, now)
        params[f"key_{index}"] = limit.key
        params[f"window_start_{index}"] = start
        params[f"window_end_{index}"] = end
    counts = dict(await lean.rows(session, _upsert(len(limits)), params))
    return refusal(limits, counts, now)


async def hit(db: Database, *, limits: Sequence[Limit], now: datetime) -> None:
    """`record` in a transaction of its own, raising the 429 once the counts are committed."""
    async with db.transaction() as session:
        refusal = await record(session, limits=limits, now=now)
    if refusal is not None:
        raise refusal


async def purge(session: AsyncSession, *, now: datetime) -> int:
    """Delete the counters of windows that have ended (the job runner's housekeeping)."""
    result = await session.execute(delete(_COUNTERS).where(_COUNTERS.c.window_end <= int(now.timestamp())))
    return cast("CursorResult[Any]", result).rowcount or 0
