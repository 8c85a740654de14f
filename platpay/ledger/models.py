"""The ledger's tables. Only platpay.ledger writes postings or balances.

Every account holds money in two buckets: AVAILABLE (spendable) and HELD (reserved: payments in flight,
card holds). An account's API `balance` is available; `totalBalance` is available + held. Every posting
hits one (account, bucket) with a signed amount in minor units, positive meaning more money in that
account; a journal entry's postings sum to zero in each currency, so every currency's trial balance is
zero. System accounts (clearing per rail, FX trading, fees, sandbox funding) may go negative; customer and
platform internal accounts may not.

The CHECK constraints are the database's backstop for what the service already guarantees: they refuse a
zero posting, an unknown bucket, and a negative bucket on an account that may not go negative (the
conditional UPDATE in repository.apply refuses it first, so the service never trips them).
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, UtcDateTime
from platpay.ledger.state import Bucket, HoldStatus, LedgerAccountKind


class LedgerAccountRow(Base):
    __tablename__ = "ledger_accounts"
    __table_args__ = (
        UniqueConstraint("tenant_id", "code"),
        CheckConstraint("allow_negative OR (available >= 0 AND held >= 0)", name="non_negative"),
        CheckConstraint("kind <> 'INTERNAL' OR NOT allow_negative", name="internal_never_negative"),
        check_in("kind", LedgerAccountKind),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # internal accounts reuse their own id
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    currency: Mapped[str] = mapped_column(String(8))
    kind: Mapped[str] = mapped_column(String(24))  # LedgerAccountKind
    code: Mapped[str] = mapped_column(String(120))  # unique per tenant, e.g. clearing:ACH:USD
    allow_negative: Mapped[bool]
    available: Mapped[int] = mapped_column(BigInteger, default=0)  # minor units
    held: Mapped[int] = mapped_column(BigInteger, default=0)  # minor units, ≥ 0 for internal accounts
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class JournalEntryRow(Base):
    __tablename__ = "journal_entries"
    __table_args__ = (Index("ix_journal_entries_tenant_reference", "tenant_id", "reference"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    kind: Mapped[str] = mapped_column(String(40))  # e.g. FUNDING, TRANSFER_OUT_HOLD, FX_EXECUTE, REVERSAL
    reference: Mapped[str | None] = mapped_column(String(120))  # the business object, e.g. Transaction:<uuid>
    reverses_id: Mapped[str | None] = mapped_column(IdColumn())  # a correction points at what it reverses
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class LedgerHoldRow(Base):
    """Money reserved on an internal account for one business object (a card authorization): the HELD
    bucket's share that belongs to it. Every entry that moves it carries the hold's `reference`, so `verify`
    recomputes `remaining` from the HELD postings of those entries on the hold's account. A hold is OPEN
    while anything remains; capture (to the outside world) and release (back to available) take from it
    until it is CLOSED."""

    __tablename__ = "ledger_holds"
    __table_args__ = (
        UniqueConstraint("tenant_id", "reference"),
        Index("ix_ledger_holds_account_id", "account_id"),
        CheckConstraint("remaining >= 0 AND remaining <= amount", name="remaining_within_amount"),
        check_in("status", HoldStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    account_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("ledger_accounts.id"))
    currency: Mapped[str] = mapped_column(String(8))
    amount: Mapped[int] = mapped_column(BigInteger)  # minor units placed, > 0
    remaining: Mapped[int] = mapped_column(BigInteger)  # minor units still held, 0..amount
    status: Mapped[str] = mapped_column(String(8))  # OPEN | CLOSED
    reference: Mapped[str] = mapped_column(String(120))  # the business object, e.g. CardTransaction:<uuid>
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class PostingRow(Base):
    __tablename__ = "postings"
    __table_args__ = (
        Index("ix_postings_account_id", "account_id"),
        Index("ix_postings_entry_id", "entry_id"),
        CheckConstraint("amount <> 0", name="nonzero_amount"),
        check_in("bucket", Bucket),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    entry_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("journal_entries.id"))
    account_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("ledger_accounts.id"))
    tenant_id: Mapped[str] = mapped_column(IdColumn())
    currency: Mapped[str] = mapped_column(String(8))
    bucket: Mapped[str] = mapped_column(String(10))  # AVAILABLE | HELD
    amount: Mapped[int] = mapped_column(BigInteger)  # minor units, signed: + adds money to the account
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
