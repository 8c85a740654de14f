"""The console's cards pages: the platform's cards (state, funding sources), a card's page (its funding
sources, its card transactions with their pulls, settlements and refunds, the console actions on it), and
freezing / unfreezing a card through the API's own path (PATCH /cards/{id}: cards_service.update_intent, then
update_card). Where the change needs the cardholder's wallet signature (a card an EMBEDDED_WALLET funds: the
signed retry of SPEC §4.12), the console does not bypass it: it says so and changes nothing."""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import Response

from platpay.accounts import service as accounts_service
from platpay.accounts.state import InternalAccountType
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.cards import service as cards_service
from platpay.cards.state import CardState
from platpay.console import web
from platpay.kit.pagination import MAX_LIMIT, PageParams

router = web.console_router()

STATES = [state.value for state in CardState]


def _filters(request: Request) -> dict[str, str]:
    return {
        "customerId": web.query_text(request, "customerId") or "",
        "state": web.query_choice(request, "state", STATES) or "",
    }


@router.get("/cards")
async def cards_list(request: Request, console: web.Console = web.SignedIn) -> Response:
    filters = _filters(request)
    params = web.page_params(request)
    async with console.db.read() as session:
        page, cards = await cards_service.list_cards(
            session,
            tenant=console.principal.tenant,
            params=params,
            settings=console.settings,
            cardholder_id=filters["customerId"] or None,
            state=filters["state"] or None,
        )
    return web.render(
        console,
        "cards/list.html",
        request=request,
        title="Cards",
        cards=cards,
        filters=filters,
        states=STATES,
        next_url=web.next_page_url(request, page),
    )


@router.get("/cards/{cardId}")
async def card_page(cardId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    params = web.page_params(request)
    tenant = console.principal.tenant
    async with console.db.read() as session:
        card = await cards_service.get_card(session, tenant=tenant, card_id=cardId, settings=console.settings)
        page, transactions = await cards_service.list_card_transactions(
            session, tenant=tenant, card_id=card.id, params=params
        )
        # the cardholder's accounts (one page, with balances): the card's sources among them, with their type
        _, accounts = await accounts_service.list_customer_accounts(
            session,
            tenant_id=tenant.id,
            params=PageParams(limit=MAX_LIMIT, after_id=None),
            customer_id=card.cardholder_id,
        )
        trail = await sessions_service.actions_for(session, tenant_id=tenant.id, subject_id=card.id)
    by_id = {account.id: account for account in accounts}
    sources = [(account_id, by_id.get(account_id)) for account_id in card.funding_sources]
    wallet_funded = any(
        account is not None and account.type == InternalAccountType.EMBEDDED_WALLET for _, account in sources
    )
    return web.render(
        console,
        "cards/detail.html",
        request=request,
        title=f"Card {card.last4 or card.id}",
        card=card,
        sources=sources,
        wallet_funded=wallet_funded,
        transactions=transactions,
        next_url=web.next_page_url(request, page),
        trail=trail,
        active=CardState.ACTIVE.value,
        frozen=CardState.FROZEN.value,
    )


async def _change_state(request: Request, console: web.Console, card_id: str, target: CardState) -> Response:
    """PATCH /cards/{id} {state} as the API runs it for a first call: checked (update_intent: the card locked,
    the move legal, who would have to sign), then applied (update_card: the state machine, the
    card.state_change webhook), with the console trail, in one transaction. A change the cardholder's wallet
    must sign is refused with a page saying so: nothing changes and nothing is recorded."""
    await web.form_of(console, permission=Permission.MANAGE)
    tenant = console.principal.tenant
    change = cards_service.CardChange(state=target.value)
    async with console.db.transaction() as session:
        intent = await cards_service.update_intent(session, tenant=tenant, card_id=card_id, change=change)
        if intent.signature_required:
            return web.render(
                console,
                "cards/needs_signature.html",
                request=request,
                status=403,
                title="Needs the cardholder's wallet signature",
                card_id=card_id,
                target=target.value,
            )
        card = await cards_service.update_card(
            session, tenant=tenant, card_id=card_id, change=change, settings=console.settings
        )
        await console.record(
            session,
            action="CARD_FROZEN" if target == CardState.FROZEN else "CARD_UNFROZEN",
            subject_type="card",
            subject_id=card.id,
            state=card.state,
        )
    return web.redirect(f"/console/cards/{card.id}")


@router.post("/cards/{cardId}/freeze")
async def freeze(cardId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    return await _change_state(request, console, cardId, CardState.FROZEN)


@router.post("/cards/{cardId}/unfreeze")
async def unfreeze(cardId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    return await _change_state(request, console, cardId, CardState.ACTIVE)
