"""Per-tenant reset of a sandbox (POST /sandbox/reset, `platpay sandbox reset`).

Derived from the schema, not from a list of domains: every table with a tenant_id column loses the
tenant's rows, children before parents (the metadata's foreign-key order), in one transaction, except
the tenant's credentials and configuration (KEPT); the ledger clears its own tables first (its system
accounts stay, at zero: every process caches their ids). The platform, its tenants and their configuration stay;
the platform's own internal accounts are opened again, empty. The tenant's clock is kept (time never moves
backwards). tests/sandbox/test_reset.py fails when a new table has neither a tenant_id nor a place in
WITHOUT_TENANT.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import PrimaryKeyConstraint, UniqueConstraint, and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.db.base import Base
from platpay.db.portable import only_if
from platpay.ledger import service as ledger_service
from platpay.tenants.context import TenantContext

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


# The tenant's credentials and configuration: API tokens and the console sessions opened with them (a reset
# signs no one out), its clock, its wallet enclave key; and the console trail (who did what through the
# console, a reset included: an audit chain, not test data).
KEPT = frozenset(
    {
        "api_tokens",
        "console_sessions",
        "console_actions",
        "console_trail_heads",
        "sandbox_clocks",
        "wallet_enclave_keys",
    }
)
# Tables a domain clears itself (its service), before the sweep: the ledger keeps its system accounts.
CLEARED_BY_DOMAIN = frozenset({"ledger_holds", "postings", "journal_entries", "ledger_accounts"})
# Tables without a tenant_id: the platforms and tenants themselves; rate-limit counters (keyed by text
# naming the tenant, gone within their window).
WITHOUT_TENANT = frozenset({"platforms", "tenants", "rate_limit_counters"})


def tenant_tables() -> list[Any]:
    """Every table holding tenant rows that a reset deletes, in an order safe for foreign keys."""
    return [
        table
        for table in reversed(Base.metadata.sorted_tables)
        if "tenant_id" in table.c and table.name not in KEPT | CLEARED_BY_DOMAIN
    ]


def _found_by_tenant(table: Any) -> bool:
    """Whether an index (or a key) of `table` begins with its tenant_id."""
    keys = [list(index.columns) for index in table.indexes] + [
        list(constraint.columns)
        for constraint in table.constraints
        if isinstance(constraint, UniqueConstraint | PrimaryKeyConstraint)
    ]
    return any(columns and columns[0].name == "tenant_id" for columns in keys)


def _of_tenant(table: Any, tenant_id: str) -> Any:
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


async def reset(session: AsyncSession, *, tenant: TenantContext) -> dict[str, int]:
    """Delete the tenant's rows (see the module); the number deleted by table."""
    deleted = await ledger_service.clear_tenant(session, tenant_id=tenant.id)
    for table in tenant_tables():
        result = await session.execute(table.delete().where(_of_tenant(table, tenant.id)))
        deleted[table.name] = max(cast("CursorResult[Any]", result).rowcount or 0, 0)
    await accounts_service.ensure_platform_accounts(session, tenant_id=tenant.id, codes=tenant.currency_codes)
    return deleted
