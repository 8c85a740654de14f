"""The only source of time. Tests (and later sandbox tenants) freeze or advance it."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

_offset = timedelta(0)
_frozen: datetime | None = None


def now(tenant: object | None = None) -> datetime:
    """Current time, timezone-aware UTC. Tenant logic passes its tenant (a TenantContext): a sandbox
    tenant's own clock can be moved (issue 11); until then every tenant reads the process clock."""
    if _frozen is not None:
        return _frozen
    return datetime.now(UTC) + _offset


def monotonic() -> float:
    """Seconds for measuring durations; never affected by freezing."""
    return time.monotonic()


def freeze(at: datetime | None = None) -> datetime:
    global _frozen
    _frozen = (at or now()).astimezone(UTC)
    return _frozen


def advance(delta: timedelta) -> datetime:
    """Move time forward; works frozen or running."""
    global _frozen, _offset
    if _frozen is not None:
        _frozen = _frozen + delta
    else:
        _offset = _offset + delta
    return now()


def reset() -> None:
    global _frozen, _offset
    _frozen = None
    _offset = timedelta(0)


def isoformat(value: datetime) -> str:
    """ISO 8601 UTC with a Z suffix and millisecond precision, as every API timestamp is rendered."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
