"""Hook points of the customers domain: what domains above it do when customers are created or deleted
(accounts) or change their email (wallets), and what they add to a customer shown (onboarding: a business's
beneficial owners), called by customers.service inside the caller's transaction.
A subscriber registers at import of its own module; customers never imports it (docs/architecture.md,
Layers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.customers.schemas import BeneficialOwner
from platpay.kit.hooks import HookPoint
from platpay.kit.wallet_signature import SignedRequestChallenge, WalletSignature
from platpay.tenants.context import TenantContext


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


@dataclass(frozen=True, slots=True)
class EmailChange:
    """A PATCH that changes a customer's email, as the subscriber must judge it."""

    tenant: TenantContext
    customer_id: str
    old_email: str | None
    new_email: str
    fields: dict[str, Any]  # every field of the PATCH (what a signed retry must repeat), JSON values
    wallet_signature: WalletSignature  # the request's signed-retry headers (both None on a first call)


class EmailChanging(Protocol):
    async def __call__(
        self, session: AsyncSession, *, change: EmailChange, settings: Settings
    ) -> SignedRequestChallenge | None:
        """None: the change may go ahead (nothing depends on the old email, or the signed retry was
        verified and the subscriber updated what it ties to the email in this transaction). A challenge:
        the PATCH answers 202 with it and changes nothing. An ApiError refuses the PATCH."""


on_email_changing: HookPoint[EmailChanging] = HookPoint(
    "customers.hooks.on_email_changing",
    required="hold email changes of customers whose wallets log in by EMAIL_OTP to a signed retry",
    subscriber_module="platpay.wallets.email_change",
)


class KycDecided(Protocol):
    async def __call__(self, session: AsyncSession, *, tenant_id: str, customer_id: str, status: str) -> None:
        """The customer's KYC was decided (APPROVED or REJECTED) by hand (the sandbox's override), in this
        transaction: a verification still under review ends with it."""


on_kyc_decided: HookPoint[KycDecided] = HookPoint(
    "customers.hooks.on_kyc_decided",
    required="end the customer's verification still under review",
    subscriber_module="platpay.onboarding.verifications",
)


class BusinessOwners(Protocol):
    async def __call__(
        self, session: AsyncSession, *, tenant_id: str, customer_ids: list[str]
    ) -> dict[str, list[BeneficialOwner]]:
        """The beneficial owners of the tenant's business customers `customer_ids`, by customer id (oldest
        first; a business without owners may be absent), in one query for them all."""


business_owners: HookPoint[BusinessOwners] = HookPoint(
    "customers.hooks.business_owners",
    required="show business customers' beneficial owners",
    subscriber_module="platpay.onboarding.owners",
)
