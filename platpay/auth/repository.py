from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Select, bindparam, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.auth.models import ApiTokenRow
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.rows import get_scoped
from platpay.db.watch import Watched
from platpay.tenants import service as tenants_service

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


# Authentication runs on every request: one query for the live token with its tenant and platform, flat
# columns: the token's id, permissions and secret hash, then the tenant's columns that the tenants domain
# adds (tenants_service.join_context; its context_from_columns reads them).
CREDENTIAL = Lean(
    tenants_service.join_context(
        select(ApiTokenRow.id, ApiTokenRow.permissions, ApiTokenRow.secret_sha256), ApiTokenRow.tenant_id
    ).where(ApiTokenRow.client_id == bindparam("client_id"), ApiTokenRow.deleted_at.is_(None))
)


# Kept by each process while PostgreSQL notifies it of changes to the tables the row comes from.
_CREDENTIALS = Watched(CREDENTIAL, "platpay_credentials")


async def credential(db: Database, client_id: str) -> tuple[Any, ...] | None:
    """The CREDENTIAL row for `client_id`, without an ORM session: kept in the process while no change to
    a token, tenant, platform or sandbox clock was committed since it was read (platpay.db.watch),
    else read (`Database.fetch_first`)."""
    return await _CREDENTIALS.first(db, {"client_id": client_id}, client_id)


async def credential_with_tenant(session: AsyncSession, client_id: str) -> tuple[Any, ...] | None:
    """The CREDENTIAL row for `client_id` inside the caller's session."""
    row = (await session.execute(CREDENTIAL.statement, {"client_id": client_id})).first()
    return tuple(row) if row is not None else None


def list_query(
    *,
    tenant_id: str,
    name: str | None,
    created_after: datetime | None,
    created_before: datetime | None,
    updated_after: datetime | None,
    updated_before: datetime | None,
) -> Select[Any]:
    stmt = select(ApiTokenRow).where(ApiTokenRow.tenant_id == tenant_id, ApiTokenRow.deleted_at.is_(None))
    if name is not None:
        stmt = stmt.where(ApiTokenRow.name == name)
    if created_after is not None:
        stmt = stmt.where(ApiTokenRow.created_at >= created_after)
    if created_before is not None:
        stmt = stmt.where(ApiTokenRow.created_at <= created_before)
    if updated_after is not None:
        stmt = stmt.where(ApiTokenRow.updated_at >= updated_after)
    if updated_before is not None:
        stmt = stmt.where(ApiTokenRow.updated_at <= updated_before)
    return stmt


async def get(
    session: AsyncSession, *, tenant_id: str, token_id: str, for_update: bool = False
) -> ApiTokenRow | None:
    return await get_scoped(
        session,
        ApiTokenRow,
        id=token_id,
        tenant_id=tenant_id,
        where=(ApiTokenRow.deleted_at.is_(None),),
        for_update=for_update,
    )


async def live_tokens_for_update(session: AsyncSession, *, tenant_id: str) -> list[ApiTokenRow]:
    """Every live token of the tenant, locked, so two concurrent deletes can't remove the last MANAGE one."""
    stmt = (
        select(ApiTokenRow)
        .where(ApiTokenRow.tenant_id == tenant_id, ApiTokenRow.deleted_at.is_(None))
        .order_by(ApiTokenRow.id)
        .with_for_update()
    )
    return list((await session.scalars(stmt)).all())


async def soft_delete(session: AsyncSession, *, tenant_id: str, token_id: str, now: datetime) -> bool:
    result = await session.execute(
        update(ApiTokenRow)
        .where(
            ApiTokenRow.id == token_id, ApiTokenRow.tenant_id == tenant_id, ApiTokenRow.deleted_at.is_(None)
        )
        .values(deleted_at=now, updated_at=now)
    )
    return bool(cast("CursorResult[Any]", result).rowcount)


async def count_live(session: AsyncSession, *, tenant_id: str) -> int:
    return int(
        await session.scalar(
            select(func.count()).where(ApiTokenRow.tenant_id == tenant_id, ApiTokenRow.deleted_at.is_(None))
        )
        or 0
    )
