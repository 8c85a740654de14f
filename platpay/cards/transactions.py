"""Card transactions: authorization (decisioning + a hold on the chosen source), clearing (capture against
the hold, post-hoc pull of any excess, release of what is left), expiry, merchant returns, and what a card's
closing does to its open authorizations. Every step is one transaction: the card transaction's change, its
balanced ledger entries (all referencing the card transaction's id) and its webhooks commit together.

Money (minor units of the card's currency; N = the card network's clearing account, L = the operator's loss
account, S = a funding source):
- authorization a: S available −a, S held +a (a ledger hold owned by the card transaction);
- clearing x: capture c = min(x, what the hold keeps): S held −c, N +c; the excess x − c is pulled from the
  sources in priority order (S available −, N +); if none covers it the operator pays it (L −, N +) and the
  transaction is EXCEPTION — a customer balance never goes negative;
- the authorization fully cleared (or expired, or its card closed): the rest of the hold goes back to
  available;
- return r: N −r, S available +r, and a CardRefund.

The network sends every amount of a card transaction (the authorization, its clearings and returns) in the
currency the authorization asked in (`requestedAmount.currency`): the card's own, or the fiat currency its
stablecoin tracks (USD on a USDB card), converted one for one by `decisioning.in_card_currency` (scaled to
the card currency's decimals, rounded up) before any money moves; another currency declines CURRENCY_MISMATCH.

Concurrency: an authorization locks its card (FOR UPDATE: a freeze or close waits for the authorizations in
flight, and those after it see the new state; FOR SHARE would let a stream of authorizations on one card
starve a freeze, since PostgreSQL grants a new share lock beside held ones ahead of a waiting exclusive one;
a card's authorizations one at a time cost nothing: the hot row of a card program is its funding account,
not its cards); clearings, expiries and returns lock the card transaction FOR UPDATE,
so a clearing racing an expiry is applied one after the other, and the hold is a conditional UPDATE that can
be taken from only once.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.cards import decisioning, providers, repository
from platpay.cards.decisioning import AuthorizationRequest, CardSnapshot, DeclineReason, SourceSnapshot
from platpay.cards.errors import (
    CardNotFound,
    CardSimulationsUnavailable,
    CardTransactionConflict,
    CardTransactionNotFound,
)
from platpay.cards.models import CardRefundRow, CardTransactionRow
from platpay.cards.schemas import (
    MAX_AMOUNT,
    CardPullSummary,
    CardRefund,
    CardRefundSummary,
    CardSettlementSummary,
    CardTransaction,
)
from platpay.cards.state import CARD_TRANSACTION, CLEARABLE, RETURNABLE, CardTransactionStatus
from platpay.config import get_settings
from platpay.errors import NotFound, invalid_field
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.kit.money import currency_amount, rescale
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.ledger import service as ledger
from platpay.ledger.errors import InsufficientFunds
from platpay.tenants.context import TenantContext

CONFIRM_PULL_JOB = "cards.confirm_pull"
EVENT_FAMILY = "CARD_TRANSACTION"
UPDATED = "UPDATED"  # a change that keeps the status: a partial return, a pull confirmed
EVENT_TYPES = frozenset(
    {f"{EVENT_FAMILY}.{status}" for status in CardTransactionStatus} | {f"{EVENT_FAMILY}.{UPDATED}"}
)
_T = CardTransactionStatus
NETWORK_CLEARING = "CARD_NETWORK"
HOLD_KIND = "CARD_AUTHORIZATION_HOLD"
PAID_KINDS = frozenset({"CARD_CLEARING_CAPTURE", "CARD_POST_HOC_PULL", "CARD_LOSS"})  # network paid by
_NETWORK_DECLINES = {
    providers.DECLINE_INSUFFICIENT_FUNDS: DeclineReason.INSUFFICIENT_FUNDS,
    providers.DECLINE_CARD_PAUSED: DeclineReason.CARD_PAUSED,
}


def to_schema(row: CardTransactionRow, refunds: list[CardRefundRow]) -> CardTransaction:
    ccy = row.currency
    return CardTransaction(
        id=row.id,
        card_id=row.card_id,
        issuer_transaction_token=row.issuer_transaction_token,
        status=row.status,  # type: ignore[arg-type]
        decline_reason=row.decline_reason,
        merchant=row.merchant,  # type: ignore[arg-type]
        authorized_amount=currency_amount(row.authorized_amount, ccy),  # type: ignore[arg-type]
        requested_amount=currency_amount(row.requested_amount, row.requested_currency),  # type: ignore[arg-type]
        settled_amount=currency_amount(row.settled_amount, ccy) if row.settlement_count else None,  # type: ignore[arg-type]
        refunded_amount=currency_amount(row.refunded_amount, ccy) if row.refunded_amount else None,  # type: ignore[arg-type]
        account_id=row.account_id,
        pull_summary=CardPullSummary(
            count=row.pull_count, total_amount=row.pull_amount, pending_count=row.pull_pending
        ),
        refund_summary=CardRefundSummary(count=len(refunds), total_amount=row.refunded_amount),
        settlement_summary=CardSettlementSummary(count=row.settlement_count, total_amount=row.settled_amount),
        refunds=[
            CardRefund(
                id=refund.id,
                card_transaction_id=refund.card_transaction_id,
                account_id=refund.account_id,
                amount=currency_amount(refund.amount, refund.currency),  # type: ignore[arg-type]
                status=refund.status,  # type: ignore[arg-type]
                created_at=refund.created_at,
            )
            for refund in refunds
        ],
        authorized_at=row.authorized_at,
        last_event_at=row.last_event_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def _emit(
    session: AsyncSession, row: CardTransactionRow, event: str | None = None, *, new: bool = False
) -> CardTransaction:
    """CARD_TRANSACTION.<STATUS> (or .<event>) with the card transaction as GET returns it. A `new` row is
    rendered as inserted (its times are the event's, it has no refunds yet)."""
    if not new:
        row.updated_at = row.last_event_at = clock.now()
        await session.flush()
    refunds = [] if new else (await repository.refunds_of(session, [row.id]))[row.id]
    rendered = to_schema(row, refunds)
    await events_service.emit(
        session, tenant_id=row.tenant_id, type=f"{EVENT_FAMILY}.{event or row.status}", resource=rendered
    )
    return rendered


def _move(row: CardTransactionRow, status: CardTransactionStatus) -> bool:
    """Move (through the machine); whether the status changed."""
    target = CARD_TRANSACTION.move(row.status, status, subject=row.id)
    changed = target != row.status
    row.status = target
    return changed


async def _balances_moved(session: AsyncSession, *, tenant_id: str, account_ids: list[str]) -> None:
    if account_ids:
        await accounts_service.emit_balance_updates(
            session, tenant_id=tenant_id, account_ids=sorted(set(account_ids))
        )


def _card_units(amount: int, *, currency: str, card_currency: str, field: str = "amount") -> int | None:
    """A network amount in the card's currency (`decisioning.in_card_currency`; None: it does not convert),
    refused (400, changing nothing) beyond what a card transaction's amounts can hold."""
    converted = decisioning.in_card_currency(card_currency, amount, currency)
    if converted is not None and converted > MAX_AMOUNT:
        raise invalid_field(
            field,
            f"{amount} {currency} minor units are {converted} {card_currency} minor units, more than a card "
            f"transaction can hold ({MAX_AMOUNT})",
        )
    return converted


def _network_amount(row: CardTransactionRow, amount: int) -> int:
    """A clearing's or a return's amount, sent in the authorization's currency, in the card's currency."""
    converted = _card_units(amount, currency=row.requested_currency, card_currency=row.currency)
    if converted is None:  # only approved authorizations take clearings and returns, and theirs converted
        raise CardTransactionConflict(
            f"card transaction {row.id} was asked in {row.requested_currency}, which {row.currency} does not "
            "convert",
            details={"cardTransactionId": row.id, "status": row.status},
        )
    return converted


def _sandbox_only(tenant: TenantContext, card_id: str) -> None:
    # INTERFACE-FACTS §1.3: the card simulations answer 404 in production (their paths do not exist there).
    if not tenant.is_sandbox:
        raise CardSimulationsUnavailable(
            "card simulations exist only in the sandbox environment", details={"cardId": card_id}
        )


async def _snapshot(
    session: AsyncSession, *, tenant_id: str, account_ids: list[str]
) -> tuple[tuple[SourceSnapshot, ...], dict[str, Any]]:
    """The sources as decisioning sees them, and their account rows (for the balance webhook)."""
    balances = await ledger.balances(session, account_ids)
    sources, accounts = [], {}
    for account_id in account_ids:
        try:
            account = await accounts_service.read_internal(
                session, tenant_id=tenant_id, account_id=account_id
            )
        except NotFound:
            continue
        accounts[account_id] = account
        sources.append(
            SourceSnapshot(account_id, account.currency, account.status, balances[account_id].available)
        )
    return tuple(sources), accounts


async def _hold(
    session: AsyncSession,
    tenant_id: str,
    account_id: str,
    currency: str,
    amount: int,
    transaction_id: str,
    *,
    balance_last: bool = False,
) -> ledger.Entry:
    _, entry = await ledger.place_hold(
        session,
        tenant_id=tenant_id,
        account_id=account_id,
        currency=currency,
        amount=amount,
        reference=transaction_id,
        kind=HOLD_KIND,
        balance_last=balance_last,
    )
    return entry


class AuthorizationRaced(Exception):
    """An approval decided on the snapshot found its source spent by a concurrent transaction when the
    balance moved last. The transaction has writes that must not commit: roll it back and decide again
    with `balance_last=False`."""


async def authorize(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    card_id: str,
    amount: int,
    currency: str,
    merchant: dict[str, Any],
    balance_last: bool = False,
) -> CardTransaction:
    """An authorization as the network sends it: decided, and either approved with a hold on the chosen
    source (same transaction as the CardTransaction) or declined and recorded with its reason.

    Two statement orders, one outcome. `balance_last` (the fast path) decides once on the snapshot, writes
    the CardTransaction, its event and the hold's entry, and moves the source's balance last: the balance
    row — one per funding account, shared by every card on it — stays locked only from that UPDATE to
    COMMIT. If a concurrent transaction spent the source meanwhile, AuthorizationRaced: the caller rolls
    back and runs the default order, which takes each source's balance first and falls through the sources
    in priority order under their locks."""
    _sandbox_only(tenant, card_id)
    currencies.require(currency, field="currency.code")
    locked = await repository.card_for_authorization(session, tenant_id=tenant.id, card_id=card_id)
    if locked is None:
        raise CardNotFound(card_id)
    card, source_ids = CardSnapshot(*locked[0]), locked[1]
    # what is held when approved; None: the request's currency does not convert (decide declines it)
    held_amount = _card_units(amount, currency=currency, card_currency=card.currency) or 0
    issuer = providers.issuer_for(tenant)
    outcome = issuer.authorization_outcome(merchant["descriptor"])
    request = AuthorizationRequest(amount, currency, _NETWORK_DECLINES.get(outcome))
    sources, accounts = await _snapshot(session, tenant_id=tenant.id, account_ids=source_ids)
    transaction_id = new_id("CardTransaction")
    held: ledger.Entry | None = None
    while True:
        decision = decisioning.decide(card, sources, request)
        if balance_last or not decision.approved or outcome == providers.PULL_FAILS:
            break
        assert decision.account_id is not None
        try:
            held = await _hold(
                session, tenant.id, decision.account_id, card.currency, held_amount, transaction_id
            )
            break
        except InsufficientFunds:  # spent since the snapshot: the next source, if any, may pay
            sources = decisioning.without(sources, decision.account_id)
    now = clock.now(tenant)
    approved = decision.approved
    if approved and outcome == providers.PULL_FAILS:
        status = _T.EXCEPTION  # the pull's confirmation reported FAILED: nothing was taken
    else:
        status = _T.AUTHORIZED if approved else _T.DECLINED
    assert status in CARD_TRANSACTION.initial
    delayed = approved and outcome == providers.DELAYED_PULL
    row = await repository.insert_transaction(
        session,
        {
            "id": transaction_id,
            "tenant_id": tenant.id,
            "card_id": card.id,
            "status": status,
            "decline_reason": None if approved else str(decision.decline_reason),
            "issuer_transaction_token": f"{issuer.name}_txn_{transaction_id[-12:]}",
            "merchant": {k: v for k, v in merchant.items() if v is not None},
            "currency": card.currency,
            "account_id": decision.account_id,
            "source_ids": source_ids,
            "authorized_amount": held_amount,
            "requested_amount": amount,
            "requested_currency": currency,
            "settled_amount": 0,
            "refunded_amount": 0,
            "settlement_count": 0,
            "pull_count": 1 if approved else 0,
            "pull_amount": held_amount if status == _T.AUTHORIZED else 0,
            "pull_pending": 1 if delayed else 0,
            "loss_amount": 0,
            "outcome": outcome,
            "authorized_at": now,
            "last_event_at": now,
            "created_at": now,
            "updated_at": now,
        },
    )
    if delayed:
        await jobs_service.enqueue(
            session,
            CONFIRM_PULL_JOB,
            {"cardTransactionId": row.id},
            tenant_id=tenant.id,
            run_at=now + issuer.pull_delay(get_settings()),
        )
    rendered = await _emit(session, row, new=True)
    if balance_last and status == _T.AUTHORIZED:
        assert row.account_id is not None
        try:
            held = await _hold(
                session,
                tenant.id,
                row.account_id,
                card.currency,
                held_amount,
                transaction_id,
                balance_last=True,
            )
        except InsufficientFunds:
            raise AuthorizationRaced(transaction_id) from None
    if held is not None and status == _T.AUTHORIZED and row.account_id:
        await accounts_service.emit_balance_update(
            session, account=accounts[row.account_id], balance=held.balances[row.account_id]
        )
    return rendered


async def _load_for_change(
    session: AsyncSession, *, tenant: TenantContext, card_id: str, transaction_id: str
) -> CardTransactionRow:
    _sandbox_only(tenant, card_id)
    row = await repository.get_transaction(
        session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True
    )
    if row is None or row.card_id != card_id:
        if await repository.get_card(session, tenant_id=tenant.id, card_id=card_id) is None:
            raise CardNotFound(card_id)
        raise invalid_field("cardTransactionId", f"card {card_id} has no card transaction {transaction_id!r}")
    return row


async def _network_account(session: AsyncSession, *, tenant_id: str, currency: str) -> str:
    return await ledger.system_account(
        session, tenant_id=tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=NETWORK_CLEARING
    )


async def _release(session: AsyncSession, row: CardTransactionRow) -> list[str]:
    """Give the hold's rest back to its source; what was released is no longer pulled (`pullSummary`'s
    total is what the funding sources paid or still reserve, never money that went back)."""
    entry = await ledger.release_hold(
        session, tenant_id=row.tenant_id, reference=row.id, kind="CARD_AUTHORIZATION_RELEASE"
    )
    if entry is None:
        return []
    row.pull_amount -= sum(leg.amount for leg in entry.legs if leg.bucket == ledger.AVAILABLE)
    return list(entry.balances)


async def _pull(session: AsyncSession, row: CardTransactionRow, *, amount: int, network: str) -> str | None:
    """A post-hoc pull of `amount` from the first source (priority order) that covers it; the source, or
    None when none does (then the operator's loss account pays the network)."""
    for account_id in row.source_ids or ([row.account_id] if row.account_id else []):
        try:
            await ledger.post(
                session,
                tenant_id=row.tenant_id,
                kind="CARD_POST_HOC_PULL",
                reference=row.id,
                legs=[
                    ledger.Leg(account_id, row.currency, -amount),
                    ledger.Leg(network, row.currency, amount),
                ],
            )
            return account_id
        except InsufficientFunds:
            continue
    loss = await ledger.system_account(
        session, tenant_id=row.tenant_id, kind=ledger.LOSS, currency=row.currency, qualifier="CARD"
    )
    await ledger.post(
        session,
        tenant_id=row.tenant_id,
        kind="CARD_LOSS",
        reference=row.id,
        legs=[ledger.Leg(loss, row.currency, -amount), ledger.Leg(network, row.currency, amount)],
    )
    return None


async def clear(
    session: AsyncSession, *, tenant: TenantContext, card_id: str, transaction_id: str, amount: int
) -> CardTransaction:
    """A clearing (presentment) of `amount` (minor units of the authorization's currency) against the card
    transaction; 0 is the authorization's expiry."""
    row = await _load_for_change(session, tenant=tenant, card_id=card_id, transaction_id=transaction_id)
    if row.status not in CLEARABLE:
        raise CardTransactionConflict(
            f"card transaction {row.id} is {row.status}: it takes no clearing",
            details={"cardTransactionId": row.id, "status": row.status},
        )
    if amount == 0:
        return await expire(session, row=row)
    amount = _network_amount(row, amount)
    network = await _network_account(session, tenant_id=row.tenant_id, currency=row.currency)
    moved: list[str] = []
    hold = await ledger.hold_of(session, tenant_id=row.tenant_id, reference=row.id)
    captured = min(amount, hold.remaining) if hold is not None and hold.status == "OPEN" else 0
    if captured:
        await ledger.capture_hold(
            session,
            tenant_id=row.tenant_id,
            reference=row.id,
            amount=captured,
            to_account_id=network,
            kind="CARD_CLEARING_CAPTURE",
        )
        moved.append(hold.account_id)  # type: ignore[union-attr]
    excess = amount - captured
    failed = False
    if excess:
        pulled_from = await _pull(session, row, amount=excess, network=network)
        row.pull_count += 1
        if pulled_from is None:
            failed = True
            row.loss_amount += excess
        else:
            row.pull_amount += excess
            moved.append(pulled_from)
    row.settled_amount += amount
    row.settlement_count += 1
    if failed:
        target = _T.EXCEPTION
    elif row.settled_amount >= row.authorized_amount or row.status in (_T.EXPIRED, _T.EXCEPTION):
        target = _T.SETTLED
    else:
        target = _T.PARTIALLY_SETTLED
    if target != _T.PARTIALLY_SETTLED:
        moved += await _release(session, row)
    _move(row, target)
    rendered = await _emit(session, row)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=moved)
    return rendered


