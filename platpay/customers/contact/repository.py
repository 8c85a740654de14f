"""All SQL on customer_contact_codes; every query is scoped to one tenant."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers.contact.models import ContactCodeRow


async def get(
    session: AsyncSession, *, tenant_id: str, customer_id: str, channel: str
) -> ContactCodeRow | None:
    return await session.scalar(
        select(ContactCodeRow).where(
            ContactCodeRow.tenant_id == tenant_id,
            ContactCodeRow.customer_id == customer_id,
            ContactCodeRow.channel == channel,
        )
    )


async def replace(session: AsyncSession, existing: ContactCodeRow | None, values: dict[str, Any]) -> None:
    """The customer's code on this channel becomes `values` (the caller holds the customer's row lock)."""
    if existing is not None:
        await session.delete(existing)
        await session.flush()
    session.add(ContactCodeRow(**values))
    await session.flush()
