"""Who pays and who receives a quote: the request's source and destination checked and resolved into a
plan (accounts, currencies, rail, sandbox outcome). Every refusal names the field it is about."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.errors import ExternalAccountNotFound
from platpay.accounts.external import service as external_service
from platpay.accounts.state import ExternalAccountStatus, InternalAccountStatus, InternalAccountType
from platpay.accounts.validators import corridors
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.errors import InvalidCurrency, InvalidInput, invalid_field
from platpay.fx import service as fx_service
from platpay.kit import currencies
from platpay.payments import providers, uma
from platpay.payments.quotes import funding, lookups, outcomes
from platpay.payments.quotes.errors import SelfPayment
from platpay.payments.quotes.types import (
    AccountDestination,
    AccountSource,
    QuoteDestination,
    QuoteDestinationApi,
    QuoteSource,
    QuoteSourceApi,
    RealtimeFundingSource,
    UmaAddressSource,
)
from platpay.payments.transfers import PULL_ACCOUNT_TYPES
from platpay.payments.types import TransactionDestination, TransactionSource
from platpay.tenants.context import TenantContext

INTERNAL, PULL, REALTIME_FUNDING = "INTERNAL", "PULL", "REALTIME_FUNDING"  # how the quote is funded
EXTERNAL, UMA = "EXTERNAL", "UMA"  # how it pays out (plus INTERNAL: credited to an internal account)


@dataclass(frozen=True)
class SourcePlan:
    funding: str  # INTERNAL | PULL | REALTIME_FUNDING
    currency: str
    customer_id: str | None  # the sender; None: the platform
    account_id: str | None  # the internal account debited, or the external account pulled from
    api: QuoteSourceApi  # the quote's `source`
    transaction_source: TransactionSource  # the transaction's `source`
    pull_outcome: str | None = None
    wallet: bool = False  # an EMBEDDED_WALLET account: its execution needs the wallet's stamp


@dataclass(frozen=True)
class DestinationPlan:
    payout: str  # EXTERNAL | INTERNAL | UMA
    currency: str
    account_id: str | None  # external account paid, or internal account credited
    rail: str  # the payout rail: the CLEARING account's qualifier
    fee_corridor: str
    outcome: str
    api: QuoteDestinationApi
    transaction_destination: TransactionDestination
    receiver: str  # account id or UMA address, for transaction filters
    owner_customer_id: str | None = None  # whose account it is (None: the platform's)


async def _sender(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    owner_id: str | None,
    requested_id: str | None,
    field: str,
) -> str | None:
    """The customer a payment is made for: the account's owner, or (platform accounts) the one named."""
    if requested_id is None or requested_id == owner_id:
        return owner_id
    if owner_id is not None:
        raise invalid_field(field, f"the account belongs to {owner_id}, not {requested_id}")
    await customers_service.load_active(session, tenant_id=tenant.id, customer_id=requested_id)
    return requested_id


async def check_sender(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    customer_id: str | None,
    currency: str,
    settings: Settings,
) -> str | None:
    """The sender's platformCustomerId once it may move money in `currency` and, where the platform
    requires it, has accepted the End User Terms (None for the platform)."""
    if customer_id is None:
        return None
    customer = await customers_service.ensure_can_move_money(
        session, tenant_id=tenant.id, customer_id=customer_id, currency=currency
    )
    customers_service.ensure_end_user_terms_accepted(customer, tenant=tenant, settings=settings)
    return customer.platform_customer_id


def _configured_currency(tenant: TenantContext, code: str, field: str) -> str:
    currencies.require(code, field=field)
    if code not in tenant.currency_codes:
        raise invalid_field(
            field, f"{code} is not among this platform's supportedCurrencies", error=InvalidCurrency
        )
    return code


async def _account_source(
    session: AsyncSession, *, tenant: TenantContext, source: AccountSource
) -> SourcePlan:
    field = "source.accountId"
    api = source.as_api()
    if source.account_id.startswith("InternalAccount:"):
        account = await accounts_service.get_internal(
            session, tenant_id=tenant.id, account_id=source.account_id
        )
        if account.status != InternalAccountStatus.ACTIVE:
            raise invalid_field(field, f"internal account is {account.status}")
        sender = await _sender(
            session,
            tenant=tenant,
            owner_id=account.customer_id,
            requested_id=source.customer_id,
            field="source.customerId",
        )
        return SourcePlan(
            funding=INTERNAL,
            currency=account.currency,
            customer_id=sender,
            account_id=account.id,
            api=api,
            transaction_source={
                "sourceType": "ACCOUNT",
                "accountId": account.id,
                "currency": account.currency,
            },
            wallet=account.type == InternalAccountType.EMBEDDED_WALLET,
        )
    external = (
        await external_service.find(session, tenant_id=tenant.id, account_id=source.account_id)
        if source.account_id.startswith("ExternalAccount:")
        else None
    )
    if external is None:
        raise ExternalAccountNotFound(source.account_id)
    if external.account_type not in PULL_ACCOUNT_TYPES:
        raise invalid_field(
            field,
            f"{external.account_type} accounts cannot be pulled from; use a REALTIME_FUNDING source and pay "
            "the quote's paymentInstructions instead",
        )
    if external.status != ExternalAccountStatus.ACTIVE:
        raise invalid_field(field, f"external account is {external.status}")
    sender = await _sender(
        session,
        tenant=tenant,
        owner_id=external.customer_id,
        requested_id=source.customer_id,
        field="source.customerId",
    )
    return SourcePlan(
        funding=PULL,
        currency=external.currency,
        customer_id=sender,
        account_id=external.id,
        api=api,
        transaction_source={
            "sourceType": "ACCOUNT",
            "accountId": external.id,
            "currency": external.currency,
            "paymentRail": PULL_ACCOUNT_TYPES[external.account_type],
        },
        pull_outcome=providers.rail_for(tenant).transfer_outcome(
            corridors.primary_identifier(external.account_info)
        ),
    )


