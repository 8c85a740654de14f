"""Transactions: how they render, list and change state. Every status change emits its webhook in the
same transaction (OUTGOING_PAYMENT.* / INCOMING_PAYMENT.*, INTERFACE-FACTS §5.2)."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.errors import NotFound
from platpay.kit import clock
from platpay.kit.money import currency_amount
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.payments import repository, sandbox_outcomes
from platpay.payments.models import TransactionRow
from platpay.payments.schemas import Refund, Transaction
from platpay.payments.state import TransactionStatus, lifecycle
from platpay.platforms.context import TenantContext


class TransactionNotFound(NotFound):
    code = "TRANSACTION_NOT_FOUND"


def _failure(row: TransactionRow) -> tuple[str | None, dict[str, Any] | None]:
    """failureReason and failureDetails. Transfers that failed before failureReason took the reference's
    values stored the sandbox label (INSUFFICIENT_FUNDS, …) there: they render as they would today."""
    details = (row.extra or {}).get("failureDetails")
    if row.failure_reason in sandbox_outcomes.TRANSFER_FAILURE_LABELS:
        legacy = sandbox_outcomes.transfer_failure(row)
        return legacy["failure_reason"], details or legacy["failure_details"]
    return row.failure_reason, details


def to_schema(row: TransactionRow, *, platform_id: str) -> Transaction:
    extra = row.extra or {}
    failure_reason, failure_details = _failure(row)
    return Transaction(
        id=row.id,
        status=row.status,  # type: ignore[arg-type]
        type=row.type,  # type: ignore[arg-type]
        source=row.source,
        destination=row.destination,
        customer_id=row.customer_id or platform_id,
        platform_customer_id=row.platform_customer_id or platform_id,
        sent_amount=currency_amount(row.sent_amount, row.sent_currency)
        if row.sent_amount is not None and row.sent_currency
        else None,  # type: ignore[arg-type]
        received_amount=currency_amount(row.received_amount, row.received_currency)  # type: ignore[arg-type]
        if row.received_amount is not None and row.received_currency
        else None,
        exchange_rate=float(Decimal(row.exchange_rate)) if row.exchange_rate else None,
        fees=row.fee_amount,
        quote_id=row.quote_id,
        payment_instructions=extra.get("paymentInstructions"),
        reconciliation_instructions={"reference": row.reference} if row.reference else None,
        refund=Refund(**row.refund) if row.refund else None,
        rate_details=extra.get("rateDetails"),
        counterparty_information=extra.get("counterpartyInformation"),
        failure_reason=failure_reason,  # type: ignore[arg-type]
        failure_details=failure_details,  # type: ignore[arg-type]
        description=row.description,
        agent_id=row.agent_id,
        settled_at=row.settled_at,
        receipt_delivery_confirmed_at=row.receipt_delivery_confirmed_at,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


def event_family(row: TransactionRow) -> str:
    return "OUTGOING_PAYMENT" if row.type == "OUTGOING" else "INCOMING_PAYMENT"


async def create(session: AsyncSession, row: TransactionRow) -> None:
    """Record a new transaction (its first event is the caller's `emit_status`)."""
    await repository.insert(session, row)


async def emit_status(
    session: AsyncSession, row: TransactionRow, *, platform_id: str, event: str | None = None
) -> Transaction:
    """Emit `<FAMILY>.<STATUS>` (or `<FAMILY>.<event>`) with the transaction as GET returns it."""
    from platpay.events import service as events_service

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
    session: AsyncSession,
    row: TransactionRow,
    status: TransactionStatus,
    *,
    platform_id: str,
    failure_reason: str | None = None,
    failure_details: dict[str, Any] | None = None,
) -> Transaction:
    """Change status (and emit its event), as the lifecycle of the row's direction allows (payments/state.py:
    a terminal state is final; COMPLETED -> FAILED is an outgoing payment's bank return); any other move
    raises kit.states.IllegalTransition, before anything changed.
    `failure_reason` is a value of the reference enum of the row's direction (the schema refuses others);
    `failure_details` ({code, message, …}) keeps the specific cause."""
    target = lifecycle(row.type).move(row.status, status, subject=row.id)
    now = clock.now()
    row.status = target
    row.updated_at = now
    if failure_reason is not None:
        row.failure_reason = failure_reason
    if failure_details:
        row.extra = {**(row.extra or {}), "failureDetails": failure_details}  # JSON tracks assignment only
    if target == TransactionStatus.COMPLETED:
        row.settled_at = now
    return await emit_status(session, row, platform_id=platform_id)


async def load(
    session: AsyncSession, *, tenant_id: str, transaction_id: str, for_update: bool = False
) -> TransactionRow:
    row = await repository.get(
        session, tenant_id=tenant_id, transaction_id=transaction_id, for_update=for_update
    )
    if row is None:
        raise TransactionNotFound(
            f"transaction {transaction_id!r} not found", details={"transactionId": transaction_id}
        )
    return row


async def get_transaction(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str
) -> Transaction:
    return to_schema(
        await load(session, tenant_id=tenant.id, transaction_id=transaction_id),
        platform_id=tenant.platform_id,
    )


async def list_transactions(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    params: PageParams,
    customer_id: str | None = None,
    **filters: Any,
) -> tuple[PageResult[TransactionRow], list[Transaction]]:
    platform_only = customer_id == tenant.platform_id
    stmt = repository.list_query(
        tenant_id=tenant.id,
        customer_id=None if platform_only else customer_id,
        platform_only=platform_only,
        **filters,
    )
    page = await paginate(session, stmt, id_column=TransactionRow.id, params=params)
    return page, [to_schema(row, platform_id=tenant.platform_id) for row in page.items]


async def confirm_receipt(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str, at: datetime | None
) -> Transaction:
    row = await load(session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True)
    row.receipt_delivery_confirmed_at = (at or clock.now()).astimezone(clock.now().tzinfo)
    row.updated_at = clock.now()
    await session.flush()
    return to_schema(row, platform_id=tenant.platform_id)
