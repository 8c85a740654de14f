"""A real SMTP server for tests: aiosmtpd on 127.0.0.1, in a thread of its own, collecting what it receives.

The `smtp_server` fixture (imported by tests/conftest.py, so every test module can ask for it) starts one on
a free port and points the test's `settings` at it: PLATPAY_EMAIL_SENDER=smtp, PLATPAY_SMTP_HOST/PORT,
no STARTTLS, no AUTH. The `EMAIL_SENDER` slot is configured from those settings, and the same values are set
in the environment for processes a test starts. Use it with the `runner` fixture:

    async def test_code_is_mailed(db, runner, smtp_server, tenant):
        async with db.transaction() as session:
            await messages_service.send_email(session, tenant=tenant, to="jane@example.com", ...)
        await runner.run_until_idle()
        mail = await smtp_server.wait_for(to="jane@example.com", timeout=5)
        assert mail.subject == "Your code" and "123456" in mail.text

`wait_for(to=, timeout=, count=1)` waits until `count` messages to `to` have arrived and returns the latest
(AssertionError after `timeout` seconds). `messages` holds every ReceivedMail in arrival order,
`received_by(to)` those to one address. `refuse_next(n)` answers the next n recipients with a temporary
451 (or the reply you give, e.g. "550 5.1.1 no such user"), to test retries.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from platpay.config import Settings
from platpay.messages.providers import EMAIL_SENDER


@dataclass
class ReceivedMail:
    mail_from: str  # the envelope sender
    rcpt_tos: list[str]  # the envelope recipients
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"] or "")

    @property
    def from_(self) -> str:
        return str(self.message["From"] or "")

    @property
    def to(self) -> str:
        return str(self.message["To"] or "")

    @property
    def reply_to(self) -> str | None:
        value = self.message["Reply-To"]
        return None if value is None else str(value)

    def _part(self, subtype: str) -> str | None:
        part = self.message.get_body(preferencelist=(subtype,))
        return None if part is None else str(part.get_content())  # type: ignore[attr-defined]

    @property
    def text(self) -> str:
        return self._part("plain") or ""

    @property
    def html(self) -> str | None:
        return self._part("html")


class _Handler:
    def __init__(self, server: SmtpServer) -> None:
        self.server = server

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: Any) -> str:
        with self.server._lock:
            if self.server._refusals:
                return self.server._refusals.pop(0)
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = message_from_bytes(envelope.content, policy=policy.default)
        mail = ReceivedMail(envelope.mail_from, list(envelope.rcpt_tos), message)  # type: ignore[arg-type]
        with self.server._lock:
            self.server.messages.append(mail)
        return "250 Message accepted for delivery"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class SmtpServer:
    host = "127.0.0.1"

    def __init__(self) -> None:
        self.port = _free_port()
        self.messages: list[ReceivedMail] = []
        self._refusals: list[str] = []
        self._lock = threading.Lock()
        self._controller = Controller(_Handler(self), hostname=self.host, port=self.port, ready_timeout=5.0)

    def start(self) -> SmtpServer:
        self._controller.start()
        return self

    def stop(self) -> None:
        self._controller.stop()

    def refuse_next(self, count: int = 1, reply: str = "451 4.3.0 Try again later") -> None:
        with self._lock:
            self._refusals.extend([reply] * count)

    def received_by(self, to: str) -> list[ReceivedMail]:
        with self._lock:
            return [m for m in self.messages if any(r.lower() == to.lower() for r in m.rcpt_tos)]

    def clear(self) -> None:
        with self._lock:
            self.messages.clear()

    async def wait_for(self, *, to: str, timeout: float = 5.0, count: int = 1) -> ReceivedMail:
        deadline = time.monotonic() + timeout
        while True:
            found = self.received_by(to)
            if len(found) >= count:
                return found[-1]
            if time.monotonic() >= deadline:
                raise AssertionError(f"{len(found)} of {count} emails to {to} arrived within {timeout}s")
            await asyncio.sleep(0.02)

    @property
    def settings_values(self) -> dict[str, Any]:
        return {
            "email_sender": "smtp",
            "smtp_host": self.host,
            "smtp_port": self.port,
            "smtp_starttls": False,
            "smtp_username": None,
            "smtp_password": None,
            "smtp_timeout_seconds": 5.0,
        }

    def configure(self, settings: Settings) -> None:
        """Point `settings` (and the EMAIL_SENDER slot) at this server."""
        for name, value in self.settings_values.items():
            setattr(settings, name, value)
        EMAIL_SENDER.configure(settings)


@pytest.fixture
def smtp_server(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[SmtpServer]:
    """A real SMTP server on 127.0.0.1 receiving every email the test's settings send; see the module doc."""
    server = SmtpServer().start()
    server.configure(settings)
    for name, value in server.settings_values.items():
        if value is None:
            monkeypatch.delenv(f"PLATPAY_{name.upper()}", raising=False)
        else:
            monkeypatch.setenv(
                f"PLATPAY_{name.upper()}", str(value).lower() if value is False else str(value)
            )
    try:
        yield server
    finally:
        server.stop()
        EMAIL_SENDER.use(None)
