"""Fixtures shared by the database fault tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from sqlalchemy.engine import make_url

from tests.factories import customer, external_account, fund, internal_account
from tests.support.tcp_proxy import TcpProxy


@pytest.fixture
async def proxy(backend: str, database_url: str) -> AsyncIterator[TcpProxy]:
    """A TCP proxy in front of the test's PostgreSQL (network faults: refused, black-holed, cut, silenced)."""
    if backend != "postgresql":
        pytest.skip("network faults between platpay and PostgreSQL")
    url = make_url(database_url)
    started = await TcpProxy(url.host or "127.0.0.1", url.port or 5432).start()
    try:
        yield started
    finally:
        await started.stop()


@pytest.fixture
async def payer(client: httpx.AsyncClient, auth: tuple[str, str]) -> dict[str, str]:
    """A funded USD account and a bank account to pay out to, set up on the test's own direct connection
    (before any fault)."""
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 1_000_000)
    bank = await external_account(client, auth, person["id"])
    return {"account": account["id"], "bank": bank["id"]}
