"""The domain types of messages: channels, what a sender is handed, and how a body is held at rest."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Channel(StrEnum):
    EMAIL = "EMAIL"
    SMS = "SMS"


@dataclass(frozen=True)
class OutboundEmail:
    """One email as an EmailSender sends it. `from_address` None means the sender's default From."""

    id: str  # Message:<uuid>, stable across retries (the SMTP sender derives the Message-ID from it)
    to: str
    subject: str
    text: str
    category: str
    html: str | None = None
    from_address: str | None = None
    from_name: str | None = None
    reply_to: str | None = None
    channel: Channel = field(default=Channel.EMAIL, init=False)


@dataclass(frozen=True)
class OutboundSms:
    """One SMS as an SmsSender sends it; `to` is E.164."""

    id: str
    to: str
    text: str
    category: str
    channel: Channel = field(default=Channel.SMS, init=False)


Outbound = OutboundEmail | OutboundSms


@dataclass(frozen=True)
class Custody:
    """How a tenant's message bodies are held at rest (messages/providers.py `custody_for` chooses)."""

    name: str
    sealed: bool  # sealed under the master key at rest
    kept: bool  # kept once sent (and listed in the sandbox mailbox); else wiped when sent or failed


# Production tenants: the body is needed only until it is sent.
SEALED_UNTIL_SENT = Custody("sealed-until-sent", sealed=True, kept=False)
