"""All SQL on customers; every query is scoped to one tenant."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Select, and_, exists, func, literal, literal_column, or_, select, union_all, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import ColumnElement

from platpay.customers.models import CustomerRow
from platpay.db import lean
from platpay.db.rows import get_scoped

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


async def get(
    session: AsyncSession, *, tenant_id: str, customer_id: str, for_update: bool = False
) -> CustomerRow | None:
    return await get_scoped(session, CustomerRow, id=customer_id, tenant_id=tenant_id, for_update=for_update)


async def taken_keys(
    session: AsyncSession, *, tenant_id: str, platform_customer_ids: list[str], uma_addresses: list[str]
) -> tuple[set[str], set[str]]:
    """Which of these platformCustomerIds and UMA addresses active customers hold. One statement, so one
    snapshot under READ COMMITTED: a customer committed meanwhile is seen holding both its keys or neither
    (two statements could see its UMA address taken but not its id, and misreport a retried create)."""
    if not platform_customer_ids and not uma_addresses:
        return set(), set()
    active = (CustomerRow.tenant_id == tenant_id, CustomerRow.deleted_at.is_(None))
    by_id = select(literal("p").label("kind"), CustomerRow.platform_customer_id.label("value")).where(
        *active, CustomerRow.platform_customer_id.in_(platform_customer_ids)
    )
    by_uma = select(literal("u").label("kind"), CustomerRow.uma_address.label("value")).where(
        *active, CustomerRow.uma_address.in_(uma_addresses)
    )
    taken: dict[str, set[str]] = {"p": set(), "u": set()}
    for kind, value in (await session.execute(union_all(by_id, by_uma))).all():
        taken[kind].add(value)
    return taken["p"], taken["u"]


async def insert_many(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(CustomerRow.__table__.insert(), rows)


def _has_currency(dialect: str, currency: str) -> Any:
    if dialect == "postgresql":
        return CustomerRow.currencies.op("@>")(func.jsonb_build_array(currency))
    each = func.json_each(CustomerRow.currencies).table_valued("value").alias("each_currency")
    return exists(select(literal_column("1")).select_from(each).where(each.c.value == currency))


def list_query(
    *,
    tenant_id: str,
    dialect: str,
    platform_customer_id: str | None = None,
    customer_type: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
    region: str | None = None,
    currency: str | None = None,
    uma_address: str | None = None,
    include_deleted: bool = False,
) -> Select[Any]:
    stmt = select(CustomerRow).where(CustomerRow.tenant_id == tenant_id)
    if not include_deleted:
        stmt = stmt.where(CustomerRow.deleted_at.is_(None))
    if platform_customer_id is not None:
        stmt = stmt.where(CustomerRow.platform_customer_id == platform_customer_id)
    if customer_type is not None:
        stmt = stmt.where(CustomerRow.customer_type == customer_type)
    if created_after is not None:
        stmt = stmt.where(CustomerRow.created_at >= created_after)
    if created_before is not None:
        stmt = stmt.where(CustomerRow.created_at <= created_before)
    if updated_after is not None:
        stmt = stmt.where(CustomerRow.updated_at >= updated_after)
    if updated_before is not None:
        stmt = stmt.where(CustomerRow.updated_at <= updated_before)
    if region is not None:
        stmt = stmt.where(CustomerRow.region == region)
    if currency is not None:
        stmt = stmt.where(_has_currency(dialect, currency))
    if uma_address is not None:
        stmt = stmt.where(CustomerRow.uma_address == uma_address.lower())
    return stmt


async def soft_delete(session: AsyncSession, *, tenant_id: str, customer_id: str, now: datetime) -> bool:
    result = await session.execute(
        update(CustomerRow)
        .where(
            CustomerRow.id == customer_id,
            CustomerRow.tenant_id == tenant_id,
            CustomerRow.deleted_at.is_(None),
        )
        .values(deleted_at=now, updated_at=now)
    )
    return bool(cast("CursorResult[Any]", result).rowcount)


async def active_ids_page(
    session: AsyncSession, *, tenant_id: str, after_id: str | None, limit: int
) -> list[str]:
    stmt = select(CustomerRow.id).where(CustomerRow.tenant_id == tenant_id, CustomerRow.deleted_at.is_(None))
    if after_id is not None:
        stmt = stmt.where(CustomerRow.id > after_id)
    return list((await session.scalars(stmt.order_by(CustomerRow.id).limit(limit))).all())


async def by_uma_address(session: AsyncSession, *, tenant_id: str, uma_address: str) -> CustomerRow | None:
    return await session.scalar(
        select(CustomerRow).where(
            CustomerRow.tenant_id == tenant_id,
            CustomerRow.uma_address == uma_address,
            CustomerRow.deleted_at.is_(None),
        )
    )


def active_ids_query(*, tenant_id: str) -> Select[Any]:
    """SELECT the ids of the tenant's active customers, by id (no limit): for a caller to narrow it further
    on its one column, `selected_columns[0]`."""
    return (
        select(CustomerRow.id)
        .where(CustomerRow.tenant_id == tenant_id, CustomerRow.deleted_at.is_(None))
        .order_by(CustomerRow.id)
    )


_CUSTOMERS = CustomerRow.__table__
_OWNER_COLUMNS, _OWNER_KEYS = lean.columns_of(CustomerRow)
OWNER_WIDTH = len(_OWNER_COLUMNS)


def platform_customer_id_of(customer_id: ColumnElement[str]) -> Any:
    return select(CustomerRow.platform_customer_id).where(CustomerRow.id == customer_id).scalar_subquery()


def with_owner(
    stmt: Select[Any], *, customer_id: ColumnElement[Any], tenant_id: ColumnElement[Any]
) -> Select[Any]:
    """`stmt` (a Core SELECT) outer-joined to the customer its column `customer_id` names in the tenant
    `tenant_id` names, with that customer's columns appended as its last `OWNER_WIDTH` columns (all NULL
    when there is none); `owner_from` reads them back."""
    return stmt.add_columns(*_OWNER_COLUMNS).outerjoin(
        _CUSTOMERS, and_(_CUSTOMERS.c.id == customer_id, _CUSTOMERS.c.tenant_id == tenant_id)
    )


def owner_from(values: Sequence[Any]) -> CustomerRow | None:
    """The customer `with_owner`'s columns hold (the last `OWNER_WIDTH` values of a row, through their
    result processors), as a row for reading; None when the join found none."""
    return None if values[0] is None else lean.snapshot(CustomerRow, _OWNER_KEYS, values)


async def emails_of(
    session: AsyncSession, *, tenant_id: str, customer_ids: list[str]
) -> dict[str, str | None]:
    rows = await session.execute(
        select(CustomerRow.id, CustomerRow.email).where(
            CustomerRow.tenant_id == tenant_id, CustomerRow.id.in_(customer_ids)
        )
    )
    return {customer_id: email for customer_id, email in rows.all()}


def _like_pattern(text: str) -> str:
    """`text` as a case-insensitive substring pattern, its own % and _ (and the escape) matching literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def search_query(
    *, tenant_id: str, query: str, kyc_status: str | None = None, customer_type: str | None = None
) -> Select[Any]:
    """The tenant's live customers matching `query`: a case-insensitive substring (ASCII case only on SQLite,
    whose lower() folds no other letter) of the full name, the
    business's legal name or doing-business-as name, the email, the platformCustomerId or the UMA address,
    or exactly the customer's id. `ilike` is ILIKE on PostgreSQL and lower() LIKE lower() on SQLite. A blank
    `query` matches every live customer; `kyc_status` and `customer_type` narrow them further."""
    stmt = select(CustomerRow).where(CustomerRow.tenant_id == tenant_id, CustomerRow.deleted_at.is_(None))
    if query.strip():
        pattern = _like_pattern(query.strip())
        business = CustomerRow.business_info
        stmt = stmt.where(
            or_(
                CustomerRow.id == query.strip(),
                CustomerRow.full_name.ilike(pattern, escape="\\"),
                business["legal_name"].as_string().ilike(pattern, escape="\\"),
                business["doing_business_as"].as_string().ilike(pattern, escape="\\"),
                CustomerRow.email.ilike(pattern, escape="\\"),
                CustomerRow.platform_customer_id.ilike(pattern, escape="\\"),
                CustomerRow.uma_address.ilike(pattern, escape="\\"),
            )
        )
    if kyc_status is not None:
        stmt = stmt.where(CustomerRow.kyc_status == kyc_status)
    if customer_type is not None:
        stmt = stmt.where(CustomerRow.customer_type == customer_type)
    return stmt
