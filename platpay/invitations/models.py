from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, UtcDateTime
from platpay.invitations.state import InvitationStatus


class InvitationRow(Base):
    """An UMA invitation. Its code is unique across every platform: another platform of the same environment
    reads and claims it by code (SPEC §4.8), so lookups by code are scoped to the environment, not the
    tenant; `tenant_id` is the creating platform's tenant (the one that may cancel it and is told of the
    claim)."""

    __tablename__ = "invitations"
    __table_args__ = (
        Index("ix_invitations_tenant_created_at", "tenant_id", "created_at"),
        check_in("status", InvitationStatus),
    )

    code: Mapped[str] = mapped_column(String(16), primary_key=True)
    environment: Mapped[str] = mapped_column(String(16))  # sandbox | production: who may see it by code
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    inviter_customer_id: Mapped[str] = mapped_column(IdColumn())
    inviter_uma: Mapped[str] = mapped_column(String(320))  # lowercase
    invitee_uma: Mapped[str | None] = mapped_column(String(320))  # lowercase, once claimed
    claimed_by_tenant_id: Mapped[str | None] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    status: Mapped[str] = mapped_column(String(12))
    first_name: Mapped[str | None] = mapped_column(String(100))
    amount_to_send: Mapped[int | None] = mapped_column(BigInteger)  # minor units of amount_currency, > 0
    amount_currency: Mapped[str | None] = mapped_column(String(8))
    url: Mapped[str] = mapped_column(String(2048))  # the invitation page, as created
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())  # None: never
    claimed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    cancelled_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
