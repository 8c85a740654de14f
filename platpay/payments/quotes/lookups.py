"""Receiver lookups (GET /receiver/uma/{address}, GET /receiver/external-account/{accountId}).

A lookup tells the sender what the receiver takes (currencies, an estimated rate from the sender's
currency, receivable min/max) and is stored with an expiry (PLATPAY_LOOKUP_TTL_SECONDS), so a quote to a
UMA address can name it (`lookupId`, required there) and be checked against the same receiver.
The sender is `customerId` or `senderUmaAddress` (one of this platform's customers); for an external
account it defaults to the account's owner, otherwise to the platform itself. The sender's currency is
its first configured currency (the platform's first when the customer names none).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts.errors import ExternalAccountNotFound
from platpay.accounts.external import service as external_service
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.errors import invalid_field
from platpay.fx import service as fx_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.payments import uma
from platpay.payments.quotes import repository
from platpay.payments.quotes.errors import LookupNotFound
from platpay.payments.quotes.models import LookupRow
from platpay.payments.quotes.schemas import (
    CurrencyPreference,
    ReceiverExternalAccountLookupResponse,
    ReceiverUmaLookupResponse,
)
from platpay.tenants.context import TenantContext

UMA_ADDRESS, EXTERNAL_ACCOUNT = "UMA_ADDRESS", "EXTERNAL_ACCOUNT"


async def _sender(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    customer_id: str | None,
    sender_uma_address: str | None,
    default_customer_id: str | None,
) -> tuple[str | None, str]:
    """(sender customer id or None for the platform, the sender's currency)."""
    if sender_uma_address is not None:
        counterparty = await uma.resolve(
            session, tenant=tenant, address=sender_uma_address, field="senderUmaAddress"
        )
        if not counterparty.is_local:
            raise invalid_field(
                "senderUmaAddress", "must be the UMA address of one of this platform's customers"
            )
        if customer_id is not None and customer_id != counterparty.customer_id:
            raise invalid_field("customerId", f"{sender_uma_address} belongs to another customer")
        customer_id = counterparty.customer_id
    if customer_id is None:
        customer_id = default_customer_id
    codes = tenant.currency_codes
    if customer_id is None:
        return None, codes[0]
    customer = await customers_service.load_active(session, tenant_id=tenant.id, customer_id=customer_id)
    own = [code for code in customer.currencies or [] if code in codes]
    return customer_id, (own or codes)[0]


def _preference(
    tenant: TenantContext, *, sending_currency: str, currency: str, ttl_seconds: float
) -> dict[str, Any]:
    if currency == sending_currency:
        estimated = 1.0
    else:
        estimated = float(
            fx_service.to_decimal(
                fx_service.cached_rate(sending_currency, currency, ttl_seconds=ttl_seconds).rate.customer_rate
            )
        )
    low, high = fx_service.sending_limits(tenant, currency)
    preference = CurrencyPreference(
        currency=currencies.require(currency).as_api(),
        estimated_exchange_rate=estimated,
        min=max(1, low),
        max=max(1, high),
    )
    return preference.to_api()


async def _store(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    kind: str,
    receiver: str,
    sender_customer_id: str | None,
    sending_currency: str,
    receivable: tuple[str, ...],
    settings: Settings,
) -> LookupRow:
    now = clock.now()
    row = LookupRow(
        id=new_id("Lookup"),
        tenant_id=tenant.id,
        kind=kind,
        receiver=receiver,
        sender_customer_id=sender_customer_id,
        sending_currency=sending_currency,
        supported_currencies=[
            _preference(
                tenant,
                sending_currency=sending_currency,
                currency=code,
                ttl_seconds=settings.fx_rate_cache_seconds,
            )
            for code in receivable
        ],
        created_at=now,
        expires_at=now + timedelta(seconds=settings.lookup_ttl_seconds),
    )
    await repository.add(session, row)
    return row


async def lookup_uma(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    address: str,
    customer_id: str | None,
    sender_uma_address: str | None,
    settings: Settings,
) -> ReceiverUmaLookupResponse:
    counterparty = await uma.resolve(session, tenant=tenant, address=address, field="receiverUmaAddress")
    sender_id, sending_currency = await _sender(
        session,
        tenant=tenant,
        customer_id=customer_id,
        sender_uma_address=sender_uma_address,
        default_customer_id=None,
    )
    row = await _store(
        session,
        tenant=tenant,
        kind=UMA_ADDRESS,
        receiver=counterparty.address,
        sender_customer_id=sender_id,
        sending_currency=sending_currency,
        receivable=counterparty.currencies,
        settings=settings,
    )
    return ReceiverUmaLookupResponse(
        receiver_uma_address=counterparty.address,
        supported_currencies=row.supported_currencies,
        required_payer_data_fields=[],
        lookup_id=row.id,
    )


async def lookup_external_account(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    account_id: str,
    customer_id: str | None,
    sender_uma_address: str | None,
    settings: Settings,
) -> ReceiverExternalAccountLookupResponse:
    account = await external_service.find(session, tenant_id=tenant.id, account_id=account_id)
    if account is None:
        raise ExternalAccountNotFound(account_id)
    sender_id, sending_currency = await _sender(
        session,
        tenant=tenant,
        customer_id=customer_id,
        sender_uma_address=sender_uma_address,
        default_customer_id=account.customer_id,
    )
    row = await _store(
        session,
        tenant=tenant,
        kind=EXTERNAL_ACCOUNT,
        receiver=account.id,
        sender_customer_id=sender_id,
        sending_currency=sending_currency,
        receivable=(account.currency,),
        settings=settings,
    )
    return ReceiverExternalAccountLookupResponse(
        account_id=account.id,
        supported_currencies=row.supported_currencies,
        required_payer_data_fields=[],
        lookup_id=row.id,
    )


async def require_lookup(
    session: AsyncSession, *, tenant: TenantContext, lookup_id: str, kind: str, receiver: str
) -> None:
    """A quote's `lookupId`: this tenant's, made for this receiver, not expired (else 404 / 400)."""
    lookup = await repository.get_lookup(session, tenant_id=tenant.id, lookup_id=lookup_id)
    if lookup is None:
        raise LookupNotFound(lookup_id)
    if lookup.kind != kind or lookup.receiver != receiver:
        raise invalid_field("lookupId", f"lookup {lookup_id} was made for {lookup.receiver}, not {receiver}")
    if lookup.expires_at <= clock.now():
        raise invalid_field(
            "lookupId",
            f"lookup {lookup_id} expired at {clock.isoformat(lookup.expires_at)}; look the receiver up again",
        )
