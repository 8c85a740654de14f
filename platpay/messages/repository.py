"""All SQL on the messages table."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.messages.models import MessageRow


async def insert(session: AsyncSession, values: dict[str, Any]) -> None:
    session.add(MessageRow(**values))
    await session.flush()


async def get(
    session: AsyncSession, *, message_id: str, tenant_id: str | None = None, for_update: bool = False
) -> MessageRow | None:
    stmt = select(MessageRow).where(MessageRow.id == message_id)
    if tenant_id is not None:
        stmt = stmt.where(MessageRow.tenant_id == tenant_id)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


def mailbox_query(
    *, tenant_id: str, to: str | None, channel: str | None, category: str | None
) -> Select[Any]:
    """A tenant's kept messages, filtered (`to` ignoring case)."""
    stmt = select(MessageRow).where(MessageRow.tenant_id == tenant_id, MessageRow.kept.is_(True))
    if to is not None:
        stmt = stmt.where(func.lower(MessageRow.recipient) == to.lower())
    if channel is not None:
        stmt = stmt.where(MessageRow.channel == channel)
    if category is not None:
        stmt = stmt.where(MessageRow.category == category)
    return stmt
