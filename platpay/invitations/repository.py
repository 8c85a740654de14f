"""All SQL on invitations. An invitation is found by its code within one environment (any platform of it
may read and claim it: SPEC §4.8); the creating tenant is checked by the service where it matters."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.invitations.models import InvitationRow


async def insert(session: AsyncSession, values: dict[str, Any]) -> InvitationRow:
    row = InvitationRow(**values)
    session.add(row)
    await session.flush()
    return row


async def get(
    session: AsyncSession, *, code: str, environment: str | None, for_update: bool = False
) -> InvitationRow | None:
    """The invitation `code` of `environment` (None: of any environment, for the public page)."""
    stmt = select(InvitationRow).where(InvitationRow.code == code)
    if environment is not None:
        stmt = stmt.where(InvitationRow.environment == environment)
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)
