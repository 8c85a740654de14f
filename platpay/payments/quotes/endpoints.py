from __future__ import annotations

from enum import Enum
from typing import Annotated

from fastapi import Depends, Header, Path, Query, Request, Response

from platpay.auth.principal import Principal
from platpay.auth.principals import Transactor, Viewer, get_db, require_sandbox
from platpay.auth.schemas import Permission
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.openapi import Responses
from platpay.kit.routing import api_router
from platpay.payments.quotes import lookups, settlement
from platpay.payments.quotes import service as quotes_service
from platpay.payments.quotes import types as quote_types
from platpay.payments.quotes.schemas import (
    QUOTE_REQUEST_EXAMPLES,
    SANDBOX_SEND_EXAMPLES,
    AccountDestination,
    AccountQuoteSource,
    Quote,
    QuoteDestinationOneOf,
    QuoteRequest,
    QuoteSourceOneOf,
    RealtimeFundingQuoteSource,
    ReceiverExternalAccountLookupResponse,
    ReceiverUmaLookupResponse,
    SandboxSendRequest,
)
from platpay.payments.schemas import OutgoingTransaction

router = api_router()
lookup_router = api_router()  # served after fx's GET /exchange-rates (payments/domain.py)
sandbox_router = api_router(tags=["Sandbox"])
QUOTES: list[str | Enum] = ["Cross-Currency Transfers"]  # as FastAPI types `tags=`
CUSTOMER_DELETED: Responses = {410: {"description": "the named customer was deleted (CUSTOMER_DELETED)"}}


def source_of(source: QuoteSourceOneOf) -> quote_types.QuoteSource:
    if isinstance(source, AccountQuoteSource):
        return quote_types.AccountSource(account_id=source.account_id, customer_id=source.customer_id)
    if isinstance(source, RealtimeFundingQuoteSource):
        return quote_types.RealtimeFundingSource(
            currency=source.currency, customer_id=source.customer_id, crypto_network=source.crypto_network
        )
    return quote_types.UmaAddressSource(uma_address=source.uma_address, currency=source.currency)


def platform_fee_of(body: QuoteRequest) -> quote_types.PlatformFee | None:
    override = body.platform_fee_override
    if override is None:
        return None
    return quote_types.PlatformFee(
        fixed=override.platform_fixed_fee.amount,
        currency=override.platform_fixed_fee.currency,
        variable_bps=override.platform_variable_fee_bps,
    )


def destination_of(destination: QuoteDestinationOneOf) -> quote_types.QuoteDestination:
    if isinstance(destination, AccountDestination):
        return quote_types.AccountDestination(
            account_id=destination.account_id, payment_rail=destination.payment_rail
        )
    return quote_types.UmaAddressDestination(
        uma_address=destination.uma_address, currency=destination.currency
    )


