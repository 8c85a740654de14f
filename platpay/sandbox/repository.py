"""The reset's statements: a table's rows of one tenant deleted, each found by an index."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.portable import only_if

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


def _found_by_tenant(table: Any) -> bool:
    """Whether an index (or a key) of `table` begins with its tenant_id."""
    keys = [list(index.columns) for index in table.indexes] + [
        list(constraint.columns)
        for constraint in table.constraints
        if isinstance(constraint, UniqueConstraint | PrimaryKeyConstraint)
    ]
    return any(columns and columns[0].name == "tenant_id" for columns in keys)


def of_tenant(table: Any, tenant_id: str) -> Any:
    """The condition of the tenant's rows of `table`. A table that no index finds by tenant (webhook attempts,
    a card's refunds, an agent's usage: rows that belong to a parent row of the same tenant) is read through
    that parent's rows of the tenant: `WHERE tenant_id = ?` there read the whole table (every tenant's), in
    the one transaction of the reset, holding SQLite's only write lock meanwhile."""
    if not _found_by_tenant(table):
        parents = [
            key
            for key in table.foreign_keys
            if key.parent.name != "tenant_id"
            and not key.parent.nullable
            and "tenant_id" in key.column.table.c
            and _found_by_tenant(key.column.table)
        ]
        if len(parents) == 1:
            [key] = parents
            parent = key.column.table
            return and_(
                key.parent.in_(select(key.column).where(parent.c.tenant_id == tenant_id)),
                only_if(table.c.tenant_id, tenant_id),
            )
    return table.c.tenant_id == tenant_id


async def delete_of_tenant(session: AsyncSession, table: Any, tenant_id: str) -> int:
    """Delete the tenant's rows of `table` (`of_tenant`); how many."""
    result = await session.execute(table.delete().where(of_tenant(table, tenant_id)))
    return max(cast("CursorResult[Any]", result).rowcount or 0, 0)
