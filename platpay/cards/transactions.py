"""Card transactions: the card network's messages, as the sandbox's simulations send them. A simulation answers
202 with the issuer's transaction token, as the network does; its webhooks follow through the outbox. A
message that opens a card transaction is decided and applied in the simulation's own request (the card
transaction is readable once the 202 is sent); a message on an existing one is applied on the job runner.
Every message is one transaction: the card transaction's change, its balanced ledger entries (all
referencing the card transaction's id) and its webhooks commit together (with the request, or the job).

Messages that open a card transaction (`decisioning.MessageKind`, decided by `decisioning.decide`):
- AUTHORIZATION (dual message): a hold on the chosen source, cleared later;
- FINANCIAL_AUTHORIZATION (single message): authorized and settled at once, a pull from the chosen source;
- BALANCE_INQUIRY: a 0 authorization, recorded (SETTLED when approved); no money moves;
- CREDIT_AUTHORIZATION: a credit to the card, pending (AUTHORIZED, direction CREDIT); its clearing credits
  the chosen source; CREDIT_AUTHORIZATION_ADVICE: the same, approved by the network already (recorded
  whatever the card's state);
- FINANCIAL_CREDIT_AUTHORIZATION: a credit posted at once (SETTLED).
Messages on an existing card transaction (`Message`): CLEARING, RETURN, AUTHORIZATION_ADVICE,
RETURN_REVERSAL.

Money (minor units of the card's currency; N = the card network's clearing account, L = the operator's loss
account, S = a funding source):
- authorization a: S available −a, S held +a (a ledger hold owned by the card transaction);
- clearing x: capture c = min(x, what the hold keeps): S held −c, N +c; the excess x − c is pulled from the
  sources in priority order (S available −, N +); if none covers it the operator pays it (L −, N +) and the
  transaction is EXCEPTION — a customer balance never goes negative;
- the authorization fully cleared (or expired, or its card closed): the rest of the hold goes back to
  available;
- an authorization advice re-sizes the authorization to a new total t (the network approved it already:
  it is recorded, never declined): the hold becomes t less what was cleared — less is released; more is
  held on the hold's source as far as its available balance goes. What it could not reserve is no
  exception yet (EXCEPTION is money the network settled that no source paid): the clearing pulls it
  post-hoc like any excess, and only if no source covers it then does the operator pay (EXCEPTION);
- a financial authorization a: S available −a, N +a (pulled from the first source that covers it); if the
  pull's confirmation fails (sandbox 006) the operator pays (L −a, N +a): EXCEPTION;
- a credit c (a credit authorization's clearing, a financial credit): N −c, S available +c;
- return r: N −r, S available +r (to whoever paid, the last payer first), and a CardRefund per account;
- return reversal (the last return undone): each account it credited pays it back (S available −, N +); a
  customer account that no longer covers its part: the sources in priority order, else the operator
  (EXCEPTION).

The network sends every amount of a card transaction (the authorization, its clearings, advices and
returns) in the currency the authorization asked in (`requestedAmount.currency`): the card's own, or the
fiat currency its stablecoin tracks (USD on a USDB card), converted one for one by
`decisioning.in_card_currency` (scaled to the card currency's decimals, rounded up) before any money moves;
another currency declines CURRENCY_MISMATCH.

Acceptance and application: a message that opens a card transaction is checked (the card exists, the
amount converts and fits: 4xx, nothing written) and decided in the request, in the lean transaction of the
authorization path (`authorize`; no job: the only one it may queue is a delayed pull's confirmation). A
message on an existing card transaction is checked when it is sent (the card transaction is the card's and
its status takes the message, the amounts convert and fit: 4xx, nothing queued) and again when its job
applies it, under the card transaction's lock; a message the card transaction no longer takes by then
(another message went first) changes nothing and is logged (`cards.network_message_not_applied`). Those
are applied as their jobs run: send the next message on a card transaction once the previous one's
webhook arrived.

Concurrency: an authorization locks its card (FOR UPDATE: a freeze or close waits for the authorizations in
flight, and those after it see the new state; FOR SHARE would let a stream of authorizations on one card
starve a freeze, since PostgreSQL grants a new share lock beside held ones ahead of a waiting exclusive one;
a card's authorizations one at a time cost nothing: the hot row of a card program is its funding account,
not its cards); clearings, advices, expiries, returns and reversals lock the card transaction FOR UPDATE,
so a clearing racing an expiry is applied one after the other, and the hold is a conditional UPDATE that can
be taken from only once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any, TypeVar, cast

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.cards import decisioning, providers, repository
from platpay.cards.decisioning import (
    AuthorizationRequest,
    CardSnapshot,
    DeclineReason,
    MessageKind,
    Purpose,
    SourceSnapshot,
)
from platpay.cards.errors import (
    CardNotFound,
    CardSimulationsUnavailable,
    CardTransactionConflict,
    CardTransactionNotFound,
)
from platpay.cards.models import CardRefundRow, CardTransactionRow
from platpay.cards.schemas import MAX_AMOUNT, SandboxCardSimulationResponse
from platpay.cards.state import (
    CARD_REFUND,
    CARD_TRANSACTION,
    CLEARABLE,
    RETURNABLE,
    CardRefundStatus,
    CardTransactionStatus,
)
from platpay.config import Settings
from platpay.db.unit_of_work import LeanFirst, LeanSession, Raced
from platpay.errors import ApiError, NotFound, invalid_field
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.kit.money import currency_amount, rescale
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.ledger import service as ledger
from platpay.ledger.errors import InsufficientFunds
from platpay.ledger.state import HoldStatus
from platpay.metrics import CARD_AUTHORIZATIONS_RACED
from platpay.payments import hooks as payments_hooks
from platpay.payments.card_schemas import (
    CardPullSummary,
    CardRefund,
    CardRefundSummary,
    CardSettlementSummary,
    CardTransaction,
)
from platpay.tenants.context import TenantContext

log = structlog.get_logger("platpay.cards")
T = TypeVar("T")

NETWORK_JOB = "cards.network_message"
CONFIRM_PULL_JOB = "cards.confirm_pull"
EVENT_FAMILY = "CARD_TRANSACTION"
UPDATED = "UPDATED"  # a change that keeps the status: a partial return, a pull confirmed
EVENT_TYPES = frozenset(
    {f"{EVENT_FAMILY}.{status}" for status in CardTransactionStatus} | {f"{EVENT_FAMILY}.{UPDATED}"}
)
_T = CardTransactionStatus
_K = MessageKind
NETWORK_CLEARING = "CARD_NETWORK"
HOLD_KIND = "CARD_AUTHORIZATION_HOLD"
# what paid the network for a card transaction (a return goes back to whoever did, the last first)
PAID_KINDS = frozenset(
    {
        "CARD_CLEARING_CAPTURE",
        "CARD_POST_HOC_PULL",
        "CARD_LOSS",
        "CARD_FINANCIAL_PULL",
        "CARD_RETURN_REVERSAL",
    }
)
_NETWORK_DECLINES = {
    providers.DECLINE_INSUFFICIENT_FUNDS: DeclineReason.INSUFFICIENT_FUNDS,
    providers.DECLINE_CARD_PAUSED: DeclineReason.CARD_PAUSED,
}
_DUAL_MESSAGE = frozenset({_K.AUTHORIZATION, _K.CREDIT_AUTHORIZATION, _K.CREDIT_AUTHORIZATION_ADVICE})
_RETURNS_TAKEN = frozenset({_K.AUTHORIZATION, _K.FINANCIAL_AUTHORIZATION})  # purchases


class Message(StrEnum):
    """The network messages on an existing card transaction."""

    CLEARING = "CLEARING"
    RETURN = "RETURN"
    AUTHORIZATION_ADVICE = "AUTHORIZATION_ADVICE"
    RETURN_REVERSAL = "RETURN_REVERSAL"


def _kind(row: CardTransactionRow) -> MessageKind:
    return MessageKind(row.kind)


def to_schema(row: CardTransactionRow, refunds: list[CardRefundRow]) -> CardTransaction:
    ccy = row.currency
    completed = [refund for refund in refunds if refund.status == CardRefundStatus.COMPLETED]
    return CardTransaction(
        id=row.id,
        card_id=row.card_id,
        customer_id=row.customer_id,
        platform_customer_id=row.platform_customer_id or row.customer_id,
        issuer_transaction_token=row.issuer_transaction_token,
        status=row.status,
        direction="CREDIT" if _kind(row).purpose == Purpose.CREDIT else "DEBIT",
        decline_reason=row.decline_reason,
        merchant=row.merchant,
        authorized_amount=currency_amount(row.authorized_amount, ccy),
        requested_amount=currency_amount(row.requested_amount, row.requested_currency),
        settled_amount=currency_amount(row.settled_amount, ccy) if row.settlement_count else None,
        refunded_amount=currency_amount(row.refunded_amount, ccy) if row.refunded_amount else None,
        account_id=row.account_id,
        pull_summary=CardPullSummary(
            count=row.pull_count, total_amount=row.pull_amount, pending_count=row.pull_pending
        ),
        refund_summary=CardRefundSummary(count=len(completed), total_amount=row.refunded_amount),
        settlement_summary=CardSettlementSummary(count=row.settlement_count, total_amount=row.settled_amount),
        refunds=[
            CardRefund(
                id=refund.id,
                card_transaction_id=refund.card_transaction_id,
                account_id=refund.account_id,
                amount=currency_amount(refund.amount, refund.currency),
                status=refund.status,
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
    session: LeanSession, row: CardTransactionRow, event: str | None = None, *, new: bool = False
) -> CardTransaction:
    """CARD_TRANSACTION.<STATUS> (or .<event>) with the card transaction as GET returns it. A `new` row is
    rendered as inserted (its times are the event's, it has no refunds yet)."""
    refunds: list[CardRefundRow] = []
    if not new:  # a row read through the ORM session (only a new one is written in a lean transaction)
        orm = cast("AsyncSession", session)
        row.updated_at = row.last_event_at = clock.now()
        await orm.flush()
        refunds = (await repository.refunds_of(orm, [row.id]))[row.id]
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
    """A clearing's, an advice's or a return's amount, sent in the authorization's currency, in the card's."""
    converted = _card_units(amount, currency=row.requested_currency, card_currency=row.currency)
    if converted is None:  # only approved authorizations take further messages, and theirs converted
        raise CardTransactionConflict(
            f"card transaction {row.id} was asked in {row.requested_currency}, which {row.currency} does not "
            "convert",
            details={"cardTransactionId": row.id, "status": row.status},
        )
    return converted


def _conflict(row: CardTransactionRow, why: str) -> CardTransactionConflict:
    return CardTransactionConflict(
        f"card transaction {row.id} is {row.status}: {why}",
        details={"cardTransactionId": row.id, "status": row.status},
    )


def _sandbox_only(tenant: TenantContext, card_id: str) -> None:
    # INTERFACE-FACTS §1.3: the card simulations answer 404 in production (their paths do not exist there).
    if not tenant.is_sandbox:
        raise CardSimulationsUnavailable(
            "card simulations exist only in the sandbox environment", details={"cardId": card_id}
        )


def issuer_token(issuer_name: str, transaction_id: str) -> str:
    return f"{issuer_name}_txn_{transaction_id[-12:]}"


# ---- acceptance: a simulation as the request takes it


def accept_opening(
    *,
    tenant: TenantContext,
    card_id: str,
    kind: MessageKind,
    merchant: dict[str, Any],
    amount: int = 0,
    currency: str | None = None,
    settings: Settings,
) -> Opening[SandboxCardSimulationResponse]:
    """A message that opens a card transaction (an authorization of any kind, a balance inquiry), as the
    operation the caller runs in its unit of work: refused (404 card, 400 currency or amount, nothing
    written) or decided and applied by `authorize` in that transaction; the answer is the network's 202, the
    card transaction's token. Nothing here needs the job runner: the card transaction is readable once the
    202 is sent and its webhooks go out through the outbox like every other (a delayed pull's confirmation
    is the only job it may queue). An AUTHORIZATION is a `LeanFirst`: see `authorization`."""

    def attempt(
        order: ledger.BalanceOrder,
    ) -> Callable[[LeanSession], Awaitable[SandboxCardSimulationResponse]]:
        async def run(session: LeanSession) -> SandboxCardSimulationResponse:
            _sandbox_only(tenant, card_id)
            if kind is not _K.BALANCE_INQUIRY:
                currencies.require(currency or "", field="currency.code")
            transaction_id = new_id("CardTransaction")
            token = issuer_token(providers.issuer_for(tenant).name, transaction_id)
            opened = await _authorize(
                session,
                tenant_id=tenant.id,
                card_id=card_id,
                transaction_id=transaction_id,
                issuer_transaction_token=token,
                kind=kind,
                amount=amount,
                currency=currency or "",
                merchant={k: v for k, v in merchant.items() if v is not None},
                settings=settings,
                order=order,
            )
            if opened is None:
                raise CardNotFound(card_id)
            return SandboxCardSimulationResponse(issuer_transaction_token=token)

        return run

    return _opening(kind, attempt)


async def accept_message(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    card_id: str,
    message: Message,
    transaction_id: str,
    amount: int | None = None,
) -> SandboxCardSimulationResponse:
    """A message on an existing card transaction: refused now when its card transaction (as it is now)
    does not take it, else queued; the answer is the card transaction's token."""
    row = await _load_for_change(session, tenant=tenant, card_id=card_id, transaction_id=transaction_id)
    await _check(session, row, message, amount)
    await jobs_service.enqueue(
        session,
        NETWORK_JOB,
        {"message": message.value, "cardId": card_id, "cardTransactionId": row.id, "amount": amount},
        tenant_id=tenant.id,
    )
    return SandboxCardSimulationResponse(issuer_transaction_token=row.issuer_transaction_token)


async def _load_for_change(
    session: AsyncSession, *, tenant: TenantContext, card_id: str, transaction_id: str
) -> CardTransactionRow:
    _sandbox_only(tenant, card_id)
    row = await repository.get_transaction(session, tenant_id=tenant.id, transaction_id=transaction_id)
    if row is None or row.card_id != card_id:
        if await repository.get_card(session, tenant_id=tenant.id, card_id=card_id) is None:
            raise CardNotFound(card_id)
        raise invalid_field("cardTransactionId", f"card {card_id} has no card transaction {transaction_id!r}")
    return row


async def _check(
    session: AsyncSession, row: CardTransactionRow, message: Message, amount: int | None
) -> None:
    """Whether the card transaction, as it is, takes the message: 409 (its status, its kind) or 400 (the
    amount), changing nothing."""
    kind = _kind(row)
    if message == Message.CLEARING:
        assert amount is not None
        if kind.single_message or row.status not in CLEARABLE:
            raise _conflict(row, "it takes no clearing")
        if amount == 0:
            if row.status not in (_T.AUTHORIZED, _T.PARTIALLY_SETTLED):
                raise _conflict(row, "there is no authorization left to expire")
        else:
            _network_amount(row, amount)
    elif message == Message.AUTHORIZATION_ADVICE:
        assert amount is not None
        if kind not in _DUAL_MESSAGE or row.status not in (_T.AUTHORIZED, _T.PARTIALLY_SETTLED):
            raise _conflict(
                row, "only an open (AUTHORIZED or PARTIALLY_SETTLED) authorization takes an advice"
            )
        _network_amount(row, amount)
    elif message == Message.RETURN:
        assert amount is not None
        if kind not in _RETURNS_TAKEN or row.status not in RETURNABLE:
            raise _conflict(row, "only a SETTLED purchase takes a return")
        _returnable(row, amount)
    else:
        if (
            kind not in _RETURNS_TAKEN
            or row.status not in (_T.SETTLED, _T.REFUNDED)
            or not row.refunded_amount
        ):
            raise _conflict(row, "it has no return to reverse")


def _returnable(row: CardTransactionRow, amount: int) -> int:
    """A return's amount in the card's currency; 400 above what is left to return (settled − refunded)."""
    left = row.settled_amount - row.refunded_amount
    converted = _network_amount(row, amount)
    if converted > left:
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
    return converted


async def _open_hold(session: AsyncSession, row: CardTransactionRow) -> ledger.Hold | None:
    hold = await ledger.hold_of(session, tenant_id=row.tenant_id, reference=row.id)
    return hold if hold is not None and hold.status == HoldStatus.OPEN and hold.remaining > 0 else None


# ---- application: the job runner applies a queued message on a card transaction; openings are decided here


async def apply_message(session: AsyncSession, *, tenant_id: str, payload: dict[str, Any]) -> None:
    """A queued message on an existing card transaction, checked again under the card transaction's lock:
    applied, or (another message changed the card transaction since it was accepted) logged and dropped."""
    message = Message(payload["message"])
    row = await repository.get_transaction(
        session, tenant_id=tenant_id, transaction_id=payload["cardTransactionId"], for_update=True
    )
    if row is None:  # (a sandbox reset deleted it meanwhile)
        log.warning("cards.network_message_not_applied", message=message, reason="no such card transaction")
        return
    amount = payload.get("amount")
    try:
        await _check(session, row, message, amount)
    except ApiError as refused:
        log.warning(
            "cards.network_message_not_applied",
            message=message,
            card_transaction_id=row.id,
            status=row.status,
            reason=refused.message,
        )
        return
    # (_check asserted that these three messages carry an amount)
    if message == Message.CLEARING:
        assert amount is not None
        await (_expire(session, row) if amount == 0 else _clear(session, row, amount))
    elif message == Message.AUTHORIZATION_ADVICE:
        assert amount is not None
        await _advise(session, row, amount)
    elif message == Message.RETURN:
        assert amount is not None
        await _return(session, row, amount)
    else:
        await _reverse_return(session, row)


async def _snapshot(
    session: LeanSession, *, tenant_id: str, account_ids: list[str]
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


def _sources(
    found: list[repository.SourceRead],
) -> tuple[tuple[SourceSnapshot, ...], dict[str, Any]]:
    """`_snapshot` of the sources the card's one read found with it (`repository.card_at_once`)."""
    sources, accounts = [], {}
    for source in found:
        if source.account is None or source.balance is None:
            continue
        accounts[source.account.id] = source.account
        sources.append(
            SourceSnapshot(
                source.account.id, source.account.currency, source.account.status, source.balance.available
            )
        )
    return tuple(sources), accounts


async def _hold(
    session: LeanSession,
    tenant_id: str,
    account_id: str,
    currency: str,
    amount: int,
    transaction_id: str,
    *,
    order: ledger.BalanceOrder = ledger.BalanceOrder.FIRST,
) -> ledger.Entry:
    _, entry = await ledger.place_hold(
        session,
        tenant_id=tenant_id,
        account_id=account_id,
        currency=currency,
        amount=amount,
        reference=transaction_id,
        kind=HOLD_KIND,
        order=order,
    )
    return entry


class AuthorizationRaced(Raced):
    """An approval decided on the snapshot found its source spent by a concurrent transaction when the
    balance moved last. The transaction has writes that must not commit: its runner rolls it back and
    decides again in the default order (`LeanFirst.careful`)."""


# What opens a card transaction, as its caller runs it: an AUTHORIZATION tries the fast path first (see
# `_authorize`), every other kind is one plain attempt in the default order.
Opening = LeanFirst[T] | Callable[[AsyncSession], Awaitable[T]]


def _opening(
    kind: MessageKind, attempt: Callable[[ledger.BalanceOrder], Callable[[LeanSession], Awaitable[T]]]
) -> Opening[T]:
    if kind is _K.AUTHORIZATION:
        careful = attempt(ledger.BalanceOrder.FIRST)

        async def decided_again(session: LeanSession) -> T:
            CARD_AUTHORIZATIONS_RACED.inc()  # (a LeanFirst's careful attempt runs only after its lean one raced)
            return await careful(session)

        return LeanFirst(lean=attempt(ledger.BalanceOrder.LAST), careful=decided_again)
    return attempt(ledger.BalanceOrder.FIRST)


def authorization(
    *,
    tenant_id: str,
    card_id: str,
    transaction_id: str,
    issuer_transaction_token: str,
    kind: MessageKind,
    amount: int,
    currency: str,
    merchant: dict[str, Any],
    settings: Settings,
) -> Opening[CardTransaction | None]:
    """A message that opens a card transaction, as the network sends it (a job queued by an earlier
    version), as the operation the caller runs in its unit of work: see `_authorize`. An AUTHORIZATION is
    a `LeanFirst` (db/unit_of_work.py): lean statements only with the balance moved last, then, raced
    (AuthorizationRaced), the default order."""

    def attempt(order: ledger.BalanceOrder) -> Callable[[LeanSession], Awaitable[CardTransaction | None]]:
        async def run(session: LeanSession) -> CardTransaction | None:
            return await _authorize(
                session,
                tenant_id=tenant_id,
                card_id=card_id,
                transaction_id=transaction_id,
                issuer_transaction_token=issuer_transaction_token,
                kind=kind,
                amount=amount,
                currency=currency,
                merchant=merchant,
                settings=settings,
                order=order,
            )

        return run

    return _opening(kind, attempt)


async def _authorize(
    session: LeanSession,
    *,
    tenant_id: str,
    card_id: str,
    transaction_id: str,
    issuer_transaction_token: str,
    kind: MessageKind,
    amount: int,
    currency: str,
    merchant: dict[str, Any],
    settings: Settings,
    order: ledger.BalanceOrder,
) -> CardTransaction | None:
    """A message that opens a card transaction, as the network sends it: decided, and either approved
    (with its money: a hold, a pull, a credit, or none) or declined and recorded with its reason, in one
    transaction (the simulation's request's, or a job's for a message queued by an earlier version). None
    when the tenant has no such card (nothing written); an amount beyond what a card transaction holds is
    a 400 before anything is written. A BALANCE_INQUIRY is 0 in the card's currency.

    Two statement orders for an AUTHORIZATION, one outcome. `ledger.BalanceOrder.LAST` (the fast path: lean
    statements only, the card's maxSpendPerTransaction read with the card; a `LeanSession` may be a
    LeanTransaction) decides once on the snapshot, writes the CardTransaction, its event and the hold's
    entry, and moves the source's balance last: the balance row — one per funding account, shared by every
    card on it — stays locked only from that UPDATE to COMMIT. If a concurrent transaction spent the source
    meanwhile, AuthorizationRaced: the runner rolls back and runs the default order (`FIRST`, in an ORM
    session), which takes each source's balance first and falls through the sources in priority order under
    their locks (as every other kind does)."""
    balance_last = order is ledger.BalanceOrder.LAST
    assert not balance_last or kind is _K.AUTHORIZATION
    issuer = providers.simulation_issuer()
    if balance_last:  # one read, no lock: what it decides on is checked when its writes are sent
        read = await repository.card_at_once(session, tenant_id=tenant_id, card_id=card_id)
        if read is None:
            return None
        card_values, source_ids, (cardholder_id, platform_customer_id), found = read
        sources, accounts = _sources(found)
    else:
        locked = await repository.card_for_authorization(session, tenant_id=tenant_id, card_id=card_id)
        if locked is None:
            return None
        card_values, source_ids, (cardholder_id, platform_customer_id) = locked
        sources, accounts = await _snapshot(session, tenant_id=tenant_id, account_ids=source_ids)
    card = CardSnapshot(*card_values)
    if kind is _K.BALANCE_INQUIRY:
        amount, currency = 0, card.currency
    # in the card's currency (0: the request's currency does not convert, and decide declines it)
    card_amount = _card_units(amount, currency=currency, card_currency=card.currency) or 0
    purchase = kind.purpose == Purpose.PURCHASE
    outcome = issuer.authorization_outcome(merchant["descriptor"])
    request = AuthorizationRequest(
        amount, currency, _NETWORK_DECLINES.get(outcome), purpose=kind.purpose, advice=kind.advice
    )
    pull_fails = purchase and outcome == providers.PULL_FAILS
    moved: ledger.Entry | None = None
    while True:
        decision = decisioning.decide(card, sources, request)
        if balance_last or not decision.approved or not purchase or pull_fails:
            break
        assert decision.account_id is not None
        try:
            if kind is _K.AUTHORIZATION:
                moved = await _hold(
                    session, tenant_id, decision.account_id, card.currency, card_amount, transaction_id
                )
            else:
                network = await _network_account(_orm(session), tenant_id=tenant_id, currency=card.currency)
                moved = await ledger.post(
                    session,
                    tenant_id=tenant_id,
                    kind="CARD_FINANCIAL_PULL",
                    reference=transaction_id,
                    legs=[
                        ledger.Leg(decision.account_id, card.currency, -card_amount),
                        ledger.Leg(network, card.currency, card_amount),
                    ],
                )
            break
        except InsufficientFunds:  # spent since the snapshot: the next source, if any, may pay
            sources = decisioning.without(sources, decision.account_id)
    approved = decision.approved
    status = _opening_status(kind, approved=approved, pull_fails=pull_fails)
    assert status in CARD_TRANSACTION.initial
    single = approved and kind.single_message
    delayed = approved and purchase and outcome == providers.DELAYED_PULL
    now = clock.now()
    row = await repository.insert_transaction(
        session,
        {
            "id": transaction_id,
            "tenant_id": tenant_id,
            "card_id": card.id,
            "customer_id": cardholder_id,
            "platform_customer_id": platform_customer_id,
            "kind": kind.value,
            "status": status,
            "decline_reason": None if approved else str(decision.decline_reason),
            "issuer_transaction_token": issuer_transaction_token,
            "merchant": merchant,
            "currency": card.currency,
            "account_id": decision.account_id,
            "source_ids": source_ids,
            "authorized_amount": card_amount,
            "requested_amount": amount,
            "requested_currency": currency,
            "settled_amount": card_amount if single else 0,
            "refunded_amount": 0,
            "settlement_count": 1 if single else 0,
            "pull_count": 1 if approved and purchase else 0,
            "pull_amount": card_amount if approved and purchase and not pull_fails else 0,
            "pull_pending": 1 if delayed else 0,
            "loss_amount": card_amount if single and pull_fails else 0,
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
            tenant_id=tenant_id,
            run_at=now + issuer.pull_delay(settings),
        )
    if single and (pull_fails or kind.purpose == Purpose.CREDIT):
        network = await _network_account(_orm(session), tenant_id=tenant_id, currency=card.currency)
        if pull_fails:  # the network settled, the funding source paid nothing: the operator pays
            await _operator_pays(_orm(session), row, amount=card_amount, network=network)
        else:
            await _credit(_orm(session), row, amount=card_amount, network=network)
    rendered = await _emit(session, row, new=True)
    if balance_last and status == _T.AUTHORIZED:
        assert row.account_id is not None
        try:
            moved = await _hold(
                session, tenant_id, row.account_id, card.currency, card_amount, transaction_id, order=order
            )
        except InsufficientFunds:  # (deferred on PostgreSQL: the statement sending the writes raises Raced)
            raise AuthorizationRaced(transaction_id) from None
    if kind is _K.AUTHORIZATION:
        if moved is not None and status == _T.AUTHORIZED and row.account_id:
            await accounts_service.emit_balance_update(
                session, account=accounts[row.account_id], balance=moved.balances[row.account_id]
            )
    elif single and not pull_fails:
        await _balances_moved(_orm(session), tenant_id=tenant_id, account_ids=[row.account_id or ""])
    return rendered


def _orm(session: LeanSession) -> AsyncSession:
    """The ORM session of an opening's step only the default order takes (never an AUTHORIZATION's lean
    attempt, which may run in a LeanTransaction)."""
    assert isinstance(session, AsyncSession), "an ORM step in a lean transaction"
    return session


def _opening_status(kind: MessageKind, *, approved: bool, pull_fails: bool) -> CardTransactionStatus:
    if not approved:
        return _T.DECLINED
    if pull_fails:  # the pull's confirmation reported FAILED: nothing was taken
        return _T.EXCEPTION
    if kind.single_message or kind is _K.BALANCE_INQUIRY:
        return _T.SETTLED
    return _T.AUTHORIZED


async def _network_account(session: AsyncSession, *, tenant_id: str, currency: str) -> str:
    return await ledger.system_account(
        session, tenant_id=tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=NETWORK_CLEARING
    )


async def _loss_account(session: AsyncSession, row: CardTransactionRow) -> str:
    return await ledger.system_account(
        session, tenant_id=row.tenant_id, kind=ledger.LOSS, currency=row.currency, qualifier="CARD"
    )


async def _operator_pays(
    session: AsyncSession, row: CardTransactionRow, *, amount: int, network: str
) -> None:
    loss = await _loss_account(session, row)
    await ledger.post(
        session,
        tenant_id=row.tenant_id,
        kind="CARD_LOSS",
        reference=row.id,
        legs=[ledger.Leg(loss, row.currency, -amount), ledger.Leg(network, row.currency, amount)],
    )


async def _credit(session: AsyncSession, row: CardTransactionRow, *, amount: int, network: str) -> None:
    """A credit to the card: the network pays the source the credit authorization chose."""
    assert row.account_id is not None
    await ledger.post(
        session,
        tenant_id=row.tenant_id,
        kind="CARD_CREDIT",
        reference=row.id,
        legs=[ledger.Leg(network, row.currency, -amount), ledger.Leg(row.account_id, row.currency, amount)],
    )


async def _release(session: AsyncSession, row: CardTransactionRow, amount: int | None = None) -> list[str]:
    """Give the hold's rest (or `amount` of it) back to its source; what was released is no longer pulled
    (`pullSummary`'s total is what the funding sources paid or still reserve, never money that went
    back)."""
    entry = await ledger.release_hold(
        session, tenant_id=row.tenant_id, reference=row.id, kind="CARD_AUTHORIZATION_RELEASE", amount=amount
    )
    if entry is None:
        return []
    row.pull_amount -= sum(leg.amount for leg in entry.legs if leg.bucket == ledger.AVAILABLE)
    return list(entry.balances)


async def _pull(
    session: AsyncSession, row: CardTransactionRow, *, amount: int, network: str, kind: str = "CARD_POST_HOC_PULL",
    first: str | None = None,
) -> str | None:  # fmt: skip
    """A post-hoc pull of `amount` from the first source (priority order; `first` before them) that covers
    it; the source, or None when none does (then the operator's loss account pays the network)."""
    candidates = row.source_ids or ([row.account_id] if row.account_id else [])
    if first is not None:
        candidates = [first, *(account_id for account_id in candidates if account_id != first)]
    for account_id in candidates:
        try:
            await ledger.post(
                session,
                tenant_id=row.tenant_id,
                kind=kind,
                reference=row.id,
                legs=[
                    ledger.Leg(account_id, row.currency, -amount),
                    ledger.Leg(network, row.currency, amount),
                ],
            )
            return account_id
        except InsufficientFunds:
            continue
    await _operator_pays(session, row, amount=amount, network=network)
    return None


async def _clear(session: AsyncSession, row: CardTransactionRow, amount: int) -> CardTransaction:
    """A clearing (presentment) of `amount` (minor units of the authorization's currency): a purchase's
    captures against the hold, pulls post-hoc what the hold does not keep; a credit authorization's credits
    its source."""
    amount = _network_amount(row, amount)
    network = await _network_account(session, tenant_id=row.tenant_id, currency=row.currency)
    if _kind(row).purpose == Purpose.CREDIT:
        await _credit(session, row, amount=amount, network=network)
        row.settled_amount += amount
        row.settlement_count += 1
        complete = row.settled_amount >= row.authorized_amount or row.status == _T.EXPIRED
        _move(row, _T.SETTLED if complete else _T.PARTIALLY_SETTLED)
        rendered = await _emit(session, row)
        await _balances_moved(session, tenant_id=row.tenant_id, account_ids=[row.account_id or ""])
        return rendered
    moved: list[str] = []
    hold = await _open_hold(session, row)
    captured = min(amount, hold.remaining) if hold is not None else 0
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
    if target == _T.SETTLED:
        moved += await _release(session, row)
    _move(row, target)
    rendered = await _emit(session, row)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=moved)
    return rendered


async def _expire(session: AsyncSession, row: CardTransactionRow) -> CardTransaction:
    """The authorization expires (or its card closed): the hold's rest goes back; SETTLED if something was
    cleared, else EXPIRED."""
    moved = await _release(session, row)
    _move(row, _T.SETTLED if row.settlement_count else _T.EXPIRED)
    rendered = await _emit(session, row)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=moved)
    return rendered


async def _advise(session: AsyncSession, row: CardTransactionRow, amount: int) -> CardTransaction:
    """An AUTHORIZATION_ADVICE: the open authorization's new total is `amount` (minor units of its
    currency), as the network already approved it. A purchase's hold becomes the new total less what was
    cleared: released down; grown up on its source as far as that source's available balance goes (what it
    cannot reserve, a clearing pulls post-hoc). A credit authorization's advice moves no money. Cleared up
    to the new total: SETTLED (the hold's rest released)."""
    total = _network_amount(row, amount)
    row.requested_amount, row.authorized_amount = amount, total
    moved: list[str] = []
    if _kind(row).purpose == Purpose.PURCHASE:
        hold = await _open_hold(session, row)
        keeps = hold.remaining if hold is not None else 0
        wanted = max(total - row.settled_amount, 0)
        if wanted < keeps:
            moved += await _release(session, row, keeps - wanted)
        elif wanted > keeps:
            moved += await _grow(session, row, wanted - keeps)
    status = CardTransactionStatus(row.status)
    if row.settlement_count and row.settled_amount >= total:
        status = _T.SETTLED
        moved += await _release(session, row)
    changed = _move(row, status) if status != row.status else False
    rendered = await _emit(session, row, None if changed else UPDATED)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=moved)
    return rendered


