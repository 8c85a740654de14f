"""Quotes (SPEC §4.7, INTERFACE-FACTS §3.6, §8): a locked price for a cross-currency payment.

A quote is created PENDING with its OUTGOING transaction (also PENDING, no webhook yet) and an expiry job
at `expiresAt`. Executing it (internal or pull sources; real-time-funded quotes execute when their funds
arrive) debits the source, makes the quote PROCESSING and fires OUTGOING_PAYMENT.PENDING; the payout then
moves through jobs (settlement.py). Unexecuted at `expiresAt`, the quote and its transaction become
EXPIRED (OUTGOING_PAYMENT.EXPIRED).

Pricing (fx/pricing.py): the locked side is exact; the other side is rounded once in the platform's favour.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.errors import invalid_field
from platpay.fx import service as fx_service
from platpay.fx.service import Price, RateQuote, UnsupportedCurrencyPair
from platpay.jobs import service as jobs_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.payments import service as payments_service
from platpay.payments.errors import AmountOutOfRange
from platpay.payments.quotes import funding, planning, repository, settlement
from platpay.payments.quotes.errors import LookupNotFound, QuoteNotFound
from platpay.payments.quotes.models import QuoteRow
from platpay.payments.quotes.schemas import OutgoingRateDetails, Quote
from platpay.payments.quotes.state import QUOTE, QuoteStatus
from platpay.payments.quotes.types import PlatformFee, QuoteDestination, QuoteSource
from platpay.payments.state import TransactionKind, TransactionStatus, TransactionType
from platpay.payments.transfers import check_amount
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext
from platpay.wallets import service as wallets_service

EXPIRE_JOB = "fx.quote_expire"  # job kinds keep their names: jobs already queued under them still run


def _rate_details(row: QuoteRow) -> OutgoingRateDetails:
    """The reference's breakdown: no counterparty multiplier or fee in the sandbox; ours is the rate and
    the fee schedule's fixed and variable parts."""
    return OutgoingRateDetails(
        counterparty_multiplier=1.0,
        counterparty_fixed_fee=0,
        grid_api_multiplier=float(row.exchange_rate),
        grid_api_fixed_fee=row.fixed_fee,
        grid_api_variable_fee_rate=row.variable_fee_bps / 10_000,
        grid_api_variable_fee_amount=row.variable_fee,
    )


def to_schema(row: QuoteRow) -> Quote:
    return Quote(
        id=row.id,
        status=row.status,
        created_at=row.created_at,
        expires_at=row.expires_at,
        source=row.source,
        destination=row.destination,
        sending_currency=currencies.require(row.sending_currency).as_api(),
        receiving_currency=currencies.require(row.receiving_currency).as_api(),
        total_sending_amount=row.sending_amount,
        total_receiving_amount=row.receiving_amount,
        exchange_rate=float(row.exchange_rate),
        fees_included=row.fixed_fee + row.variable_fee + row.platform_fee,
        platform_fees_included=row.platform_fee,
        transaction_id=row.transaction_id,
        payment_instructions=row.payment_instructions,
        rate_details=_rate_details(row),
    )


CROSS_CURRENCY_TRANSACTION = "CROSS_CURRENCY_TRANSACTION"  # every quote is one: check_pair refuses the rest
OVERRIDE_CURRENCIES = ("USD",)  # as the reference: an override only for a USD source


def platform_fee_for(
    tenant: TenantContext, *, currency: str, override: PlatformFee | None
) -> PlatformFee | None:
    """The platform fee of a cross-currency quote sent in `currency`: the request's override (checked
    here, its refusals naming platformFeeOverride's fields), else the platform's fee config for the
    currency, else none."""
    if override is not None:
        if currency not in OVERRIDE_CURRENCIES:
            raise invalid_field(
                "platformFeeOverride",
                f"a platform fee override is supported only for a {', '.join(OVERRIDE_CURRENCIES)} source, "
                f"not {currency}",
            )
        if override.currency != currency:
            raise invalid_field(
                "platformFeeOverride.platformFixedFee.currency",
                f"must be the quote's source currency {currency}, not {override.currency}",
            )
        return override
    config = tenant.fee_config(CROSS_CURRENCY_TRANSACTION, currency)
    if config is None:
        return None
    return PlatformFee(
        fixed=config["fixedFee"]["amount"],
        currency=config["fixedFee"]["currency"],
        variable_bps=config["variableFeeBps"],
    )


