"""Of a multi-host URL's servers, platpay writes to the writable one on the newest WAL timeline
(platpay.db.hosts): a former primary started again after a failover is refused and logged, and a process
keeps refusing it once it has seen a newer timeline. The choice itself, on the servers' answers; the real
servers (a crash, a promotion, the old primary back) are tests/e2e/test_failover.py's."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from sqlalchemy.engine import make_url
from structlog.testing import capture_logs

from platpay.db import hosts
from platpay.db.connect import ConnectionPolicy
from platpay.db.database import Database
from platpay.db.hosts import HostState, choose

SYSTEM = 7_300_000_000_000_000_001
TIMEOUT = 2.0  # the connect timeout of the silent-host test


def primary(port: int, timeline: int, system: int = SYSTEM) -> HostState:
    return HostState("127.0.0.1", port, writable=True, timeline=timeline, system=system)


def standby(port: int) -> HostState:
    return HostState("127.0.0.1", port, writable=False, timeline=None, system=SYSTEM)


@pytest.fixture(autouse=True)
def fresh_process() -> Iterator[None]:
    hosts.forget()
    yield
    hosts.forget()


def test_the_first_writable_host_when_the_others_are_standbys() -> None:
    assert choose([standby(1), primary(2, 1), standby(3)]) == primary(2, 1)
    assert choose([standby(1), standby(3)]) is None


def test_a_former_primary_listed_first_is_refused_for_the_promoted_standby_and_logged_once() -> None:
    old, new = primary(1, 1), primary(2, 2)
    with capture_logs() as logs:
        assert choose([old, new]) == new
        assert choose([old, new]) == new
    [stale] = [entry for entry in logs if entry["event"] == "database.stale_primary"]
    assert stale["log_level"] == "error"
    assert (stale["host"], stale["timeline"], stale["newest_timeline"], stale["newest_host"]) == (
        "127.0.0.1:1",
        1,
        2,
        "127.0.0.1:2",
    )


def test_once_a_newer_timeline_was_seen_the_former_primary_alone_is_refused() -> None:
    assert choose([primary(1, 1), primary(2, 2)]) == primary(2, 2)
    assert choose([primary(1, 1), standby(2)]) is None  # the new primary unreachable: no write at all
    assert choose([primary(1, 1)]) is None


def test_a_later_promotion_is_followed() -> None:
    assert choose([primary(1, 2), standby(2)]) == primary(1, 2)
    assert choose([primary(1, 2), primary(2, 3)]) == primary(2, 3)  # the standby promoted: timeline 3


def test_a_fresh_process_without_the_new_primary_cannot_know() -> None:
    """What the guard cannot see (docs/operations.md, Failover: the operator's part)."""
    assert choose([primary(1, 1), standby(2)]) == primary(1, 1)


def test_unrelated_clusters_are_not_compared_and_are_reported() -> None:
    with capture_logs() as logs:
        assert choose([primary(1, 1, system=1), primary(2, 5, system=2)]) == primary(1, 1, system=1)
    assert [entry["event"] for entry in logs] == ["database.unrelated_hosts"]


@pytest.mark.parametrize(
    ("arguments", "probes"),
    [
        ({"host": ["a", "b"], "port": [1, 2], "target_session_attrs": "read-write"}, True),
        ({"host": ["a", "b"], "port": [1, 2], "target_session_attrs": "primary"}, True),
        ({"host": ["a", "b"], "port": [1, 2]}, False),  # any server will do: asyncpg's own choice
        ({"host": ["a", "b"], "port": [1, 2], "target_session_attrs": "prefer-standby"}, False),
        (
            {"host": "a", "port": 1, "target_session_attrs": "read-write"},
            False,
        ),  # one host: nothing to compare
    ],
)
def test_only_a_writable_target_among_several_hosts_is_probed(arguments: dict, probes: bool) -> None:
    assert hosts.wants_newest_writable(arguments) is probes


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port whose listener never accepts: connections complete the handshake and then hear nothing (a
    host whose packets go nowhere, as far as a connection's opening is concerned)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield int(listener.getsockname()[1])


async def test_a_silent_host_delays_only_the_first_opening_of_a_process(
    backend: str, db: Database, silent_port: int
) -> None:
    """Until a process knows the newest timeline it waits for every host (bounded by the connect timeout);
    then a host that does not answer costs STRAGGLER_SECONDS, not the timeout, at each opening."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL connections")
    live = make_url(db.url)
    base = live.set(host=None, port=None).render_as_string(hide_password=False)
    url = f"{base}?host=127.0.0.1:{silent_port}&host={live.host}:{live.port or 5432}&target_session_attrs=read-write"
    database = Database(url, pool_size=1, policy=ConnectionPolicy(timeout=TIMEOUT))
    try:
        openings = []
        for _ in range(3):
            started = time.monotonic()
            async with database._pg_lean_pool().connection() as connection:
                assert await connection.fetchval("SELECT NOT pg_is_in_recovery()")
                connection.terminate()  # the next use opens a new one
            openings.append(time.monotonic() - started)
        print(f"openings with a silent host listed first: {[round(s, 2) for s in openings]} s")
        assert openings[0] >= TIMEOUT * 0.9  # a fresh process waited for the silent host's answer
        assert all(seconds < TIMEOUT * 0.8 for seconds in openings[1:]), openings
    finally:
        await database.dispose()
