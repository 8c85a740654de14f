"""A starting command's wait for the database (platpay.db.startup), in-process: PostgreSQL is reached through
a TCP proxy that refuses connections (down) and then accepts them again (back). The commands themselves,
as processes against a PostgreSQL cluster stopped and started, are in tests/e2e/test_startup_database_wait.py.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import AsyncIterator

import pytest
from sqlalchemy.engine import make_url

from platpay.db.startup import StartupFailed, StartupWait
from platpay.logging import configure
from tests.support.tcp_proxy import TcpProxy


@pytest.fixture
async def down(backend: str, database_url: str) -> AsyncIterator[TcpProxy]:
    """A proxy in front of the test's PostgreSQL, stopped: its port refuses connections."""
    if backend != "postgresql":
        pytest.skip("a PostgreSQL that is down and comes back")
    configure("INFO", json_output=True)  # as every command does before its wait
    url = make_url(database_url)
    proxy = await TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
    await proxy.stop()
    try:
        yield proxy
    finally:
        await proxy.stop()


def through(proxy: TcpProxy, database_url: str, **changes: str) -> str:
    url = make_url(database_url).set(host="127.0.0.1", port=proxy.port, **changes)
    return url.render_as_string(hide_password=False)


def database_events(out: str) -> Counter[str]:
    events = (json.loads(line)["event"] for line in out.splitlines() if line.startswith("{"))
    return Counter(event for event in events if event.startswith("database."))


class TestStartupWait:
    async def test_waits_while_the_database_refuses_then_goes_on_logging_the_outage_once(
        self, down: TcpProxy, database_url: str, capsys
    ) -> None:
        wait = StartupWait(through(down, database_url), timeout_seconds=60, connect_timeout_seconds=2)
        waiting = asyncio.create_task(asyncio.to_thread(wait.until_reachable))
        await asyncio.sleep(1.0)  # several attempts are refused meanwhile
        assert not waiting.done()
        await down.start()  # back, on the same port
        await asyncio.wait_for(waiting, timeout=30)
        assert database_events(capsys.readouterr().out) == {
            "database.unavailable": 1,
            "database.recovered": 1,
        }

    async def test_past_the_deadline_it_gives_up_with_one_line_naming_the_deadline_and_the_reason(
        self, down: TcpProxy, database_url: str, capsys
    ) -> None:
        url = through(down, database_url, password="secret-in-the-url")
        wait = StartupWait(url, timeout_seconds=0.3, connect_timeout_seconds=2)
        with pytest.raises(StartupFailed) as failed:
            await asyncio.to_thread(wait.until_reachable)
        message = str(failed.value)
        assert "\n" not in message
        assert message.startswith("connecting to the database failed: the database at ")
        assert "still unavailable after 0.3s (PLATPAY_DB_STARTUP_TIMEOUT_SECONDS)" in message
        assert "the database refused the connection" in message
        out = capsys.readouterr().out
        assert "secret-in-the-url" not in message + out
        assert database_events(out) == {"database.unavailable": 1}

    async def test_a_missing_database_fails_at_once_with_what_to_fix(
        self, down: TcpProxy, database_url: str, capsys
    ) -> None:
        await down.start()
        url = through(down, database_url, database="platpay_no_such_database")
        wait = StartupWait(url, timeout_seconds=600, connect_timeout_seconds=2)
        with pytest.raises(StartupFailed) as failed:
            await asyncio.wait_for(asyncio.to_thread(wait.until_reachable), timeout=30)
        assert str(failed.value) == (
            'connecting to the database failed: InvalidCatalogNameError: database "platpay_no_such_database" '
            "does not exist (create the database or fix its name in PLATPAY_DATABASE_URL)"
        )
        assert database_events(capsys.readouterr().out) == {}  # not an outage: nothing waited for
