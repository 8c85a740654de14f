"""What a request knows about its tenant once authenticated (loaded with the credential, one query)."""

from __future__ import annotations

from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from platpay.kit.clock import TenantClock

SANDBOX = "sandbox"
PRODUCTION = "production"


@dataclass(frozen=True, slots=True)
class TenantContext:
    id: str
    platform_id: str
    environment: str
    is_regulated: bool
    config_id: str
    uma_domain: str
    webhook_endpoint: str | None
    supported_currencies: list[dict[str, Any]]
    webhook_public_key_pem: str
    created_at: datetime
    updated_at: datetime
    # PlatformConfig.embeddedWalletConfig's fields as configured (camelCase keys), None when never set
    embedded_wallet_config: dict[str, Any] | None = None
    # PlatformConfig.endUserTermsRequired: quotes need the customer's acceptance of the End User Terms
    end_user_terms_required: bool = False
    # PlatformConfig.feeConfigs as configured (the API's camelCase entries); empty when none
    fee_configs: tuple[dict[str, Any], ...] = ()
    # A sandbox tenant's own clock (kit/clock.py) when it was ever moved; None: the process clock
    clock: TenantClock | None = None
    # Every stored value this context was built from, hashable (authentication sets it from the row it
    # read): two contexts with the same version describe the same configuration. None when not known.
    version: tuple[Any, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def is_sandbox(self) -> bool:
        return self.environment == SANDBOX

    def fee_config(self, fee_type: str, source_currency: str) -> dict[str, Any] | None:
        """The active fee config for (`fee_type`, `source_currency`), if the platform has one."""
        for entry in self.fee_configs:
            if entry["feeType"] == fee_type and entry["sourceCurrency"] == source_currency:
                return entry
        return None

    @property
    def currency_codes(self) -> list[str]:
        return [entry["currencyCode"] for entry in self.supported_currencies]


# The tenant the current request acts for, as authentication read it (None outside an authenticated request):
# what it knows about the tenant needs no statement of its own (an event's webhook endpoint: events/service.py).
_acting: ContextVar[TenantContext | None] = ContextVar("platpay_acting_tenant", default=None)


def act_for(tenant: TenantContext | None) -> Token[TenantContext | None]:
    """Make `tenant` the one the current request acts for (authentication; the edge middleware scopes it)."""
    return _acting.set(tenant)


def restore(token: Token[TenantContext | None]) -> None:
    _acting.reset(token)


def acting(tenant_id: str) -> TenantContext | None:
    """The tenant `tenant_id` as the current request's authentication read it, or None (not that tenant's
    request, or none)."""
    tenant = _acting.get()
    return tenant if tenant is not None and tenant.id == tenant_id else None
