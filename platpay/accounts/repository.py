"""All SQL on internal and external accounts; every query is tenant-scoped."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, bindparam, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from platpay.accounts.models import ExternalAccountRow, InternalAccountRow
from platpay.customers import service as customers_service
from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.portable import insert_ignore_many
from platpay.db.rows import get_scoped
from platpay.db.unit_of_work import LeanSession


async def insert_internal(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    await insert_ignore_many(session, InternalAccountRow.__table__, rows)  # any number of rows


async def existing_accounts(
    session: AsyncSession, *, tenant_id: str, customer_ids: list[str | None]
) -> set[tuple[str | None, str, str]]:
    """(customer_id, currency, type) of the internal accounts these owners already have (None = platform)."""
    stmt = select(InternalAccountRow.customer_id, InternalAccountRow.currency, InternalAccountRow.type).where(
        InternalAccountRow.tenant_id == tenant_id
    )
    ids = [c for c in customer_ids if c is not None]
    conditions = []
    if ids:
        conditions.append(InternalAccountRow.customer_id.in_(ids))
    if None in customer_ids:
        conditions.append(InternalAccountRow.customer_id.is_(None))
    if not conditions:
        return set()
    rows = await session.execute(stmt.where(or_(*conditions)))
    return {(row.customer_id, row.currency, row.type) for row in rows}


def internal_query(
    *,
    tenant_id: str,
    platform: bool,
    customer_id: str | None = None,
    currency: str | None = None,
    account_type: str | None = None,
) -> Select[Any]:
    stmt = select(InternalAccountRow).where(InternalAccountRow.tenant_id == tenant_id)
    stmt = stmt.where(
        InternalAccountRow.customer_id.is_(None) if platform else InternalAccountRow.customer_id.is_not(None)
    )
    if customer_id is not None:
        stmt = stmt.where(InternalAccountRow.customer_id == customer_id)
    if currency is not None:
        stmt = stmt.where(InternalAccountRow.currency == currency)
    if account_type is not None:
        stmt = stmt.where(InternalAccountRow.type == account_type)
    return stmt


async def get_internal(
    session: AsyncSession, *, tenant_id: str, account_id: str, for_update: bool = False
) -> InternalAccountRow | None:
    return await get_scoped(
        session, InternalAccountRow, id=account_id, tenant_id=tenant_id, for_update=for_update
    )


_INTERNAL_COLUMNS, _INTERNAL_KEYS = lean.columns_of(InternalAccountRow)
_EXTERNAL_COLUMNS, _EXTERNAL_KEYS = lean.columns_of(ExternalAccountRow)
_INTERNAL = Lean(
    select(*_INTERNAL_COLUMNS).where(
        InternalAccountRow.__table__.c.id == bindparam("account_id"),
        InternalAccountRow.__table__.c.tenant_id == bindparam("tenant_id"),
    )
)


async def read_internal(
    session: LeanSession, *, tenant_id: str, account_id: str
) -> InternalAccountRow | None:
    """`get_internal` without a lock, leanly, for the card authorization path: a row for reading (outside
    the identity map: a change to it is not saved)."""
    found = await lean.first(session, _INTERNAL, {"account_id": account_id, "tenant_id": tenant_id})
    return None if found is None else lean.snapshot(InternalAccountRow, _INTERNAL_KEYS, found)


INTERNAL_WIDTH = len(_INTERNAL_COLUMNS)


def with_internal(
    stmt: Select[Any], *, account_id: ColumnElement[Any], tenant_id: ColumnElement[Any]
) -> Select[Any]:
    """`stmt` (a Core SELECT) outer-joined to the internal account its column `account_id` names in the tenant
    `tenant_id` names, with that account's columns appended as its last `INTERNAL_WIDTH` columns (all NULL
    when there is none); `internal_from` reads them back."""
    internal = InternalAccountRow.__table__
    return stmt.add_columns(*_INTERNAL_COLUMNS).outerjoin(
        internal, and_(internal.c.id == account_id, internal.c.tenant_id == tenant_id)
    )


def internal_from(values: Sequence[Any]) -> InternalAccountRow | None:
    """The internal account `with_internal`'s columns hold, as a row for reading; None when there is none."""
    return None if values[0] is None else lean.snapshot(InternalAccountRow, _INTERNAL_KEYS, values)