async def _grow(session: AsyncSession, row: CardTransactionRow, wanted: int) -> list[str]:
    """Hold up to `wanted` more on the hold's source: what its available balance covers (read, then taken by
    the conditional UPDATE; read again if a concurrent debit took it meanwhile)."""
    hold = await ledger.hold_of(session, tenant_id=row.tenant_id, reference=row.id)
    if hold is None:
        return []
    for _ in range(3):
        available = (await ledger.balances(session, [hold.account_id]))[hold.account_id].available
        more = min(wanted, available)
        if more <= 0:
            return []
        try:
            entry = await ledger.grow_hold(
                session,
                tenant_id=row.tenant_id,
                reference=row.id,
                amount=more,
                kind="CARD_AUTHORIZATION_ADVICE",
            )
        except InsufficientFunds:
            continue
        row.pull_amount += more
        return list(entry.balances)
    return []


async def _return(session: AsyncSession, row: CardTransactionRow, amount: int) -> CardTransaction:
    """A merchant RETURN of `amount` (minor units of the authorization's currency; in the card's ≤ settled −
    refunded): credited back to whoever paid (see `_payers`; split when several did), one CardRefund per
    account credited; REFUNDED once everything settled came back. Returns complete whatever the card's
    state (refunds in flight at close still complete)."""
    amount = _returnable(row, amount)
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
    now = clock.now()
    return_ref = new_id("CardReturn")
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
                "status": CardRefundStatus.COMPLETED,
                "return_ref": return_ref,
                "description": None,
                "created_at": now,
            },
        )
    row.refunded_amount += amount
    changed = _move(row, _T.REFUNDED if row.refunded_amount == row.settled_amount else _T.SETTLED)
    rendered = await _emit(session, row, None if changed else UPDATED)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=_customer_accounts(row, parts))
    return rendered


