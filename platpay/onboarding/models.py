"""Onboarding's tables: verifications, beneficial owners, documents (their metadata: the files live in the
document store, onboarding/storage.py) and KYC links (only a hash of each link's token is kept)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime
from platpay.onboarding.state import OwnerKycStatus, VerificationStatus


class VerificationRow(Base):
    """One POST /verifications of a customer and where its review stands (onboarding/state.py)."""

    __tablename__ = "verifications"
    __table_args__ = (
        Index("ix_verifications_tenant_id_id", "tenant_id", "id"),
        Index("ix_verifications_tenant_customer", "tenant_id", "customer_id"),
        check_in("status", VerificationStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn())
    status: Mapped[str] = mapped_column(String(32))
    errors: Mapped[list[dict[str, Any]]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    # A person's decision of a manual review (POST /verifications/{id}/decision): the acting token's id and
    # the reason given; both null for a provider's decision or the sandbox's override.
    decided_by: Mapped[str | None] = mapped_column(IdColumn(), nullable=True, default=None)
    decision_reason: Mapped[str | None] = mapped_column(String(500), nullable=True, default=None)


class BeneficialOwnerRow(Base):
    """An owner, director or officer of a business customer, with a KYC status of their own."""

    __tablename__ = "beneficial_owners"
    __table_args__ = (
        Index("ix_beneficial_owners_tenant_id_id", "tenant_id", "id"),
        Index("ix_beneficial_owners_tenant_customer", "tenant_id", "customer_id"),
        check_in("kyc_status", OwnerKycStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn())
    roles: Mapped[list[str]] = mapped_column(JsonType)
    ownership_percentage: Mapped[int] = mapped_column(Integer())
    personal_info: Mapped[dict[str, Any]] = mapped_column(JsonType)
    kyc_status: Mapped[str] = mapped_column(String(16))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class DocumentRow(Base):
    """A document's metadata; its content is in the document store under `storage_key`. `customer_id` is
    the customer the holder belongs to (the holder itself, or the business of a beneficial owner);
    `verification_id` the verification it was last submitted with (it cannot be deleted or replaced while
    that one is under review)."""

    __tablename__ = "documents"
    __table_args__ = (
        Index("ix_documents_tenant_id_id", "tenant_id", "id"),
        Index("ix_documents_tenant_holder", "tenant_id", "holder_id"),
        Index("ix_documents_tenant_customer", "tenant_id", "customer_id"),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    holder_id: Mapped[str] = mapped_column(IdColumn())
    customer_id: Mapped[str] = mapped_column(IdColumn())
    document_type: Mapped[str] = mapped_column(String(48))
    side: Mapped[str | None] = mapped_column(String(8))
    country: Mapped[str] = mapped_column(String(2))
    document_number: Mapped[str | None] = mapped_column(String(100))
    issuing_authority: Mapped[str | None] = mapped_column(String(200))
    file_name: Mapped[str] = mapped_column(String(255))
    content_type: Mapped[str] = mapped_column(String(32))
    size: Mapped[int] = mapped_column(BigInteger())
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(200))
    verification_id: Mapped[str | None] = mapped_column(IdColumn())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class KycLinkRow(Base):
    """A hosted verification link: single-use (`used_at`), expiring; the token itself is never stored."""

    __tablename__ = "kyc_links"
    __table_args__ = (
        Index("ix_kyc_links_tenant_id_id", "tenant_id", "id"),
        Index("uq_kyc_links_token_hash", "token_hash", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn())
    token_hash: Mapped[str] = mapped_column(String(64))
    redirect_uri: Mapped[str | None] = mapped_column(String(2048))
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
