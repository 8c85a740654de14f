"""Request and response bodies of the sandbox's clock and reset operations."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from platpay.clocks.service import MAX_ADVANCE_SECONDS
from platpay.kit.api_model import ApiModel, ApiRequest, AwareJsonDatetime


class SandboxClock(ApiModel):
    """The sandbox tenant's clock: every expiry, delay and timestamp of the tenant reads it."""

    now: datetime = Field(description="the tenant's current time")
    frozen: bool = Field(description="whether the clock is stopped")
    offset_seconds: float = Field(description="how far the clock is ahead of real time (negative: behind)")
    jobs_run: int | None = Field(
        None, description="advance and reset: the jobs that became due and ran before the call returned"
    )


class SandboxClockAdvanceRequest(ApiRequest):
    """POST /sandbox/clock/advance: how far forward, `seconds` or `to` (exactly one)."""

    seconds: float | None = Field(None, ge=0, le=MAX_ADVANCE_SECONDS, description="seconds to move forward")
    to: AwareJsonDatetime | None = Field(None, description="the time to move to; not before the clock's now")


class SandboxResetResponse(ApiModel):
    """POST /sandbox/reset: the rows deleted, by table."""

    deleted: dict[str, int]