def _price(
    *,
    locked_side: str,
    locked_amount: int,
    source: str,
    destination: str,
    corridor: str,
    platform_fee: PlatformFee | None = None,
) -> tuple[Price, RateQuote]:
    try:
        quote_rate = fx_service.quote_rate(source, destination)
    except UnsupportedCurrencyPair as error:
        raise invalid_field("destination", f"no {source} to {destination} rate: {error}") from None
    rule = fx_service.fee_rule(corridor)
    try:
        price = fx_service.price(
            locked_side=locked_side,
            locked_amount=locked_amount,
            minor_rate=fx_service.minor_rate(quote_rate.customer_rate, source, destination),
            fixed_fee=rule.fixed_in(source),
            variable_bps=rule.variable_bps,
            platform_fixed=platform_fee.fixed if platform_fee else 0,
            platform_bps=platform_fee.variable_bps if platform_fee else 0,
        )
    except fx_service.AmountTooSmall as error:
        raise AmountOutOfRange(
            f"lockedCurrencyAmount: {error}",
            details={
                "fields": [{"field": "lockedCurrencyAmount", "message": "too small for this corridor's fees"}]
            },
        ) from None
    return price, quote_rate


async def create_quote(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    source: QuoteSource,
    destination: QuoteDestination,
    locked_currency_side: str,
    locked_currency_amount: int,
    lookup_id: str | None = None,
    immediately_execute: bool = False,
    description: str | None = None,
    purpose_of_payment: str | None = None,
    remittance_information: str | None = None,
    sender_customer_info: dict[str, Any] | None = None,
    platform_fee_override: PlatformFee | None = None,
    settings: Settings,
    agent_id: str | None = None,
) -> Quote:
    """POST /quotes: lock a price for paying `destination` from `source`, exact on the locked side
    (SENDING or RECEIVING: `locked_currency_amount` minor units of that side's currency). `lookup_id`: the
    receiver lookup it follows (required for UMA destinations). `platform_fee_override` replaces the
    platform's configured fee (feeConfigs) for this quote. Refusals name the API's fields."""
    payer = await planning.resolve_source(session, tenant=tenant, source=source)
    payee = await planning.resolve_destination(
        session, tenant=tenant, destination=destination, lookup_id=lookup_id
    )
    planning.check_pair(tenant=tenant, source=payer, destination=payee)
    if immediately_execute and payer.funding == planning.REALTIME_FUNDING:
        raise invalid_field(
            "immediatelyExecute",
            "only quotes funded from an account can execute at once; this one waits for its funds",
        )
    if immediately_execute and payer.wallet:
        raise invalid_field(
            "immediatelyExecute",
            "an EMBEDDED_WALLET source executes only with the wallet's stamp over the quote's payloadToSign "
            "(POST /quotes/{quoteId}/execute with Svc-Wallet-Signature)",
        )
    platform_customer_id = await planning.check_sender(
        session, tenant=tenant, customer_id=payer.customer_id, currency=payer.currency, settings=settings
    )
    platform_fee = platform_fee_for(tenant, currency=payer.currency, override=platform_fee_override)
    price, quote_rate = _price(
        locked_side=locked_currency_side,
        locked_amount=locked_currency_amount,
        source=payer.currency,
        destination=payee.currency,
        corridor=payee.fee_corridor,
        platform_fee=platform_fee,
    )
    check_amount(tenant, currency=payer.currency, amount=price.sending_amount, field="lockedCurrencyAmount")
    if payee.currency in tenant.currency_codes:
        check_amount(
            tenant, currency=payee.currency, amount=price.receiving_amount, field="lockedCurrencyAmount"
        )

    now = clock.now()
    quote_id, transaction_id = new_id("Quote"), new_id("Transaction")
    instructions = (
        funding.payment_instructions(quote_id=quote_id, currency=payer.currency, amount=price.sending_amount)
        if payer.funding == planning.REALTIME_FUNDING
        else None
    )
    if payer.wallet and payer.account_id is not None:
        instructions = [
            {
                "accountOrWalletInfo": {
                    "accountType": "EMBEDDED_WALLET",
                    "payloadToSign": wallets_service.transaction_payload(
                        tenant=tenant,
                        account_id=payer.account_id,
                        quote_id=quote_id,
                        transfer={
                            "sendingAmount": price.sending_amount,
                            "sendingCurrency": payer.currency,
                            "receivingAmount": price.receiving_amount,
                            "receivingCurrency": payee.currency,
                            "destination": payee.api,
                        },
                        now=now,
                    ),
                },
                "instructionsNotes": "Stamp payloadToSign with a session key of the wallet and send the stamp "
                "as Svc-Wallet-Signature on POST /quotes/{quoteId}/execute.",
                "isPlatformAccount": False,
            }
        ]
    exchange_rate = str(fx_service.to_decimal(quote_rate.customer_rate))
    quote = QuoteRow(
        id=quote_id,
        tenant_id=tenant.id,
        customer_id=payer.customer_id,
        status=QuoteStatus.PENDING,
        source=payer.api,
        destination=payee.api,
        funding=payer.funding,
        source_account_id=payer.account_id,
        payout=payee.payout,
        destination_account_id=payee.account_id,
        rail=payee.rail,
        sending_currency=payer.currency,
        receiving_currency=payee.currency,
        locked_side=locked_currency_side,
        sending_amount=price.sending_amount,
        receiving_amount=price.receiving_amount,
        fixed_fee=price.fixed_fee,
        variable_fee=price.variable_fee,
        variable_fee_bps=price.variable_bps,
        platform_fee=price.platform_fee,
        platform_fee_entry_id=None,
        exchange_rate=exchange_rate,
        mid_rate=str(fx_service.to_decimal(quote_rate.mid)),
        spread_bps=quote_rate.spread_bps,
        transaction_id=transaction_id,
        lookup_id=lookup_id,
        payment_instructions=instructions,
        outcome=payee.outcome,
        pull_outcome=payer.pull_outcome,
        debit_entry_id=None,
        description=description,
        executed_at=None,
        expires_at=now + timedelta(seconds=settings.quote_ttl_seconds),
        created_at=now,
        updated_at=now,
    )
    extra: dict[str, Any] = {"rateDetails": _rate_details(quote).to_api(), "platformFees": price.platform_fee}
    if instructions:
        extra["paymentInstructions"] = instructions
    if sender_customer_info:
        extra["senderCustomerInfo"] = sender_customer_info
    await payments_service.create_transaction(
        session,
        transaction_id=transaction_id,
        tenant_id=tenant.id,
        type=TransactionType.OUTGOING,
        kind=TransactionKind.QUOTE,
        status=TransactionStatus.PENDING,
        customer_id=payer.customer_id,
        platform_customer_id=platform_customer_id,
        source=payer.transaction_source,
        destination=payee.transaction_destination,
        sender_account_id=payer.account_id or payer.api.get("umaAddress"),
        receiver_account_id=payee.receiver,
        sent_amount=price.sending_amount,
        sent_currency=payer.currency,
        received_amount=price.receiving_amount,
        received_currency=payee.currency,
        fee_amount=price.fees,
        exchange_rate=exchange_rate,
        rail=payee.rail,
        reference=funding.funding_reference(instructions)
        if instructions and payer.funding == planning.REALTIME_FUNDING
        else None,
        outcome=payee.outcome,
        quote_id=quote_id,
        agent_id=agent_id,
        description=description,
        extra=extra,
        at=now,
        # MANUAL: the destination named its paymentRail (an external account's payout)
        rail_selection_mode=(
            ("MANUAL" if getattr(destination, "payment_rail", None) else "AUTO")
            if payee.payout == planning.EXTERNAL
            else None
        ),
        remittance_information=remittance_information,
        purpose_of_payment=purpose_of_payment,
    )
    await repository.add(session, quote)
    await jobs_service.enqueue(
        session, EXPIRE_JOB, {"quoteId": quote_id}, tenant_id=tenant.id, run_at=quote.expires_at
    )
    if immediately_execute:
        await settlement.execute(session, quote=quote, tenant=tenant)
    return to_schema(quote)


