"""Which server of a multi-host PostgreSQL URL platpay writes to: the writable one on the newest WAL timeline.

`PLATPAY_DATABASE_URL` may list a primary and its standbys
(`postgresql+asyncpg://user:pw@/db?host=h1:5432&host=h2:5432&target_session_attrs=read-write`). asyncpg
alone takes the first listed host that accepts writes. After a failover that is right until the old
primary is started again as a writable server (an operator's mistake, or a machine that comes back by
itself): listed first, it would take every new connection while the promoted standby holds the newer
data, and payments would be split between two databases (split brain).

So when a URL lists several hosts and asks for a writable one (`target_session_attrs` read-write or
primary), `connect` opens a connection to every listed host at once and asks each whether it accepts writes
and on which WAL timeline it writes (the first 8 hex digits of `pg_walfile_name(pg_current_wal_lsn())`;
a promotion always starts a new, higher timeline, and a former primary started again stays on its old
one). It keeps the first writable host on the newest timeline and closes the others; a writable host on
an older timeline is refused and logged (`database.stale_primary`, an error, once per host and timeline
per process). Each process also remembers the newest timeline it has seen (per system identifier, which
every server of one replication family shares): once it has written to the promoted standby, it refuses
the old primary even when the promoted standby is unreachable (the connection fails as an outage: a 503
with Retry-After, and startup waits) rather than write to a stale primary.

What this cannot know: a process started while the new primary is unreachable and the old one is up and
writable sees no newer timeline anywhere, and writes to the old one. The operator's part (never start a
former primary as a writable server; rebuild it as a standby) is in docs/operations.md, "Failover".

Why timelines rather than a fence recorded in the database (a row the new primary writes, "primary since
timeline N"): the fence would live only on the new primary and its standbys; the old primary never gets
it, so a freshly started process connected to the old primary would see nothing unless it also asked the
new one, which is what comparing timelines does, with nothing to write and no step to forget in a failover.

This costs nothing per request: it runs when a pool opens a connection (at start, after a failover, when
a pool grows), one connection per listed host at that moment. A host that does not answer holds up an
opening until the connect timeout only while the process has not yet seen a writable host on the newest
timeline; after that, STRAGGLER_SECONDS. A single-host URL, or one without a writable target, is
asyncpg's own connect.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import asyncpg
import structlog

from platpay.db.faults import DatabaseUnavailable

log = structlog.get_logger("platpay.db")

WRITABLE_TARGETS = frozenset({"read-write", "primary"})
# Once a host on the newest timeline this process has seen accepts writes, the others' answers are awaited
# this much longer (a host that went silent must not delay every connection by the connect timeout).
STRAGGLER_SECONDS = 0.25

_PROBE = """
SELECT pg_catalog.pg_is_in_recovery()
         OR pg_catalog.current_setting('default_transaction_read_only') = 'on' AS read_only,
       CASE WHEN pg_catalog.pg_is_in_recovery() THEN NULL
            ELSE pg_catalog.pg_walfile_name(pg_catalog.pg_current_wal_lsn()) END AS walfile,
       (SELECT system_identifier FROM pg_catalog.pg_control_system()) AS system
"""


@dataclass(frozen=True)
class HostState:
    """What one listed server said when a connection was opened to it."""

    host: str
    port: int
    writable: bool
    timeline: int | None  # of a writable server
    system: int | None

    @property
    def name(self) -> str:
        return f"{self.host}:{self.port}"


# This process's newest timeline seen, per system identifier: (timeline, the host that was on it).
_newest: dict[int | None, tuple[int, str]] = {}
_reported: set[tuple[str, int | None]] = set()  # stale hosts already logged, with their timeline


def wants_newest_writable(arguments: dict[str, Any]) -> bool:
    hosts = arguments.get("host")
    return (
        isinstance(hosts, (list, tuple))
        and len(hosts) > 1
        and arguments.get("target_session_attrs") in WRITABLE_TARGETS
    )


Probe = asyncio.Task[tuple[Any, HostState]]  # a connection to one listed host, and what it said


async def connect(**arguments: Any) -> Any:
    """asyncpg.connect's keyword arguments (as platpay.db.connect.connect_arguments builds them): a
    connection to the server to write to. For a multi-host writable target, the newest writable server's."""
    if not wants_newest_writable(arguments):
        return await asyncpg.connect(**arguments)
    single = {
        key: value for key, value in arguments.items() if key not in ("host", "port", "target_session_attrs")
    }
    timeout = float(arguments.get("timeout") or 60)
    probes: list[Probe] = [
        asyncio.ensure_future(_probe(host, int(port), single, timeout))
        for host, port in zip(arguments["host"], arguments["port"], strict=True)
    ]
    chosen = None
    try:
        await _wait(probes, timeout)
        answered = [found for found in map(_answer, probes) if found is not None]
        chosen = choose([state for _, state in answered])
        if chosen is None:
            raise _no_writable(probes)
        return next(connection for connection, state in answered if state is chosen)
    finally:
        for probe in probes:
            found = _answer(probe)
            if not probe.done():
                probe.cancel()  # asyncpg closes what it had opened
            elif found is not None and found[1] is not chosen:
                found[0].terminate()


