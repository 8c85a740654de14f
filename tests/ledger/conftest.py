"""Fixtures shared by the ledger's tests."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from platpay.ledger import service as ledger
from tests.factories import create_platform


@pytest.fixture
async def accounts(db: Any, settings: Any) -> dict[str, Any]:
    """Two empty internal USD accounts (a, b) and the sandbox funding source, in a new platform's sandbox."""
    created = await create_platform(db, settings)
    async with db.read() as session:
        tenant_id = await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))
    async with db.transaction() as session:
        await ledger.open_internal_accounts(
            session,
            tenant_id=tenant_id,
            accounts=[("InternalAccount:a", "USD"), ("InternalAccount:b", "USD")],
        )
        source = await ledger.system_account(
            session, tenant_id=tenant_id, kind=ledger.SANDBOX_FUNDING, currency="USD"
        )
    return {
        "tenant": tenant_id,
        "a": "InternalAccount:a",
        "b": "InternalAccount:b",
        "source": source,
        "platform": created,
    }
