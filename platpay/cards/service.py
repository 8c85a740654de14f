"""Cards: issue (provisioned by a job through the card issuer), read, and change by PATCH (the signed
retry of SPEC §4.12). Every state move goes through state.CARD and emits `card.state_change`; a funding
source change emits `card.funding_source_change`; both in the transaction of the change.

Who signs a PATCH (SPEC §4.9 rule 3: "a verified credential on the card's owning internal account"): the
card's owning accounts are its funding sources. When any of the card's current or requested sources is an
EMBEDDED_WALLET, the retry must be stamped by an active session of one of those wallets. A card funded only
by platform-custodied accounts (INTERNAL_FIAT, INTERNAL_CRYPTO) has no end-user key to sign with: the
platform's own authenticated call is the authority, and the PATCH applies on the first call (200), as it
does for every other change the platform makes to those accounts. What needs the signature is a change:
`maxSpendPerTransaction` equal to the card's (a client generated from the reference sends it on every PATCH)
changes nothing, so a PATCH carrying only that is a no-op answered 200 at once (no signature, no event).

Secrets of a card: `threeDSecurePassword` is sealed under the master key (kit/crypto/sealing.py, bound to the
card's id) and never returned or logged; the idempotency fingerprint of POST /cards takes a keyed digest of
it. A reveal (POST /cards/{id}/reveal) mints a URL of the card page whose token is kept only as its SHA-256:
the page shows once, before `expiresAt` (PLATPAY_CARD_REVEAL_SECONDS, on the tenant's clock); every reveal is
a `card_reveals` row naming who asked and when (and when the page was shown), and a `cards.reveal` log line
without the URL. Paths holding a token are logged as their route (`/card-embed/{token}`).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.state import InternalAccountStatus, InternalAccountType
from platpay.auth.principal import Principal
from platpay.cards import providers, repository, transactions
from platpay.cards.decisioning import MessageKind as MessageKind
from platpay.cards.errors import (
    CardAlreadyClosed,
    CardholderKycNotApproved,
    CardNotFound,
    CardNotMutable,
    FundingSourceIneligible,
    InvalidStateTransition,
)
from platpay.cards.models import CardRow
from platpay.cards.schemas import Card, CardRevealResponse
from platpay.cards.state import CARD, PATCH_TRIGGERS, CardState, CardTrigger
from platpay.cards.transactions import Message as Message
from platpay.cards.transactions import accept_message as accept_message  # the network's sandbox messages
from platpay.cards.transactions import accept_opening as accept_opening
from platpay.clocks import service as clocks_service
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.customers.state import KycStatus
from platpay.errors import Conflict, InvalidInput, NotFound, invalid_field
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.crypto.sealing import load_master_key, master_key_source, process_sealer
from platpay.kit.ids import new_id, uuid7
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.tenants.context import TenantContext
from platpay.wallets import service as wallets_service

log = structlog.get_logger("platpay.cards")

PROVISION_JOB = "cards.provision"
STATE_CHANGE, FUNDING_SOURCE_CHANGE = "card.state_change", "card.funding_source_change"
MAX_SOURCES = 10
THREE_DS_SEAL_PURPOSE = "card-3ds-password"
_PASSWORD_DIGEST_LABEL = b"platpay cards: 3-D Secure password fingerprint key v1"
REVEAL_TOKEN_PREFIX = "rv1."  # a reveal's token; a card's own embed token never starts so (token_urlsafe)


@cache
def _password_digest_key(configured: str | None, var_dir: Path) -> bytes:
    return hmac.new(load_master_key(configured, var_dir), _PASSWORD_DIGEST_LABEL, hashlib.sha256).digest()


def password_digest(password: str) -> str:
    """A keyed digest of a 3-D Secure password: what POST /cards' idempotency fingerprint takes in its place
    (the same password is the same request; the stored fingerprint tells nothing of it)."""
    key = _password_digest_key(*master_key_source())
    return "hmac-sha256:" + hmac.new(key, password.encode(), hashlib.sha256).hexdigest()


def pan_embed_url(card: CardRow, settings: Settings) -> str | None:
    if card.embed_token is None or card.state == CardState.CLOSED:
        return None
    return f"{settings.base_url()}/card-embed/{card.embed_token}"


def to_schema(card: CardRow, sources: list[str], settings: Settings) -> Card:
    return Card(
        id=card.id,
        cardholder_id=card.cardholder_id,
        platform_card_id=card.platform_card_id,
        state=card.state,
        state_reason=card.state_reason,
        brand=card.brand,
        form=card.form,
        last4=card.last4,
        exp_month=card.exp_month,
        exp_year=card.exp_year,
        pan_embed_url=pan_embed_url(card, settings),
        funding_sources=sources,
        max_spend_per_transaction=card.max_spend_per_transaction,
        currency=card.currency,
        processor_ref=card.processor_ref,
        issuer_ref=card.issuer_ref,
        created_at=card.created_at,
        updated_at=card.updated_at,
    )


async def render(session: AsyncSession, card: CardRow, settings: Settings) -> Card:
    return to_schema(card, (await repository.sources_of(session, [card.id]))[card.id], settings)


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
        if account.status != InternalAccountStatus.ACTIVE:
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
    settings: Settings,
    max_spend_per_transaction: int | None = None,
    three_ds_password: str | None = None,
) -> Card:
    """POST /cards: a PENDING_ISSUE card for an APPROVED cardholder; the issuer provisions it (a job)."""
    if three_ds_password is not None and not providers.issuer_for(tenant).static_3ds_password:
        raise invalid_field("threeDSecurePassword", "this card program takes no static 3-D Secure password")
    holder = await customers_service.find_active(session, tenant_id=tenant.id, customer_id=cardholder_id)
    if holder is None:
        raise invalid_field("cardholderId", f"no customer {cardholder_id!r}")
    if holder.kyc_status != KycStatus.APPROVED:
        raise CardholderKycNotApproved(
            f"cardholder {cardholder_id} has kycStatus {holder.kyc_status}; cards need APPROVED",
            details={"cardholderId": cardholder_id, "kycStatus": holder.kyc_status},
        )
    currency, _ = await _checked_sources(
        session, tenant=tenant, cardholder_id=cardholder_id, account_ids=funding_sources, currency=None
    )
    now = clock.now(tenant)
    card_id = new_id("Card")
    card = await repository.insert_card(
        session,
        {
            "id": card_id,
            "tenant_id": tenant.id,
            "cardholder_id": cardholder_id,
            "platform_card_id": platform_card_id or f"card-{uuid7().hex}",
            "state": CardState.PENDING_ISSUE,
            "state_reason": None,
            "form": form,
            "currency": currency,
            "max_spend_per_transaction": max_spend_per_transaction,
            "three_ds_password_sealed": None
            if three_ds_password is None
            else _sealer().seal(three_ds_password.encode(), purpose=f"{THREE_DS_SEAL_PURPOSE}:{card_id}"),
            "created_at": now,
            "updated_at": now,
        },
        funding_sources,
    )
    plan = providers.issuer_for(tenant).provisioning(
        platform_card_id=platform_card_id or "", cardholder_id=cardholder_id, settings=settings
    )
    if plan.outcome != providers.STAY_PENDING:
        await jobs_service.enqueue(
            session,
            PROVISION_JOB,
            {"cardId": card.id, "outcome": plan.outcome},
            tenant_id=tenant.id,
            run_at=now + plan.delay,
        )
    return to_schema(card, funding_sources, settings)


async def _move(
    session: AsyncSession, card: CardRow, trigger: CardTrigger, *, reason: str | None = None
) -> None:
    card.state = CARD.fire(card.state, trigger, subject=card.id)
    if reason is not None:
        card.state_reason = reason
    card.updated_at = clock.now()
    repository.changed_for_authorizations(card)


async def _emit(session: AsyncSession, card: CardRow, event: str, settings: Settings) -> Card:
    await session.flush()
    rendered = await render(session, card, settings)
    await events_service.emit(session, tenant_id=card.tenant_id, type=event, resource=rendered)
    return rendered


async def provision(
    session: AsyncSession, *, tenant_id: str, card_id: str, outcome: str, settings: Settings
) -> None:
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
        card.processor_ref = issued.processor_ref
        card.embed_token = secrets.token_urlsafe(24)
        await _move(session, card, CardTrigger.PROVISIONED)
    else:
        await _move(session, card, CardTrigger.ISSUER_REJECTED, reason="ISSUER_REJECTED")
        await repository.replace_sources(session, card=card, account_ids=[])
    await _emit(session, card, STATE_CHANGE, settings)


async def get_card(session: AsyncSession, *, tenant: TenantContext, card_id: str, settings: Settings) -> Card:
    return await render(session, await load(session, tenant_id=tenant.id, card_id=card_id), settings)


async def list_cards(
    session: AsyncSession, *, tenant: TenantContext, params: PageParams, settings: Settings, **filters: Any
) -> tuple[PageResult[CardRow], list[Card]]:
    stmt = repository.card_query(tenant_id=tenant.id, **filters)
    page = await paginate(session, stmt, id_column=CardRow.id, params=params)
    sources = await repository.sources_of(session, [card.id for card in page.items])
    return page, [to_schema(card, sources[card.id], settings) for card in page.items]


async def embed_page_card(session: AsyncSession, *, token: str) -> tuple[CardRow, Any] | None:
    """The card whose panEmbedUrl carries `token` and its number (None: no such live card)."""
    card = await repository.card_by_embed_token(session, token=token)
    if card is None or card.state == CardState.CLOSED:
        return None
    issuer = await providers.issuer_of(session, tenant_id=card.tenant_id)
    return card, issuer.issue(card_id=card.id, at=card.created_at)


@dataclass(frozen=True, slots=True)
class CardChange:
    """What a PATCH asks: `state` and `funding_sources` when given (None: not given); the limit when
    `max_spend_given` (None then clears it)."""

    state: str | None = None
    funding_sources: list[str] | None = None
    max_spend_given: bool = False
    max_spend_per_transaction: int | None = None

    def limit_changes(self, card: CardRow) -> bool:
        return self.max_spend_given and self.max_spend_per_transaction != card.max_spend_per_transaction


async def update_intent(
    session: AsyncSession, *, tenant: TenantContext, card_id: str, change: CardChange
) -> wallets_service.SignedIntent:
    """Check a PATCH (both calls) and say what the retry binds and who may sign it (see the module)."""
    state, funding_sources = change.state, change.funding_sources
    if state is None and funding_sources is None and not change.max_spend_given:
        raise InvalidInput(
            "give state, fundingSources and/or maxSpendPerTransaction",
            details={
                "fields": [
                    {
                        "field": "state",
                        "message": "state, fundingSources or maxSpendPerTransaction is required",
                    }
                ]
            },
        )
    if funding_sources is not None and not funding_sources:
        raise invalid_field("fundingSources", "must list at least one funding source")
    if funding_sources is not None and state == CardState.CLOSED:
        raise invalid_field("fundingSources", "cannot be changed while closing the card (state CLOSED)")
    card = await load(session, tenant_id=tenant.id, card_id=card_id, lock="update")
    if state == CardState.CLOSED and change.limit_changes(card):
        raise invalid_field(
            "maxSpendPerTransaction",
            "cannot be changed while closing the card (state CLOSED); the card's own value may be sent",
        )
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
    accounts: list[Any] = []
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
    wallets = sorted({a.id for a in accounts if a.type == InternalAccountType.EMBEDDED_WALLET})
    bound: dict[str, Any] = {}
    if state is not None:
        bound["state"] = state
    if funding_sources is not None:
        bound["fundingSources"] = list(funding_sources)
    if change.max_spend_given:
        bound["maxSpendPerTransaction"] = change.max_spend_per_transaction
    # only a change needs the wallet's signature: the card's own limit sent back alone changes nothing
    changes = state is not None or funding_sources is not None or change.limit_changes(card)
    return wallets_service.SignedIntent(
        operation="cards.update",
        resource_id=card.id,
        bound=bound,
        signers=wallets_service.Signers.sessions_of(*wallets),
        activity_type="ACTIVITY_TYPE_UPDATE_CARD",
        parameters={"cardId": card.id, **bound},
        signature_required=bool(wallets) and changes,
    )


async def update_card(
    session: AsyncSession, *, tenant: TenantContext, card_id: str, change: CardChange, settings: Settings
) -> Card:
    """The PATCH itself, after `update_intent` checked it in this transaction (the card is locked). A new
    limit takes effect for the authorizations decided after this commits (they read it with the card, under
    its lock); it sends no webhook (the reference has none for it)."""
    card = await load(session, tenant_id=tenant.id, card_id=card_id, lock="update")
    rendered: Card | None = None
    if change.limit_changes(card):
        card.max_spend_per_transaction = change.max_spend_per_transaction
        card.updated_at = clock.now()
        repository.changed_for_authorizations(card)
    if change.state is not None:
        target = CardState(change.state)
        if target == CardState.CLOSED:
            await _move(session, card, CardTrigger.CLOSE, reason="CLOSED_BY_PLATFORM")
            await transactions.reconcile_on_close(session, tenant=tenant, card_id=card.id)
            await repository.replace_sources(session, card=card, account_ids=[])
        else:
            await _move(session, card, PATCH_TRIGGERS[target])
        rendered = await _emit(session, card, STATE_CHANGE, settings)
    if change.funding_sources is not None:
        await repository.replace_sources(session, card=card, account_ids=list(change.funding_sources))
        card.updated_at = clock.now()
        rendered = await _emit(session, card, FUNDING_SOURCE_CHANGE, settings)
    if rendered is None:
        await session.flush()
        rendered = await render(session, card, settings)
    return rendered


def _sealer() -> Any:
    return process_sealer()


def _token_digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def is_reveal_token(token: str) -> bool:
    return token.startswith(REVEAL_TOKEN_PREFIX)


async def reveal(
    session: AsyncSession, *, principal: Principal, card_id: str, settings: Settings
) -> CardRevealResponse:
    """POST /cards/{id}/reveal: a URL of the card page that shows once, before it expires; the reveal is
    recorded with who asked (see the module). 409 for a card with no number to show: not yet issued, or
    closed."""
    tenant = principal.tenant
    card = await load(session, tenant_id=tenant.id, card_id=card_id)
    if card.state in (CardState.PENDING_ISSUE, CardState.CLOSED):
        raise Conflict(
            f"card {card.id} is {card.state}: it has no card number to reveal",
            details={"cardId": card.id, "state": card.state},
        )
    token = REVEAL_TOKEN_PREFIX + secrets.token_urlsafe(32)
    now = clock.now(tenant)
    row = await repository.insert_reveal(
        session,
        {
            "id": new_id("CardReveal"),
            "tenant_id": tenant.id,
            "card_id": card.id,
            "actor": f"{principal.kind}:{principal.id}",
            "token_digest": _token_digest(token),
            "created_at": now,
            "expires_at": now + timedelta(seconds=settings.card_reveal_seconds),
            "used_at": None,
        },
    )
    log.info("cards.reveal", card_id=card.id, reveal_id=row.id, actor=row.actor, expires_at=row.expires_at)
    return CardRevealResponse(
        pan_embed_url=f"{settings.base_url()}/card-embed/{token}", expires_at=row.expires_at
    )


async def reveal_page_card(session: AsyncSession, *, token: str) -> tuple[CardRow, Any] | None:
    """The card a reveal's URL shows and its number, the URL used up by it; None (the page's 404) for an
    unknown token, one already shown, one past its expiry (on its tenant's clock), or a card closed since."""
    found = await repository.reveal_by_digest(session, token_digest=_token_digest(token))
    if found is None:
        return None
    tenant_clock = await clocks_service.state_of(session, tenant_id=found.tenant_id)
    now = tenant_clock.now() if tenant_clock is not None else clock.real_now()
    if not await repository.use_reveal(session, reveal_id=found.id, now=now):
        log.warning("cards.reveal_refused", reveal_id=found.id, card_id=found.card_id)
        return None
    card = await repository.get_card(session, tenant_id=found.tenant_id, card_id=found.card_id)
    if card is None or card.state == CardState.CLOSED:
        return None
    log.info("cards.reveal_shown", reveal_id=found.id, card_id=card.id)
    issuer = await providers.issuer_of(session, tenant_id=card.tenant_id)
    return card, issuer.issue(card_id=card.id, at=card.created_at)


async def list_card_transactions(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    card_id: str,
    params: PageParams,
    status: str | None = None,
) -> tuple[PageResult[Any], list[Any]]:
    """GET /cards/{id}/transactions for callers outside cards (the console): the card's transactions, newest
    first, each with its pull, settlement and refund summaries and its refunds; CardNotFound for a card that
    is not the tenant's. A fixed number of statements whatever the page holds."""
    return await transactions.list_transactions(
        session, tenant=tenant, params=params, card_id=card_id, status=status
    )
