"""What several ledger tests share: money into account `a` of the `accounts` fixture (tests/ledger/conftest.py)."""

from __future__ import annotations

from typing import Any

from platpay.ledger import service as ledger


async def fund(
    db: Any, accounts: dict[str, Any], amount: int, *, reference: str = "Transaction:fund"
) -> None:
    """`amount` USD from the sandbox funding source into account a, committed."""
    async with db.transaction() as session:
        await ledger.post(
            session,
            tenant_id=accounts["tenant"],
            kind="FUNDING",
            reference=reference,
            legs=[ledger.Leg(accounts["source"], "USD", -amount), ledger.Leg(accounts["a"], "USD", amount)],
        )
