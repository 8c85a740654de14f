"""What messages need from the outside world (kit/providers.py): an email sender and an SMS sender.

- `EMAIL_SENDER` (PLATPAY_EMAIL_SENDER): `smtp` (messages/smtp.py, the PLATPAY_SMTP_* settings) or `none`
  (records only: the message is marked SENT and goes nowhere). Unset, it is `smtp` when PLATPAY_SMTP_HOST
  is set and `none` otherwise, so a fresh `make run` needs no mail server.
- `SMS_SENDER` (PLATPAY_SMS_SENDER): `none` is the only built-in one; an SMS gateway plugs in as
  `package.module:factory`.

A sender raises `MessageRejected` when the message can never be delivered (it is FAILED at once); any other
exception (`SendFailed` when the sender can say what went wrong) is a temporary failure, retried with backoff. Sandbox and production tenants use the same
senders; `custody_for` is the one place the environment matters here (how a body is held at rest).
"""

from __future__ import annotations

from typing import Protocol

from platpay.config import Settings
from platpay.kit.providers import Slot
from platpay.messages.sandbox import MAILBOX
from platpay.messages.types import SEALED_UNTIL_SENT, Custody, Outbound, OutboundEmail, OutboundSms
from platpay.tenants.context import TenantContext


class MessageRejected(Exception):
    """The message can never be delivered as it is (a permanent refusal); the text says why, without the
    message's body or recipient."""


class SendFailed(Exception):
    """A temporary failure a sender describes itself (for example an SMTP 4xx reply), without the body or
    recipient; any other exception is temporary too."""


class EmailSender(Protocol):
    name: str

    async def send(self, message: OutboundEmail) -> None: ...


class SmsSender(Protocol):
    name: str

    async def send(self, message: OutboundSms) -> None: ...


def _default_email_sender(settings: Settings) -> str:
    return "smtp" if settings.smtp_host else "none"


EMAIL_SENDER: Slot[EmailSender] = Slot("email_sender", default=_default_email_sender)
SMS_SENDER: Slot[SmsSender] = Slot("sms_sender", default="none")


def custody_for(tenant: TenantContext) -> Custody:
    return MAILBOX if tenant.is_sandbox else SEALED_UNTIL_SENT


async def send(message: Outbound) -> None:
    """Hand `message` to the configured sender of its channel."""
    if isinstance(message, OutboundEmail):
        await EMAIL_SENDER.get().send(message)
    else:
        await SMS_SENDER.get().send(message)


class NoEmailSender:
    """Records only: nothing leaves the process."""

    name = "none"

    async def send(self, message: OutboundEmail) -> None:
        return None


class NoSmsSender:
    name = "none"

    async def send(self, message: OutboundSms) -> None:
        return None


@EMAIL_SENDER.implementation("none")
def _no_email(settings: Settings) -> EmailSender:
    return NoEmailSender()


@SMS_SENDER.implementation("none")
def _no_sms(settings: Settings) -> SmsSender:
    return NoSmsSender()