async def get_quote(session: AsyncSession, *, tenant: TenantContext, quote_id: str) -> Quote:
    return to_schema(await settlement.load_quote(session, tenant_id=tenant.id, quote_id=quote_id))


@dataclass(frozen=True, slots=True)
class QuoteFacts:
    """What a caller deciding on a quote's execution needs (the agents domain: its policy and approval)."""

    quote: Quote
    customer_id: str | None
    agent_id: str | None  # the agent that created it, if one did
    funding: str  # INTERNAL | PULL | REALTIME_FUNDING
    source_account_id: str | None
    sending_amount: int  # minor units of sending_currency, fees included
    sending_currency: str


async def quote_facts(
    session: AsyncSession, *, tenant: TenantContext, quote_id: str, customer_id: str | None = None
) -> QuoteFacts:
    """A quote (404 QUOTE_NOT_FOUND) with who created it and what executing it would take from where.
    `customer_id`: only a quote this customer sends is found; another's answers the 404 before anything else
    is read, so it costs what an unknown id costs."""
    row = await settlement.load_quote(session, tenant_id=tenant.id, quote_id=quote_id)
    if customer_id is not None and row.customer_id != customer_id:
        raise QuoteNotFound(quote_id)
    transaction = await payments_service.load(session, tenant_id=tenant.id, transaction_id=row.transaction_id)
    return QuoteFacts(
        quote=to_schema(row),
        customer_id=row.customer_id,
        agent_id=transaction.agent_id,
        funding=row.funding,
        source_account_id=row.source_account_id,
        sending_amount=row.sending_amount,
        sending_currency=row.sending_currency,
    )


