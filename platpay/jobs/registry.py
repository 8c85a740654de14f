"""Job kinds and their handlers, and the runner's lanes. Domains register handlers (and a lane of their
own, if their jobs must not compete with others for capacity) at import; discovering the domains
(`platpay.domains.load_jobs`) imports them all.
"""

from __future__ import annotations

import importlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncSession

    from platpay.config import Settings
    from platpay.jobs.runner import JobContext

Handler = Callable[["JobContext"], Awaitable[None]]
# Handles a chain of jobs of one kind together (a keyed lane's `chain`, one concurrency key; in the default
# lane, the jobs of one tenant one claim took that it `takes`): it finishes the jobs it handles
# (`runner.finish_together`); the runner runs whatever it left unfinished one by one.
BatchHandler = Callable[[list["JobContext"]], Awaitable[None]]

_HANDLERS: dict[str, Handler] = {}
_BATCH_HANDLERS: dict[str, BatchHandler] = {}
_BATCH_TAKES: dict[str, Callable[[dict[str, Any]], bool] | None] = {}

DEFAULT_LANE = "default"


# Keys whose jobs a lane holds back, each with the one job of it that may still run (or None), as read in
# the claiming transaction at the claim's time.
HeldKeys = Callable[["AsyncSession", datetime], Awaitable[dict[str, str | None]]]


@dataclass(frozen=True)
class Lane:
    """A share of every runner's capacity: `concurrency(settings)` jobs of the lane at once per runner;
    with `key_cap(settings)`, at most that many jobs of one concurrency key at once across all runners, and
    `held`, keys whose jobs wait (but for one each) however long they are due. With `chain(settings)` (a
    keyed lane), one slot takes up to that many due jobs of one key at once and runs them one after the
    other (a job kind with a `batch_handler` handles them together): `concurrency` and `key_cap` count
    chains, the jobs that may run at the same moment."""

    name: str
    concurrency: Callable[[Settings], int]
    key_cap: Callable[[Settings], int] | None = None
    held: HeldKeys | None = None
    chain: Callable[[Settings], int] | None = None


# Every state-changing job (settlement steps, expiries, imports, reviews) runs in the default lane.
_LANES: dict[str, Lane] = {DEFAULT_LANE: Lane(DEFAULT_LANE, lambda settings: settings.job_concurrency)}


def lane(definition: Lane) -> Lane:
    """Register a lane (at import, beside the handlers of the jobs that use it)."""
    _LANES[definition.name] = definition
    return definition


def lanes() -> tuple[Lane, ...]:
    return tuple(_LANES.values())


class UnknownLane(ValueError):
    """A lane named (a worker's `--lanes`) that no domain registered."""


def chosen_lanes(names: Iterable[str]) -> tuple[Lane, ...]:
    """The registered lanes named (in registration order); an unknown or missing name raises UnknownLane,
    which says which lanes there are. A runner given a subset claims only those lanes' jobs."""
    wanted = {name.strip() for name in names if name.strip()}
    unknown = sorted(wanted - _LANES.keys())
    known = ", ".join(sorted(_LANES))
    if unknown:
        listed = ", ".join(repr(name) for name in unknown)
        raise UnknownLane(f"unknown lane{'s' if len(unknown) > 1 else ''} {listed}; the lanes are: {known}")
    if not wanted:
        raise UnknownLane(f"no lane named; the lanes are: {known}")
    return tuple(definition for name, definition in _LANES.items() if name in wanted)


# Housekeeping a domain needs done now and then (deleting expired rows), run by every runner's maintenance
# (every few minutes, in one transaction; safe to run concurrently): `@housekeeping` at import, like handlers.
Housekeeper = Callable[["AsyncSession", datetime], Awaitable[None]]
_HOUSEKEEPERS: list[Housekeeper] = []


def housekeeping(func: Housekeeper) -> Housekeeper:
    if func not in _HOUSEKEEPERS:
        _HOUSEKEEPERS.append(func)
    return func


def housekeepers() -> tuple[Housekeeper, ...]:
    return tuple(_HOUSEKEEPERS)


