from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from platpay.kit.api_model import ApiModel
from platpay.kit.pagination import Page


class MailboxMessage(ApiModel):
    """A message a sandbox tenant's users were sent, as its sender got it."""

    id: str = Field(description="Message:<uuid>")
    channel: Literal["EMAIL", "SMS"]
    to: str = Field(description="the email address or E.164 phone number")
    subject: str | None = Field(default=None, description="emails only")
    text: str
    html: str | None = Field(default=None, description="emails with an HTML part only")
    category: str = Field(description="what the message is for, e.g. wallet.otp, customer.verify_email")
    status: Literal["QUEUED", "SENT", "FAILED"] = Field(
        description="QUEUED until the configured sender accepts it (SENT) or it is given up (FAILED)"
    )
    created_at: datetime
    sent_at: datetime | None = None


class MailboxMessageListResponse(Page[MailboxMessage]):
    """GET /sandbox/mailbox."""