def _customer_accounts(row: CardTransactionRow, parts: list[tuple[str, int]]) -> list[str]:
    sources = {row.account_id, *(row.source_ids or ())}  # (not the operator's loss account)
    return [account_id for account_id, _ in parts if account_id in sources]


async def _reverse_return(session: AsyncSession, row: CardTransactionRow) -> CardTransaction:
    """A RETURN_REVERSAL: the card transaction's last return is undone. Every account it credited pays its
    part back to the network — an account that no longer covers it, the sources in priority order, else the
    operator (EXCEPTION: the network took back money no funding source had); its CardRefunds are REVERSED
    and refundedAmount goes down by the return."""
    refunds = [
        r
        for r in (await repository.refunds_of(session, [row.id]))[row.id]
        if r.status == CardRefundStatus.COMPLETED
    ]
    last = max(refunds, key=lambda refund: (refund.created_at, refund.return_ref)).return_ref
    reversed_refunds = [refund for refund in refunds if refund.return_ref == last]
    network = await _network_account(session, tenant_id=row.tenant_id, currency=row.currency)
    sources = {row.account_id, *(row.source_ids or ())}
    moved: list[str] = []
    failed = False
    for refund in reversed_refunds:
        if refund.account_id in sources:
            paid_by = await _pull(
                session, row, amount=refund.amount, network=network, kind="CARD_RETURN_REVERSAL",
                first=refund.account_id,
            )  # fmt: skip
            if paid_by is None:
                failed = True
                row.loss_amount += refund.amount
            else:
                moved.append(paid_by)
        else:  # the operator's loss account was credited (it had paid): it pays it back
            await _operator_pays(session, row, amount=refund.amount, network=network)
        refund.status = CARD_REFUND.move(refund.status, CardRefundStatus.REVERSED, subject=refund.id)
    row.refunded_amount -= sum(refund.amount for refund in reversed_refunds)
    changed = _move(row, _T.EXCEPTION if failed else _T.SETTLED)
    rendered = await _emit(session, row, None if changed else UPDATED)
    await _balances_moved(session, tenant_id=row.tenant_id, account_ids=moved)
    return rendered


