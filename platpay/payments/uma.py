"""UMA addresses and the directory of counterparties platpay can resolve without a network.

A tenant's own customers resolve locally (their addresses live on the tenant's UMA domain); addresses on
other domains are the tenant's UMA network's (payments/providers.py; the sandbox's scripted counterparties
are in payments/sandbox.py). An address nobody knows is 404 UMA_NOT_FOUND.
"""

from __future__ import annotations

import re

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import service as customers_service
from platpay.errors import InvalidUmaAddress, invalid_field
from platpay.payments.errors import UmaNotFound
from platpay.payments.providers import SUCCESS, Counterparty, uma_network_for
from platpay.tenants.context import TenantContext

_ADDRESS_RE = re.compile(r"^\$([a-z0-9._+\-]{1,63})@([a-z0-9](?:[a-z0-9.\-]{0,251}[a-z0-9])?)$")


def normalize(address: str, *, field: str = "umaAddress") -> tuple[str, str, str]:
    """(address, username, domain), lower-cased, or a 400 INVALID_UMA_ADDRESS naming `field`."""
    lowered = address.strip().lower() if isinstance(address, str) else ""
    match = _ADDRESS_RE.match(lowered)
    if not match:
        raise invalid_field(
            field, f"{address!r} is not a UMA address like $name@domain.com", error=InvalidUmaAddress
        )
    return lowered, match.group(1), match.group(2)


async def resolve(
    session: AsyncSession, *, tenant: TenantContext, address: str, field: str = "umaAddress"
) -> Counterparty:
    """The counterparty at `address`, or 404 UMA_NOT_FOUND."""
    lowered, username, domain = normalize(address, field=field)
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
    else:
        found = uma_network_for(tenant).counterparty(lowered, domain=domain, username=username)
        if found is not None:
            return found
    raise UmaNotFound(f"no UMA counterparty at {lowered}", details={"umaAddress": lowered})
