from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.pagination import Page

DeliveryStatus = Literal["PENDING", "DELIVERED", "FAILED"]


class WebhookAttempt(ApiModel):
    attempted_at: datetime
    response_status: int | None = Field(default=None, description="absent when no HTTP answer came back")
    latency_ms: int
    response_body: str | None = Field(default=None, description="the receiver's answer, truncated")
    error: str | None = Field(default=None, description="timeout or connection error")


class WebhookDelivery(ApiModel):
    id: str = Field(description="the envelope `id` the receiver sees; stable across retries")
    event_id: str
    type: str = Field(description="the event type, e.g. OUTGOING_PAYMENT.COMPLETED")
    url: str
    status: DeliveryStatus
    attempt_count: int
    next_attempt_at: datetime | None = None
    last_response_status: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None
    created_at: datetime
    updated_at: datetime


class WebhookDeliveryListResponse(Page[WebhookDelivery]):
    """GET /webhooks/deliveries."""


class WebhookDeliveryDetail(WebhookDelivery):
    data: dict[str, Any] = Field(description="the event's resource, as sent in the envelope")
    attempts: list[WebhookAttempt]


class WebhookEndpointHealth(ApiModel):
    """How deliveries to one endpoint URL are going: its circuit breaker."""

    url: str
    status: Literal["ACTIVE", "FAILING"] = Field(
        description="FAILING: its deliveries wait while one probe delivery is tried at nextProbeAt"
    )
    configured: bool = Field(description="whether it is the environment's webhookEndpoint now")
    consecutive_failures: int = Field(description="failed attempts in a row (0 once one succeeds)")
    pending_deliveries: int = Field(description="deliveries to it not yet delivered or given up")
    failing_since: datetime | None = None
    next_probe_at: datetime | None = Field(default=None, description="when a FAILING endpoint is tried again")
    last_failure_at: datetime | None = None
    last_error: str | None = Field(default=None, description="what the last failed attempt met")
    recovered_at: datetime | None = Field(default=None, description="when it last stopped failing")


class WebhookEndpointListResponse(BaseModel):
    data: list[WebhookEndpointHealth]


class TestWebhookResponse(BaseModel):
    """What the receiver answered to the on-demand TEST event (snake_case names, as the reference has)."""

    url: str
    response_status: int = Field(description="the HTTP status the endpoint answered")
    response_body: str | None = Field(default=None, description="the endpoint's answer, truncated")


class SandboxWebhookFaults(ApiModel):
    """How the sandbox delivers webhooks to its endpoint, for testing a receiver's deduplication and
    ordering (all off by default)."""

    duplicate: bool = Field(False, description="send every delivery twice (the same envelope, the same id)")
    delay_ms: int = Field(0, ge=0, le=3_600_000, description="hold every delivery back this long")
    reorder_ms: int = Field(
        0,
        ge=0,
        le=3_600_000,
        description="hold each delivery back a further amount of its own, up to this long: they arrive out of order",
    )


class SandboxWebhookFaultsRequest(ApiRequest):
    """PUT /sandbox/webhooks/faults: the whole setting (omitted fields are off)."""

    duplicate: bool = Field(
        False, strict=True, description="send every delivery twice (the same envelope, the same id)"
    )
    delay_ms: int = Field(
        0, strict=True, ge=0, le=3_600_000, description="hold every delivery back this long"
    )
    reorder_ms: int = Field(
        0, strict=True, ge=0, le=3_600_000, description="a further hold of each delivery's own, up to this"
    )
