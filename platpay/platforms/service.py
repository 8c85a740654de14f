"""Creating a platform (its tenants, their accounts and bootstrap tokens) and each tenant's configuration
(/config): orchestration over the tenants, accounts, auth and events domains."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.auth import service as auth_service
from platpay.auth.schemas import Permission
from platpay.config import Settings
from platpay.errors import invalid_field
from platpay.events import service as events_service
from platpay.events import types as event_types
from platpay.kit import currencies
from platpay.kit.urls import validate_webhook_url
from platpay.platforms.schemas import (
    CounterpartyFieldDefinition,
    EmbeddedWalletConfig,
    FeeConfig,
    PlatformConfig,
    PlatformCurrencyConfig,
)
from platpay.tenants import service as tenants_service
from platpay.tenants.context import PRODUCTION, TenantContext


class _Unset(Enum):
    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET
"""A /config field not given (kept as it is), as opposed to one given as None."""
Unset = Literal[_Unset.UNSET]


def _slug(name: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    return slug or "platform"


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
    if not name.strip():
        raise invalid_field("name", "must not be blank")
    codes = list(dict.fromkeys(currency_codes or tenants_service.DEFAULT_CURRENCIES))
    for code in codes:
        currencies.require(code, field="currencies")
    domain = tenants_service.validate_uma_domain(uma_domain or f"{_slug(name)}.platpay.test")
    created = await tenants_service.create(
        session,
        name=name,
        is_regulated=is_regulated,
        uma_domain=domain,
        currency_codes=codes,
        settings=settings,
    )
    credentials: dict[str, tuple[str, str]] = {}
    for environment, tenant_id in created.tenant_ids.items():
        await accounts_service.ensure_platform_accounts(session, tenant_id=tenant_id, codes=codes)
        token, secret = await auth_service.issue_token(
            session, tenant_id=tenant_id, name=f"{environment} bootstrap", permissions=list(Permission)
        )
        credentials[environment] = (token.client_id, secret)
    return CreatedPlatform(platform_id=created.platform_id, credentials=credentials)


def _currency_view(entry: dict[str, Any]) -> PlatformCurrencyConfig:
    required = tenants_service.provider_requirements(entry["currencyCode"])
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
        environment=tenant.environment,
        uma_domain=tenant.uma_domain,
        proxy_uma_subdomain=tenant.uma_domain.split(".", 1)[0],
        webhook_endpoint=tenant.webhook_endpoint,
        webhook_public_key=tenant.webhook_public_key_pem,
        supported_currencies=[_currency_view(entry) for entry in tenant.supported_currencies],
        is_regulated_financial_institution=tenant.is_regulated,
        embedded_wallet_config=EmbeddedWalletConfig.model_validate(tenant.embedded_wallet_config)
        if tenant.embedded_wallet_config
        else None,
        end_user_terms_required=tenant.end_user_terms_required,
        fee_configs=[FeeConfig.model_validate(entry) for entry in tenant.fee_configs] or None,
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


def _validate_currencies(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    result = []
    for index, entry in enumerate(entries):
        field = f"supportedCurrencies.{index}"
        code, min_amount, max_amount = entry["currencyCode"], entry["minAmount"], entry["maxAmount"]
        currencies.require(code, field=f"{field}.currencyCode")
        if code in seen:
            raise invalid_field(f"{field}.currencyCode", f"{code} is listed twice")
        seen.add(code)
        if min_amount > max_amount:
            raise invalid_field(
                f"{field}.minAmount", f"minAmount {min_amount} is above maxAmount {max_amount}"
            )
        names = [f["name"] for f in entry["requiredCounterpartyFields"]]
        if len(set(names)) != len(names):
            raise invalid_field(f"{field}.requiredCounterpartyFields", "a field name is listed twice")
        if len(set(entry["enabledTransactionTypes"])) != len(entry["enabledTransactionTypes"]):
            raise invalid_field(f"{field}.enabledTransactionTypes", "a transaction type is listed twice")
        result.append(
            {
                "currencyCode": code,
                "minAmount": min_amount,
                "maxAmount": max_amount,
                "requiredCounterpartyFields": [
                    {"name": f["name"], "mandatory": f["mandatory"]}
                    for f in entry["requiredCounterpartyFields"]
                ],
                "enabledTransactionTypes": list(entry["enabledTransactionTypes"]),
            }
        )
    return result


# The source currencies a fee config may name: the reference accepts only USD today (its other currencies
# answer NOT_IMPLEMENTED), and so does platpay, so that an integration tested here behaves the same there.
FEE_SOURCE_CURRENCIES = ("USD",)


def merge_fee_configs(
    current: tuple[dict[str, Any], ...], given: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """PATCH /config's feeConfigs: a merge-by-key upsert into `current`, keyed by (feeType, sourceCurrency).
    Each entry is in the API's shape ({feeType, sourceCurrency, variableFeeBps, fixedFee: {amount,
    currency}}), its types and ranges already checked by the request model; an entry whose variable and
    fixed fees are both 0 removes (deactivates) its key's config. Refusals name the entry's field."""
    merged = {(entry["feeType"], entry["sourceCurrency"]): entry for entry in current}
    seen: set[tuple[str, str]] = set()
    for index, entry in enumerate(given):
        field = f"feeConfigs.{index}"
        key = (entry["feeType"], entry["sourceCurrency"])
        if key in seen:
            raise invalid_field(
                f"{field}.sourceCurrency", f"a second {key[0]} fee config for {key[1]}: at most one per pair"
            )
        seen.add(key)
        if entry["sourceCurrency"] not in FEE_SOURCE_CURRENCIES:
            currencies.require(entry["sourceCurrency"], field=f"{field}.sourceCurrency")
            raise invalid_field(
                f"{field}.sourceCurrency",
                f"platform fees are collected on {', '.join(FEE_SOURCE_CURRENCIES)} sources only, "
                f"not {entry['sourceCurrency']}",
            )
        fixed = entry["fixedFee"]
        if fixed["currency"] != entry["sourceCurrency"]:
            raise invalid_field(
                f"{field}.fixedFee.currency",
                f"must be the sourceCurrency {entry['sourceCurrency']}, not {fixed['currency']}",
            )
        if entry["variableFeeBps"] == 0 and fixed["amount"] == 0:
            merged.pop(key, None)
            continue
        merged[key] = {
            "feeType": entry["feeType"],
            "sourceCurrency": entry["sourceCurrency"],
            "variableFeeBps": entry["variableFeeBps"],
            "fixedFee": {"amount": fixed["amount"], "currency": fixed["currency"]},
        }
    return list(merged.values())


async def update_config(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    uma_domain: str | Unset | None = UNSET,
    webhook_endpoint: str | Unset | None = UNSET,
    supported_currencies: list[dict[str, Any]] | Unset | None = UNSET,
    embedded_wallet_config: dict[str, Any] | Unset | None = UNSET,
    end_user_terms_required: bool | Unset | None = UNSET,
    fee_configs: list[dict[str, Any]] | Unset | None = UNSET,
    settings: Settings,
) -> PlatformConfig:
    """PATCH /config: a field left UNSET keeps its value; `webhook_endpoint=None` removes the endpoint
    (uma_domain and supported_currencies refuse None). `supported_currencies` entries are in the API's
    shape (`{"currencyCode", "minAmount", "maxAmount", "requiredCounterpartyFields": [{"name",
    "mandatory"}], "enabledTransactionTypes"}`); `embedded_wallet_config` holds the embeddedWalletConfig fields
    given (camelCase), merged into the stored ones (None removes the configuration);
    `end_user_terms_required` turns the End User Terms requirement on or off; `fee_configs` (the API's
    FeeConfig entries) are merged into the stored ones (`merge_fee_configs`). A new or changed
    webhookEndpoint gets one TEST event."""
    if uma_domain is None:
        raise invalid_field("umaDomain", "must not be null")
    if end_user_terms_required is None:
        raise invalid_field("endUserTermsRequired", "must not be null: true or false")
    if supported_currencies is None:
        raise invalid_field("supportedCurrencies", "must not be null")
    if fee_configs is None:
        raise invalid_field("feeConfigs", "must not be null: omit it to keep the fee configs")
    changes: dict[str, Any] = {}
    if uma_domain is not UNSET:
        changes["uma_domain"] = tenants_service.validate_uma_domain(uma_domain)
    if webhook_endpoint is not UNSET:
        new_url = webhook_endpoint
        if new_url is not None:
            new_url = validate_webhook_url(
                new_url,
                field="webhookEndpoint",
                require_public_https=settings.production_webhooks_require_public_https
                and tenant.environment == PRODUCTION,
            )
        changes["webhook_endpoint"] = new_url
    if supported_currencies is not UNSET:
        changes["supported_currencies"] = _validate_currencies(supported_currencies)
    if embedded_wallet_config is not UNSET:
        merged = None
        if embedded_wallet_config is not None:
            merged = {**(tenant.embedded_wallet_config or {}), **embedded_wallet_config}
            merged = {key: value for key, value in merged.items() if value is not None}  # null clears one
        changes["embedded_wallet_config"] = merged
    if end_user_terms_required is not UNSET:
        changes["end_user_terms_required"] = end_user_terms_required
    if fee_configs is not UNSET:
        given_fees = fee_configs
        merge_fee_configs((), given_fees)  # refuses bad entries before anything is locked or changed
        # merged into the stored configs under the tenant row's lock: concurrent PATCHes lose no key
        changes["fee_configs"] = lambda current: merge_fee_configs(current, given_fees)
    applied = await tenants_service.apply_config(session, tenant=tenant, changes=changes)
    if applied.currencies_added:
        await accounts_service.on_currencies_added(
            session, tenant_id=tenant.id, codes=applied.currencies_added
        )
    if applied.endpoint_changed:
        await events_service.emit(session, tenant_id=tenant.id, type=event_types.TEST, resource={})
    return render_config(applied.tenant)
