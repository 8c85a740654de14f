"""Fixtures shared by the database fault tests."""

from __future__ import annotations

import httpx
import pytest

from tests.factories import customer, external_account, fund, internal_account


@pytest.fixture
async def payer(client: httpx.AsyncClient, auth: tuple[str, str]) -> dict[str, str]:
    """A funded USD account and a bank account to pay out to, set up on the test's own direct connection
    (before any fault)."""
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 1_000_000)
    bank = await external_account(client, auth, person["id"])
    return {"account": account["id"], "bank": bank["id"]}
