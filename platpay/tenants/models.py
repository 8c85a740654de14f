from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, String, Text, UniqueConstraint, false
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class PlatformRow(Base):
    __tablename__ = "platforms"

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    is_regulated: Mapped[bool]  # fixed at creation: regulated platforms run their own KYC
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class TenantRow(Base):
    """One environment (sandbox or production) of a platform; every resource row carries its id."""

    __tablename__ = "tenants"
    __table_args__ = (UniqueConstraint("platform_id", "environment"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    platform_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("platforms.id"))
    environment: Mapped[str] = mapped_column(String(16))  # sandbox | production
    config_id: Mapped[str] = mapped_column(IdColumn(), unique=True)  # PlatformConfig:<uuid>
    uma_domain: Mapped[str] = mapped_column(String(253))
    webhook_endpoint: Mapped[str | None] = mapped_column(String(2048))
    supported_currencies: Mapped[list[dict[str, Any]]] = mapped_column(JsonType)
    # PlatformConfig.embeddedWalletConfig as stored (the fields set); None when never configured
    embedded_wallet_config: Mapped[dict[str, Any] | None] = mapped_column(JsonType)
    # PlatformConfig.endUserTermsRequired: quotes for a customer need its acceptance of the current End User
    # Terms (customers.service.ensure_end_user_terms_accepted). Off unless the platform turns it on.
    end_user_terms_required: Mapped[bool] = mapped_column(default=False, server_default=false())
    # PlatformConfig.feeConfigs as stored (platforms.service validates them); None or [] when none
    fee_configs: Mapped[list[dict[str, Any]] | None] = mapped_column(JsonType)
    webhook_private_key_sealed: Mapped[str] = mapped_column(Text)
    webhook_public_key_pem: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
