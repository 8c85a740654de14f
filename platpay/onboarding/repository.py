"""Every query on onboarding's tables, tenant-scoped."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Select, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.rows import get_scoped
from platpay.onboarding.models import BeneficialOwnerRow, DocumentRow, KycLinkRow, VerificationRow

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


# ---- verifications


async def get_verification(
    session: AsyncSession,
    *,
    tenant_id: str,
    verification_id: str,
    for_update: bool = False,
    refresh: bool = False,
) -> VerificationRow | None:
    """`refresh`: the locked row's values replace those of the instance read before the lock."""
    return await get_scoped(
        session,
        VerificationRow,
        id=verification_id,
        tenant_id=tenant_id,
        for_update=for_update,
        refresh=refresh,
    )


async def latest_verification(
    session: AsyncSession, *, tenant_id: str, customer_id: str, for_update: bool = False
) -> VerificationRow | None:
    stmt = (
        select(VerificationRow)
        .where(VerificationRow.tenant_id == tenant_id, VerificationRow.customer_id == customer_id)
        .order_by(VerificationRow.id.desc())
        .limit(1)
    )
    if for_update:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


def verifications_query(*, tenant_id: str, customer_id: str | None, status: str | None) -> Select[Any]:
    stmt = select(VerificationRow).where(VerificationRow.tenant_id == tenant_id)
    if customer_id is not None:
        stmt = stmt.where(VerificationRow.customer_id == customer_id)
    if status is not None:
        stmt = stmt.where(VerificationRow.status == status)
    return stmt


async def count_verifications(session: AsyncSession, *, tenant_id: str, status: str) -> int:
    stmt = (
        select(func.count())
        .select_from(VerificationRow)
        .where(VerificationRow.tenant_id == tenant_id, VerificationRow.status == status)
    )
    return int((await session.execute(stmt)).scalar_one())


# ---- beneficial owners


async def get_owner(
    session: AsyncSession, *, tenant_id: str, owner_id: str, for_update: bool = False
) -> BeneficialOwnerRow | None:
    return await get_scoped(
        session, BeneficialOwnerRow, id=owner_id, tenant_id=tenant_id, for_update=for_update
    )


async def owners_of(
    session: AsyncSession, *, tenant_id: str, customer_id: str, for_update: bool = False
) -> list[BeneficialOwnerRow]:
    stmt = (
        select(BeneficialOwnerRow)
        .where(BeneficialOwnerRow.tenant_id == tenant_id, BeneficialOwnerRow.customer_id == customer_id)
        .order_by(BeneficialOwnerRow.id)
    )
    if for_update:
        stmt = stmt.with_for_update()
    return list((await session.scalars(stmt)).all())


async def owners_of_many(
    session: AsyncSession, *, tenant_id: str, customer_ids: list[str]
) -> list[BeneficialOwnerRow]:
    """The owners of several of the tenant's businesses in one query, by business then oldest first."""
    stmt = (
        select(BeneficialOwnerRow)
        .where(BeneficialOwnerRow.tenant_id == tenant_id, BeneficialOwnerRow.customer_id.in_(customer_ids))
        .order_by(BeneficialOwnerRow.customer_id, BeneficialOwnerRow.id)
    )
    return list((await session.scalars(stmt)).all())


def owners_query(*, tenant_id: str, customer_id: str) -> Select[Any]:
    return select(BeneficialOwnerRow).where(
        BeneficialOwnerRow.tenant_id == tenant_id, BeneficialOwnerRow.customer_id == customer_id
    )


# ---- documents


async def get_document(
    session: AsyncSession, *, tenant_id: str, document_id: str, for_update: bool = False
) -> DocumentRow | None:
    return await get_scoped(session, DocumentRow, id=document_id, tenant_id=tenant_id, for_update=for_update)


async def documents_of_customer(
    session: AsyncSession, *, tenant_id: str, customer_id: str
) -> list[DocumentRow]:
    stmt = select(DocumentRow).where(
        DocumentRow.tenant_id == tenant_id, DocumentRow.customer_id == customer_id
    )
    return list((await session.scalars(stmt)).all())


def documents_query(*, tenant_id: str, holder_id: str | None) -> Select[Any]:
    stmt = select(DocumentRow).where(DocumentRow.tenant_id == tenant_id)
    if holder_id is not None:
        stmt = stmt.where(DocumentRow.holder_id == holder_id)
    return stmt


def customer_documents_query(*, tenant_id: str, customer_id: str) -> Select[Any]:
    """The documents of a customer and of its beneficial owners (`customer_id` is the holder's customer)."""
    return select(DocumentRow).where(
        DocumentRow.tenant_id == tenant_id, DocumentRow.customer_id == customer_id
    )


async def mark_submitted(
    session: AsyncSession, *, tenant_id: str, customer_id: str, verification_id: str
) -> None:
    await session.execute(
        update(DocumentRow)
        .where(DocumentRow.tenant_id == tenant_id, DocumentRow.customer_id == customer_id)
        .values(verification_id=verification_id)
    )


# ---- KYC links


async def link_by_token_hash(
    session: AsyncSession, *, token_hash: str, for_update: bool = False
) -> KycLinkRow | None:
    stmt = select(KycLinkRow).where(KycLinkRow.token_hash == token_hash)
    if for_update:
        stmt = stmt.with_for_update()
    return (await session.scalars(stmt)).first()


async def use_link(session: AsyncSession, *, link_id: str, now: datetime) -> bool:
    """Mark the link used, if it is not yet (one statement: two submissions cannot both use it)."""
    result = await session.execute(
        update(KycLinkRow).where(KycLinkRow.id == link_id, KycLinkRow.used_at.is_(None)).values(used_at=now)
    )
    return bool(cast("CursorResult[Any]", result).rowcount)
