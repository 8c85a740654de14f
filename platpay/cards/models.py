"""The cards domain's tables: cards, their ordered funding sources, card transactions and their refunds.
Money lives in the ledger: a card transaction's hold, captures, pulls and returns are entries whose
reference is the card transaction's id."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.cards.state import CardRefundStatus, CardState, CardTransactionStatus
from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class CardRow(Base):
    __tablename__ = "cards"
    __table_args__ = (
        Index("ix_cards_tenant_id_id", "tenant_id", "id"),
        Index("ix_cards_tenant_cardholder", "tenant_id", "cardholder_id"),
        Index("ix_cards_tenant_platform_card_id", "tenant_id", "platform_card_id"),
        Index("ix_cards_embed_token", "embed_token"),
        check_in("state", CardState),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    cardholder_id: Mapped[str] = mapped_column(IdColumn())  # a customer (customers domain)
    platform_card_id: Mapped[str] = mapped_column(String(255))
    state: Mapped[str] = mapped_column(String(16))  # state.CardState
    state_reason: Mapped[str | None] = mapped_column(String(24))  # ISSUER_REJECTED | CLOSED_BY_PLATFORM
    form: Mapped[str] = mapped_column(String(12))  # VIRTUAL
    currency: Mapped[str] = mapped_column(String(8))  # of every funding source
    brand: Mapped[str | None] = mapped_column(String(12))  # VISA | MASTERCARD, once provisioned
    last4: Mapped[str | None] = mapped_column(String(4))
    exp_month: Mapped[int | None] = mapped_column(Integer)
    exp_year: Mapped[int | None] = mapped_column(Integer)
    issuer_ref: Mapped[str | None] = mapped_column(String(64))
    processor_ref: Mapped[str | None] = mapped_column(String(64))  # the processor's name of the card
    embed_token: Mapped[str | None] = mapped_column(String(64))  # the secret of panEmbedUrl
    # the largest authorization decisioning approves, minor units of `currency`; None: no limit
    max_spend_per_transaction: Mapped[int | None] = mapped_column(BigInteger)
    # threeDSecurePassword as given on create, sealed under the master key (service.THREE_DS_SEAL_PURPOSE)
    three_ds_password_sealed: Mapped[str | None] = mapped_column(Text)
    # bumped by every change an authorization decides on (state, maxSpendPerTransaction, funding sources):
    # an authorization decided on an unlocked read expects it unchanged when its writes go (repository)
    version: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class CardFundingSourceRow(Base):
    """One binding of a card to an internal account; `position` 0 is tried first by decisioning."""

    __tablename__ = "card_funding_sources"
    __table_args__ = (Index("ix_card_funding_sources_tenant_account", "tenant_id", "account_id"),)

    card_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("cards.id"), primary_key=True)
    position: Mapped[int] = mapped_column(Integer, primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn())
    account_id: Mapped[str] = mapped_column(IdColumn())  # an internal account (accounts domain)


class CardTransactionRow(Base):
    """An authorization and what followed it. Amounts are minor units of `currency` (the card's), all ≥ 0,
    but `requested_amount`: what the network asked for, in `requested_currency`, the currency its clearings
    and returns are sent in too (decisioning.in_card_currency converts each)."""

    __tablename__ = "card_transactions"
    __table_args__ = (
        Index("ix_card_transactions_tenant_card", "tenant_id", "card_id", "id"),
        Index("ix_card_transactions_tenant_account", "tenant_id", "account_id"),
        # GET /transactions lists card transactions beside the others, by creation time (payments.hooks)
        Index("ix_card_transactions_tenant_created", "tenant_id", "created_at", "id"),
        check_in("status", CardTransactionStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    card_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("cards.id"))
    # the cardholder (a customer) and its platformCustomerId when it opened: GET /transactions filters on them
    customer_id: Mapped[str] = mapped_column(IdColumn())
    platform_customer_id: Mapped[str | None] = mapped_column(String(255))
    # the network message that opened it (decisioning.MessageKind): AUTHORIZATION, FINANCIAL_AUTHORIZATION,
    # BALANCE_INQUIRY, CREDIT_AUTHORIZATION, CREDIT_AUTHORIZATION_ADVICE, FINANCIAL_CREDIT_AUTHORIZATION
    kind: Mapped[str] = mapped_column(String(32))
    status: Mapped[str] = mapped_column(String(20))  # state.CardTransactionStatus
    decline_reason: Mapped[str | None] = mapped_column(String(32))  # DECLINED only
    issuer_transaction_token: Mapped[str] = mapped_column(String(64))
    merchant: Mapped[dict[str, Any]] = mapped_column(JsonType)  # {descriptor, mcc?, country?}
    currency: Mapped[str] = mapped_column(String(8))
    # the source decisioning chose (null when declined before one was chosen)
    account_id: Mapped[str | None] = mapped_column(IdColumn())
    # the card's funding sources, in priority order, when it authorized: where post-hoc pulls go
    source_ids: Mapped[list[str]] = mapped_column(JsonType)
    # the request in `currency` (held when approved); 0 when its currency does not convert (CURRENCY_MISMATCH)
    authorized_amount: Mapped[int] = mapped_column(BigInteger)
    requested_amount: Mapped[int] = mapped_column(BigInteger)  # minor units of requested_currency, > 0
    requested_currency: Mapped[str] = mapped_column(String(8))
    settled_amount: Mapped[int] = mapped_column(BigInteger, default=0)
    refunded_amount: Mapped[int] = mapped_column(BigInteger, default=0)
    settlement_count: Mapped[int] = mapped_column(Integer, default=0)
    pull_count: Mapped[int] = mapped_column(Integer, default=0)
    # the hold (less what it released) + covered post-hoc pulls
    pull_amount: Mapped[int] = mapped_column(BigInteger, default=0)
    pull_pending: Mapped[int] = mapped_column(Integer, default=0)
    loss_amount: Mapped[int] = mapped_column(BigInteger, default=0)  # what the operator absorbed
    outcome: Mapped[str | None] = mapped_column(String(32))  # the issuer's scenario (sandbox suffixes)
    authorized_at: Mapped[datetime] = mapped_column(UtcDateTime())
    last_event_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class CardRefundRow(Base):
    """A merchant RETURN credited back to the funding source (SPEC §2 CardRefund)."""

    __tablename__ = "card_refunds"
    __table_args__ = (
        Index("ix_card_refunds_card_transaction", "card_transaction_id", "id"),
        check_in("status", CardRefundStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    card_transaction_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("card_transactions.id"))
    account_id: Mapped[str] = mapped_column(IdColumn())
    amount: Mapped[int] = mapped_column(BigInteger)  # minor units, > 0
    currency: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(12))  # COMPLETED | REVERSED (a RETURN_REVERSAL undid it)
    # the RETURN it is part of (one return split between payers is several rows with one return_ref)
    return_ref: Mapped[str] = mapped_column(String(64))
    description: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class CardRevealRow(Base):
    """One POST /cards/{id}/reveal: who asked and when (the audit of every reveal), and the URL it minted:
    only its token's SHA-256 is kept; the page takes the token once, before `expires_at`."""

    __tablename__ = "card_reveals"
    __table_args__ = (
        Index("ix_card_reveals_token_digest", "token_digest", unique=True),
        Index("ix_card_reveals_tenant_card", "tenant_id", "card_id", "id"),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    card_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("cards.id"))
    actor: Mapped[str] = mapped_column(String(80))  # the caller: "<PrincipalKind>:<credential id>"
    token_digest: Mapped[str] = mapped_column(String(64))  # hex SHA-256 of the URL's token
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())  # tenant time
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())  # tenant time
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())  # when the page was shown (once)
