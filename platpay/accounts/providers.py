"""What accounts need from outside (kit/providers.py): the institution behind the accounts.

Internal accounts' deposit details (what fundingPaymentInstructions point at: a bank's virtual account, a
custodian's address) are issued by an institution, at once or after provisioning that may fail; external
accounts may be held for a review or, for a FIRST_PARTY self-custody wallet, for ownership verification
before they can be paid. One `AccountProvider` answers both.

Two slots, like payments' rails: production tenants use PLATPAY_ACCOUNT_PROVIDER (`immediate` by default:
every internal account opens ACTIVE with its deposit details, every external account is ACTIVE at
registration), sandbox tenants PLATPAY_SANDBOX_ACCOUNT_PROVIDER (`sandbox`, accounts/sandbox.py: magic
values). `provider_for` / `provider_of` are the one place the environment picks; no other accounts code asks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts.state import ExternalAccountStatus
from platpay.config import Settings
from platpay.kit.providers import Slot
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

# How one provisioning attempt of a PENDING internal account ended.
ISSUED = "ISSUED"  # the deposit details exist: ACTIVE
RETRY = "RETRY"  # not yet (the institution is busy or down): ask again after `delay`
REFUSED = "REFUSED"  # never: FAILED


@dataclass(frozen=True, slots=True)
class NewInternalAccount:
    id: str
    customer_id: str | None  # None: the platform's own
    currency: str
    type: str  # INTERNAL_FIAT | INTERNAL_CRYPTO | EMBEDDED_WALLET
    owner_email: str | None = None  # the customer's, when the provider reads it (`reads_owner_email`)


@dataclass(frozen=True, slots=True)
class NewExternalAccount:
    account_type: str
    kind: str  # BANK | WALLET | LIGHTNING
    ownership_type: str | None  # FIRST_PARTY | THIRD_PARTY, when the client said
    identifier: str  # the account number, IBAN, address... (corridors.primary_identifier)
    platform_account_id: str | None


@dataclass(frozen=True, slots=True)
class ExternalReview:
    """An external account's status at registration, and where the review takes it after the provider's
    `delay` (None: nowhere by itself; a status update from the provider moves it)."""

    status: ExternalAccountStatus = ExternalAccountStatus.ACTIVE
    outcome: ExternalAccountStatus | None = None


class AccountProvider(Protocol):
    name: str
    reads_owner_email: bool  # whether NewInternalAccount.owner_email must be read for it

    def opens_at_once(self, account: NewInternalAccount) -> bool:
        """True: the account opens ACTIVE with its deposit details; False: PENDING until `provision`."""
        ...

    def provision(self, account: NewInternalAccount, *, attempt: int) -> str:
        """One provisioning attempt (1, 2, ...) of a PENDING account: ISSUED, RETRY or REFUSED."""
        ...

    def review(self, account: NewExternalAccount) -> ExternalReview: ...

    def delay(self) -> timedelta:
        """How long a provisioning attempt or a review takes (what the factory was given at startup)."""
        ...


ACCOUNTS: Slot[AccountProvider] = Slot("account_provider", default="immediate")
SANDBOX_ACCOUNTS: Slot[AccountProvider] = Slot("sandbox_account_provider")


def provider_for(tenant: TenantContext) -> AccountProvider:
    return SANDBOX_ACCOUNTS.get() if tenant.is_sandbox else ACCOUNTS.get()


async def provider_of(session: AsyncSession, *, tenant_id: str) -> AccountProvider:
    """The provider of a tenant known by id (jobs, hooks)."""
    sandbox = await tenants_service.is_sandbox(session, tenant_id=tenant_id)
    return SANDBOX_ACCOUNTS.get() if sandbox else ACCOUNTS.get()


class ImmediateAccounts:
    """No institution in the loop: deposit details are derived at once (accounts/instructions.py) and every
    external account can be paid from its registration — platpay as it always behaved."""

    name = "immediate"
    reads_owner_email = False

    def opens_at_once(self, account: NewInternalAccount) -> bool:
        return True

    def provision(self, account: NewInternalAccount, *, attempt: int) -> str:
        return ISSUED

    def review(self, account: NewExternalAccount) -> ExternalReview:
        return ExternalReview()

    def delay(self) -> timedelta:
        return timedelta(0)


@ACCOUNTS.implementation("immediate")
def _immediate(settings: Settings) -> AccountProvider:
    return ImmediateAccounts()
