"""Cards: issue (provisioned by a job through the card issuer), read, and change by PATCH (the signed
retry of SPEC §4.12). Every state move goes through state.CARD and emits `card.state_change`; a funding
source change emits `card.funding_source_change`; both in the transaction of the change.

Who signs a PATCH (SPEC §4.9 rule 3: "a verified credential on the card's owning internal account"): the
card's owning accounts are its funding sources. When any of the card's current or requested sources is an
EMBEDDED_WALLET, the retry must be stamped by an active session of one of those wallets. A card funded only
by platform-custodied accounts (INTERNAL_FIAT, INTERNAL_CRYPTO) has no end-user key to sign with: the
platform's own authenticated call is the authority, and the PATCH applies on the first call (200), as it
does for every other change the platform makes to those accounts.
"""

from __future__ import annotations

import secrets
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.cards import providers, repository, transactions
from platpay.cards.errors import (
    CardAlreadyClosed,
    CardholderKycNotApproved,
    CardNotFound,
    CardNotMutable,
    FundingSourceIneligible,
    InvalidStateTransition,
)
from platpay.cards.models import CardRow
from platpay.cards.schemas import Card
from platpay.cards.state import CARD, PATCH_TRIGGERS, CardState, CardTrigger
from platpay.config import get_settings
from platpay.customers import service as customers_service
from platpay.errors import InvalidInput, NotFound, invalid_field
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.ids import new_id, uuid7
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.tenants.context import TenantContext
from platpay.wallets import service as wallets_service

PROVISION_JOB = "cards.provision"
STATE_CHANGE, FUNDING_SOURCE_CHANGE = "card.state_change", "card.funding_source_change"
MAX_SOURCES = 10


def pan_embed_url(card: CardRow) -> str | None:
    if card.embed_token is None or card.state == CardState.CLOSED:
        return None
    return f"{get_settings().base_url()}/card-embed/{card.embed_token}"


def to_schema(card: CardRow, sources: list[str]) -> Card:
    return Card(
        id=card.id,
        cardholder_id=card.cardholder_id,
        platform_card_id=card.platform_card_id,
        state=card.state,  # type: ignore[arg-type]
        state_reason=card.state_reason,  # type: ignore[arg-type]
        brand=card.brand,  # type: ignore[arg-type]
        form=card.form,  # type: ignore[arg-type]
        last4=card.last4,
        exp_month=card.exp_month,
        exp_year=card.exp_year,
        pan_embed_url=pan_embed_url(card),
        funding_sources=sources,
        currency=card.currency,
        issuer_ref=card.issuer_ref,
        created_at=card.created_at,
        updated_at=card.updated_at,
    )


async def render(session: AsyncSession, card: CardRow) -> Card:
    return to_schema(card, (await repository.sources_of(session, [card.id]))[card.id])


async def load(session: AsyncSession, *, tenant_id: str, card_id: str, lock: str | None = None) -> CardRow:
    card = await repository.get_card(session, tenant_id=tenant_id, card_id=card_id, lock=lock)
    if card is None:
        raise CardNotFound(card_id)
    return card


async def _checked_sources(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    cardholder_id: str,
    account_ids: list[str],
    currency: str | None,
    field: str = "fundingSources",
) -> tuple[str, list[Any]]:
    """The sources' one currency and their accounts, or FUNDING_SOURCE_INELIGIBLE naming the first that
    is not an active internal account of the cardholder in that currency (the card's, when it has one)."""
    if not account_ids:
        raise invalid_field(field, "at least one funding source is required")
    if len(set(account_ids)) != len(account_ids):
        raise invalid_field(field, "lists an account more than once")
    issuer = providers.issuer_for(tenant)
    accounts = []
    for index, account_id in enumerate(account_ids):
        where = f"{field}[{index}]"

        def ineligible(why: str, account_id: str = account_id, where: str = where) -> FundingSourceIneligible:
            return FundingSourceIneligible(
                f"funding source {account_id!r} is not eligible: {why}",
                details={"fields": [{"field": where, "message": why}], "accountId": account_id},
            )

        try:
            account = await accounts_service.get_internal(session, tenant_id=tenant.id, account_id=account_id)
        except NotFound:
            raise ineligible("no such internal account") from None
        if account.customer_id != cardholder_id:
            raise ineligible("it is not an internal account of the cardholder")
        if account.status != "ACTIVE":
            raise ineligible(f"the account is {account.status}")
        currency = currency or account.currency
        if account.currency != currency:
            raise ineligible(f"it holds {account.currency}, the card's currency is {currency}")
        if not issuer.funding_source_eligible(account_id):
            raise ineligible("the card issuer refuses it as a funding source")
        accounts.append(account)
    assert currency is not None
    return currency, accounts


