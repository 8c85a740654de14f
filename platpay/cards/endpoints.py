"""Card routes: /cards (issue, list, get, PATCH by signed retry), the card transactions' reads, the sandbox's
card simulations, and the page behind panEmbedUrl."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import HTMLResponse

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Transactor, Viewer, get_db
from platpay.cards import service as cards_service
from platpay.cards import transactions
from platpay.cards.decisioning import MessageKind
from platpay.cards.errors import EmbedTokenNotFound
from platpay.cards.schemas import (
    AUTHORIZATION_ADVICE_EXAMPLES,
    AUTHORIZATION_EXAMPLES,
    BALANCE_INQUIRY_EXAMPLES,
    CARD_CREATE_EXAMPLES,
    CARD_UPDATE_EXAMPLES,
    CLEARING_EXAMPLES,
    CREDIT_AUTHORIZATION_ADVICE_EXAMPLES,
    CREDIT_AUTHORIZATION_EXAMPLES,
    FINANCIAL_AUTHORIZATION_EXAMPLES,
    FINANCIAL_CREDIT_AUTHORIZATION_EXAMPLES,
    RETURN_EXAMPLES,
    RETURN_REVERSAL_EXAMPLES,
    Card,
    CardCreateRequest,
    CardListResponse,
    CardRevealResponse,
    CardTransaction,
    CardTransactionListResponse,
    CardTransactionStatus,
    CardUpdateRequest,
    SandboxCardAuthorizationAdviceRequest,
    SandboxCardAuthorizationRequest,
    SandboxCardBalanceInquiryRequest,
    SandboxCardClearingRequest,
    SandboxCardReturnRequest,
    SandboxCardSimulationResponse,
    SandboxCardTransactionRefRequest,
)
from platpay.errors import invalid_field
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.openapi import Responses
from platpay.kit.pagination import PageParams, page_params, sorted_page_params
from platpay.kit.routing import api_router, documented_error
from platpay.kit.wallet_signature import SignedRequestChallenge
from platpay.wallets.signed.endpoints import Signed, SignedRetry

router = api_router(tags=["Cards"])
sandbox_router = api_router(tags=["Sandbox"])
embed_router = APIRouter(tags=["Cards"])
SIGNED_CHALLENGE: Responses = {
    202: {"model": SignedRequestChallenge, "description": "stamp payloadToSign and retry"}
}

# GET /cards?state= documents the reference's values (a generated client sends them); PROCESSING is the
# reference's name of PENDING_ISSUE, which is accepted too; PENDING_KYC is never a platpay card's state.
_STATE_FILTER = {
    "PENDING_ISSUE": "PENDING_ISSUE",
    "PROCESSING": "PENDING_ISSUE",
    "PENDING_KYC": "PENDING_KYC",
    "ACTIVE": "ACTIVE",
    "FROZEN": "FROZEN",
    "CLOSED": "CLOSED",
}


@router.post(
    "/cards",
    operation_id="createCard",
    status_code=201,
    response_model=Card,
    openapi_extra=CARD_CREATE_EXAMPLES,
)
async def create_card(
    body: CardCreateRequest, idem: Idempotent = Idempotency, principal: Principal = Manager
) -> Response:
    """Issue a virtual card (201 PENDING_ISSUE; card.state_change when the issuer has provisioned it)."""
    return await idem.run(
        body.fingerprinted(cards_service.password_digest),
        lambda s: cards_service.issue_card(
            s,
            tenant=principal.tenant,
            cardholder_id=body.cardholder_id,
            form=body.form,
            funding_sources=body.funding_sources,
            platform_card_id=body.platform_card_id,
            settings=idem.request.app.state.settings,
            max_spend_per_transaction=body.max_spend_per_transaction,
            three_ds_password=body.three_ds_password,
        ),
        status=201,
    )


@router.get("/cards", operation_id="listCards", response_model=CardListResponse)
async def list_cards(
    request: Request,
    cardholder_id: str | None = Query(None, alias="cardholderId", max_length=64),
    account_id: str | None = Query(None, alias="accountId", max_length=64, description="cards it funds"),
    platform_card_id: str | None = Query(None, alias="platformCardId", max_length=255),
    state: str | None = Query(
        None,
        json_schema_extra={"enum": ["PENDING_KYC", "PROCESSING", "ACTIVE", "FROZEN", "CLOSED"]},
        description="PROCESSING (or PENDING_ISSUE) selects cards being issued",
    ),
    params: PageParams = Depends(sorted_page_params),
    principal: Principal = Viewer,
) -> dict:
    """List cards (newest first unless sortOrder=asc); filters combine."""
    if state is not None and state not in _STATE_FILTER:
        raise invalid_field("state", f"one of {', '.join(_STATE_FILTER)}", location="query")
    page, cards = await get_db(request).replica_read(
        lambda session: cards_service.list_cards(
            session,
            tenant=principal.tenant,
            params=params,
            settings=request.app.state.settings,
            cardholder_id=cardholder_id,
            account_id=account_id,
            platform_card_id=platform_card_id,
            state=_STATE_FILTER[state] if state is not None else None,
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([card.to_api() for card in cards])


@router.get("/cards/{id}", operation_id="getCardById", response_model=Card)
async def get_card(id: str, request: Request, principal: Principal = Viewer) -> Card:
    """Get one card."""
    return await get_db(request).replica_read(
        lambda session: cards_service.get_card(
            session, tenant=principal.tenant, card_id=id, settings=request.app.state.settings
        ),
        tenant_id=principal.tenant.id,
    )


@router.patch(
    "/cards/{id}",
    operation_id="updateCardById",
    response_model=Card,
    responses=SIGNED_CHALLENGE,
    openapi_extra=CARD_UPDATE_EXAMPLES,
)
async def update_card(
    id: str, body: CardUpdateRequest, signed: SignedRetry = Signed, principal: Principal = Manager
) -> Response:
    """Freeze, unfreeze, close, re-source or limit a card: 202 then the signed retry (wallet-funded cards), else 200."""
    change = cards_service.CardChange(
        state=body.state,
        funding_sources=body.funding_sources,
        max_spend_given=body.max_spend_given,
        max_spend_per_transaction=body.max_spend_per_transaction,
    )
    return await signed.run(
        prepare=lambda s, first: cards_service.update_intent(
            s, tenant=principal.tenant, card_id=id, change=change
        ),
        then=lambda s, proof: cards_service.update_card(
            s, tenant=principal.tenant, card_id=id, change=change, settings=signed.request.app.state.settings
        ),
    )


@router.post(
    "/cards/{id}/reveal",
    operation_id="revealCard",
    response_model=CardRevealResponse,
    responses={409: {"description": "the card has no number to show (PENDING_ISSUE) or is CLOSED"}},
)
async def reveal_card(id: str, request: Request, principal: Principal = Manager) -> CardRevealResponse:
    """Mint a short-lived, single-use URL of the page showing the card's number, expiry and CVV (audited)."""
    async with get_db(request).transaction() as session:
        return await cards_service.reveal(
            session, principal=principal, card_id=id, settings=request.app.state.settings
        )


