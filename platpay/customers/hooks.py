"""Hook points of the customers domain: what domains above it (accounts) do when customers are created or
deleted, called by customers.service inside the caller's transaction. A subscriber registers at import of
its own service module; customers never imports it (docs/architecture.md, Layers)."""

from __future__ import annotations

from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.kit.hooks import HookPoint


class CustomersCreated(Protocol):
    async def __call__(
        self, session: AsyncSession, *, tenant_id: str, customer_ids: list[str], currency_codes: list[str]
    ) -> None:
        """Customers `customer_ids` were inserted for a tenant configured with `currency_codes`."""


class CustomerDeleted(Protocol):
    async def __call__(self, session: AsyncSession, *, tenant_id: str, customer_id: str) -> None:
        """The customer is being deleted (soft), in this transaction."""


on_created: HookPoint[CustomersCreated] = HookPoint(
    "customers.hooks.on_created",
    required="open the new customers' internal accounts",
    subscriber_module="platpay.accounts.service",
)
on_deleted: HookPoint[CustomerDeleted] = HookPoint(
    "customers.hooks.on_deleted",
    required="close the deleted customer's internal accounts",
    subscriber_module="platpay.accounts.service",
)
