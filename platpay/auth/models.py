from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class ApiTokenRow(Base):
    """An API credential. Only a SHA-256 of the 32-byte random secret is kept; deletion is a tombstone so
    the id stays unique and auditable, and authentication ignores deleted rows."""

    __tablename__ = "api_tokens"
    __table_args__ = (Index("ix_api_tokens_tenant_id_id", "tenant_id", "id"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    name: Mapped[str] = mapped_column(String(200))
    permissions: Mapped[list[str]] = mapped_column(JsonType)
    client_id: Mapped[str] = mapped_column(String(64), unique=True)
    secret_sha256: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    deleted_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
