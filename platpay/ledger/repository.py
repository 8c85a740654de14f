"""All SQL on ledger tables."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.portable import insert_ignore
from platpay.ledger.models import LedgerAccountRow


async def insert_accounts(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(insert_ignore(session, LedgerAccountRow.__table__, rows))


async def balances(session: AsyncSession, account_ids: list[str]) -> dict[str, tuple[int, int]]:
    if not account_ids:
        return {}
    rows = await session.execute(
        select(LedgerAccountRow.id, LedgerAccountRow.available, LedgerAccountRow.held).where(
            LedgerAccountRow.id.in_(account_ids)
        )
    )
    return {row.id: (row.available, row.held) for row in rows}
