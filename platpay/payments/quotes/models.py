from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.accounts.types import PaymentInstruction
from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime
from platpay.payments.quotes.state import QuoteStatus
from platpay.payments.quotes.types import QuoteDestinationApi, QuoteSourceApi


class QuoteRow(Base):
    """A locked price for one cross-currency payment, and the payment's plan. Its transaction exists from
    creation (TransactionRow.quote_id points back); its money moves in the ledger at execution."""

    __tablename__ = "quotes"
    __table_args__ = (
        Index("ix_quotes_tenant_id_id", "tenant_id", "id"),
        Index("ix_quotes_transaction_id", "transaction_id"),
        check_in("status", QuoteStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str | None] = mapped_column(IdColumn())  # the sender; null: the platform
    status: Mapped[str] = mapped_column(String(12))  # PENDING | PROCESSING | COMPLETED | FAILED | EXPIRED
    source: Mapped[QuoteSourceApi] = mapped_column(JsonType)  # as the API shows it
    destination: Mapped[QuoteDestinationApi] = mapped_column(JsonType)  # as the API shows it
    funding: Mapped[str] = mapped_column(String(20))  # INTERNAL | PULL | REALTIME_FUNDING
    source_account_id: Mapped[str | None] = mapped_column(IdColumn())  # internal or pulled external account
    payout: Mapped[str] = mapped_column(String(20))  # EXTERNAL | INTERNAL | UMA
    destination_account_id: Mapped[str | None] = mapped_column(IdColumn())  # credited at settlement
    rail: Mapped[str] = mapped_column(String(24))  # payout rail; the CLEARING qualifier
    sending_currency: Mapped[str] = mapped_column(String(8))
    receiving_currency: Mapped[str] = mapped_column(String(8))
    locked_side: Mapped[str] = mapped_column(String(10))  # SENDING | RECEIVING
    sending_amount: Mapped[int] = mapped_column(BigInteger)  # minor units of sending_currency, fees included
    receiving_amount: Mapped[int] = mapped_column(BigInteger)  # minor units of receiving_currency
    fixed_fee: Mapped[int] = mapped_column(BigInteger)  # minor units of sending_currency
    variable_fee: Mapped[int] = mapped_column(BigInteger)  # minor units of sending_currency
    variable_fee_bps: Mapped[int]
    # the platform's fee (feeConfigs / platformFeeOverride), minor units of sending_currency, part of the
    # fees: credited to PLATFORM_FEES at execution, to the platform's internal account at completion
    platform_fee: Mapped[int] = mapped_column(BigInteger, default=0, server_default="0")
    platform_fee_entry_id: Mapped[str | None] = mapped_column(IdColumn())  # that completion's entry
    exchange_rate: Mapped[str] = mapped_column(String(40))  # Decimal text: receiving per sending major unit
    mid_rate: Mapped[str] = mapped_column(String(40))  # Decimal text, before the spread
    spread_bps: Mapped[int]
    transaction_id: Mapped[str] = mapped_column(IdColumn())
    lookup_id: Mapped[str | None] = mapped_column(IdColumn())
    payment_instructions: Mapped[list[PaymentInstruction] | None] = mapped_column(JsonType)
    outcome: Mapped[str] = mapped_column(String(32))  # the sandbox scenario, chosen at creation
    pull_outcome: Mapped[str | None] = mapped_column(String(32))  # pull sources: how the pull ends
    debit_entry_id: Mapped[str | None] = mapped_column(IdColumn())  # the ledger entry a refund reverses
    description: Mapped[str | None] = mapped_column(Text)
    executed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class LookupRow(Base):
    """A receiver lookup: what was found, for the quote that names its id (until it expires)."""

    __tablename__ = "receiver_lookups"
    __table_args__ = (Index("ix_receiver_lookups_tenant_id_id", "tenant_id", "id"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    kind: Mapped[str] = mapped_column(String(20))  # UMA_ADDRESS | EXTERNAL_ACCOUNT
    receiver: Mapped[str] = mapped_column(String(320))  # the normalized UMA address or the account id
    sender_customer_id: Mapped[str | None] = mapped_column(IdColumn())
    sending_currency: Mapped[str] = mapped_column(String(8))
    supported_currencies: Mapped[list[dict[str, Any]]] = mapped_column(JsonType)  # as the API shows them
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