def _pair_statement() -> Lean:
    """The transfer path's one read: an internal account, a live external account of its tenant, and the
    internal account's owner (the customers domain's columns, `customers_service.with_owner`)."""
    internal, external = InternalAccountRow.__table__, ExternalAccountRow.__table__
    statement = (
        select(*_INTERNAL_COLUMNS, *_EXTERNAL_COLUMNS)
        .select_from(
            internal.outerjoin(
                external,
                and_(
                    external.c.id == bindparam("external_id"),
                    external.c.tenant_id == internal.c.tenant_id,
                    external.c.deleted_at.is_(None),
                ),
            )
        )
        .where(internal.c.id == bindparam("internal_id"), internal.c.tenant_id == bindparam("tenant_id"))
    )
    return Lean(
        customers_service.with_owner(
            statement, customer_id=internal.c.customer_id, tenant_id=internal.c.tenant_id
        )
    )


# Lean: this read runs on every transfer, and through the ORM (a three-entity select rebuilt per call, its
# cache key and compile state, three instances loaded into the identity map) it was the largest part of the
# CPU the issue-10 restructuring added to POST /transfer-out (bench/README.md).
_PAIR = _pair_statement()


def prefetch_internal_with_external(
    session: LeanSession, *, tenant_id: str, internal_id: str, external_id: str
) -> None:
    """`internal_with_external`'s read, sent with the transaction's next read (db/lean.py `prefetch`): for a
    caller that will ask for these accounts after reads that cannot change them."""
    lean.prefetch(
        session, _PAIR, {"tenant_id": tenant_id, "internal_id": internal_id, "external_id": external_id}
    )


async def internal_with_external(
    session: LeanSession, *, tenant_id: str, internal_id: str, external_id: str
) -> tuple[InternalAccountRow | None, ExternalAccountRow | None, Any]:
    """An internal account, a live external account of the tenant and the internal account's owner (as
    `customers_service.owner_from` reads it) in one round trip: the transfer path's lookup. Each is None
    when missing (the owner also for a platform account). The rows are for reading (outside the session's
    identity map: a change to them is not saved)."""
    row = await lean.first(
        session, _PAIR, {"tenant_id": tenant_id, "internal_id": internal_id, "external_id": external_id}
    )
    if row is None:
        return None, None, None
    n_internal, n_external = len(_INTERNAL_KEYS), len(_EXTERNAL_KEYS)
    internal = lean.snapshot(InternalAccountRow, _INTERNAL_KEYS, row[:n_internal])
    external_values = row[n_internal : n_internal + n_external]
    external = (
        lean.snapshot(ExternalAccountRow, _EXTERNAL_KEYS, external_values)
        if external_values[0] is not None
        else None
    )
    return internal, external, customers_service.owner_from(row[n_internal + n_external :])


async def customers_without_account(
    session: AsyncSession, *, tenant_id: str, currency: str, account_types: tuple[str, ...], limit: int
) -> list[str]:
    """Active customers lacking a `currency` account of one of `account_types`, in one query: the customers
    domain's statement of its active customers, narrowed here to those lacking an account. Asked in pages
    by the backfill job."""
    customers = customers_service.active_ids_query(tenant_id=tenant_id)

    def has(account_type: str) -> Any:
        return (
            select(InternalAccountRow.id)
            .where(
                InternalAccountRow.customer_id == customers.selected_columns[0],
                InternalAccountRow.currency == currency,
                InternalAccountRow.type == account_type,
            )
            .exists()
        )

    lacking = or_(*(~has(account_type) for account_type in account_types))
    return list((await session.scalars(customers.where(lacking).limit(limit))).all())


async def internal_by_ids(
    session: AsyncSession, *, tenant_id: str, account_ids: list[str]
) -> list[InternalAccountRow]:
    if not account_ids:
        return []
    stmt = (
        select(InternalAccountRow)
        .where(InternalAccountRow.tenant_id == tenant_id, InternalAccountRow.id.in_(account_ids))
        .order_by(InternalAccountRow.id)
    )
    return list((await session.scalars(stmt)).all())


async def all_of(session: AsyncSession, stmt: Select[Any]) -> list[Any]:
    return list((await session.scalars(stmt)).all())