async def resolve_source(session: AsyncSession, *, tenant: TenantContext, source: QuoteSource) -> SourcePlan:
    if isinstance(source, AccountSource):
        return await _account_source(session, tenant=tenant, source=source)
    if isinstance(source, RealtimeFundingSource):
        currency = _configured_currency(tenant, source.currency, "source.currency")
        network = funding.check_network(currency, source.crypto_network, field="source.cryptoNetwork")
        customer_id = None
        if source.customer_id is not None:
            await customers_service.load_active(session, tenant_id=tenant.id, customer_id=source.customer_id)
            customer_id = source.customer_id
        api = source.as_api()
        if network is not None:
            api["cryptoNetwork"] = network
        transaction_source: TransactionSource = {"sourceType": "REALTIME_FUNDING", "currency": currency}
        if customer_id:
            transaction_source["customerId"] = customer_id
        return SourcePlan(REALTIME_FUNDING, currency, customer_id, None, api, transaction_source)
    assert isinstance(source, UmaAddressSource)
    currency = _configured_currency(tenant, source.currency, "source.currency")
    counterparty = await uma.resolve(
        session, tenant=tenant, address=source.uma_address, field="source.umaAddress"
    )
    if not counterparty.is_local:
        raise invalid_field(
            "source.umaAddress", "only this platform's own customers' UMA addresses can fund a quote"
        )
    api = {"sourceType": "UMA_ADDRESS", "umaAddress": counterparty.address, "currency": currency}
    shown: TransactionSource = {
        "sourceType": "UMA_ADDRESS",
        "umaAddress": counterparty.address,
        "currency": currency,
    }
    return SourcePlan(REALTIME_FUNDING, currency, counterparty.customer_id, None, api, shown)


async def _internal_destination(
    session: AsyncSession, *, tenant: TenantContext, destination: AccountDestination
) -> DestinationPlan:
    field = "destination.accountId"
    account = await accounts_service.get_internal(
        session, tenant_id=tenant.id, account_id=destination.account_id
    )
    if account.status != InternalAccountStatus.ACTIVE:
        raise invalid_field(field, f"internal account is {account.status}")
    if account.customer_id is not None:
        await customers_service.ensure_kyc_not_rejected(
            session, tenant_id=tenant.id, customer_id=account.customer_id, receiving=True
        )
    if destination.payment_rail is not None:
        raise invalid_field(
            "destination.paymentRail", "internal accounts are credited directly; omit paymentRail"
        )
    return DestinationPlan(
        payout=INTERNAL,
        currency=account.currency,
        account_id=account.id,
        rail=INTERNAL,
        fee_corridor=fx_service.INTERNAL,
        outcome=outcomes.SUCCESS,
        api=destination.as_api(),
        transaction_destination={
            "destinationType": "ACCOUNT",
            "accountId": account.id,
            "currency": account.currency,
        },
        receiver=account.id,
        owner_customer_id=account.customer_id,
    )


