"""The console's tables: its sign-in sessions and the trail of what people did through it. They belong to
auth because a session is a credential's (an API token's) and the trail names that credential."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class ConsoleSessionRow(Base):
    """A console sign-in: only a SHA-256 of the cookie's 32 random bytes is kept. It ends at `expires_at`,
    when revoked (sign-out) or when its token is deleted (the session is read joined to its live token)."""

    __tablename__ = "console_sessions"
    __table_args__ = (Index("ix_console_sessions_token_id", "token_id"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    token_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("api_tokens.id"))
    secret_sha256: Mapped[str] = mapped_column(String(64), unique=True)
    address: Mapped[str] = mapped_column(String(64))
    user_agent: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class ConsoleActionRow(Base):
    """One thing done through the console, chained per tenant like the agents' audit trail
    (kit/crypto/chain.py): its hash covers the previous record's."""

    __tablename__ = "console_actions"
    __table_args__ = (
        Index("ix_console_actions_tenant_subject", "tenant_id", "subject_id"),
        Index("ix_console_actions_tenant_sequence", "tenant_id", "sequence", unique=True),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    sequence: Mapped[int] = mapped_column(BigInteger)
    token_id: Mapped[str] = mapped_column(IdColumn())  # the acting API token
    session_id: Mapped[str] = mapped_column(IdColumn())
    action: Mapped[str] = mapped_column(String(64))
    subject_type: Mapped[str] = mapped_column(String(40))
    subject_id: Mapped[str] = mapped_column(String(120))
    occurred_at: Mapped[datetime] = mapped_column(UtcDateTime())
    data: Mapped[dict[str, Any]] = mapped_column(JsonType)
    previous_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))


class ConsoleTrailHeadRow(Base):
    """The last record of a tenant's console trail: locked to append, so the chain never forks."""

    __tablename__ = "console_trail_heads"

    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"), primary_key=True)
    sequence: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
