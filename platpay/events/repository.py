from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.events.models import EventRow, WebhookAttemptRow, WebhookDeliveryRow

# Lean inserts: events (and their deliveries) are written on every money movement.
_INSERT_EVENT = Lean(EventRow.__table__.insert())
_INSERT_DELIVERY = Lean(WebhookDeliveryRow.__table__.insert())


async def insert_event(session: AsyncSession, values: dict[str, Any]) -> None:
    """Insert an event row: id, tenant_id, type, data, created_at."""
    await lean.rows(session, _INSERT_EVENT, values)


async def insert_delivery(session: AsyncSession, values: dict[str, Any]) -> None:
    await lean.rows(session, _INSERT_DELIVERY, values)


async def get_delivery(
    session: AsyncSession, *, delivery_id: str, tenant_id: str | None = None, for_update: bool = False
) -> WebhookDeliveryRow | None:
    stmt = select(WebhookDeliveryRow).where(WebhookDeliveryRow.id == delivery_id)
    if tenant_id is not None:
        stmt = stmt.where(WebhookDeliveryRow.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


async def get_event(session: AsyncSession, event_id: str) -> EventRow | None:
    return await session.get(EventRow, event_id)


async def attempts_of(session: AsyncSession, *, delivery_id: str) -> list[WebhookAttemptRow]:
    stmt = (
        select(WebhookAttemptRow)
        .where(WebhookAttemptRow.delivery_id == delivery_id)
        .order_by(WebhookAttemptRow.id)
    )
    return list((await session.scalars(stmt)).all())


def deliveries_query(
    *,
    tenant_id: str,
    status: str | None,
    event_type: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
) -> Select[Any]:
    stmt = select(WebhookDeliveryRow).where(WebhookDeliveryRow.tenant_id == tenant_id)
    if status is not None:
        stmt = stmt.where(WebhookDeliveryRow.status == status)
    if event_type is not None:
        stmt = stmt.where(WebhookDeliveryRow.event_type == event_type)
    if created_after is not None:
        stmt = stmt.where(WebhookDeliveryRow.created_at >= created_after)
    if created_before is not None:
        stmt = stmt.where(WebhookDeliveryRow.created_at <= created_before)
    return stmt


async def delivery_counts(session: AsyncSession) -> dict[str, int]:
    rows = (
        await session.execute(
            select(WebhookDeliveryRow.status, func.count()).group_by(WebhookDeliveryRow.status)
        )
    ).all()
    return {status: count for status, count in rows}