# Retention: rows a domain keeps for a configurable time, then prunes (docs/operations.md, Retention). A
# domain registers a `Pruner` per kind of row at import, in its jobs.py; the SQL is in its repository. Every
# runner's maintenance schedules them (`JobRunner.prune`): each batch is its own short transaction, a pass
# runs a bounded number of batches of each, and several runners pruning at once share the work.
PruneBatch = Callable[["AsyncSession", datetime, int], Awaitable[int]]


@dataclass(frozen=True)
class Pruner:
    """`prune(session, before, limit)` deletes (or clears) at most `limit` rows that were done with before
    `before` and returns how many; `retention(settings)`: how many days rows are kept (0: forever)."""

    name: str  # what it prunes, in logs and a pass's counts: "webhook_attempts"
    retention: Callable[[Settings], int]
    prune: PruneBatch


_PRUNERS: dict[str, Pruner] = {}


def pruning(definition: Pruner) -> Pruner:
    _PRUNERS[definition.name] = definition
    return definition


def pruners() -> tuple[Pruner, ...]:
    return tuple(_PRUNERS.values())


def handler(kind: str) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        _HANDLERS[kind] = func
        return func

    return register


def get(kind: str) -> Handler | None:
    return _HANDLERS.get(kind)


def batch_handler(
    kind: str, *, takes: Callable[[dict[str, Any]], bool] | None = None
) -> Callable[[BatchHandler], BatchHandler]:
    """Register the handler that runs several jobs of `kind` together (`takes`: which of them it may take
    together, by payload; by default every one; in the default lane the others run on their own)."""

    def register(func: BatchHandler) -> BatchHandler:
        _BATCH_HANDLERS[kind] = func
        _BATCH_TAKES[kind] = takes
        return func

    return register


def get_batch(kind: str) -> BatchHandler | None:
    return _BATCH_HANDLERS.get(kind)


def batches(kind: str, payload: dict[str, Any]) -> bool:
    """Whether a default-lane job of `kind` with `payload` may run in a batch with others."""
    if kind not in _BATCH_HANDLERS:
        return False
    takes = _BATCH_TAKES.get(kind)
    return takes is None or takes(payload)


def load_plugins(plugins: str = "") -> None:
    """Import comma-separated plugin modules that register handlers (PLATPAY_JOB_PLUGINS). The domains'
    own handlers are registered by discovering the domains (`platpay.domains.load_jobs`)."""
    for module in (name.strip() for name in plugins.split(",") if name.strip()):
        importlib.import_module(module)


# How the runner learns the clocks of the tenants whose jobs it claimed (the clocks domain registers it at
# import): {tenant id: kit.clock.TenantClock} for those that have one, read in the claiming transaction.
ClockLoader = Callable[["AsyncSession", set[str]], Awaitable[dict[str, Any]]]
_CLOCK_LOADERS: list[ClockLoader] = []


def clock_loader(func: ClockLoader) -> ClockLoader:
    _CLOCK_LOADERS[:] = [func]
    return func


async def load_clocks(session: AsyncSession, tenant_ids: set[str]) -> dict[str, Any]:
    if not tenant_ids or not _CLOCK_LOADERS:
        return {}
    return await _CLOCK_LOADERS[0](session, tenant_ids)


# And how a claim made in one statement (PostgreSQL: repository.claim_at_once) reads them with its jobs:
# `join(select, tenant_id column)` appends the clock's columns to a SELECT (NULLs for a tenant without one),
# `of(tenant_id, *those columns)` is its clock or None. Registered by the clocks domain beside its loader.
@dataclass(frozen=True)
class ClockColumns:
    join: Callable[[Any, Any], Any]
    of: Callable[..., Any]


_CLOCK_COLUMNS: list[ClockColumns] = []


def clock_columns(definition: ClockColumns) -> ClockColumns:
    _CLOCK_COLUMNS[:] = [definition]
    return definition


def clock_columns_of() -> ClockColumns | None:
    return _CLOCK_COLUMNS[0] if _CLOCK_COLUMNS else None