@router.post(
    "/quotes",
    operation_id="createQuote",
    openapi_extra=QUOTE_REQUEST_EXAMPLES,
    status_code=201,
    response_model=Quote,
    tags=QUOTES,
    responses=CUSTOMER_DELETED,
)
async def create_quote(
    body: QuoteRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """Lock a price for a cross-currency payment (sending or receiving amount); optionally execute it at once."""
    settings = request.app.state.settings
    return await idem.run(
        body,
        lambda s: quotes_service.create_quote(
            s,
            tenant=principal.tenant,
            source=source_of(body.source),
            destination=destination_of(body.destination),
            locked_currency_side=body.locked_currency_side,
            locked_currency_amount=body.locked_currency_amount,
            lookup_id=body.lookup_id,
            immediately_execute=body.immediately_execute,
            description=body.description,
            purpose_of_payment=body.purpose_of_payment,
            remittance_information=body.remittance_information,
            sender_customer_info=body.sender_customer_info,
            platform_fee_override=platform_fee_of(body),
            settings=settings,
        ),
        status=201,
    )


@router.get("/quotes/{quoteId}", operation_id="getQuoteById", response_model=Quote, tags=QUOTES)
async def get_quote(quoteId: str, request: Request, principal: Principal = Viewer) -> Quote:
    """Get one quote; its transactionId exists from creation."""
    return await get_db(request).replica_read(
        lambda session: quotes_service.get_quote(session, tenant=principal.tenant, quote_id=quoteId),
        tenant_id=principal.tenant.id,
    )


async def wallet_signature_header(
    wallet_signature: Annotated[
        str | None,
        Header(
            alias="Svc-Wallet-Signature",
            max_length=4096,
            description="required when the quote's source is an EMBEDDED_WALLET account: the API-key stamp "
            "over paymentInstructions[].accountOrWalletInfo.payloadToSign by an active session of that wallet",
        ),
    ] = None,
) -> str | None:
    """The Svc-Wallet-Signature header of a quote execution (also the agents' execute). A dependency declared
    after `Idempotency`, so that the document lists Idempotency-Key first as before."""
    return wallet_signature


@router.post("/quotes/{quoteId}/execute", operation_id="executeQuote", response_model=Quote, tags=QUOTES)
async def execute_quote(
    quoteId: str,
    idem: Idempotent = Idempotency,
    wallet_signature: str | None = Depends(wallet_signature_header),
    principal: Principal = Transactor,
) -> Response:
    """Execute a quote funded from an internal account or a pull source, once and before it expires (else 409);
    an EMBEDDED_WALLET source needs the wallet's stamp in Svc-Wallet-Signature."""
    return await idem.run(
        None,
        lambda s: quotes_service.execute_quote(
            s, tenant=principal.tenant, quote_id=quoteId, wallet_signature=wallet_signature
        ),
        status=200,
    )


SenderCustomer = Annotated[
    str | None, Query(alias="customerId", min_length=1, max_length=64, description="the sender")
]
SenderUma = Annotated[
    str | None,
    Query(alias="senderUmaAddress", min_length=1, max_length=320, description="the sender's UMA address"),
]


@lookup_router.get(
    "/receiver/uma/{receiverUmaAddress}",
    operation_id="lookupUma",
    response_model=ReceiverUmaLookupResponse,
    tags=QUOTES,
    responses=CUSTOMER_DELETED,
)
async def lookup_uma(
    request: Request,
    receiverUmaAddress: Annotated[str, Path(max_length=320)],
    customer_id: SenderCustomer = None,
    sender_uma_address: SenderUma = None,
    principal: Principal = Viewer,
) -> ReceiverUmaLookupResponse:
    """Look up a UMA address: what it receives, at what estimated rate; the lookupId a UMA quote needs."""
    async with get_db(request).transaction() as session:
        return await lookups.lookup_uma(
            session,
            tenant=principal.tenant,
            address=receiverUmaAddress,
            customer_id=customer_id,
            sender_uma_address=sender_uma_address,
            settings=request.app.state.settings,
        )


@lookup_router.get(
    "/receiver/external-account/{accountId}",
    operation_id="lookupExternalAccount",
    response_model=ReceiverExternalAccountLookupResponse,
    tags=QUOTES,
    responses=CUSTOMER_DELETED,
)
async def lookup_external_account(
    request: Request,
    accountId: Annotated[str, Path(max_length=64)],
    customer_id: SenderCustomer = None,
    sender_uma_address: SenderUma = None,
    principal: Principal = Viewer,
) -> ReceiverExternalAccountLookupResponse:
    """Look up an external account: its currency, an estimated rate, receivable min and max, a lookupId."""
    async with get_db(request).transaction() as session:
        return await lookups.lookup_external_account(
            session,
            tenant=principal.tenant,
            account_id=accountId,
            customer_id=customer_id,
            sender_uma_address=sender_uma_address,
            settings=request.app.state.settings,
        )


@sandbox_router.post(
    "/sandbox/send",
    operation_id="sandboxSend",
    openapi_extra=SANDBOX_SEND_EXAMPLES,
    response_model=OutgoingTransaction,
)
async def sandbox_send(
    body: SandboxSendRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = Depends(require_sandbox(Permission.TRANSACT)),
) -> Response:
    """Pay a real-time-funded quote's instructions; the quote executes itself when the amount matches."""
    settings = request.app.state.settings
    return await idem.run(
        body,
        lambda s: settlement.sandbox_send(
            s,
            tenant=principal.tenant,
            quote_id=body.quote_id,
            currency_code=body.currency_code,
            currency_amount=body.currency_amount,
            settings=settings,
        ),
        status=200,
    )
