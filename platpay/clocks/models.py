from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, ForeignKey
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base
from platpay.db.types import IdColumn, UtcDateTime


class ClockRow(Base):
    """A sandbox tenant's clock (kit/clock.TenantClock), once it was moved: an offset from real time in
    microseconds, or the instant it is frozen at. No row: the tenant runs on real time."""

    __tablename__ = "sandbox_clocks"

    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"), primary_key=True)
    offset_us: Mapped[int] = mapped_column(BigInteger, default=0)
    frozen_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
