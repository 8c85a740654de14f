from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime
from platpay.events.state import DeliveryStatus, EndpointStatus


class EventRow(Base):
    """Something that happened to a resource, written in the transaction that made it happen."""

    __tablename__ = "events"
    __table_args__ = (
        Index("ix_events_tenant_id_id", "tenant_id", "id"),
        Index("ix_events_tenant_resource", "tenant_id", "resource_id"),  # a resource's timeline
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    type: Mapped[str] = mapped_column(String(64))
    data: Mapped[dict[str, Any]] = mapped_column(JsonType)  # the resource exactly as GET returns it
    resource_id: Mapped[str | None] = mapped_column(IdColumn())  # data's `id` (null when it has none)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookDeliveryRow(Base):
    """One event sent to one endpoint. Its id is the envelope `id`, stable across every retry."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        Index("ix_webhook_deliveries_tenant_id_id", "tenant_id", "id"),
        Index("ix_webhook_deliveries_tenant_status", "tenant_id", "status"),  # pending and failed counts
        Index(
            "ix_webhook_deliveries_tenant_updated", "tenant_id", "updated_at"
        ),  # the last 24 hours' outcomes
        check_in("status", DeliveryStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # Webhook:<uuid>
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    event_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("events.id"), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    url: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(16))  # PENDING | DELIVERED | FAILED
    retryable: Mapped[bool]
    job_id: Mapped[str | None] = mapped_column(IdColumn())  # the job that will make the next attempt
    attempt_count: Mapped[int] = mapped_column(default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_response_status: Mapped[int | None]
    last_error: Mapped[str | None] = mapped_column(Text)
    first_attempt_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    delivered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookAttemptRow(Base):
    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery_id_id", "delivery_id", "id"),)

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    delivery_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("webhook_deliveries.id"))
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    attempted_at: Mapped[datetime] = mapped_column(UtcDateTime())
    response_status: Mapped[int | None]
    latency_ms: Mapped[int]
    response_body: Mapped[str | None] = mapped_column(Text)  # truncated
    error: Mapped[str | None] = mapped_column(Text)  # timeout / connection error, when no response


class WebhookEndpointRow(Base):
    """The delivery health of one endpoint URL of one tenant: its circuit breaker (platpay.events.breaker).

    Written only by the webhook workers, never in a business transaction: a row exists once a delivery to
    the endpoint has failed (an endpoint without a row is ACTIVE with no failures)."""

    __tablename__ = "webhook_endpoints"
    __table_args__ = (
        Index("ix_webhook_endpoints_tenant_id_id", "tenant_id", "id"),
        Index("ix_webhook_endpoints_status", "status"),  # the failing ones, read by every delivery claim
        check_in("status", EndpointStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # WebhookEndpoint:<uuid5 of tenant, url>
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    url: Mapped[str] = mapped_column(String(2048))
    status: Mapped[str] = mapped_column(String(16))  # ACTIVE | FAILING
    consecutive_failures: Mapped[int] = mapped_column(default=0)
    failing_since: Mapped[datetime | None] = mapped_column(UtcDateTime())
    probe_round: Mapped[int] = mapped_column(default=0)  # failed probes since the endpoint began failing
    next_probe_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    probe_job_id: Mapped[str | None] = mapped_column(IdColumn())  # the one delivery job that will probe
    last_failure_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    last_error: Mapped[str | None] = mapped_column(Text)
    recovered_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())


class WebhookSandboxFaultsRow(Base):
    """A sandbox tenant's webhook delivery faults (PUT /sandbox/webhooks/faults), for testing a receiver's
    deduplication and ordering: each delivery sent twice, held back, or held back by a per-delivery amount
    (which reorders them). No row: deliveries as usual. A sandbox reset clears it."""

    __tablename__ = "webhook_sandbox_faults"

    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"), primary_key=True)
    duplicate: Mapped[bool]
    delay_ms: Mapped[int]
    reorder_ms: Mapped[int]
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
