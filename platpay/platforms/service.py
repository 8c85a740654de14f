"""Platforms, their two tenants (sandbox, production) and each tenant's configuration."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.auth.schemas import Permission
from platpay.config import Settings
from platpay.errors import invalid_field
from platpay.kit import clock, currencies
from platpay.kit.crypto import p256
from platpay.kit.crypto.sealing import get_sealer
from platpay.kit.crypto.webhook_signing import SEAL_PURPOSE
from platpay.kit.ids import new_id
from platpay.kit.urls import validate_webhook_url
from platpay.platforms import repository
from platpay.platforms.context import PRODUCTION, SANDBOX, TenantContext
from platpay.platforms.errors import TenantNotFound
from platpay.platforms.models import PlatformRow, TenantRow
from platpay.platforms.schemas import (
    CounterpartyFieldDefinition,
    PlatformConfig,
    PlatformConfigUpdate,
    PlatformCurrencyConfig,
    PlatformCurrencyConfigIn,
)

DEFAULT_CURRENCIES = ("USD", "USDC", "USDB")
DEFAULT_MAX_AMOUNT = 1_000_000_000_000
_DOMAIN_RE = re.compile(
    r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$"
)


@cache
def _provider_requirements() -> dict[str, Any]:
    raw = resources.files("platpay.platforms").joinpath("data/provider_requirements.json").read_text("utf-8")
    return json.loads(raw)


def provider_requirements(code: str) -> dict[str, list[str]]:
    """{"customer": [...], "counterparty": [...]} CustomerInfoFieldNames the provider needs for `code`."""
    data = _provider_requirements()
    if code in data["currencies"]:
        return data["currencies"][code]
    currency = currencies.get(code)
    return data["defaults"][currency.kind if currency else "FIAT"]


def default_currency_entry(code: str) -> dict[str, Any]:
    return {
        "currencyCode": code,
        "minAmount": 1,
        "maxAmount": DEFAULT_MAX_AMOUNT,
        "requiredCounterpartyFields": [{"name": "FULL_NAME", "mandatory": True}],
        "enabledTransactionTypes": ["OUTGOING", "INCOMING"],
    }


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    return slug or "platform"


def validate_uma_domain(value: str) -> str:
    domain = value.strip().lower()
    if not _DOMAIN_RE.fullmatch(domain):
        raise invalid_field("umaDomain", f"{value!r} is not a domain name like example.com")
    return domain


@dataclass(frozen=True)
class CreatedPlatform:
    platform_id: str
    credentials: dict[str, tuple[str, str]]  # environment -> (clientId, clientSecret)


async def create_platform(
    session: AsyncSession,
    *,
    name: str,
    is_regulated: bool,
    currency_codes: list[str] | None,
    uma_domain: str | None,
    settings: Settings,
) -> CreatedPlatform:
    """A platform with a sandbox and a production tenant, each with its own signing key, a MANAGE token and
    an internal account per supported currency."""
    from platpay.accounts import service as accounts_service
    from platpay.auth import service as auth_service

    if not name.strip():
        raise invalid_field("name", "must not be blank")
    codes = list(dict.fromkeys(currency_codes or DEFAULT_CURRENCIES))
    for code in codes:
        currencies.require(code, field="currencies")
    domain = validate_uma_domain(uma_domain or f"{_slug(name)}.platpay.test")
    now = clock.now()
    platform = PlatformRow(
        id=new_id("Platform"), name=name, is_regulated=is_regulated, created_at=now, updated_at=now
    )
    session.add(platform)
    await session.flush()
    sealer = get_sealer(settings.master_key, settings.var_dir)
    credentials: dict[str, tuple[str, str]] = {}
    for environment in (SANDBOX, PRODUCTION):
        key = p256.generate_private_key()
        tenant = TenantRow(
            id=new_id("Tenant"),
            platform_id=platform.id,
            environment=environment,
            config_id=new_id("PlatformConfig"),
            uma_domain=domain,
            webhook_endpoint=None,
            supported_currencies=[default_currency_entry(code) for code in codes],
            webhook_private_key_sealed=sealer.seal(p256.private_key_to_pem(key), purpose=SEAL_PURPOSE),
            webhook_public_key_pem=p256.public_key_pem(key),
            created_at=now,
            updated_at=now,
        )
        session.add(tenant)
        await session.flush()
        await accounts_service.ensure_platform_accounts(session, tenant_id=tenant.id, codes=codes)
        token, secret = await auth_service.issue_token(
            session, tenant_id=tenant.id, name=f"{environment} bootstrap", permissions=list(Permission)
        )
        credentials[environment] = (token.client_id, secret)
    return CreatedPlatform(platform_id=platform.id, credentials=credentials)


def _currency_view(entry: dict[str, Any]) -> PlatformCurrencyConfig:
    required = provider_requirements(entry["currencyCode"])
    return PlatformCurrencyConfig(
        currency_code=entry["currencyCode"],
        min_amount=entry["minAmount"],
        max_amount=entry["maxAmount"],
        required_counterparty_fields=[
            CounterpartyFieldDefinition(**f) for f in entry["requiredCounterpartyFields"]
        ],
        enabled_transaction_types=entry["enabledTransactionTypes"],
        provider_required_customer_fields=required["customer"] or None,
        provider_required_counterparty_customer_fields=required["counterparty"] or None,
    )


def render_config(tenant: TenantContext) -> PlatformConfig:
    return PlatformConfig(
        id=tenant.config_id,
        environment=tenant.environment,  # type: ignore[arg-type]
        uma_domain=tenant.uma_domain,
        proxy_uma_subdomain=tenant.uma_domain.split(".", 1)[0],
        webhook_endpoint=tenant.webhook_endpoint,
        webhook_public_key=tenant.webhook_public_key_pem,
        supported_currencies=[_currency_view(entry) for entry in tenant.supported_currencies],
        is_regulated_financial_institution=tenant.is_regulated,
        created_at=tenant.created_at,
        updated_at=tenant.updated_at,
    )


_RENDERED: dict[tuple[Any, ...], bytes] = {}
_RENDERED_MAX = 4096


def config_json(tenant: TenantContext) -> bytes:
    """GET /config's body for the configuration authentication just read. Rendering it (seven models and
    their JSON) is most of that request's own work, so the bytes are kept per version of the
    configuration: the tenant's `version` holds every stored value it was built from, so a changed
    configuration is a new key even if two changes share a timestamp (a frozen sandbox clock) — the
    cache can never serve a stale body."""
    key = tenant.version
    if key is None:  # built without its stored values at hand: no cache
        return _render_json(tenant)
    body = _RENDERED.get(key)
    if body is None:
        if len(_RENDERED) >= _RENDERED_MAX:
            _RENDERED.clear()
        body = _RENDERED[key] = _render_json(tenant)
    return body


def _render_json(tenant: TenantContext) -> bytes:
    return render_config(tenant).model_dump_json(by_alias=True, exclude_none=True).encode()


def _validate_currencies(entries: list[PlatformCurrencyConfigIn]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    result = []
    for index, entry in enumerate(entries):
        field = f"supportedCurrencies.{index}"
        currencies.require(entry.currency_code, field=f"{field}.currencyCode")
        if entry.currency_code in seen:
            raise invalid_field(f"{field}.currencyCode", f"{entry.currency_code} is listed twice")
        seen.add(entry.currency_code)
        if entry.min_amount > entry.max_amount:
            raise invalid_field(
                f"{field}.minAmount", f"minAmount {entry.min_amount} is above maxAmount {entry.max_amount}"
            )
        names = [f.name.value for f in entry.required_counterparty_fields]
        if len(set(names)) != len(names):
            raise invalid_field(f"{field}.requiredCounterpartyFields", "a field name is listed twice")
        if len(set(entry.enabled_transaction_types)) != len(entry.enabled_transaction_types):
            raise invalid_field(f"{field}.enabledTransactionTypes", "a transaction type is listed twice")
        result.append(
            {
                "currencyCode": entry.currency_code,
                "minAmount": entry.min_amount,
                "maxAmount": entry.max_amount,
                "requiredCounterpartyFields": [
                    {"name": f.name.value, "mandatory": f.mandatory}
                    for f in entry.required_counterparty_fields
                ],
                "enabledTransactionTypes": list(entry.enabled_transaction_types),
            }
        )
    return result


def tenant_context(row: TenantRow, *, is_regulated: bool) -> TenantContext:
    return TenantContext(
        id=row.id,
        platform_id=row.platform_id,
        environment=row.environment,
        is_regulated=is_regulated,
        config_id=row.config_id,
        uma_domain=row.uma_domain,
        webhook_endpoint=row.webhook_endpoint,
        supported_currencies=row.supported_currencies,
        webhook_public_key_pem=row.webhook_public_key_pem,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def load_tenant(session: AsyncSession, *, tenant_id: str) -> TenantContext:
    """The tenant as an authenticated request sees it, for jobs acting on a tenant's behalf."""
    row = await repository.get_tenant(session, tenant_id)
    platform = await repository.get_platform(session, row.platform_id) if row is not None else None
    if row is None or platform is None:
        raise TenantNotFound(f"tenant {tenant_id} not found")
    return tenant_context(row, is_regulated=platform.is_regulated)


