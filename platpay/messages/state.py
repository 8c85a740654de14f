"""A message's status: QUEUED until its job sends it (SENT) or gives up (FAILED)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class MessageStatus(StrEnum):
    QUEUED = "QUEUED"  # its send job is due or waits for its next retry
    SENT = "SENT"  # the sender accepted it (the `none` senders accept everything)
    FAILED = "FAILED"  # refused for good (a 5xx answer), or every attempt failed


MESSAGE = StateMachine(
    "message",
    MessageStatus,
    {MessageStatus.QUEUED: {MessageStatus.SENT, MessageStatus.FAILED}},
    initial={MessageStatus.QUEUED},
)
