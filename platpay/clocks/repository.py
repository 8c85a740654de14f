"""All SQL on sandbox_clocks."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, SQLColumnExpression, delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.clocks.models import ClockRow
from platpay.db.portable import insert_ignore

COLUMNS = (ClockRow.offset_us, ClockRow.frozen_at)


def join_clock(
    stmt: Select[*tuple[Any, ...]], tenant_id: SQLColumnExpression[str]
) -> Select[*tuple[Any, ...]]:
    return stmt.outerjoin(ClockRow, ClockRow.tenant_id == tenant_id).add_columns(*COLUMNS)


async def get(session: AsyncSession, tenant_id: str, *, for_update: bool = False) -> ClockRow | None:
    stmt = select(ClockRow).where(ClockRow.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


async def lock_or_create(session: AsyncSession, tenant_id: str, *, now: datetime) -> ClockRow:
    """The tenant's clock row, locked (created at real time first if it has none)."""
    await session.execute(
        insert_ignore(
            session, ClockRow.__table__, {"tenant_id": tenant_id, "offset_us": 0, "updated_at": now}
        )
    )
    row = await get(session, tenant_id, for_update=True)
    assert row is not None
    return row


async def of_tenants(session: AsyncSession, tenant_ids: set[str]) -> list[tuple[str, int, datetime | None]]:
    rows = await session.execute(
        select(ClockRow.tenant_id, ClockRow.offset_us, ClockRow.frozen_at).where(
            ClockRow.tenant_id.in_(sorted(tenant_ids))
        )
    )
    return [tuple(row) for row in rows.all()]  # type: ignore[misc]


async def remove(session: AsyncSession, tenant_id: str) -> None:
    await session.execute(delete(ClockRow).where(ClockRow.tenant_id == tenant_id))