async def update_config(
    session: AsyncSession, *, tenant: TenantContext, update: PlatformConfigUpdate, settings: Settings
) -> PlatformConfig:
    """Partial update. A new or changed webhookEndpoint gets one TEST event."""
    from platpay.accounts import service as accounts_service
    from platpay.events import service as events_service
    from platpay.events import types as event_types

    fields = update.model_fields_set
    for name in fields:
        if name in ("uma_domain", "supported_currencies") and getattr(update, name) is None:
            raise invalid_field(
                "umaDomain" if name == "uma_domain" else "supportedCurrencies", "must not be null"
            )
    row = await repository.get_tenant(session, tenant.id, for_update=True)
    if row is None:
        raise TenantNotFound(f"tenant {tenant.id} not found")
    endpoint_changed = False
    if "uma_domain" in fields and update.uma_domain is not None:
        row.uma_domain = validate_uma_domain(update.uma_domain)
    if "webhook_endpoint" in fields:
        new_url = update.webhook_endpoint
        if new_url is not None:
            new_url = validate_webhook_url(
                new_url,
                field="webhookEndpoint",
                require_public_https=settings.production_webhooks_require_public_https
                and tenant.environment == PRODUCTION,
            )
        endpoint_changed = new_url is not None and new_url != row.webhook_endpoint
        row.webhook_endpoint = new_url
        session.info.get(_ENDPOINTS_READ, {}).pop(row.id, None)
    added: list[str] = []
    if "supported_currencies" in fields and update.supported_currencies is not None:
        before = {entry["currencyCode"] for entry in row.supported_currencies}
        row.supported_currencies = _validate_currencies(update.supported_currencies)
        added = [e["currencyCode"] for e in row.supported_currencies if e["currencyCode"] not in before]
    if fields:
        row.updated_at = clock.now()
    await session.flush()
    if added:
        await accounts_service.on_currencies_added(session, tenant_id=row.id, codes=added)
    if endpoint_changed:
        await events_service.emit(session, tenant_id=row.id, type=event_types.TEST, resource={})
    return render_config(tenant_context(row, is_regulated=tenant.is_regulated))