async def expire(session: AsyncSession, *, row: CardTransactionRow) -> CardTransaction:
    """The authorization expires (or its card closed): the hold's rest goes back; SETTLED if something was
    cleared, else EXPIRED. An authorization already reconciled takes no second expiry."""
    if row.status not in (_T.AUTHORIZED, _T.PARTIALLY_SETTLED):
        raise CardTransactionConflict(
            f"card transaction {row.id} is {row.status}: there is no authorization left to expire",
            details={"cardTransactionId": row.id, "status": row.status},
        )
    moved = await _release(session, row)
    _move(row, _T.SETTLED if row.settlement_count else _T.EXPIRED)
    rendered = await _emit(session, row)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=moved)
    return rendered


async def return_(
    session: AsyncSession, *, tenant: TenantContext, card_id: str, transaction_id: str, amount: int
) -> CardTransaction:
    """A merchant RETURN of `amount` (minor units of the authorization's currency; in the card's ≤ settled −
    refunded): credited back to whoever paid (see `_payers`;
    split when several did), one CardRefund per account credited; REFUNDED once everything settled came
    back. Returns complete whatever the card's state (refunds in flight at close still complete)."""
    row = await _load_for_change(session, tenant=tenant, card_id=card_id, transaction_id=transaction_id)
    if row.status not in RETURNABLE:
        raise CardTransactionConflict(
            f"card transaction {row.id} is {row.status}: only a SETTLED transaction takes a return",
            details={"cardTransactionId": row.id, "status": row.status},
        )
    left = row.settled_amount - row.refunded_amount
    asked = amount
    amount = _network_amount(row, asked)
    if amount > left:
        most = rescale(
            left,
            from_decimals=currencies.require(row.currency).decimals,
            to_decimals=currencies.require(row.requested_currency).decimals,
            round_up=False,
        )
        raise invalid_field(
            "amount",
            f"at most {most} {row.requested_currency} minor units (settled − refunded: {left} {row.currency} "
            "minor units) can be returned",
        )
    assert row.account_id is not None
    network = await _network_account(session, tenant_id=row.tenant_id, currency=row.currency)
    parts, rest = [], amount
    for account_id, unreturned in await _payers(session, row):
        part = min(rest, unreturned)
        parts.append((account_id, part))
        rest -= part
        if not rest:
            break
    if rest:  # returns recorded before they were split by payer all went to the authorization's source
        parts.append((row.account_id, rest))
    await ledger.post(
        session,
        tenant_id=row.tenant_id,
        kind="CARD_RETURN",
        reference=row.id,
        legs=[ledger.Leg(network, row.currency, -amount)]
        + [ledger.Leg(account_id, row.currency, part) for account_id, part in parts],
    )
    now = clock.now(tenant)
    for account_id, part in parts:
        await repository.insert_refund(
            session,
            {
                "id": new_id("CardRefund"),
                "tenant_id": row.tenant_id,
                "card_transaction_id": row.id,
                "account_id": account_id,
                "amount": part,
                "currency": row.currency,
                "status": "COMPLETED",
                "description": None,
                "created_at": now,
            },
        )
    row.refunded_amount += amount
    changed = _move(row, _T.REFUNDED if row.refunded_amount == row.settled_amount else _T.SETTLED)
    rendered = await _emit(session, row, None if changed else UPDATED)
    sources = {row.account_id, *(row.source_ids or ())}  # (not the operator's loss account)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=[a for a, _ in parts if a in sources])
    return rendered