async def issue_card(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    cardholder_id: str,
    form: str,
    funding_sources: list[str],
    platform_card_id: str | None = None,
) -> Card:
    """POST /cards: a PENDING_ISSUE card for an APPROVED cardholder; the issuer provisions it (a job)."""
    holder = await customers_service.find_active(session, tenant_id=tenant.id, customer_id=cardholder_id)
    if holder is None:
        raise invalid_field("cardholderId", f"no customer {cardholder_id!r}")
    if holder.kyc_status != "APPROVED":
        raise CardholderKycNotApproved(
            f"cardholder {cardholder_id} has kycStatus {holder.kyc_status}; cards need APPROVED",
            details={"cardholderId": cardholder_id, "kycStatus": holder.kyc_status},
        )
    currency, _ = await _checked_sources(
        session, tenant=tenant, cardholder_id=cardholder_id, account_ids=funding_sources, currency=None
    )
    now = clock.now(tenant)
    card = await repository.insert_card(
        session,
        {
            "id": new_id("Card"),
            "tenant_id": tenant.id,
            "cardholder_id": cardholder_id,
            "platform_card_id": platform_card_id or f"card-{uuid7().hex}",
            "state": CardState.PENDING_ISSUE,
            "state_reason": None,
            "form": form,
            "currency": currency,
            "created_at": now,
            "updated_at": now,
        },
        funding_sources,
    )
    plan = providers.issuer_for(tenant).provisioning(
        platform_card_id=platform_card_id or "", cardholder_id=cardholder_id, settings=get_settings()
    )
    if plan.outcome != providers.STAY_PENDING:
        await jobs_service.enqueue(
            session,
            PROVISION_JOB,
            {"cardId": card.id, "outcome": plan.outcome},
            tenant_id=tenant.id,
            run_at=now + plan.delay,
        )
    return to_schema(card, funding_sources)


async def _move(
    session: AsyncSession, card: CardRow, trigger: CardTrigger, *, reason: str | None = None
) -> None:
    card.state = CARD.fire(card.state, trigger, subject=card.id)
    if reason is not None:
        card.state_reason = reason
    card.updated_at = clock.now()


async def _emit(session: AsyncSession, card: CardRow, event: str) -> Card:
    await session.flush()
    rendered = await render(session, card)
    await events_service.emit(session, tenant_id=card.tenant_id, type=event, resource=rendered)
    return rendered


async def provision(session: AsyncSession, *, tenant_id: str, card_id: str, outcome: str) -> None:
    """The issuer's answer for a PENDING_ISSUE card: ACTIVE with its details, or CLOSED (ISSUER_REJECTED).
    A card no longer pending (a job run twice) is left alone."""
    card = await load(session, tenant_id=tenant_id, card_id=card_id, lock="update")
    if card.state != CardState.PENDING_ISSUE:
        return
    issuer = await providers.issuer_of(session, tenant_id=tenant_id)
    if outcome == providers.ACTIVATE:
        issued = issuer.issue(card_id=card.id, at=card.created_at)
        card.brand, card.last4 = issued.brand, issued.last4
        card.exp_month, card.exp_year, card.issuer_ref = issued.exp_month, issued.exp_year, issued.issuer_ref
        card.embed_token = secrets.token_urlsafe(24)
        await _move(session, card, CardTrigger.PROVISIONED)
    else:
        await _move(session, card, CardTrigger.ISSUER_REJECTED, reason="ISSUER_REJECTED")
        await repository.replace_sources(session, card=card, account_ids=[])
    await _emit(session, card, STATE_CHANGE)


async def get_card(session: AsyncSession, *, tenant: TenantContext, card_id: str) -> Card:
    return await render(session, await load(session, tenant_id=tenant.id, card_id=card_id))


