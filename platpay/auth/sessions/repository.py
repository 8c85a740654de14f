"""SQL on the console's sessions and trail."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.auth.models import ApiTokenRow
from platpay.auth.sessions.models import ConsoleActionRow, ConsoleSessionRow, ConsoleTrailHeadRow
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.portable import insert_ignore
from platpay.db.types import UtcDateTime
from platpay.kit.crypto.chain import GENESIS
from platpay.tenants import service as tenants_service

# Every console page: the live session with its live token and the token's tenant, one query (a deleted
# token or a revoked or expired session finds nothing).
SESSION = Lean(
    tenants_service.join_context(
        select(
            ConsoleSessionRow.id,
            ConsoleSessionRow.expires_at,
            ApiTokenRow.id,
            ApiTokenRow.name,
            ApiTokenRow.permissions,
        ).join(ApiTokenRow, ApiTokenRow.id == ConsoleSessionRow.token_id),
        ConsoleSessionRow.tenant_id,
    ).where(
        ConsoleSessionRow.secret_sha256 == bindparam("secret_sha256"),
        ConsoleSessionRow.revoked_at.is_(None),
        ConsoleSessionRow.expires_at > bindparam("now", type_=UtcDateTime()),
        ApiTokenRow.deleted_at.is_(None),
    )
)


async def live_session(db: Database, *, secret_sha256: str, now: datetime) -> tuple[Any, ...] | None:
    return await db.fetch_first(SESSION, {"secret_sha256": secret_sha256, "now": now})


async def add_session(session: AsyncSession, row: ConsoleSessionRow) -> None:
    session.add(row)
    await session.flush()


async def revoke(session: AsyncSession, *, secret_sha256: str, now: datetime) -> None:
    await session.execute(
        update(ConsoleSessionRow)
        .where(ConsoleSessionRow.secret_sha256 == secret_sha256, ConsoleSessionRow.revoked_at.is_(None))
        .values(revoked_at=now)
    )


async def revoke_for_token(session: AsyncSession, *, tenant_id: str, token_id: str, now: datetime) -> None:
    await session.execute(
        update(ConsoleSessionRow)
        .where(
            ConsoleSessionRow.tenant_id == tenant_id,
            ConsoleSessionRow.token_id == token_id,
            ConsoleSessionRow.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )


async def lock_head(session: AsyncSession, *, tenant_id: str) -> ConsoleTrailHeadRow:
    """The tenant's trail head, locked (created at sequence 0 the first time: two first appends then wait on
    one row instead of both inserting a first record)."""
    await session.execute(
        insert_ignore(
            session, ConsoleTrailHeadRow.__table__, {"tenant_id": tenant_id, "sequence": 0, "hash": GENESIS}
        )
    )
    head = await session.scalar(
        select(ConsoleTrailHeadRow)
        .where(ConsoleTrailHeadRow.tenant_id == tenant_id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    assert head is not None  # inserted above, or already there
    return head


async def append(
    session: AsyncSession, *, record: ConsoleActionRow, head: ConsoleTrailHeadRow | None
) -> None:
    if head is None:
        session.add(
            ConsoleTrailHeadRow(tenant_id=record.tenant_id, sequence=record.sequence, hash=record.hash)
        )
    else:
        head.sequence, head.hash = record.sequence, record.hash
    session.add(record)
    await session.flush()


async def actions_for(
    session: AsyncSession, *, tenant_id: str, subject_id: str, limit: int
) -> list[ConsoleActionRow]:
    stmt = (
        select(ConsoleActionRow)
        .where(ConsoleActionRow.tenant_id == tenant_id, ConsoleActionRow.subject_id == subject_id)
        .order_by(ConsoleActionRow.sequence.desc())
        .limit(limit)
    )
    return list((await session.scalars(stmt)).all())


async def actions_of_kind(
    session: AsyncSession, *, tenant_id: str, subject_type: str, limit: int
) -> list[ConsoleActionRow]:
    stmt = (
        select(ConsoleActionRow)
        .where(ConsoleActionRow.tenant_id == tenant_id, ConsoleActionRow.subject_type == subject_type)
        .order_by(ConsoleActionRow.sequence.desc())
        .limit(limit)
    )
    return list((await session.scalars(stmt)).all())


async def actions_for_subjects(
    session: AsyncSession, *, tenant_id: str, subject_ids: list[str], limit: int
) -> list[ConsoleActionRow]:
    stmt = (
        select(ConsoleActionRow)
        .where(ConsoleActionRow.tenant_id == tenant_id, ConsoleActionRow.subject_id.in_(subject_ids))
        .order_by(ConsoleActionRow.sequence.desc())
        .limit(limit)
    )
    return list((await session.scalars(stmt)).all())


def actions_query(*, tenant_id: str) -> Any:
    return select(ConsoleActionRow).where(ConsoleActionRow.tenant_id == tenant_id)


async def chain(
    session: AsyncSession, *, tenant_id: str
) -> tuple[list[ConsoleActionRow], ConsoleTrailHeadRow | None]:
    rows = await session.scalars(
        select(ConsoleActionRow)
        .where(ConsoleActionRow.tenant_id == tenant_id)
        .order_by(ConsoleActionRow.sequence)
    )
    head = await session.scalar(select(ConsoleTrailHeadRow).where(ConsoleTrailHeadRow.tenant_id == tenant_id))
    return list(rows.all()), head
