"""The ledger: the only code that writes ledger accounts' balances and postings."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.kit import clock
from platpay.ledger import repository

INTERNAL = "INTERNAL"


@dataclass(frozen=True, slots=True)
class Balance:
    available: int  # minor units
    held: int  # minor units

    @property
    def total(self) -> int:
        return self.available + self.held


async def open_internal_accounts(
    session: AsyncSession, *, tenant_id: str, accounts: list[tuple[str, str]]
) -> None:
    """Ledger accounts (zero balances, never negative) backing internal accounts: (id, currency) pairs."""
    now = clock.now()
    await repository.insert_accounts(
        session,
        [
            {
                "id": account_id,
                "tenant_id": tenant_id,
                "currency": currency,
                "kind": INTERNAL,
                "code": f"internal:{account_id}",
                "allow_negative": False,
                "available": 0,
                "held": 0,
                "created_at": now,
                "updated_at": now,
            }
            for account_id, currency in accounts
        ],
    )


async def balances(session: AsyncSession, account_ids: list[str]) -> dict[str, Balance]:
    found = await repository.balances(session, account_ids)
    return {account_id: Balance(*found.get(account_id, (0, 0))) for account_id in account_ids}
