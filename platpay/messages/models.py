from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, UtcDateTime
from platpay.messages.state import MessageStatus


class MessageRow(Base):
    """One outbound email or SMS, written in its caller's business transaction.

    `content` is JSON {subject?, text, html?}: sealed under the master key when `sealed` (production
    tenants), and set to NULL once the message is SENT or FAILED unless `kept` (the sandbox mailbox), whose
    bodies retention erases `message_body_retention_days` after they were queued (repository.prune_bodies).
    """

    __tablename__ = "messages"
    __table_args__ = (
        Index("ix_messages_tenant_id_id", "tenant_id", "id"),
        # Retention's messages that still have a body (repository.prune_bodies): the few queued or kept ones.
        Index(
            "ix_messages_with_body",
            "id",
            sqlite_where=text("content IS NOT NULL"),
            postgresql_where=text("content IS NOT NULL"),
        ),
        check_in("status", MessageStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # Message:<uuid>
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    channel: Mapped[str] = mapped_column(String(8))  # EMAIL | SMS
    category: Mapped[str] = mapped_column(String(64))
    recipient: Mapped[str] = mapped_column(String(320))
    sender_address: Mapped[str | None] = mapped_column(String(320))
    sender_name: Mapped[str | None] = mapped_column(String(200))
    reply_to: Mapped[str | None] = mapped_column(String(320))
    content: Mapped[str | None] = mapped_column(Text)
    sealed: Mapped[bool]
    kept: Mapped[bool]
    status: Mapped[str] = mapped_column(String(16))  # state.py MessageStatus
    attempts: Mapped[int] = mapped_column(default=0)
    last_error: Mapped[str | None] = mapped_column(Text)  # never the body
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    sent_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
