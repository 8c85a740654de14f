"""Every path that opens a PostgreSQL connection reads the URL as SQLAlchemy does and bounds every wait
(platpay.db.connect): a multi-host URL reaches the writable server on the ORM's connections and on both
lean pools; each connection carries the statement and idle-in-transaction timeouts and TCP keepalives.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.dialects.postgresql import asyncpg as pg_asyncpg
from sqlalchemy.engine import make_url

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.db.connect import ConnectionPolicy, connect_arguments
from platpay.db.database import Database
from platpay.db.faults import DatabaseUnavailable
from platpay.db.lean import Lean
from platpay.db.lean import first as lean_first
from tests.factories import customer
from tests.support.processes import free_port

POLICY = ConnectionPolicy(
    timeout=2.0,
    statement_timeout=1.0,
    idle_in_transaction_timeout=7.0,
    keepalive_idle=4,
    keepalive_interval=2,
    keepalive_count=2,
)
SETTINGS = select(
    func.current_setting("statement_timeout"),
    func.current_setting("idle_in_transaction_session_timeout"),
    func.current_setting("tcp_keepalives_idle"),
    func.pg_is_in_recovery(),
)
SHOW = Lean(SETTINGS)


def multi_host(url: str, *, dead_first: bool) -> str:
    """`url` with two hosts, one of them a port nobody listens on, in SQLAlchemy's multi-host form."""
    parsed = make_url(url)
    live = f"{parsed.host or '127.0.0.1'}:{parsed.port or 5432}"
    dead = f"127.0.0.1:{free_port()}"
    hosts = [dead, live] if dead_first else [live, dead]
    base = parsed.set(host=None, port=None).render_as_string(hide_password=False)
    return f"{base}?host={hosts[0]}&host={hosts[1]}&target_session_attrs=read-write"


@pytest.fixture
async def multi_host_db(
    backend: str, db: Database, request: pytest.FixtureRequest
) -> AsyncIterator[Database]:
    if backend != "postgresql":
        pytest.skip("PostgreSQL connections")
    database = Database(multi_host(db.url, dead_first=True), pool_size=3, policy=POLICY)
    try:
        yield database
    finally:
        await database.dispose()


def test_a_multi_host_url_is_read_as_sqlalchemy_reads_it() -> None:
    url = make_url(
        "postgresql+asyncpg://app:pw@/pp?host=h1:5432&host=h2:5433&target_session_attrs=read-write"
    )
    arguments = connect_arguments(pg_asyncpg.dialect(), url, POLICY)
    assert arguments["host"] == ["h1", "h2"] and arguments["port"] == [5432, 5433]
    assert arguments["target_session_attrs"] == "read-write"
    assert arguments["user"] == "app" and arguments["password"] == "pw" and arguments["database"] == "pp"
    assert arguments["timeout"] == 2.0 and arguments["command_timeout"] == 3.0
    assert arguments["server_settings"] == {
        "statement_timeout": "1000",
        "idle_in_transaction_session_timeout": "7000",
        "tcp_keepalives_idle": "4",
        "tcp_keepalives_interval": "2",
        "tcp_keepalives_count": "2",
    }


def test_server_settings_in_the_url_win_over_the_policy() -> None:
    dialect = pg_asyncpg.dialect()
    url = make_url("postgresql+asyncpg://app@h/pp")
    arguments = connect_arguments(dialect, url, ConnectionPolicy())
    assert "command_timeout" not in arguments  # no statement timeout by default (one-shot commands)
    assert "statement_timeout" not in arguments["server_settings"]


class TestMultiHost:
    async def test_every_path_reaches_the_writable_server_with_the_policy_applied(
        self, multi_host_db: Database
    ) -> None:
        expected = ("1s", "7s", "4", False)
        assert await multi_host_db.fetch_first(SHOW, {}) == expected  # the lean reads' pool
        async with multi_host_db.lean_transaction() as lean:  # the lean transactions' pool
            assert await lean_first(lean, SHOW, {}) == expected
        async with multi_host_db.read() as session:  # the engine's pool
            row = (await session.execute(SETTINGS)).one()
            assert tuple(row) == expected
            raw: Any = (await session.connection()).sync_connection
            driver = raw.connection.driver_connection
            sock = driver._transport.get_extra_info("socket")
            assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 4
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT) == 8000

    async def test_a_statement_past_the_timeout_is_a_503_and_the_pools_go_on(
        self, multi_host_db: Database
    ) -> None:
        with pytest.raises(DatabaseUnavailable, match="statement timeout"):
            await multi_host_db.fetch_first(Lean(select(func.pg_sleep(3))), {})
        with pytest.raises(DatabaseUnavailable, match="statement timeout"):
            async with multi_host_db.transaction() as session:
                await session.execute(select(func.pg_sleep(3)))
        assert (await multi_host_db.fetch_first(SHOW, {}))[0] == "1s"

    async def test_the_app_serves_on_a_multi_host_url(
        self, backend: str, settings: Any, db: Database, auth: tuple[str, str]
    ) -> None:
        """The defect: the lean pools rendered the URL as a DSN, which asyncpg read differently, so every
        request answered 503 (TargetServerAttributeNotMatched) while the primary was up."""
        if backend != "postgresql":
            pytest.skip("PostgreSQL connections")
        url = multi_host(settings.database_url, dead_first=False)
        served = settings.model_copy(update={"database_url": url})
        database = Database.from_settings(served)
        app = create_app(served, database=database, embedded_worker=False)
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        try:
            async with httpx.AsyncClient(transport=transport, base_url=f"http://t{BASE_PATH}") as api:
                config = await api.get("/config", auth=auth)
                assert config.status_code == 200, config.text
                person = await customer(api, auth)  # a write: the engine's connections
                assert (await api.get(f"/customers/{person['id']}", auth=auth)).status_code == 200
        finally:
            await database.dispose()
