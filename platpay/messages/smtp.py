"""The `smtp` email sender (PLATPAY_EMAIL_SENDER=smtp): one SMTP session per message, through aiosmtplib.

Settings: PLATPAY_SMTP_HOST / _PORT (587), _USERNAME / _PASSWORD (AUTH only when a username is set),
_STARTTLS (true: STARTTLS is required; port 465 speaks TLS from the start instead), _FROM (the From of
emails whose caller names no sender), _TIMEOUT_SECONDS (each step of the session).

A 5xx refusal of the recipient or of the message's content raises MessageRejected (never retried); every
other failure (no connection, a timeout, a 4xx answer, a refused AUTH or sender) is temporary. The
Message-ID derives from the message id, so a retry after a lost answer carries the same Message-ID.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import format_datetime, formataddr, parseaddr
from typing import NoReturn

import aiosmtplib

from platpay.config import Settings
from platpay.kit import clock
from platpay.messages.providers import EMAIL_SENDER, EmailSender, MessageRejected, SendFailed
from platpay.messages.types import OutboundEmail

IMPLICIT_TLS_PORT = 465


def compose(message: OutboundEmail, *, default_from: str) -> EmailMessage:
    """The MIME message: text, plus an HTML alternative when there is one."""
    default_name, default_address = parseaddr(default_from)
    address = message.from_address or default_address
    if message.from_name is not None:
        name = message.from_name
    else:
        name = "" if message.from_address else default_name
    email = EmailMessage()
    email["From"] = formataddr((name, address))
    email["To"] = message.to
    email["Subject"] = message.subject
    if message.reply_to:
        email["Reply-To"] = message.reply_to
    email["Date"] = format_datetime(clock.now())
    domain = address.rpartition("@")[2] or "localhost"
    email["Message-ID"] = f"<{message.id.partition(':')[2] or message.id}@{domain}>"
    email.set_content(message.text)
    if message.html is not None:
        email.add_alternative(message.html, subtype="html")
    return email


class SmtpEmailSender:
    name = "smtp"

    def __init__(self, settings: Settings) -> None:
        if not settings.smtp_host:
            raise ValueError("PLATPAY_EMAIL_SENDER=smtp needs PLATPAY_SMTP_HOST")
        self.host = settings.smtp_host
        self.port = settings.smtp_port
        self.username = settings.smtp_username
        self.password = settings.smtp_password.get_secret_value() if settings.smtp_password else None
        self.implicit_tls = settings.smtp_port == IMPLICIT_TLS_PORT
        self.starttls = settings.smtp_starttls and not self.implicit_tls
        self.default_from = settings.smtp_from
        self.timeout = settings.smtp_timeout_seconds

    async def send(self, message: OutboundEmail) -> None:
        email = compose(message, default_from=self.default_from)
        try:
            await aiosmtplib.send(
                email,
                hostname=self.host,
                port=self.port,
                username=self.username,
                password=self.password if self.username else None,
                use_tls=self.implicit_tls,
                start_tls=self.starttls,
                timeout=self.timeout,
            )
        except aiosmtplib.SMTPRecipientsRefused as refused:
            replies = [(r.code, r.message) for r in refused.recipients]
            _fail("the recipient was refused", replies)
        except aiosmtplib.SMTPDataError as error:
            _fail("the message was refused", [(error.code, error.message)])
        except aiosmtplib.SMTPResponseException as error:  # HELO, AUTH, MAIL FROM: never permanent
            raise SendFailed(f"SMTP {error.code} {error.message}"[:500]) from None


def _fail(what: str, replies: list[tuple[int, str]]) -> NoReturn:
    """A 5xx refusal is permanent (MessageRejected), any other temporary (SendFailed): the replies'
    codes and texts, no recipient."""
    text = f"{what}: " + "; ".join(f"SMTP {code} {message}" for code, message in replies)
    if replies and all(code >= 500 for code, _ in replies):
        raise MessageRejected(text[:500])
    raise SendFailed(text[:500])


@EMAIL_SENDER.implementation("smtp")
def _smtp(settings: Settings) -> EmailSender:
    return SmtpEmailSender(settings)
