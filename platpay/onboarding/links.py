"""KYC links (SPEC §4.4, INTERFACE-FACTS §3.1): a single-use, expiring URL of the hosted verification page
(page/endpoints.py), served by platpay outside the API's base path. Only the SHA-256 of a link's random token is
stored; the token is in the URL alone. Generating a link changes nothing about the customer; earlier links
stay valid (each single-use) until they expire. A customer whose contactVerification has a channel not yet
VERIFIED gets no link (409)."""

from __future__ import annotations

import hashlib
import ipaddress
import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers import service as customers_service
from platpay.customers.state import ContactChannelStatus
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.onboarding import repository
from platpay.onboarding.errors import ContactNotVerified
from platpay.onboarding.models import KycLinkRow
from platpay.onboarding.providers import provider_for
from platpay.onboarding.schemas import KycLinkResponse
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

PAGE_PATH = "/kyc"  # the hosted page: {PAGE_PATH}/{token}, outside the API's base path
_LOOPBACK_NAMES = {"localhost"}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


def check_redirect_uri(value: str) -> str:
    """https://…, or http://… to a loopback host (local development); no credentials, no fragment."""
    field = "redirectUri"
    if any(ch.isspace() for ch in value) or not value.isprintable():
        raise invalid_field(field, "must be a URL without spaces or control characters")
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (raises on a bad port)
    except ValueError as error:
        raise invalid_field(field, f"not a valid URL: {error}") from None
    host = parts.hostname or ""
    if not host:
        raise invalid_field(field, "must be an absolute URL with a host")
    if parts.username is not None or parts.password is not None:
        raise invalid_field(field, "must not carry credentials")
    if parts.scheme == "https":
        return value
    if parts.scheme == "http" and _is_loopback(host):
        return value
    raise invalid_field(field, "must start with https:// (http:// only to localhost or a loopback address)")


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


async def create(
    session: AsyncSession,
    *,
    tenant_id: str,
    is_sandbox: bool,
    customer_id: str,
    redirect_uri: str | None,
    public_url: str,
    ttl_seconds: int,
) -> KycLinkResponse:
    """POST /customers/{customerId}/kyc-link. `public_url`: where this platpay is reached (the page's URL
    starts with it)."""
    if redirect_uri is not None:
        redirect_uri = check_redirect_uri(redirect_uri)
    customer = await customers_service.get_customer(session, tenant_id=tenant_id, customer_id=customer_id)
    if customer.is_deleted:
        await customers_service.load_active(session, tenant_id=tenant_id, customer_id=customer_id)  # 410
    # contactVerification: present only when the customer's provider requires it (another part of platpay
    # adds it); any channel it lists must be VERIFIED first.
    contact = getattr(customer, "contact_verification", None)
    channels = contact if isinstance(contact, dict) else (contact.model_dump() if contact is not None else {})
    pending = sorted(
        name
        for name, status in channels.items()
        if status is not None and status != ContactChannelStatus.VERIFIED
    )
    if pending:
        raise ContactNotVerified(
            f"verify the customer's {' and '.join(pending)} first (contactVerification)",
            details={"customerId": customer_id, "unverified": pending},
        )
    token = secrets.token_urlsafe(32)
    now = clock.now()
    row = KycLinkRow(
        id=new_id("KycLink"),
        tenant_id=tenant_id,
        customer_id=customer_id,
        token_hash=token_hash(token),
        redirect_uri=redirect_uri,
        expires_at=now + timedelta(seconds=ttl_seconds),
        used_at=None,
        created_at=now,
    )
    session.add(row)
    await session.flush()
    return KycLinkResponse(
        kyc_url=f"{public_url.rstrip('/')}{PAGE_PATH}/{token}",
        expires_at=row.expires_at,
        provider=provider_for(is_sandbox=is_sandbox).link_provider,
    )


@dataclass(frozen=True)
class LinkState:
    """What a token opens: the link, and why it cannot be used (None when it can)."""

    link: KycLinkRow | None
    refusal: str | None  # "unknown" | "used" | "expired"
    tenant: TenantContext | None = None  # the link's tenant (its clock decides expiry)


async def open_link(session: AsyncSession, *, token: str, for_update: bool = False) -> LinkState:
    if not token or len(token) > 100:
        return LinkState(None, "unknown")
    link = await repository.link_by_token_hash(session, token_hash=token_hash(token), for_update=for_update)
    if link is None:
        return LinkState(None, "unknown")
    tenant = await tenants_service.load(session, tenant_id=link.tenant_id)
    if link.used_at is not None:
        return LinkState(link, "used", tenant)
    if clock.now(tenant) >= link.expires_at:
        return LinkState(link, "expired", tenant)
    return LinkState(link, None, tenant)


async def use(session: AsyncSession, *, link: KycLinkRow) -> bool:
    return await repository.use_link(session, link_id=link.id, now=clock.now())
