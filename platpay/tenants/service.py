"""Platforms and their two tenants (sandbox, production): the tenant facts every domain reads (its
context, webhook endpoint and signing key, provider requirements), and the writes the platforms domain
orchestrates (creating a platform, applying a configuration update)."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from sqlalchemy import Select, SQLColumnExpression
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql import ColumnElement
from sqlalchemy.sql.selectable import ScalarSelect

from platpay.clocks import service as clocks_service
from platpay.config import Settings
from platpay.db.unit_of_work import LeanSession, Raced
from platpay.errors import invalid_field
from platpay.kit import clock, currencies
from platpay.kit.crypto import p256
from platpay.kit.crypto.sealing import get_sealer
from platpay.kit.crypto.webhook_signing import SEAL_PURPOSE
from platpay.kit.ids import new_id
from platpay.tenants import repository
from platpay.tenants.context import PRODUCTION, SANDBOX, TenantContext
from platpay.tenants.errors import TenantNotFound
from platpay.tenants.models import PlatformRow, TenantRow

DEFAULT_CURRENCIES = ("USD", "USDC", "USDB")
DEFAULT_MAX_AMOUNT = 1_000_000_000_000
_DOMAIN_RE = re.compile(
    r"^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z][a-z0-9-]{0,61}[a-z0-9]$"
)


@cache
def _provider_requirements() -> dict[str, Any]:
    raw = resources.files("platpay.tenants").joinpath("data/provider_requirements.json").read_text("utf-8")
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


def validate_uma_domain(value: str) -> str:
    domain = value.strip().lower()
    if not _DOMAIN_RE.fullmatch(domain):
        raise invalid_field("umaDomain", f"{value!r} is not a domain name like example.com")
    return domain


# Writes (the platforms domain orchestrates them)


@dataclass(frozen=True)
class CreatedTenants:
    platform_id: str
    tenant_ids: dict[str, str]  # environment -> tenant id, sandbox first


async def create(
    session: AsyncSession,
    *,
    name: str,
    is_regulated: bool,
    uma_domain: str,
    currency_codes: list[str],
    settings: Settings,
) -> CreatedTenants:
    """A platform row and its sandbox and production tenants, each with its own webhook signing key and
    the default configuration of `currency_codes`. The values are the caller's, already validated."""
    now = clock.now()
    platform = PlatformRow(
        id=new_id("Platform"), name=name, is_regulated=is_regulated, created_at=now, updated_at=now
    )
    session.add(platform)
    await session.flush()
    sealer = get_sealer(settings.master_key, settings.var_dir)
    tenant_ids: dict[str, str] = {}
    for environment in (SANDBOX, PRODUCTION):
        key = p256.generate_private_key()
        tenant = TenantRow(
            id=new_id("Tenant"),
            platform_id=platform.id,
            environment=environment,
            config_id=new_id("PlatformConfig"),
            uma_domain=uma_domain,
            webhook_endpoint=None,
            supported_currencies=[default_currency_entry(code) for code in currency_codes],
            webhook_private_key_sealed=sealer.seal(p256.private_key_to_pem(key), purpose=SEAL_PURPOSE),
            webhook_public_key_pem=p256.public_key_pem(key),
            created_at=now,
            updated_at=now,
        )
        session.add(tenant)
        await session.flush()
        tenant_ids[environment] = tenant.id
    return CreatedTenants(platform_id=platform.id, tenant_ids=tenant_ids)


@dataclass(frozen=True)
class ConfigApplied:
    tenant: TenantContext  # as configured now
    endpoint_changed: bool  # a new (not removed, not the same) webhook endpoint
    currencies_added: list[str]  # currency codes configured now that were not before


