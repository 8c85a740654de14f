"""Hook points of the customers domain: what domains above it (accounts) do when customers are created or
deleted, called by customers.service inside the caller's transaction. A subscriber registers at import of
its own service module; customers never imports it (docs/architecture.md, Layers)."""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncSession


class CustomersCreated(Protocol):
    async def __call__(
        self, session: AsyncSession, *, tenant_id: str, customer_ids: list[str], currency_codes: list[str]
    ) -> None:
        """Customers `customer_ids` were inserted for a tenant configured with `currency_codes`."""


class CustomerDeleted(Protocol):
    async def __call__(self, session: AsyncSession, *, tenant_id: str, customer_id: str) -> None:
        """The customer is being deleted (soft), in this transaction."""


Subscriber = TypeVar("Subscriber")


class HookPoint(Generic[Subscriber]):
    """An in-process list of callbacks for one event of the domain. A hook point that must be answered
    (`required`) and has no subscriber raises when fired: the process never imported the domain that
    answers it, and skipping it would leave the data half made."""

    def __init__(self, name: str, *, required: str) -> None:
        self.name = name
        self.required = required  # what the subscriber does, for the error when there is none
        self._subscribers: list[Subscriber] = []

    def subscribe(self, subscriber: Subscriber) -> Subscriber:
        """Register `subscriber` (once; usable as a decorator)."""
        if subscriber not in self._subscribers:
            self._subscribers.append(subscriber)
        return subscriber

    def subscribers(self) -> tuple[Subscriber, ...]:
        """The subscribers, in registration order; RuntimeError if there is none."""
        if not self._subscribers:
            raise RuntimeError(
                f"{self.name} has no subscriber: nothing would {self.required}. Import the domain that "
                "subscribes to it (platpay.accounts.service) before creating or deleting customers."
            )
        return tuple(self._subscribers)


on_created: HookPoint[CustomersCreated] = HookPoint(
    "customers.hooks.on_created", required="open the new customers' internal accounts"
)
on_deleted: HookPoint[CustomerDeleted] = HookPoint(
    "customers.hooks.on_deleted", required="close the deleted customer's internal accounts"
)