async def _payers(session: AsyncSession, row: CardTransactionRow) -> list[tuple[str, int]]:
    """Who paid the network for this card transaction and how much of it has not come back yet, the last
    payer first: post-hoc pulls before the authorization's source, and the operator's loss account (which
    paid what no source could) before any customer account — a return never credits a customer with money
    the customer did not pay. (A reversed return's CardRefunds count as returned: its reversal's entries
    count as paid.)"""
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
    authorization partly cleared becomes SETTLED, one not cleared at all EXPIRED; a pending credit EXPIRED).
    Clearings that arrive later are force-posted (post-hoc pull, else the operator's loss)."""
    for row in await repository.open_transactions(
        session,
        tenant_id=tenant.id,
        card_id=card_id,
        statuses=frozenset({_T.AUTHORIZED, _T.PARTIALLY_SETTLED}),
    ):
        await _expire(session, row)


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


class _AsTransactions:
    """Card transactions as GET /transactions lists and reads them (payments.hooks.card_transactions)."""

    async def page(
        self,
        session: AsyncSession,
        *,
        tenant_id: str,
        filters: payments_hooks.CardTransactionFilters,
        after: payments_hooks.Keyset | None,
        descending: bool,
        limit: int,
    ) -> list[CardTransaction]:
        rows = await repository.listed_page(
            session,
            _listed(tenant_id, filters),
            after=(after.created_at, after.id) if after else None,
            descending=descending,
            limit=limit,
        )
        refunds = await repository.refunds_of(session, [row.id for row, has_refunds in rows if has_refunds])
        return [to_schema(row, refunds.get(row.id, [])) for row, _ in rows]

    async def get(
        self, session: AsyncSession, *, tenant_id: str, transaction_id: str
    ) -> CardTransaction | None:
        # the refunds read whether or not the row exists: a card transaction that is not the caller's (another
        # customer's, for an agent) costs what an unknown id does (tests/test_not_found_oracle.py)
        row = await repository.get_transaction(session, tenant_id=tenant_id, transaction_id=transaction_id)
        refunds = (await repository.refunds_of(session, [transaction_id]))[transaction_id]
        return None if row is None else to_schema(row, refunds)


def _listed(tenant_id: str, filters: payments_hooks.CardTransactionFilters) -> Any:
    return repository.listed_query(
        tenant_id=tenant_id,
        customer_id=filters.customer_id,
        platform_customer_id=filters.platform_customer_id,
        account_identifier=filters.account_identifier,
        sender_account_identifier=filters.sender_account_identifier,
        receiver_account_identifier=filters.receiver_account_identifier,
        status=filters.status,
        start_date=filters.start_date,
        end_date=filters.end_date,
    )


payments_hooks.card_transactions.subscribe(_AsTransactions())