_ENDPOINTS_READ = "platpay_webhook_endpoints"  # session.info: tenant id -> endpoint read in this transaction


def known_facts(tenant: TenantContext) -> dict[str, Any]:
    """What authenticating a request already read about its tenant, for its unit of work
    (`Database.transaction(known=...)`): the webhook endpoint, as fresh as a read inside the transaction
    (both are reads made during the request, before its writes commit)."""
    return {_ENDPOINTS_READ: {tenant.id: tenant.webhook_endpoint}}


async def webhook_endpoint(session: AsyncSession, *, tenant_id: str) -> str | None:
    """The tenant's webhook endpoint, read once per transaction: a business transaction emitting several
    events (a transfer: its status and the balance change) schedules them all to the same endpoint, with
    one query instead of one per event. update_config forgets the value it replaces."""
    read = session.info.setdefault(_ENDPOINTS_READ, {})
    if tenant_id not in read:
        read[tenant_id] = await repository.webhook_endpoint(session, tenant_id)
    return read[tenant_id]


async def sealed_webhook_key(session: AsyncSession, *, tenant_id: str) -> str:
    keys = await repository.public_key_and_sealed_private(session, tenant_id)
    if keys is None:
        raise TenantNotFound(f"tenant {tenant_id} not found")
    return keys[1]


async def environment_of(session: AsyncSession, *, tenant_id: str) -> str | None:
    row = await repository.get_tenant(session, tenant_id)
    return row.environment if row else None


async def any_platform_exists(session: AsyncSession) -> bool:
    return await repository.count_platforms(session) > 0


_platform_of: dict[str, str] = {}  # tenant id -> platform id; never changes


async def platform_of(session: AsyncSession, *, tenant_id: str) -> str:
    platform_id = _platform_of.get(tenant_id)
    if platform_id is None:
        row = await repository.get_tenant(session, tenant_id)
        if row is None:
            raise TenantNotFound(f"tenant {tenant_id} not found")
        platform_id = _platform_of[tenant_id] = row.platform_id
    return platform_id


async def tenant_context_of(session: AsyncSession, *, tenant_id: str) -> TenantContext:
    """A tenant's context outside a request (jobs)."""
    row = await repository.get_tenant(session, tenant_id)
    if row is None:
        raise TenantNotFound(f"tenant {tenant_id} not found")
    platform = await repository.get_platform(session, row.platform_id)
    return tenant_context(row, is_regulated=bool(platform and platform.is_regulated))
