"""The only source of time.

Two layers. The process clock (`real_now`) is wall time, which tests freeze or advance process-wide
(`freeze`, `advance`, `reset`). On top of it each sandbox tenant may have a clock of its own (platpay/clocks): a
`TenantClock` is an offset from the process clock, or a fixed frozen instant. `now(tenant)` is a tenant's
business time: the clock of the tenant given (a TenantContext carries its `clock`, loaded with it on every
request and with every job), else the clock of the tenant the current request or job works for (a context
variable set by authentication and by the job runner), else the process clock. Production tenants never
have a TenantClock. Infrastructure (job leases, webhook retry backoff, idempotency retention) reads
`real_now()`.
"""

from __future__ import annotations

import time
from contextvars import ContextVar, Token
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol

_offset = timedelta(0)
_frozen: datetime | None = None

# When a job due on a frozen clock runs: not until the clock moves (the clock's move recomputes it).
NEVER = datetime(2999, 1, 1, tzinfo=UTC)


def real_now() -> datetime:
    """The process clock (wall time, unless a test froze or advanced it): for infrastructure, never for a
    tenant's business logic."""
    if _frozen is not None:
        return _frozen
    return datetime.now(UTC) + _offset


@dataclass(frozen=True, slots=True)
class TenantClock:
    """A sandbox tenant's clock: `frozen_at` when frozen, else the process clock plus `offset`."""

    tenant_id: str
    offset: timedelta = timedelta(0)
    frozen_at: datetime | None = None

    @property
    def frozen(self) -> bool:
        return self.frozen_at is not None

    def now(self) -> datetime:
        return self.frozen_at if self.frozen_at is not None else real_now() + self.offset

    def to_real(self, at: datetime) -> datetime:
        """When (on the process clock) this clock reads `at`: now if it already does; NEVER for a later
        instant of a frozen clock."""
        if self.frozen_at is not None:
            return real_now() if at <= self.frozen_at else NEVER
        return at - self.offset

    def moved_to(self, at: datetime) -> TenantClock:
        """This clock reading `at` now (still frozen, or running from `at`)."""
        if self.frozen_at is not None:
            return TenantClock(self.tenant_id, timedelta(0), at)
        return TenantClock(self.tenant_id, at - real_now(), None)


_current: ContextVar[TenantClock | None] = ContextVar("platpay_tenant_clock", default=None)


def use(state: TenantClock | None) -> Token[TenantClock | None]:
    """The clock of the tenant the current request or job works for (None: the process clock)."""
    return _current.set(state)


def restore(token: Token[TenantClock | None]) -> None:
    _current.reset(token)


def current() -> TenantClock | None:
    return _current.get()


class Clocked(Protocol):
    """What carries a tenant's clock: a TenantContext (tenants), read-only."""

    @property
    def id(self) -> str: ...

    @property
    def clock(self) -> TenantClock | None: ...


# Whose time: a tenant that carries its clock, a clock, a tenant id, or None (the current tenant's).
Tenant = Clocked | TenantClock | str | None


def of(tenant: Tenant) -> TenantClock | None:
    """The clock of `tenant` (a TenantContext, a TenantClock, a tenant id, or None for the current one)."""
    if tenant is None:
        return _current.get()
    if isinstance(tenant, TenantClock):
        return tenant
    state: TenantClock | None = getattr(tenant, "clock", None)
    if state is not None:
        return state
    running = _current.get()
    if running is not None and running.tenant_id == getattr(tenant, "id", tenant):
        return running
    return None


def now(tenant: Tenant = None) -> datetime:
    """Current business time of `tenant` (see the module), timezone-aware UTC."""
    state = _current.get() if tenant is None else of(tenant)
    if state is None:
        return real_now()
    return state.now()


def monotonic() -> float:
    """Seconds for measuring durations; never affected by freezing."""
    return time.monotonic()


def freeze(at: datetime | None = None) -> datetime:
    """Freeze the process clock (tests)."""
    global _frozen
    _frozen = (at or real_now()).astimezone(UTC)
    return _frozen


def advance(delta: timedelta) -> datetime:
    """Move the process clock forward (tests); works frozen or running."""
    global _frozen, _offset
    if _frozen is not None:
        _frozen = _frozen + delta
    else:
        _offset = _offset + delta
    return real_now()


def reset() -> None:
    global _frozen, _offset
    _frozen = None
    _offset = timedelta(0)


def isoformat(value: datetime) -> str:
    """ISO 8601 UTC with a Z suffix and millisecond precision, as every API timestamp is rendered."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
