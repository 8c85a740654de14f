"""Hook points of the accounts domain (kit/hooks.py): what domains above it (wallets) do when internal
accounts are opened, called by accounts.service inside the caller's transaction. A subscriber registers
at import of its own module; accounts never imports it (docs/architecture.md, Layers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.kit.hooks import HookPoint


@dataclass(frozen=True, slots=True)
class OpenedAccount:
    id: str
    customer_id: str | None  # None: the platform's own
    currency: str
    type: str  # INTERNAL_FIAT | INTERNAL_CRYPTO | EMBEDDED_WALLET


class AccountsOpened(Protocol):
    async def __call__(self, session: AsyncSession, *, tenant_id: str, accounts: list[OpenedAccount]) -> None:
        """`accounts` were just inserted (with their ledger accounts) in this transaction."""


on_opened: HookPoint[AccountsOpened] = HookPoint(
    "accounts.hooks.on_opened",
    required="provision the new embedded wallets (custody secret, bootstrap EMAIL_OTP credential)",
    subscriber_module="platpay.wallets.provisioning",
)
