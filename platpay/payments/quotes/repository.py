"""All SQL on quotes and receiver lookups; every query is tenant-scoped."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.payments.quotes.models import LookupRow, QuoteRow


async def get_quote(
    session: AsyncSession, *, tenant_id: str, quote_id: str, for_update: bool = False
) -> QuoteRow | None:
    stmt = select(QuoteRow).where(QuoteRow.id == quote_id, QuoteRow.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


async def get_lookup(session: AsyncSession, *, tenant_id: str, lookup_id: str) -> LookupRow | None:
    return await session.scalar(
        select(LookupRow).where(LookupRow.id == lookup_id, LookupRow.tenant_id == tenant_id)
    )


async def add(session: AsyncSession, row: QuoteRow | LookupRow) -> None:
    session.add(row)
    await session.flush()