async def apply_config(
    session: AsyncSession, *, tenant: TenantContext, changes: dict[str, Any]
) -> ConfigApplied:
    """Set a tenant's configuration values, already validated by the caller, under the tenant row's lock:
    `changes` holds any of uma_domain, webhook_endpoint (None removes it), supported_currencies (the
    stored entries), embedded_wallet_config (the whole stored object), end_user_terms_required and fee_configs (the whole stored list). Any change moves updated_at."""
    row = await repository.get_tenant(session, tenant.id, for_update=True)
    if row is None:
        raise TenantNotFound(f"tenant {tenant.id} not found")
    endpoint_changed = False
    if "uma_domain" in changes:
        row.uma_domain = changes["uma_domain"]
    if "webhook_endpoint" in changes:
        new_url = changes["webhook_endpoint"]
        endpoint_changed = new_url is not None and new_url != row.webhook_endpoint
        row.webhook_endpoint = new_url
    added: list[str] = []
    if "embedded_wallet_config" in changes:
        row.embedded_wallet_config = changes["embedded_wallet_config"]
    if "end_user_terms_required" in changes:
        row.end_user_terms_required = changes["end_user_terms_required"]
    if "fee_configs" in changes:  # the list, or a function of the stored one (a merge under this lock)
        value = changes["fee_configs"]
        row.fee_configs = value(tuple(row.fee_configs or ())) if callable(value) else value
    if "supported_currencies" in changes:
        before = {entry["currencyCode"] for entry in row.supported_currencies}
        row.supported_currencies = changes["supported_currencies"]
        added = [e["currencyCode"] for e in row.supported_currencies if e["currencyCode"] not in before]
    if changes:
        row.updated_at = clock.now()
    await session.flush()
    return ConfigApplied(
        tenant=tenant_context(row, is_regulated=tenant.is_regulated),
        endpoint_changed=endpoint_changed,
        currencies_added=added,
    )


# Reads


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
        embedded_wallet_config=row.embedded_wallet_config,
        end_user_terms_required=row.end_user_terms_required,
        fee_configs=tuple(row.fee_configs or ()),
    )


async def load(session: AsyncSession, *, tenant_id: str) -> TenantContext:
    """The tenant as an authenticated request sees it, for work outside a request (jobs)."""
    row = await repository.get_tenant(session, tenant_id)
    platform = await repository.get_platform(session, row.platform_id) if row is not None else None
    if row is None or platform is None:
        raise TenantNotFound(f"tenant {tenant_id} not found")
    context = tenant_context(row, is_regulated=platform.is_regulated)
    state = await clocks_service.state_of(session, tenant_id=tenant_id)
    return dataclasses.replace(context, clock=state) if state is not None else context


def join_context(
    stmt: Select[*tuple[Any, ...]], tenant_id: SQLColumnExpression[str]
) -> Select[*tuple[Any, ...]]:
    """`stmt` joined to the tenant its column `tenant_id` names and that tenant's platform, with the columns
    `context_from_columns` takes appended after its own: the tenant read in the same query as the
    caller's rows (authentication, on every request)."""
    return repository.join_context(stmt, tenant_id)


# TenantContexts by every column they are built from: a tenant whose configuration changes has new values,
# so a new key; an entry can never be stale. Shared by requests (frozen; never mutated).
_CONTEXTS: dict[tuple[Any, ...], TenantContext] = {}
_CONTEXTS_MAX = 4096