async def _payers(session: AsyncSession, row: CardTransactionRow) -> list[tuple[str, int]]:
    """Who paid the network for this card transaction and how much of it has not come back yet, the last
    payer first: post-hoc pulls before the authorization's source, and the operator's loss account (which
    paid what no source could) before any customer account — a return never credits a customer with money
    the customer did not pay."""
    paid: dict[str, int] = {}
    for entry in await ledger.entries_for(session, tenant_id=row.tenant_id, reference=row.id):
        if entry["kind"] in PAID_KINDS:
            for posting in entry["postings"]:
                if posting["amount"] < 0:
                    paid[posting["accountId"]] = paid.get(posting["accountId"], 0) - posting["amount"]
    for refund in (await repository.refunds_of(session, [row.id]))[row.id]:
        paid[refund.account_id] = paid.get(refund.account_id, 0) - refund.amount
    return [(account_id, left) for account_id, left in reversed(paid.items()) if left > 0]


async def reconcile_on_close(session: AsyncSession, *, tenant: TenantContext, card_id: str) -> None:
    """A closing card's pending authorizations reach a terminal state: their holds are released (an
    authorization partly cleared becomes SETTLED, one not cleared at all EXPIRED). Clearings that arrive
    later are force-posted (post-hoc pull, else the operator's loss)."""
    for row in await repository.open_transactions(
        session,
        tenant_id=tenant.id,
        card_id=card_id,
        statuses=frozenset({_T.AUTHORIZED, _T.PARTIALLY_SETTLED}),
    ):
        await expire(session, row=row)


