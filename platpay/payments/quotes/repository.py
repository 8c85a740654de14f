"""All SQL on quotes and receiver lookups; every query is tenant-scoped."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.rows import get_scoped
from platpay.payments.quotes.models import LookupRow, QuoteRow


async def get_quote(
    session: AsyncSession, *, tenant_id: str, quote_id: str, for_update: bool = False
) -> QuoteRow | None:
    return await get_scoped(session, QuoteRow, id=quote_id, tenant_id=tenant_id, for_update=for_update)


async def get_lookup(session: AsyncSession, *, tenant_id: str, lookup_id: str) -> LookupRow | None:
    return await get_scoped(session, LookupRow, id=lookup_id, tenant_id=tenant_id)


async def add(session: AsyncSession, row: QuoteRow | LookupRow) -> None:
    session.add(row)
    await session.flush()
