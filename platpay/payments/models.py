from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime
from platpay.payments.state import ApprovalState, TransactionKind, TransactionStatus, TransactionType
from platpay.payments.types import TransactionDestination, TransactionSource


class TransactionRow(Base):
    """A money movement as the API shows it. Its money lives in the ledger (entries reference its id);
    its lifecycle moves through the job runner. `type` is the direction: OUTGOING or INCOMING."""

    __tablename__ = "transactions"
    __table_args__ = (
        Index("ix_transactions_tenant_id_id", "tenant_id", "id"),
        Index("ix_transactions_tenant_customer", "tenant_id", "customer_id"),
        Index("ix_transactions_tenant_sender", "tenant_id", "sender_account_id"),
        Index("ix_transactions_tenant_receiver", "tenant_id", "receiver_account_id"),
        Index("ix_transactions_tenant_reference", "tenant_id", "reference"),
        Index("ix_transactions_quote_id", "quote_id"),
        # GET /transactions: newest (or oldest) first by creation time, keyset-paged (service.list_transactions)
        Index("ix_transactions_tenant_created", "tenant_id", "created_at", "id"),
        check_in("status", TransactionStatus),
        check_in("approval_state", ApprovalState),
        check_in("type", TransactionType),
        check_in("kind", TransactionKind),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    type: Mapped[str] = mapped_column(String(8))  # OUTGOING | INCOMING
    kind: Mapped[str] = mapped_column(String(24))  # TRANSFER_OUT | TRANSFER_IN | QUOTE | UMA_INCOMING | ...
    status: Mapped[str] = mapped_column(String(12))
    # CREDIT | DEBIT: what it does to the customer's (or platform's) internal account (schemas.TransactionDirection)
    direction: Mapped[str] = mapped_column(String(6))
    pending_reason: Mapped[str | None] = mapped_column(String(40))  # schemas.TransactionPendingReason
    customer_id: Mapped[str | None] = mapped_column(IdColumn())  # null: the platform's own transaction
    platform_customer_id: Mapped[str | None] = mapped_column(String(255))
    source: Mapped[TransactionSource] = mapped_column(JsonType)
    destination: Mapped[TransactionDestination] = mapped_column(JsonType)
    sender_account_id: Mapped[str | None] = mapped_column(String(320))  # account id or UMA address
    receiver_account_id: Mapped[str | None] = mapped_column(String(320))
    sent_amount: Mapped[int | None] = mapped_column(BigInteger)  # minor units of sent_currency
    sent_currency: Mapped[str | None] = mapped_column(String(8))
    received_amount: Mapped[int | None] = mapped_column(BigInteger)  # minor units of received_currency
    received_currency: Mapped[str | None] = mapped_column(String(8))
    # minor units, >= 0: of sent_currency for OUTGOING, of received_currency for INCOMING (the API's `fees`)
    fee_amount: Mapped[int] = mapped_column(BigInteger, default=0)
    exchange_rate: Mapped[str | None] = mapped_column(
        String(40)
    )  # Decimal as text: receiving units per sending unit
    rail: Mapped[str | None] = mapped_column(String(24))
    rail_selection_mode: Mapped[str | None] = mapped_column(
        String(8)
    )  # AUTO | MANUAL; null: no rail resolved
    expected_settlement_at: Mapped[datetime | None] = mapped_column(UtcDateTime())  # tenant time
    settlement_timeline_seconds: Mapped[int | None] = mapped_column(Integer)  # creation to settlement
    remittance_information: Mapped[str | None] = mapped_column(String(80))  # travels with the payment
    purpose_of_payment: Mapped[str | None] = mapped_column(String(32))  # quotes.schemas.PurposeOfPayment
    # POST /transactions/{id}/cancel's reason (the transaction is then FAILED, failureDetails.code CANCELLED)
    cancel_reason: Mapped[str | None] = mapped_column(String(255))
    reference: Mapped[str | None] = mapped_column(String(120))
    outcome: Mapped[str | None] = mapped_column(String(24))  # the sandbox scenario chosen at creation
    quote_id: Mapped[str | None] = mapped_column(IdColumn())
    agent_id: Mapped[str | None] = mapped_column(IdColumn())
    description: Mapped[str | None] = mapped_column(Text)
    failure_reason: Mapped[str | None] = mapped_column(String(48))  # a reference enum value of `type`
    refund: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    extra: Mapped[dict[str, Any]] = mapped_column(JsonType)  # rateDetails, counterpartyInformation, ...
    # An incoming UMA payment's approval by the platform (payments/state.py APPROVAL); null on the others.
    approval_state: Mapped[str | None] = mapped_column(String(20))
    approval_deadline: Mapped[datetime | None] = mapped_column(UtcDateTime())  # the API must decide by then
    # the window a 202 opens, and a $pending.long sender's delay after approval, in microseconds (timedelta's)
    approval_timeout_us: Mapped[int | None] = mapped_column(BigInteger)
    approval_arrival_delay_us: Mapped[int | None] = mapped_column(BigInteger)
    approval_decided_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    approval_decided_by: Mapped[str | None] = mapped_column(String(16))  # API|WEBHOOK|TIMEOUT|COMPLIANCE
    settled_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    receipt_delivery_confirmed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
