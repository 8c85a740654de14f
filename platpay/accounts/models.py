from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.accounts.state import (
    BeneficiaryVerificationStatus,
    ExternalAccountStatus,
    InternalAccountStatus,
    InternalAccountType,
)
from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class InternalAccountRow(Base):
    """Money held for a customer (or the platform when customer_id is null) in one currency: a holding
    account (INTERNAL_FIAT / INTERNAL_CRYPTO) or a customer's embedded wallet (EMBEDDED_WALLET, USDB). Its
    balance lives in the ledger account with the same id."""

    __tablename__ = "internal_accounts"
    __table_args__ = (
        Index("ix_internal_accounts_tenant_id_id", "tenant_id", "id"),
        Index("ix_internal_accounts_customer_id", "customer_id"),
        # a customer has one account per (currency, type): the holding account, and in USDB the embedded
        # wallet too; the platform's own accounts (no customer) are one per currency
        Index(
            "uq_internal_accounts_customer_currency_type",
            "tenant_id",
            "customer_id",
            "currency",
            "type",
            unique=True,
        ),
        Index(
            "uq_internal_accounts_platform_currency",
            "tenant_id",
            "currency",
            unique=True,
            sqlite_where=text("customer_id IS NULL"),
            postgresql_where=text("customer_id IS NULL"),
        ),
        check_in("status", InternalAccountStatus),
        check_in("type", InternalAccountType),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str | None] = mapped_column(IdColumn(), ForeignKey("customers.id"))
    currency: Mapped[str] = mapped_column(String(8))
    type: Mapped[str] = mapped_column(String(16))  # INTERNAL_FIAT | INTERNAL_CRYPTO | EMBEDDED_WALLET
    status: Mapped[str] = mapped_column(String(10))  # state.InternalAccountStatus
    private_enabled: Mapped[bool | None]  # embedded wallets only
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class ExternalAccountRow(Base):
    """A bank account, wallet or other destination outside platpay, for a customer or the platform."""

    __tablename__ = "external_accounts"
    __table_args__ = (
        Index("ix_external_accounts_tenant_id_id", "tenant_id", "id"),
        Index("ix_external_accounts_customer_id", "customer_id"),
        # the same destination may be registered once per owner (live accounts only)
        Index(
            "uq_external_accounts_owner_identity",
            "tenant_id",
            "owner_key",
            "identity_key",
            unique=True,
            sqlite_where=text("deleted_at IS NULL"),
            postgresql_where=text("deleted_at IS NULL"),
        ),
        check_in("status", ExternalAccountStatus),
        check_in("beneficiary_verification_status", BeneficiaryVerificationStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str | None] = mapped_column(IdColumn(), ForeignKey("customers.id"))
    owner_key: Mapped[str] = mapped_column(String(64))  # customer id, or "platform"
    identity_key: Mapped[str] = mapped_column(String(200))  # accountType + primary identifier
    currency: Mapped[str] = mapped_column(String(8))
    account_type: Mapped[str] = mapped_column(String(24))
    account_info: Mapped[dict[str, Any]] = mapped_column(JsonType)
    status: Mapped[str] = mapped_column(String(32))  # state.ExternalAccountStatus
    ownership_type: Mapped[str | None] = mapped_column(String(16))  # FIRST_PARTY | THIRD_PARTY, when given
    platform_account_id: Mapped[str | None] = mapped_column(String(255))
    default_uma_deposit_account: Mapped[bool]
    beneficiary_verification_status: Mapped[str | None] = mapped_column(String(32))
    beneficiary_verified_name: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
