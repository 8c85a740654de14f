"""Hook points of payments for the domains above it (kit/hooks.py).

`card_transactions`: card transactions are transactions (the reference's TransactionOneOf, `type: CARD`), so
GET /transactions lists them beside the transactions payments owns and GET /transactions/{id} reads them. The
cards domain, above payments, owns their table; it answers this hook with a reader
(cards/transactions.py), which payments merges by creation time."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.kit.hooks import HookPoint
from platpay.payments.card_schemas import CardTransaction


@dataclass(frozen=True, slots=True)
class CardTransactionFilters:
    """GET /transactions' filters as they apply to card transactions (None: not filtered on)."""

    customer_id: str | None = None
    platform_customer_id: str | None = None
    account_identifier: str | None = None  # the funding account, either way
    sender_account_identifier: str | None = None  # the funding account of a DEBIT
    receiver_account_identifier: str | None = None  # the funding account of a CREDIT
    status: str | None = None  # a card transaction's status
    start_date: datetime | None = None
    end_date: datetime | None = None


@dataclass(frozen=True, slots=True)
class Keyset:
    """A position in a list ordered by (created_at, id): the last item of the previous page."""

    created_at: datetime
    id: str


class CardTransactionReader(Protocol):
    async def page(
        self,
        session: AsyncSession,
        *,
        tenant_id: str,
        filters: CardTransactionFilters,
        after: Keyset | None,
        descending: bool,
        limit: int,
    ) -> list[CardTransaction]:
        """At most `limit` card transactions of the tenant matching `filters`, ordered by (createdAt, id) in
        the direction asked, strictly after `after`."""
        ...

    async def get(
        self, session: AsyncSession, *, tenant_id: str, transaction_id: str
    ) -> CardTransaction | None:
        """The tenant's card transaction `transaction_id`, or None."""
        ...


card_transactions: HookPoint[CardTransactionReader] = HookPoint(
    "payments.hooks.card_transactions",
    required="list or read card transactions as transactions",
    subscriber_module="platpay.cards.transactions",
)