async def confirm_pull(session: AsyncSession, *, tenant_id: str, transaction_id: str) -> None:
    """A delayed pull (sandbox descriptor 005) is confirmed: pendingCount back to 0."""
    row = await repository.get_transaction(
        session, tenant_id=tenant_id, transaction_id=transaction_id, for_update=True
    )
    if row is None or not row.pull_pending:
        return
    row.pull_pending = 0
    await _emit(session, row, UPDATED)


async def get_transaction(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str
) -> CardTransaction:
    row = await repository.get_transaction(session, tenant_id=tenant.id, transaction_id=transaction_id)
    if row is None:
        raise CardTransactionNotFound(transaction_id)
    return to_schema(row, (await repository.refunds_of(session, [row.id]))[row.id])


async def list_transactions(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    params: PageParams,
    card_id: str | None = None,
    account_id: str | None = None,
    status: str | None = None,
) -> tuple[PageResult[CardTransactionRow], list[CardTransaction]]:
    if (
        card_id is not None
        and await repository.get_card(session, tenant_id=tenant.id, card_id=card_id) is None
    ):
        raise CardNotFound(card_id)
    stmt = repository.transaction_query(
        tenant_id=tenant.id, card_id=card_id, account_id=account_id, status=status
    )
    page = await paginate(session, stmt, id_column=CardTransactionRow.id, params=params)
    refunds = await repository.refunds_of(session, [row.id for row in page.items])
    return page, [to_schema(row, refunds[row.id]) for row in page.items]
