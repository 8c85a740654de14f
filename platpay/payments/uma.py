"""UMA addresses and the directory of counterparties platpay can resolve without a network.

A tenant's own customers resolve locally (their addresses live on the tenant's UMA domain). The sandbox
domain `sandbox.uma.money` (also written `sandbox.grid.uma.money`) hosts scripted counterparties
(INTERFACE-FACTS §7): `$success.<ccy>@…` succeed in that currency, `$pending.long.<ccy>@…` stay pending,
`$fail.compliance.<ccy>@…` fail compliance; any other sandbox address is unknown (404). platpay makes no
network calls to other domains, so a sandbox cannot resolve them either.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import service as customers_service
from platpay.errors import InvalidUmaAddress, invalid_field
from platpay.kit import currencies
from platpay.payments.errors import UmaNotFound
from platpay.tenants.context import TenantContext

SANDBOX_DOMAINS = ("sandbox.uma.money", "sandbox.grid.uma.money")
SUCCESS, LONG_PENDING, COMPLIANCE_FAILURE = "SUCCESS", "LONG_PENDING", "COMPLIANCE_FAILURE"
_ADDRESS_RE = re.compile(r"^\$([a-z0-9._+\-]{1,63})@([a-z0-9](?:[a-z0-9.\-]{0,251}[a-z0-9])?)$")
_SANDBOX_USER_RE = re.compile(r"^(success|pending\.long|fail\.compliance)\.([a-z]{3,4})$")
_BEHAVIOURS = {"success": SUCCESS, "pending.long": LONG_PENDING, "fail.compliance": COMPLIANCE_FAILURE}


@dataclass(frozen=True)
class Counterparty:
    """Someone reachable at a UMA address: a sandbox counterparty or one of the tenant's customers."""

    address: str
    currencies: tuple[str, ...]
    behaviour: str  # SUCCESS | LONG_PENDING | COMPLIANCE_FAILURE
    customer_id: str | None = None  # set for the tenant's own customers
    display_name: str = ""

    @property
    def is_local(self) -> bool:
        return self.customer_id is not None


def normalize(address: str, *, field: str = "umaAddress") -> tuple[str, str, str]:
    """(address, username, domain), lower-cased, or a 400 INVALID_UMA_ADDRESS naming `field`."""
    lowered = address.strip().lower() if isinstance(address, str) else ""
    match = _ADDRESS_RE.match(lowered)
    if not match:
        raise invalid_field(
            field, f"{address!r} is not a UMA address like $name@domain.com", error=InvalidUmaAddress
        )
    return lowered, match.group(1), match.group(2)


def sandbox_counterparty(address: str) -> Counterparty | None:
    lowered, username, domain = normalize(address)
    if domain not in SANDBOX_DOMAINS:
        return None
    match = _SANDBOX_USER_RE.match(username)
    if not match or currencies.get(match.group(2).upper()) is None:
        return None
    code = match.group(2).upper()
    return Counterparty(
        address=lowered,
        currencies=(code,),
        behaviour=_BEHAVIOURS[match.group(1)],
        display_name=f"Sandbox {match.group(1).replace('.', ' ')} ({code})",
    )


async def resolve(
    session: AsyncSession, *, tenant: TenantContext, address: str, field: str = "umaAddress"
) -> Counterparty:
    """The counterparty at `address`, or 404 UMA_NOT_FOUND."""
    lowered, _username, domain = normalize(address, field=field)
    if domain == tenant.uma_domain.lower():
        customer = await customers_service.uma_address_owner(
            session, tenant_id=tenant.id, uma_address=lowered
        )
        if customer is not None:
            return Counterparty(
                address=lowered,
                currencies=tuple(customer.currencies),
                behaviour=SUCCESS,
                customer_id=customer.id,
                display_name=customer.full_name
                or (customer.business_info or {}).get("legal_name")
                or lowered,
            )
    elif tenant.is_sandbox and domain in SANDBOX_DOMAINS:
        found = sandbox_counterparty(lowered)
        if found is not None:
            return found
    raise UmaNotFound(f"no UMA counterparty at {lowered}", details={"umaAddress": lowered})
