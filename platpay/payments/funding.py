"""Sandbox deposits: money arriving in an internal account from the sandbox's funding source."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.schemas import InternalAccount
from platpay.accounts.state import InternalAccountStatus
from platpay.errors import invalid_field
from platpay.ledger import service as ledger
from platpay.tenants.context import TenantContext


async def fund_internal_account(
    session: AsyncSession, *, tenant: TenantContext, account_id: str, amount: int
) -> InternalAccount:
    account = await accounts_service.get_internal(session, tenant_id=tenant.id, account_id=account_id)
    if account.status != InternalAccountStatus.ACTIVE:
        raise invalid_field("accountId", f"internal account is {account.status}")
    source = await ledger.system_account(
        session, tenant_id=tenant.id, kind=ledger.SANDBOX_FUNDING, currency=account.currency
    )
    entry = await ledger.post(
        session,
        tenant_id=tenant.id,
        kind="SANDBOX_FUNDING",
        reference=account.id,
        legs=[
            ledger.Leg(source, account.currency, -amount),
            ledger.Leg(account.id, account.currency, amount),
        ],
    )
    rendered = await accounts_service.emit_balance_update(
        session, account=account, balance=entry.balances[account.id]
    )
    assert rendered is not None  # (an ORM session: its balance changes are never deferred)
    return rendered