async def _probe(host: str, port: int, arguments: dict[str, Any], timeout: float) -> tuple[Any, HostState]:
    connection = await asyncpg.connect(host=host, port=port, **arguments)
    try:
        row = await connection.fetchrow(_PROBE, timeout=timeout)
    except BaseException:
        connection.terminate()
        raise
    writable = not row["read_only"] and row["walfile"] is not None
    timeline = int(row["walfile"][:8], 16) if writable else None
    return connection, HostState(host, port, writable, timeline, row["system"])


def _answer(probe: Probe) -> tuple[Any, HostState] | None:
    """The probe's connection and state, if it has finished and succeeded."""
    if not probe.done() or probe.cancelled() or probe.exception() is not None:
        return None
    return probe.result()


async def _wait(probes: list[Probe], timeout: float) -> None:
    """Until every probe is done, or a host on the newest timeline this process knows accepts writes and
    the others had STRAGGLER_SECONDS more, or `timeout`."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pending: set[Probe] = set(probes)
    while pending:
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        _done, pending = await asyncio.wait(pending, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        if pending and any(_on_newest_known(found[1]) for found in map(_answer, probes) if found is not None):
            deadline = min(deadline, loop.time() + STRAGGLER_SECONDS)


def _on_newest_known(state: HostState) -> bool:
    newest = _newest.get(state.system)
    return state.writable and newest is not None and state.timeline == newest[0]


def choose(states: list[HostState]) -> HostState | None:
    """The first writable host on the newest timeline (this answer's, or one seen before); None if none is
    writable, or every writable host is behind a timeline seen before. Logs the stale ones."""
    writable = [state for state in states if state.writable]
    if not writable:
        return None
    if len({state.system for state in writable}) > 1:
        log.error(
            "database.unrelated_hosts",
            hosts={state.name: state.system for state in writable},
            message="the URL's writable hosts are different clusters (system identifiers differ), not a "
            "primary and its standbys: fix PLATPAY_DATABASE_URL",
        )
    chosen = None
    for system in dict.fromkeys(state.system for state in writable):
        family = [state for state in writable if state.system == system]
        best = max(family, key=lambda state: state.timeline or 0)
        assert best.timeline is not None
        seen = _newest.get(system)
        if seen is None or best.timeline > seen[0]:
            seen = _newest[system] = (best.timeline, best.name)
        for state in family:
            if state.timeline != seen[0]:
                _report_stale(state, seen)
            elif chosen is None or states.index(state) < states.index(chosen):
                chosen = state
    return chosen


def _report_stale(state: HostState, newest: tuple[int, str]) -> None:
    if (state.name, state.timeline) in _reported:
        return
    _reported.add((state.name, state.timeline))
    log.error(
        "database.stale_primary",
        host=state.name,
        timeline=state.timeline,
        newest_timeline=newest[0],
        newest_host=newest[1],
        message=f"{state.name} accepts writes on WAL timeline {state.timeline}, older than timeline "
        f"{newest[0]} ({newest[1]}): a former primary started again after a failover. platpay never writes "
        "to it; stop it and rebuild it as a standby of the new primary (docs/operations.md, Failover)",
    )


def _no_writable(probes: list[Probe]) -> BaseException:
    """What to raise when no host is fit: as asyncpg would (the last host's connection error, or no host
    accepting writes), unless a writable host was refused as a former primary (an outage: 503)."""
    stale = [found[1] for found in map(_answer, probes) if found is not None and found[1].writable]
    if stale:
        names = ", ".join(f"{state.name} (timeline {state.timeline})" for state in stale)
        return DatabaseUnavailable(
            f"no writable database server on the newest timeline; {names} is a former primary"
        )
    errors = [probe.exception() for probe in probes if probe.done() and not probe.cancelled()]
    last = next((error for error in reversed(errors) if error is not None), None)
    if last is not None:
        return last
    if not all(probe.done() for probe in probes):
        return TimeoutError("no database server answered in time")
    return asyncpg.exceptions.TargetServerAttributeNotMatched(
        "None of the hosts match the target attribute requirement 'read-write'"
    )


def forget() -> None:
    """Forget the timelines seen (tests: a new cluster family in the same process)."""
    _newest.clear()
    _reported.clear()