async def lock_customer_accounts(
    session: AsyncSession, *, tenant_id: str, customer_id: str, statuses: Iterable[str]
) -> list[InternalAccountRow]:
    """The customer's internal accounts in one of `statuses`, locked, by id."""
    return list(
        (
            await session.scalars(
                select(InternalAccountRow)
                .where(
                    InternalAccountRow.tenant_id == tenant_id,
                    InternalAccountRow.customer_id == customer_id,
                    InternalAccountRow.status.in_(list(statuses)),
                )
                .order_by(InternalAccountRow.id)
                .with_for_update()
            )
        ).all()
    )


# External accounts


async def find_external_duplicate(
    session: AsyncSession, *, tenant_id: str, owner_key: str, identity_key: str
) -> str | None:
    return await session.scalar(
        select(ExternalAccountRow.id).where(
            ExternalAccountRow.tenant_id == tenant_id,
            ExternalAccountRow.owner_key == owner_key,
            ExternalAccountRow.identity_key == identity_key,
            ExternalAccountRow.deleted_at.is_(None),
        )
    )


async def clear_default_deposit(
    session: AsyncSession, *, tenant_id: str, customer_id: str, now: datetime
) -> None:
    await session.execute(
        update(ExternalAccountRow)
        .where(
            ExternalAccountRow.tenant_id == tenant_id,
            ExternalAccountRow.customer_id == customer_id,
            ExternalAccountRow.default_uma_deposit_account.is_(True),
            ExternalAccountRow.deleted_at.is_(None),
        )
        .values(default_uma_deposit_account=False, updated_at=now)
    )


def external_query(
    *,
    tenant_id: str,
    platform: bool,
    customer_id: str | None = None,
    currency: str | None = None,
    platform_account_id: str | None = None,
) -> Select[Any]:
    stmt = select(ExternalAccountRow).where(
        ExternalAccountRow.tenant_id == tenant_id, ExternalAccountRow.deleted_at.is_(None)
    )
    stmt = stmt.where(
        ExternalAccountRow.customer_id.is_(None) if platform else ExternalAccountRow.customer_id.is_not(None)
    )
    if customer_id is not None:
        stmt = stmt.where(ExternalAccountRow.customer_id == customer_id)
    if currency is not None:
        stmt = stmt.where(ExternalAccountRow.currency == currency)
    if platform_account_id is not None:
        stmt = stmt.where(ExternalAccountRow.platform_account_id == platform_account_id)
    return stmt


async def get_external(
    session: AsyncSession, *, tenant_id: str, account_id: str, for_update: bool = False
) -> ExternalAccountRow | None:
    return await get_scoped(
        session,
        ExternalAccountRow,
        id=account_id,
        tenant_id=tenant_id,
        where=(ExternalAccountRow.deleted_at.is_(None),),
        for_update=for_update,
    )


async def default_deposit_account(
    session: AsyncSession, *, tenant_id: str, customer_id: str
) -> ExternalAccountRow | None:
    """The customer's live defaultUmaDepositAccount (at most one, see clear_default_deposit)."""
    return await session.scalar(
        select(ExternalAccountRow).where(
            ExternalAccountRow.tenant_id == tenant_id,
            ExternalAccountRow.customer_id == customer_id,
            ExternalAccountRow.default_uma_deposit_account.is_(True),
            ExternalAccountRow.deleted_at.is_(None),
        )
    )


def internal_ids_of(*, tenant_id: str, customer_id: str | None) -> Select[Any]:
    """A subquery selecting the ids of one owner's internal accounts (customer_id None: the platform's)."""
    owner = (
        InternalAccountRow.customer_id.is_(None)
        if customer_id is None
        else InternalAccountRow.customer_id == customer_id
    )
    return select(InternalAccountRow.id).where(InternalAccountRow.tenant_id == tenant_id, owner)


async def owners_of(
    session: AsyncSession, *, tenant_id: str, account_ids: list[str]
) -> dict[str, str | None]:
    """Internal account id -> its customer's id (None: the platform's), for those of `account_ids` that
    are the tenant's internal accounts: one statement."""
    if not account_ids:
        return {}
    rows = await session.execute(
        select(InternalAccountRow.id, InternalAccountRow.customer_id).where(
            InternalAccountRow.tenant_id == tenant_id, InternalAccountRow.id.in_(account_ids)
        )
    )
    return dict(rows.tuples().all())