async def list_cards(
    session: AsyncSession, *, tenant: TenantContext, params: PageParams, **filters: Any
) -> tuple[PageResult[CardRow], list[Card]]:
    stmt = repository.card_query(tenant_id=tenant.id, **filters)
    page = await paginate(session, stmt, id_column=CardRow.id, params=params)
    sources = await repository.sources_of(session, [card.id for card in page.items])
    return page, [to_schema(card, sources[card.id]) for card in page.items]


async def embed_page_card(session: AsyncSession, *, token: str) -> tuple[CardRow, Any] | None:
    """The card whose panEmbedUrl carries `token` and its number (None: no such live card)."""
    card = await repository.card_by_embed_token(session, token=token)
    if card is None or card.state == CardState.CLOSED:
        return None
    issuer = await providers.issuer_of(session, tenant_id=card.tenant_id)
    return card, issuer.issue(card_id=card.id, at=card.created_at)


async def update_intent(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    card_id: str,
    state: str | None,
    funding_sources: list[str] | None,
) -> wallets_service.SignedIntent:
    """Check a PATCH (both calls) and say what the retry binds and who may sign it (see the module)."""
    if state is None and funding_sources is None:
        raise InvalidInput(
            "give state and/or fundingSources",
            details={"fields": [{"field": "state", "message": "state or fundingSources is required"}]},
        )
    if funding_sources is not None and not funding_sources:
        raise invalid_field("fundingSources", "must list at least one funding source")
    if funding_sources is not None and state == CardState.CLOSED:
        raise invalid_field("fundingSources", "cannot be changed while closing the card (state CLOSED)")
    card = await load(session, tenant_id=tenant.id, card_id=card_id, lock="update")
    if card.state == CardState.CLOSED:
        if state == CardState.CLOSED:
            raise CardAlreadyClosed(f"card {card.id} is already closed", details={"cardId": card.id})
        raise CardNotMutable(f"card {card.id} is closed and cannot change", details={"cardId": card.id})
    if state is not None and (CARD.state(card.state), PATCH_TRIGGERS[CardState(state)]) not in CARD.triggers:
        raise InvalidStateTransition(
            f"card {card.id} cannot move from {card.state} to {state}",
            details={"cardId": card.id, "state": card.state, "requested": state},
        )
    current = (await repository.sources_of(session, [card.id]))[card.id]
    accounts = []
    if funding_sources is not None:
        _, accounts = await _checked_sources(
            session,
            tenant=tenant,
            cardholder_id=card.cardholder_id,
            account_ids=funding_sources,
            currency=card.currency,
        )
    for account_id in current:
        try:
            accounts.append(
                await accounts_service.get_internal(session, tenant_id=tenant.id, account_id=account_id)
            )
        except NotFound:
            continue
    wallets = sorted({a.id for a in accounts if a.type == "EMBEDDED_WALLET"})
    bound: dict[str, Any] = {}
    if state is not None:
        bound["state"] = state
    if funding_sources is not None:
        bound["fundingSources"] = list(funding_sources)
    return wallets_service.SignedIntent(
        operation="cards.update",
        resource_id=card.id,
        bound=bound,
        signers=wallets_service.Signers.sessions_of(*wallets),
        activity_type="ACTIVITY_TYPE_UPDATE_CARD",
        parameters={"cardId": card.id, **bound},
        signature_required=bool(wallets),
    )


async def update_card(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    card_id: str,
    state: str | None,
    funding_sources: list[str] | None,
) -> Card:
    """The PATCH itself, after `update_intent` checked it in this transaction (the card is locked)."""
    card = await load(session, tenant_id=tenant.id, card_id=card_id, lock="update")
    rendered: Card | None = None
    if state is not None:
        target = CardState(state)
        if target == CardState.CLOSED:
            await _move(session, card, CardTrigger.CLOSE, reason="CLOSED_BY_PLATFORM")
            await transactions.reconcile_on_close(session, tenant=tenant, card_id=card.id)
            await repository.replace_sources(session, card=card, account_ids=[])
        else:
            await _move(session, card, PATCH_TRIGGERS[target])
        rendered = await _emit(session, card, STATE_CHANGE)
    if funding_sources is not None:
        await repository.replace_sources(session, card=card, account_ids=list(funding_sources))
        card.updated_at = clock.now()
        rendered = await _emit(session, card, FUNDING_SOURCE_CHANGE)
    assert rendered is not None
    return rendered