def context_from_columns(columns: tuple[Any, ...]) -> TenantContext:
    """The columns `join_context` appended, as a TenantContext, decoding its currencies' JSON only the first
    time this process sees this version of the tenant (most of the cost of building one, per request)."""
    tenant = _CONTEXTS.get(columns)
    if tenant is None:
        (
            tenant_id,
            platform_id,
            environment,
            is_regulated,
            config_id,
            uma_domain,
            webhook_endpoint,
            supported_currencies_json,
            webhook_public_key_pem,
            created_at,
            updated_at,
            embedded_wallet_config_json,
            end_user_terms_required,
            fee_configs_json,
            clock_offset_us,
            clock_frozen_at,
        ) = columns
        tenant = TenantContext(
            id=tenant_id,
            platform_id=platform_id,
            environment=environment,
            is_regulated=is_regulated,
            config_id=config_id,
            uma_domain=uma_domain,
            webhook_endpoint=webhook_endpoint,
            supported_currencies=json.loads(supported_currencies_json),
            webhook_public_key_pem=webhook_public_key_pem,
            created_at=created_at,
            updated_at=updated_at,
            embedded_wallet_config=json.loads(embedded_wallet_config_json)
            if embedded_wallet_config_json is not None
            else None,
            end_user_terms_required=bool(end_user_terms_required),
            fee_configs=tuple(json.loads(fee_configs_json) or ()) if fee_configs_json is not None else (),
            clock=clocks_service.from_columns(tenant_id, clock_offset_us, clock_frozen_at),
            version=columns,
        )
        if len(_CONTEXTS) >= _CONTEXTS_MAX:
            _CONTEXTS.clear()
        _CONTEXTS[columns] = tenant
    return tenant


async def webhook_endpoint(session: AsyncSession, *, tenant_id: str) -> str | None:
    """The tenant's webhook endpoint (None when it has none)."""
    return await repository.webhook_endpoint(session, tenant_id)


def webhook_endpoint_of(tenant_id: ColumnElement[str]) -> ScalarSelect[str | None]:
    """The webhook endpoint of the tenant `tenant_id` names, as a scalar subquery: for a statement of another
    domain to read it in the same round trip (events: every event's INSERT returns where to deliver it)."""
    return repository.webhook_endpoint_of(tenant_id)


async def sealed_webhook_key(session: AsyncSession, *, tenant_id: str) -> str:
    keys = await repository.public_key_and_sealed_private(session, tenant_id)
    if keys is None:
        raise TenantNotFound(f"tenant {tenant_id} not found")
    return keys[1]


async def environment_of(session: AsyncSession, *, tenant_id: str) -> str | None:
    row = await repository.get_tenant(session, tenant_id)
    return row.environment if row else None


_is_sandbox: dict[str, bool] = {}  # tenant id -> sandbox or not; never changes


async def is_sandbox(session: LeanSession, *, tenant_id: str) -> bool:
    """Whether the tenant is a sandbox; read once per process (a lean transaction cannot read it: `Raced`,
    its careful attempt reads it)."""
    known = _is_sandbox.get(tenant_id)
    if known is None:
        session = _careful(session, tenant_id)
        environment = await environment_of(session, tenant_id=tenant_id)
        if environment is None:
            raise TenantNotFound(f"tenant {tenant_id} not found")
        known = _is_sandbox[tenant_id] = environment == SANDBOX
    return known


async def any_platform_exists(session: AsyncSession) -> bool:
    return await repository.count_platforms(session) > 0


_platform_of: dict[str, str] = {}  # tenant id -> platform id; never changes


def _careful(session: LeanSession, tenant_id: str) -> AsyncSession:
    if not isinstance(session, AsyncSession):
        raise Raced(f"tenant {tenant_id} is not known to this process yet: read in the careful attempt")
    return session


async def platform_of(session: LeanSession, *, tenant_id: str) -> str:
    """The tenant's platform; read once per process (in a lean transaction: as `is_sandbox`)."""
    platform_id = _platform_of.get(tenant_id)
    if platform_id is None:
        session = _careful(session, tenant_id)
        row = await repository.get_tenant(session, tenant_id)
        if row is None:
            raise TenantNotFound(f"tenant {tenant_id} not found")
        platform_id = _platform_of[tenant_id] = row.platform_id
    return platform_id


async def load_of_platform(session: AsyncSession, *, platform_id: str, environment: str) -> TenantContext:
    """The platform's tenant of `environment` (sandbox, production), as `load` reads it."""
    row = await repository.tenant_of_platform(session, platform_id, environment)
    if row is None:
        raise TenantNotFound(f"platform {platform_id} has no {environment} tenant")
    return await load(session, tenant_id=row.id)