async def _account_destination(
    session: AsyncSession, *, tenant: TenantContext, lookup_id: str | None, destination: AccountDestination
) -> DestinationPlan:
    if lookup_id is not None:
        await lookups.require_lookup(
            session,
            tenant=tenant,
            lookup_id=lookup_id,
            kind=lookups.EXTERNAL_ACCOUNT,
            receiver=destination.account_id,
        )
    if destination.account_id.startswith("InternalAccount:"):
        return await _internal_destination(session, tenant=tenant, destination=destination)
    field = "destination.accountId"
    external = (
        await external_service.find(session, tenant_id=tenant.id, account_id=destination.account_id)
        if destination.account_id.startswith("ExternalAccount:")
        else None
    )
    if external is None:
        raise ExternalAccountNotFound(destination.account_id)
    if external.status != ExternalAccountStatus.ACTIVE:
        raise invalid_field(field, f"external account is {external.status}")
    rails = corridors.response_account_info(external.account_info).get("paymentRails") or []
    if destination.payment_rail is not None and destination.payment_rail not in rails:
        raise invalid_field(
            "destination.paymentRail",
            f"{external.account_type} is paid over {rails or 'its own network'}, not {destination.payment_rail}",
        )
    rail = destination.payment_rail or (rails[0] if rails else external.account_type)
    api = destination.as_api()
    transaction_destination: TransactionDestination = {
        "destinationType": "ACCOUNT",
        "accountId": external.id,
        "currency": external.currency,
    }
    if rails:
        api["paymentRail"] = rail
        transaction_destination["paymentRail"] = rail
    return DestinationPlan(
        payout=EXTERNAL,
        currency=external.currency,
        account_id=external.id,
        rail=rail,
        fee_corridor=rail if rails else fx_service.CRYPTO,
        outcome=providers.rail_for(tenant).payout_outcome(
            corridors.primary_identifier(external.account_info)
        ),
        api=api,
        transaction_destination=transaction_destination,
        receiver=external.id,
        owner_customer_id=external.customer_id,
    )


async def _local_uma_account(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, currency: str
) -> str:
    await customers_service.ensure_kyc_not_rejected(
        session, tenant_id=tenant.id, customer_id=customer_id, receiving=True
    )
    account = await accounts_service.holding_account_in(
        session, tenant_id=tenant.id, customer_id=customer_id, currency=currency
    )
    if account is None or account.status != InternalAccountStatus.ACTIVE:
        raise invalid_field("destination.currency", f"the receiver has no active {currency} account")
    return account.id


async def resolve_destination(
    session: AsyncSession, *, tenant: TenantContext, destination: QuoteDestination, lookup_id: str | None
) -> DestinationPlan:
    """`lookup_id`: the receiver lookup the quote follows (required for UMA destinations)."""
    if isinstance(destination, AccountDestination):
        return await _account_destination(
            session, tenant=tenant, lookup_id=lookup_id, destination=destination
        )
    counterparty = await uma.resolve(
        session, tenant=tenant, address=destination.uma_address, field="destination.umaAddress"
    )
    if lookup_id is None:
        raise invalid_field(
            "lookupId", f"is required for UMA destinations: GET /receiver/uma/{counterparty.address} first"
        )
    await lookups.require_lookup(
        session,
        tenant=tenant,
        lookup_id=lookup_id,
        kind=lookups.UMA_ADDRESS,
        receiver=counterparty.address,
    )
    currency = destination.currency or counterparty.currencies[0]
    currencies.require(currency, field="destination.currency")
    if currency not in counterparty.currencies:
        raise invalid_field(
            "destination.currency",
            f"{counterparty.address} receives {', '.join(counterparty.currencies)}, not {currency}",
        )
    api = {"destinationType": "UMA_ADDRESS", "umaAddress": counterparty.address, "currency": currency}
    common: dict[str, Any] = {
        "currency": currency,
        "fee_corridor": fx_service.UMA,
        "api": api,
        "transaction_destination": dict(api),
        "receiver": counterparty.address,
        "rail": UMA,
    }
    if counterparty.is_local:
        assert counterparty.customer_id is not None
        account_id = await _local_uma_account(
            session, tenant=tenant, customer_id=counterparty.customer_id, currency=currency
        )
        return DestinationPlan(
            payout=INTERNAL,
            account_id=account_id,
            outcome=outcomes.SUCCESS,
            owner_customer_id=counterparty.customer_id,
            **common,
        )
    return DestinationPlan(
        payout=UMA,
        account_id=None,
        outcome=providers.uma_network_for(tenant).payout_outcome(counterparty),
        **common,
    )


def check_pair(*, tenant: TenantContext, source: SourcePlan, destination: DestinationPlan) -> None:
    """Cross-party and cross-currency rules, once both ends are known."""
    if source.currency == destination.currency:
        raise InvalidInput(
            f"{source.currency} to {destination.currency} needs no exchange: quotes are for cross-currency "
            "payments; use POST /transfer-out (internal to external account) or POST /transfer-in (pull into "
            "an internal account) for same-currency transfers",
            details={
                "fields": [
                    {"field": "destination", "message": f"same currency as the source ({source.currency})"}
                ],
                "useInstead": ["POST /transfer-out", "POST /transfer-in"],
            },
        )
    if source.account_id is not None and source.account_id == destination.account_id:
        raise SelfPayment(
            "source and destination are the same account", details={"accountId": source.account_id}
        )
    if (
        destination.payout == EXTERNAL
        and source.customer_id is not None
        and destination.owner_customer_id != source.customer_id
    ):
        raise invalid_field(
            "destination.accountId",
            "a customer pays out only to its own external accounts (the platform may pay any of its tenant's)",
        )
    if (
        destination.payout == INTERNAL
        and destination.rail == UMA
        and destination.owner_customer_id == source.customer_id
    ):
        raise SelfPayment(
            "the UMA address belongs to the sender", details={"umaAddress": destination.receiver}
        )
