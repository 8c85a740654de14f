"""Transactions: how they render, list and change state. Every status change emits its webhook in the
same transaction (OUTGOING_PAYMENT.* / INCOMING_PAYMENT.*, INTERFACE-FACTS §5.2)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.events import service as events_service
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.kit.money import currency_amount
from platpay.kit.pagination import PageParams, PageResult
from platpay.payments import hooks, repository, sandbox_outcomes
from platpay.payments.errors import TransactionNotFound
from platpay.payments.funding import fund_internal_account as fund_internal_account  # sandbox deposits
from platpay.payments.models import TransactionRow
from platpay.payments.schemas import (
    PAYMENT_RAILS,
    AnyTransaction,
    IncomingTransaction,
    OutgoingTransaction,
    Refund,
    Transaction,
)
from platpay.payments.state import TransactionStatus, TransactionType, lifecycle
from platpay.payments.types import TransactionDestination, TransactionSource
from platpay.tenants.context import TenantContext

if TYPE_CHECKING:  # the row type accounts.service returns
    from platpay.accounts.models import InternalAccountRow


def _failure(row: TransactionRow) -> tuple[str | None, dict[str, Any] | None]:
    """failureReason and failureDetails. Transfers that failed before failureReason took the reference's
    values stored the sandbox label (INSUFFICIENT_FUNDS, …) there: they render as they would today."""
    details = (row.extra or {}).get("failureDetails")
    if row.failure_reason in sandbox_outcomes.TRANSFER_FAILURE_LABELS:
        legacy = sandbox_outcomes.transfer_failure(row)
        return legacy["failure_reason"], details or legacy["failure_details"]
    return row.failure_reason, details


def to_schema(row: TransactionRow, *, platform_id: str) -> Transaction:
    """The row as the API shows it: an IncomingTransaction or an OutgoingTransaction, by its type."""
    extra = row.extra or {}
    failure_reason, failure_details = _failure(row)
    common: dict[str, Any] = {
        "id": row.id,
        "status": row.status,
        "pending_reason": row.pending_reason,
        "direction": row.direction,
        "source": row.source,
        "destination": row.destination,
        "customer_id": row.customer_id or platform_id,
        "platform_customer_id": row.platform_customer_id or platform_id,
        "received_amount": currency_amount(row.received_amount, row.received_currency)
        if row.received_amount is not None and row.received_currency
        else None,
        "sent_amount": currency_amount(row.sent_amount, row.sent_currency)
        if row.sent_amount is not None and row.sent_currency
        else None,
        "exchange_rate": float(Decimal(row.exchange_rate)) if row.exchange_rate else None,
        "fees": row.fee_amount,
        "quote_id": row.quote_id,
        "refund": Refund(**row.refund) if row.refund else None,
        "reconciliation_instructions": {"reference": row.reference} if row.reference else None,
        "counterparty_information": extra.get("counterpartyInformation"),
        "failure_reason": failure_reason,
        "failure_details": failure_details,
        "description": row.description,
        "agent_id": row.agent_id,
        "settled_at": row.settled_at,
        "receipt_delivery_confirmed_at": row.receipt_delivery_confirmed_at,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }
    if row.type == TransactionType.INCOMING:
        return IncomingTransaction(type="INCOMING", **common)
    rail = row.rail if row.rail in PAYMENT_RAILS else None
    return OutgoingTransaction(
        type="OUTGOING",
        payment_instructions=extra.get("paymentInstructions"),
        rate_details=extra.get("rateDetails"),
        platform_fees=extra.get("platformFees", 0),
        payment_rail=rail,
        rail_selection_mode=row.rail_selection_mode if rail else None,
        expected_settlement_at=row.expected_settlement_at if rail else None,
        settlement_timeline_seconds=row.settlement_timeline_seconds if rail else None,
        remittance_information=row.remittance_information,
        purpose_of_payment=row.purpose_of_payment or extra.get("purposeOfPayment"),
        **common,
    )


def direction_of(type_: str) -> str:
    """A new transaction's direction for the customer's internal account: an OUTGOING one debits it, every
    INCOMING flow platpay has credits it (an inbound pull that debits it, INCOMING + DEBIT in the reference,
    has no flow here yet: its creator would pass `direction`)."""
    return "DEBIT" if type_ == TransactionType.OUTGOING else "CREDIT"


def event_family(row: TransactionRow) -> str:
    return "OUTGOING_PAYMENT" if row.type == TransactionType.OUTGOING else "INCOMING_PAYMENT"


async def create_transaction(
    session: LeanSession,
    *,
    tenant_id: str,
    type: str,
    kind: str,
    status: str,
    source: TransactionSource,
    destination: TransactionDestination,
    transaction_id: str | None = None,
    customer_id: str | None = None,
    platform_customer_id: str | None = None,
    sender_account_id: str | None = None,
    receiver_account_id: str | None = None,
    sent_amount: int | None = None,
    sent_currency: str | None = None,
    received_amount: int | None = None,
    received_currency: str | None = None,
    fee_amount: int = 0,
    exchange_rate: str | None = None,
    rail: str | None = None,
    reference: str | None = None,
    outcome: str | None = None,
    quote_id: str | None = None,
    agent_id: str | None = None,
    description: str | None = None,
    extra: dict[str, Any] | None = None,
    settled_at: datetime | None = None,
    approval_state: str | None = None,
    approval_deadline: datetime | None = None,
    approval_timeout_us: int | None = None,
    approval_arrival_delay_us: int | None = None,
    at: datetime | None = None,
    direction: str | None = None,
    pending_reason: str | None = None,
    rail_selection_mode: str | None = None,
    expected_settlement_at: datetime | None = None,
    settlement_timeline_seconds: int | None = None,
    remittance_information: str | None = None,
    purpose_of_payment: str | None = None,
) -> TransactionRow:
    """Record a new transaction (one lean INSERT; created and updated `at`, default now) and return its row,
    attached to the session: later changes flush as UPDATEs. Its first event is the caller's `emit_status`
    (or `move`). `type` is OUTGOING or INCOMING; amounts are minor units; `agent_id`: the agent that
    initiated it (agents domain), if one did."""
    now = at or clock.now()
    values = dict(
        id=transaction_id or new_id("Transaction"),
        tenant_id=tenant_id,
        type=type,
        kind=kind,
        status=status,
        direction=direction or direction_of(type),
        pending_reason=pending_reason,
        customer_id=customer_id,
        platform_customer_id=platform_customer_id,
        source=source,
        destination=destination,
        sender_account_id=sender_account_id,
        receiver_account_id=receiver_account_id,
        sent_amount=sent_amount,
        sent_currency=sent_currency,
        received_amount=received_amount,
        received_currency=received_currency,
        fee_amount=fee_amount,
        exchange_rate=exchange_rate,
        rail=rail,
        rail_selection_mode=rail_selection_mode,
        expected_settlement_at=expected_settlement_at,
        settlement_timeline_seconds=settlement_timeline_seconds,
        remittance_information=remittance_information,
        purpose_of_payment=purpose_of_payment,
        cancel_reason=None,
        reference=reference,
        outcome=outcome,
        quote_id=quote_id,
        agent_id=agent_id,
        description=description,
        extra=extra if extra is not None else {},
        settled_at=settled_at,
        approval_state=approval_state,
        approval_deadline=approval_deadline,
        approval_timeout_us=approval_timeout_us,
        approval_arrival_delay_us=approval_arrival_delay_us,
        created_at=now,
        updated_at=now,
    )
    return await repository.insert(session, values)


async def emit_status(
    session: LeanSession, row: TransactionRow, *, platform_id: str, event: str | None = None
) -> Transaction:
    """Emit `<FAMILY>.<STATUS>` (or `<FAMILY>.<event>`) with the transaction as GET returns it."""
    if isinstance(session, AsyncSession):  # a lean transaction's rows are never changed after their INSERT
        await session.flush()
    transaction = to_schema(row, platform_id=platform_id)
    await events_service.emit(
        session,
        tenant_id=row.tenant_id,
        type=f"{event_family(row)}.{event or row.status}",
        resource=transaction,
    )
    return transaction


async def move(
    session: LeanSession,
    row: TransactionRow,
    status: TransactionStatus,
    *,
    platform_id: str,
    failure_reason: str | None = None,
    failure_details: dict[str, Any] | None = None,
    refund: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> Transaction:
    """Change status (and emit its event), as the lifecycle of the row's direction allows (payments/state.py:
    a terminal state is final; COMPLETED -> FAILED is an outgoing payment's bank return); any other move
    raises kit.states.IllegalTransition, before anything changed.
    `failure_reason` is a value of the reference enum of the row's direction (the schema refuses others);
    `failure_details` ({code, message, …}) keeps the specific cause; `refund` replaces the refund as the
    API shows it; `extra` adds facts kept beside the row (merged into `extra`).
    In a lean transaction `row` is a snapshot read leanly: its change is written only if the transaction
    is still as it was read, else `Raced` (repository.write_move)."""
    was, was_updated_at = row.status, row.updated_at
    target = lifecycle(row.type).move(row.status, status, subject=row.id)
    now = clock.now()
    row.status = target
    row.updated_at = now
    if failure_reason is not None:
        row.failure_reason = failure_reason
    if refund is not None:
        row.refund = refund
    if extra:
        row.extra = {**(row.extra or {}), **extra}  # JSON tracks assignment only
    if failure_details:
        row.extra = {**(row.extra or {}), "failureDetails": failure_details}  # JSON tracks assignment only
    if target == TransactionStatus.COMPLETED:
        row.settled_at = now
    if not isinstance(session, AsyncSession):  # the ORM saves a tracked row's change itself
        await repository.write_move(session, row, was=was, was_updated_at=was_updated_at)
    return await emit_status(session, row, platform_id=platform_id)


async def announce(
    session: AsyncSession,
    row: TransactionRow,
    *,
    platform_id: str,
    event: str | None = None,
    refund: dict[str, Any] | None = None,
    at: datetime | None = None,
) -> Transaction:
    """A change that keeps the status (a quote executed, its refund settling): updatedAt `at` (default
    now), the new `refund` if given, and `<FAMILY>.<STATUS>` (or `<FAMILY>.<event>`)."""
    if refund is not None:
        row.refund = refund
    row.updated_at = at or clock.now()
    return await emit_status(session, row, platform_id=platform_id, event=event)


async def load(
    session: LeanSession, *, tenant_id: str, transaction_id: str, for_update: bool = False
) -> TransactionRow:
    row = await repository.get(
        session, tenant_id=tenant_id, transaction_id=transaction_id, for_update=for_update
    )
    if row is None:
        raise TransactionNotFound(transaction_id)
    return row


async def read_with_account(
    session: LeanSession, *, tenant_id: str, transaction_id: str
) -> tuple[TransactionRow, InternalAccountRow | None]:
    """`load` without a lock, with the internal account the transaction moves (None: none), in one read."""
    found = await repository.read_with_account(session, tenant_id=tenant_id, transaction_id=transaction_id)
    if found is None:
        raise TransactionNotFound(transaction_id)
    return found


async def read_many_with_account(
    session: LeanSession, *, tenant_id: str, transaction_ids: list[str]
) -> dict[str, tuple[TransactionRow, InternalAccountRow | None]]:
    """`read_with_account` of several transactions of one tenant in one read, by id (missing ones absent)."""
    return await repository.read_many_with_account(
        session, tenant_id=tenant_id, transaction_ids=transaction_ids
    )


async def get_transaction(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str
) -> AnyTransaction:
    """A transaction, or a card transaction (a card transaction is a transaction: TransactionOneOf); the
    same TransactionNotFound for an id that is neither, whatever the reason. The id's own prefix says which
    table to read, so an unknown id costs what a foreign one does (tests/test_not_found_oracle.py)."""
    if is_card_transaction_id(transaction_id):
        for reader in hooks.card_transactions.subscribers():
            card = await reader.get(session, tenant_id=tenant.id, transaction_id=transaction_id)
            if card is not None:
                return card
        raise TransactionNotFound(transaction_id)
    return to_schema(
        await load(session, tenant_id=tenant.id, transaction_id=transaction_id),
        platform_id=tenant.platform_id,
    )


def is_card_transaction_id(transaction_id: str) -> bool:
    return transaction_id.startswith(CARD_TRANSACTION_PREFIX)


CARD_TRANSACTION_PREFIX = "CardTransaction:"


CARD_STATUSES = frozenset(
    {"AUTHORIZED", "PARTIALLY_SETTLED", "SETTLED", "REFUNDED", "EXCEPTION", "DECLINED", "EXPIRED"}
)
_CURSOR_SEPARATOR = "|"
_NOT_A_CURSOR = "not a cursor returned by this list"


def _keyset(cursor_position: str) -> hooks.Keyset | None:
    """The (createdAt, id) a cursor of this list carries; None for an id alone (a cursor made before the list
    ordered by creation time)."""
    created, separator, last_id = cursor_position.partition(_CURSOR_SEPARATOR)
    if not separator:
        return None
    try:
        return hooks.Keyset(datetime.fromisoformat(created), last_id)
    except ValueError:
        raise invalid_field("cursor", _NOT_A_CURSOR, location="query") from None


def _card_filters(
    *,
    customer_id: str | None,
    platform_only: bool,
    type_: str | None,
    status: str | None,
    filters: dict[str, Any],
) -> hooks.CardTransactionFilters | None:
    """How the filters apply to card transactions; None when they exclude every card transaction (the
    platform's own transactions, INCOMING or OUTGOING, a transaction status, a reference)."""
    if platform_only or type_ not in (None, "CARD") or filters.get("reference") is not None:
        return None
    if status is not None and status not in CARD_STATUSES:
        return None
    return hooks.CardTransactionFilters(
        customer_id=customer_id,
        platform_customer_id=filters.get("platform_customer_id"),
        account_identifier=filters.get("account_identifier"),
        sender_account_identifier=filters.get("sender_account_identifier"),
        receiver_account_identifier=filters.get("receiver_account_identifier"),
        status=status,
        start_date=filters.get("start_date"),
        end_date=filters.get("end_date"),
    )


async def _position(
    session: AsyncSession, *, tenant: TenantContext, params: PageParams
) -> hooks.Keyset | None:
    if params.after_id is None:
        return None
    after = _keyset(params.after_id)
    if after is None:  # an id alone: the position of that transaction
        created_at = await repository.created_at_of(
            session, tenant_id=tenant.id, transaction_id=params.after_id
        )
        if created_at is None:
            raise invalid_field("cursor", _NOT_A_CURSOR, location="query")
        after = hooks.Keyset(created_at, params.after_id)
    return after


async def list_transactions(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    params: PageParams,
    customer_id: str | None = None,
    type_: str | None = None,
    status: str | None = None,
    **filters: Any,
) -> tuple[PageResult[AnyTransaction], list[AnyTransaction]]:
    """One page of the tenant's transactions and card transactions by (createdAt, id), newest first unless
    ascending.

    Each table gives at most `limit + 1` rows after the cursor's position, read in order through its
    (tenant_id, created_at, id) index, and the two short lists are merged: a page reads its own rows only,
    however deep the cursor, and nothing counts the tenant's rows (no totalCount: bench/transactions_list.py).
    The cursor carries the last item's (createdAt, id)."""
    platform_only = customer_id == tenant.platform_id
    own_customer = None if platform_only else customer_id
    after = await _position(session, tenant=tenant, params=params)
    wanted = params.limit + 1
    found: list[AnyTransaction] = []
    if type_ != "CARD" and (status is None or status not in CARD_STATUSES):
        stmt = repository.list_query(
            tenant_id=tenant.id,
            customer_id=own_customer,
            platform_only=platform_only,
            type_=type_,
            status=status,
            **filters,
        )
        rows = await repository.page(
            session,
            stmt,
            after=(after.created_at, after.id) if after else None,
            descending=params.descending,
            limit=wanted,
        )
        found.extend(to_schema(row, platform_id=tenant.platform_id) for row in rows)
    card_filters = _card_filters(
        customer_id=own_customer, platform_only=platform_only, type_=type_, status=status, filters=filters
    )
    if card_filters is not None:
        for reader in hooks.card_transactions.subscribers():
            found.extend(
                await reader.page(
                    session,
                    tenant_id=tenant.id,
                    filters=card_filters,
                    after=after,
                    descending=params.descending,
                    limit=wanted,
                )
            )
    found.sort(key=lambda item: (item.created_at, item.id), reverse=params.descending)
    has_more = len(found) > params.limit
    items = found[: params.limit]
    next_cursor = None
    if has_more:
        last = items[-1]
        next_cursor = params.next_cursor(f"{last.created_at.isoformat()}{_CURSOR_SEPARATOR}{last.id}")
    return PageResult(items=items, has_more=has_more, next_cursor=next_cursor, total_count=None), items


async def count_incoming_awaiting_approval(session: AsyncSession, *, tenant_id: str) -> int:
    """How many incoming UMA payments await the platform's decision (POST /transactions/{id}/approve or
    /reject) and may still get it: PENDING, the approval AWAITING_REPLY or AWAITING_DECISION, its deadline
    not passed on the tenant's clock. One statement."""
    return await repository.count_awaiting_approval(session, tenant_id=tenant_id, now=clock.now())


async def confirm_receipt(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str, at: datetime | None
) -> Transaction:
    row = await load(session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True)
    row.receipt_delivery_confirmed_at = (at or clock.now()).astimezone(clock.now().tzinfo)
    row.updated_at = clock.now()
    await session.flush()
    return to_schema(row, platform_id=tenant.platform_id)
