from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy import Date, ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.customers.state import KycStatus
from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime

_ACTIVE = text("deleted_at IS NULL")


class CustomerRow(Base):
    """A platform's customer. Deletion is soft: `deleted_at` set, unique keys released."""

    __tablename__ = "customers"
    __table_args__ = (
        Index("ix_customers_tenant_id_id", "tenant_id", "id"),
        # platformCustomerId and umaAddress are unique among a tenant's active customers.
        Index(
            "uq_customers_tenant_platform_customer_id",
            "tenant_id",
            "platform_customer_id",
            unique=True,
            sqlite_where=_ACTIVE,
            postgresql_where=_ACTIVE,
        ),
        Index(
            "uq_customers_tenant_uma",
            "tenant_id",
            "uma_address",
            unique=True,
            sqlite_where=_ACTIVE,
            postgresql_where=_ACTIVE,
        ),
        Index("ix_customers_tenant_created_at", "tenant_id", "created_at"),
        check_in("kyc_status", KycStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_type: Mapped[str] = mapped_column(String(16))
    platform_customer_id: Mapped[str] = mapped_column(String(255))
    uma_address: Mapped[str] = mapped_column(String(320))  # normalized lowercase
    kyc_status: Mapped[str] = mapped_column(String(16))
    region: Mapped[str | None] = mapped_column(String(2))
    currencies: Mapped[list[str]] = mapped_column(JsonType)  # the currencies this customer uses
    email: Mapped[str | None] = mapped_column(String(254))
    full_name: Mapped[str | None] = mapped_column(String(200))
    birth_date: Mapped[date | None] = mapped_column(Date())
    nationality: Mapped[str | None] = mapped_column(String(2))
    address: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    business_info: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    phone_number: Mapped[str | None] = mapped_column(String(16))  # E.164
    # An individual's identification (idType SSN or ITIN): the number is write-only, kept sealed under the
    # master key with the customer's id as its purpose (customers/identity.py); no answer, webhook or log
    # carries it.
    id_type: Mapped[str | None] = mapped_column(String(16))
    identifier_sealed: Mapped[str | None] = mapped_column(Text)
    country_of_issuance: Mapped[str | None] = mapped_column(String(2))
    # An individual's enhanced-due-diligence answers (CustomerEdd: sourceOfFundsCategories, pepStatus, ...),
    # snake_case keys, only those given. None: none given.
    due_diligence: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    # The customer's acceptance of the End User Terms as given (EndUserTermsConsent: acceptedAt, ipAddress,
    # termsVersion, acceptanceMethod); None until recorded.
    end_user_terms_consent: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    # The contacts confirmed by one-time code (customers/contact/rules.py): {"email": the address confirmed,
    # "phone": the number confirmed}; an email changed since is no longer VERIFIED. None: none confirmed.
    verified_contacts: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
