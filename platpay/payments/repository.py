"""All SQL on transactions; every query is tenant-scoped."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.unit_of_work import LeanSession
from platpay.kit.pagination import keyset_page
from platpay.payments.models import TransactionRow
from platpay.payments.state import AWAITING, TransactionKind, TransactionStatus


async def get(
    session: AsyncSession, *, tenant_id: str, transaction_id: str, for_update: bool = False
) -> TransactionRow | None:
    return await lean.get(
        session, TransactionRow, id=transaction_id, tenant_id=tenant_id, for_update=for_update
    )


def list_query(
    *,
    tenant_id: str,
    customer_id: str | None = None,
    platform_only: bool = False,
    platform_customer_id: str | None = None,
    account_identifier: str | None = None,
    sender_account_identifier: str | None = None,
    receiver_account_identifier: str | None = None,
    status: str | None = None,
    type_: str | None = None,
    reference: str | None = None,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> Select[Any]:
    stmt = select(TransactionRow).where(TransactionRow.tenant_id == tenant_id)
    if platform_only:
        stmt = stmt.where(TransactionRow.customer_id.is_(None))
    elif customer_id is not None:
        stmt = stmt.where(TransactionRow.customer_id == customer_id)
    if platform_customer_id is not None:
        stmt = stmt.where(TransactionRow.platform_customer_id == platform_customer_id)
    if account_identifier is not None:
        stmt = stmt.where(
            or_(
                TransactionRow.sender_account_id == account_identifier,
                TransactionRow.receiver_account_id == account_identifier,
            )
        )
    if sender_account_identifier is not None:
        stmt = stmt.where(TransactionRow.sender_account_id == sender_account_identifier)
    if receiver_account_identifier is not None:
        stmt = stmt.where(TransactionRow.receiver_account_id == receiver_account_identifier)
    if status is not None:
        stmt = stmt.where(TransactionRow.status == status)
    if type_ is not None:
        stmt = stmt.where(TransactionRow.type == type_)
    if reference is not None:
        stmt = stmt.where(TransactionRow.reference == reference)
    if start_date is not None:
        stmt = stmt.where(TransactionRow.created_at >= start_date)
    if end_date is not None:
        stmt = stmt.where(TransactionRow.created_at <= end_date)
    return stmt


async def page(
    session: AsyncSession,
    stmt: Select[Any],
    *,
    after: tuple[datetime, str] | None,
    descending: bool,
    limit: int,
) -> list[TransactionRow]:
    """At most `limit` rows of `list_query`'s `stmt`, in (created_at, id) order, strictly after `after`:
    read through ix_transactions_tenant_created, so a page costs its rows, not the tenant's size."""
    row = TransactionRow
    stmt = keyset_page(
        stmt, created_at=row.created_at, id_column=row.id, after=after, descending=descending, limit=limit
    )
    return list((await session.scalars(stmt)).all())


async def created_at_of(session: AsyncSession, *, tenant_id: str, transaction_id: str) -> datetime | None:
    return await session.scalar(
        select(TransactionRow.created_at).where(
            TransactionRow.id == transaction_id, TransactionRow.tenant_id == tenant_id
        )
    )


_INSERT = Lean(TransactionRow.__table__.insert())


async def insert(session: LeanSession, values: dict[str, Any]) -> TransactionRow:
    """Insert a new transaction leanly (the only way transactions are inserted; `values` by attribute name)
    and return its row, persistent in the session: later changes to it flush as UPDATEs."""
    return await lean.add(session, _INSERT, TransactionRow, values)


async def count_awaiting_approval(session: AsyncSession, *, tenant_id: str, now: datetime) -> int:
    """The tenant's incoming UMA payments the platform may still approve or reject now: one statement."""
    return int(
        await session.scalar(
            select(func.count()).where(
                TransactionRow.tenant_id == tenant_id,
                TransactionRow.kind == TransactionKind.UMA_INCOMING,
                TransactionRow.status == TransactionStatus.PENDING,
                TransactionRow.approval_state.in_(AWAITING),
                or_(TransactionRow.approval_deadline.is_(None), TransactionRow.approval_deadline > now),
            )
        )
        or 0
    )
