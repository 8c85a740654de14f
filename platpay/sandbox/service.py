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

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.db.base import Base
from platpay.ledger import service as ledger_service
from platpay.sandbox import repository
from platpay.tenants.context import TenantContext

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


async def reset(session: AsyncSession, *, tenant: TenantContext) -> dict[str, int]:
    """Delete the tenant's rows (see the module); the number deleted by table."""
    deleted = await ledger_service.clear_tenant(session, tenant_id=tenant.id)
    for table in tenant_tables():
        deleted[table.name] = await repository.delete_of_tenant(session, table, tenant.id)
    await accounts_service.ensure_platform_accounts(session, tenant_id=tenant.id, codes=tenant.currency_codes)
    return deleted