@router.get(
    "/cards/{id}/transactions",
    operation_id="listCardTransactions",
    response_model=CardTransactionListResponse,
)
async def list_card_transactions(
    id: str,
    request: Request,
    status: CardTransactionStatus | None = Query(None),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """A card's transactions (authorizations, declines and what followed), newest first."""
    page, items = await get_db(request).replica_read(
        lambda session: transactions.list_transactions(
            session, tenant=principal.tenant, params=params, card_id=id, status=status
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([item.to_api() for item in items])


@router.get(
    "/card-transactions",
    operation_id="listCardTransactionsByAccount",
    response_model=CardTransactionListResponse,
)
async def list_account_card_transactions(
    request: Request,
    account_id: str = Query(alias="accountId", max_length=64, description="the funding source charged"),
    status: CardTransactionStatus | None = Query(None),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """Card transactions charged to an internal account: the account's card history, newest first."""
    page, items = await get_db(request).replica_read(
        lambda session: transactions.list_transactions(
            session, tenant=principal.tenant, params=params, account_id=account_id, status=status
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([item.to_api() for item in items])


@router.get(
    "/card-transactions/{cardTransactionId}",
    operation_id="getCardTransactionById",
    response_model=CardTransaction,
)
async def get_card_transaction(
    cardTransactionId: str, request: Request, principal: Principal = Viewer
) -> CardTransaction:
    """One card transaction with its refunds."""
    return await get_db(request).replica_read(
        lambda session: transactions.get_transaction(
            session, tenant=principal.tenant, transaction_id=cardTransactionId
        ),
        tenant_id=principal.tenant.id,
    )


_SIMULATED: Responses = {
    202: {"description": "accepted: the card operation follows on the job runner (webhook, reads)"}
}


def _simulation(path: str, operation_id: str, examples: dict) -> Callable[..., Any]:
    return sandbox_router.post(
        f"/sandbox/cards/{{id}}/simulate/{path}",
        operation_id=operation_id,
        status_code=202,
        response_model=SandboxCardSimulationResponse,
        responses=_SIMULATED,
        openapi_extra=examples,
    )


async def _opening(
    kind: MessageKind,
    card_id: str,
    body: SandboxCardAuthorizationRequest | SandboxCardBalanceInquiryRequest,
    idem: Idempotent,
    principal: Principal,
) -> Response:
    """A message that opens a card transaction, idempotently: decided and applied in this request's
    transaction, answered 202 with its token."""
    merchant = body.merchant.model_dump()
    amount, currency = 0, None  # a balance inquiry's: 0 in the card's currency
    if isinstance(body, SandboxCardAuthorizationRequest):
        amount, currency = body.amount, body.currency.code
    return await idem.run(
        body,
        transactions.accept_opening(
            tenant=principal.tenant,
            card_id=card_id,
            kind=kind,
            merchant=merchant,
            amount=amount,
            currency=currency,
            settings=idem.request.app.state.settings,
        ),
        status=202,
    )


async def _on_transaction(
    message: transactions.Message,
    card_id: str,
    body: SandboxCardClearingRequest
    | SandboxCardReturnRequest
    | SandboxCardAuthorizationAdviceRequest
    | SandboxCardTransactionRefRequest,
    idem: Idempotent,
    principal: Principal,
) -> Response:
    """A message on the card transaction the body names, idempotently: checked and queued."""
    return await idem.run(
        body,
        lambda s: transactions.accept_message(
            s,
            tenant=principal.tenant,
            card_id=card_id,
            message=message,
            transaction_id=body.card_transaction_id,
            amount=getattr(body, "amount", None),
        ),
        status=202,
    )


@_simulation("authorization", "sandboxSimulateCardAuthorization", AUTHORIZATION_EXAMPLES)
async def simulate_authorization(
    id: str,
    body: SandboxCardAuthorizationRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """An authorization as the network sends it: decided, then held or declined (404 in production)."""
    return await _opening(MessageKind.AUTHORIZATION, id, body, idem, principal)


@_simulation(
    "financial_authorization", "sandboxSimulateCardFinancialAuthorization", FINANCIAL_AUTHORIZATION_EXAMPLES
)
async def simulate_financial_authorization(
    id: str,
    body: SandboxCardAuthorizationRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A single-message financial authorization: decided, then pulled and settled at once, or declined."""
    return await _opening(MessageKind.FINANCIAL_AUTHORIZATION, id, body, idem, principal)


@_simulation("credit_authorization", "sandboxSimulateCardCreditAuthorization", CREDIT_AUTHORIZATION_EXAMPLES)
async def simulate_credit_authorization(
    id: str,
    body: SandboxCardAuthorizationRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A credit authorization: a pending credit to the card, posted to its source when cleared."""
    return await _opening(MessageKind.CREDIT_AUTHORIZATION, id, body, idem, principal)


@_simulation(
    "credit_authorization_advice",
    "sandboxSimulateCardCreditAuthorizationAdvice",
    CREDIT_AUTHORIZATION_ADVICE_EXAMPLES,
)
async def simulate_credit_authorization_advice(
    id: str,
    body: SandboxCardAuthorizationRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A credit authorization the network approved already: recorded as a pending credit."""
    return await _opening(MessageKind.CREDIT_AUTHORIZATION_ADVICE, id, body, idem, principal)


@_simulation(
    "financial_credit_authorization",
    "sandboxSimulateCardFinancialCreditAuthorization",
    FINANCIAL_CREDIT_AUTHORIZATION_EXAMPLES,
)
async def simulate_financial_credit_authorization(
    id: str,
    body: SandboxCardAuthorizationRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A single-message credit: decided, then credited to the card's source at once."""
    return await _opening(MessageKind.FINANCIAL_CREDIT_AUTHORIZATION, id, body, idem, principal)


@_simulation("balance_inquiry", "sandboxSimulateCardBalanceInquiry", BALANCE_INQUIRY_EXAMPLES)
async def simulate_balance_inquiry(
    id: str,
    body: SandboxCardBalanceInquiryRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A balance inquiry (a 0 authorization): decided and recorded; no money moves."""
    return await _opening(MessageKind.BALANCE_INQUIRY, id, body, idem, principal)


@_simulation("clearing", "sandboxSimulateCardClearing", CLEARING_EXAMPLES)
async def simulate_clearing(
    id: str,
    body: SandboxCardClearingRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A clearing against a card transaction: capture, post-hoc pull of any excess; 0 expires it."""
    return await _on_transaction(transactions.Message.CLEARING, id, body, idem, principal)


@_simulation("return", "sandboxSimulateCardReturn", RETURN_EXAMPLES)
async def simulate_return(
    id: str,
    body: SandboxCardReturnRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A merchant RETURN against a settled card transaction: a CardRefund credited to its source."""
    return await _on_transaction(transactions.Message.RETURN, id, body, idem, principal)


@_simulation("authorization_advice", "sandboxSimulateCardAuthorizationAdvice", AUTHORIZATION_ADVICE_EXAMPLES)
async def simulate_authorization_advice(
    id: str,
    body: SandboxCardAuthorizationAdviceRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """An authorization advice: an open authorization re-sized to a new total the network approved."""
    return await _on_transaction(transactions.Message.AUTHORIZATION_ADVICE, id, body, idem, principal)


@_simulation("return_reversal", "sandboxSimulateCardReturnReversal", RETURN_REVERSAL_EXAMPLES)
async def simulate_return_reversal(
    id: str,
    body: SandboxCardTransactionRefRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """A return reversal: the card transaction's last return undone, its money taken back."""
    return await _on_transaction(transactions.Message.RETURN_REVERSAL, id, body, idem, principal)


_EMBED_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>Card {last4}</title>
<meta name="robots" content="noindex"></head><body style="font-family:monospace">
<p>{brand} &middot; sandbox test card</p><p id="pan">{pan}</p><p>EXP <span id="exp">{exp}</span>
&nbsp; CVV <span id="cvv">{cvv}</span></p></body></html>"""


@embed_router.get(
    "/card-embed/{token}",
    operation_id="getCardPanEmbedPage",
    response_class=HTMLResponse,
    responses={
        200: {"content": {"text/html": {}}, "description": "the card's number, expiry and CVV"},
        404: documented_error(404, "no live card has this token"),
    },
)
async def pan_embed(token: str, request: Request) -> HTMLResponse:
    """The page panEmbedUrl points at: the card's number, expiry and CVV (sandbox test numbers)."""
    if cards_service.is_reveal_token(token):  # a reveal's URL: shown once, before it expires
        async with get_db(request).transaction() as session:
            found = await cards_service.reveal_page_card(session, token=token)
    else:
        async with get_db(request).read() as session:
            found = await cards_service.embed_page_card(session, token=token)
    if found is None:
        raise EmbedTokenNotFound("no live card has this embed token")
    _card, issued = found
    page = _EMBED_PAGE.format(
        last4=html.escape(issued.last4),
        brand=html.escape(issued.brand),
        pan=" ".join(issued.pan[i : i + 4] for i in range(0, 16, 4)),
        exp=f"{issued.exp_month:02d}/{issued.exp_year % 100:02d}",
        cvv=html.escape(issued.cvv),
    )
    return HTMLResponse(page, headers={"Cache-Control": "no-store", "X-Frame-Options": "SAMEORIGIN"})