async def check_lookup_sender(
    session: AsyncSession, *, tenant: TenantContext, lookup_id: str, customer_id: str
) -> None:
    """404 unless `customer_id` may quote with lookup `lookup_id`: one made for that sender or for none (the
    platform's). Another customer's answers as an unknown id does, at the same cost (one read)."""
    lookup = await repository.get_lookup(session, tenant_id=tenant.id, lookup_id=lookup_id)
    if lookup is None or lookup.sender_customer_id not in (None, customer_id):
        raise LookupNotFound(lookup_id)


async def check_executable(session: AsyncSession, *, tenant: TenantContext, quote_id: str) -> None:
    """409 unless the quote can still be executed (not expired, not executed), 400 for a real-time funded one."""
    row = await settlement.load_quote(session, tenant_id=tenant.id, quote_id=quote_id)
    settlement.check_open(row)
    if row.funding == planning.REALTIME_FUNDING:
        raise invalid_field("quoteId", "a real-time funded quote executes when its funds arrive")


def wallet_payload(quote: QuoteRow) -> str | None:
    """The payloadToSign of a wallet-funded quote's EMBEDDED_WALLET instruction (None for other quotes)."""
    for item in quote.payment_instructions or ():
        info = item.get("accountOrWalletInfo") or {}
        if info.get("accountType") == "EMBEDDED_WALLET":
            return str(info["payloadToSign"])
    return None


async def execute_quote(
    session: AsyncSession, *, tenant: TenantContext, quote_id: str, wallet_signature: str | None = None
) -> Quote:
    """POST /quotes/{id}/execute. A quote funded by an EMBEDDED_WALLET account needs `wallet_signature`, the
    stamp of an active session of that wallet over its instruction's payloadToSign (else 401)."""
    quote = await settlement.load_quote(session, tenant_id=tenant.id, quote_id=quote_id, for_update=True)
    payload = wallet_payload(quote)
    if payload is not None and quote.source_account_id is not None:
        await wallets_service.authorize_transaction(
            session,
            tenant=tenant,
            account_id=quote.source_account_id,
            payload=payload,
            header=wallet_signature,
            subject_id=quote.id,
        )
    await settlement.execute(session, quote=quote, tenant=tenant)
    return to_schema(quote)


async def expire(session: AsyncSession, *, tenant_id: str, quote_id: str) -> None:
    """The expiry job: an unexecuted quote at or past expiresAt becomes EXPIRED with its transaction."""
    quote = await settlement.load_quote(session, tenant_id=tenant_id, quote_id=quote_id, for_update=True)
    if quote.status != QuoteStatus.PENDING or clock.now() < quote.expires_at:
        return
    quote.status = QUOTE.move(quote.status, QuoteStatus.EXPIRED, subject=quote.id)
    quote.updated_at = clock.now()
    transaction = await payments_service.load(
        session, tenant_id=tenant_id, transaction_id=quote.transaction_id, for_update=True
    )
    platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)
    await payments_service.move(
        session,
        transaction,
        TransactionStatus.EXPIRED,
        platform_id=platform_id,
        failure_reason="QUOTE_EXPIRED",
    )
