from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base
from platpay.db.types import IdColumn, UtcDateTime


class ContactCodeRow(Base):
    """The one-time code last sent to a customer's email or phone (customers/contact/rules.py): one row per customer
    and channel, replaced by each send. Only the code's keyed digest is stored."""

    __tablename__ = "customer_contact_codes"
    __table_args__ = (
        Index(
            "uq_customer_contact_codes_customer_channel", "tenant_id", "customer_id", "channel", unique=True
        ),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # new at each send: the digest's salt
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    customer_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("customers.id"))
    channel: Mapped[str] = mapped_column(String(8))  # email | phone
    destination: Mapped[str] = mapped_column(String(320))  # the address or E.164 number it was sent to
    code_digest: Mapped[str] = mapped_column(String(64))  # HMAC-SHA256 hex (contact.code_digest)
    failed_attempts: Mapped[int] = mapped_column(Integer)  # wrong codes tried against it
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime())
    used_at: Mapped[datetime | None] = mapped_column(UtcDateTime())  # confirmed, or burnt by wrong tries
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
