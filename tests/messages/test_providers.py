"""The sender slots: which email sender runs by default, and an SMS gateway plugged in by import path."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.auth import service as auth_service
from platpay.config import Settings
from platpay.kit import clock
from platpay.kit.pagination import PageParams
from platpay.messages import service
from platpay.messages.providers import EMAIL_SENDER, SMS_SENDER, NoEmailSender
from platpay.messages.smtp import SmtpEmailSender, compose
from platpay.messages.types import OutboundEmail, OutboundSms


def test_the_email_sender_is_smtp_when_a_host_is_set_else_none(tmp_path):
    try:
        assert isinstance(EMAIL_SENDER.configure(Settings(var_dir=tmp_path)), NoEmailSender)
        chosen = EMAIL_SENDER.configure(Settings(var_dir=tmp_path, smtp_host="mail.example.com"))
        assert isinstance(chosen, SmtpEmailSender) and chosen.port == 587 and chosen.starttls
        forced = Settings(var_dir=tmp_path, smtp_host="mail.example.com", email_sender="none")
        assert isinstance(EMAIL_SENDER.configure(forced), NoEmailSender)
        with pytest.raises(ValueError, match="PLATPAY_SMTP_HOST"):
            EMAIL_SENDER.configure(Settings(var_dir=tmp_path, email_sender="smtp"))
        implicit = EMAIL_SENDER.configure(Settings(var_dir=tmp_path, smtp_host="h", smtp_port=465))
        assert implicit.implicit_tls and not implicit.starttls
    finally:
        EMAIL_SENDER.use(None)


def test_compose_uses_the_default_from_unless_the_caller_names_a_sender():
    message = OutboundEmail(id="Message:abc", to="j@example.com", subject="S", text="T", category="c")
    assert compose(message, default_from="Platpay <no-reply@pp.test>")["From"] == "Platpay <no-reply@pp.test>"
    own = OutboundEmail(
        id="Message:abc", to="j@example.com", subject="S", text="T", category="c", from_address="w@acme.test"
    )
    composed = compose(own, default_from="Platpay <no-reply@pp.test>")
    assert composed["From"] == "w@acme.test" and composed["Message-ID"] == "<abc@acme.test>"
    assert composed.get_body(preferencelist=("html",)) is None


SENT: list[OutboundSms] = []
FAILURES: list[str] = []


class RecordingGateway:
    """An SMS gateway adapter living outside platpay: fails while FAILURES holds reasons, then records."""

    name = "recording"

    async def send(self, message: OutboundSms) -> None:
        if FAILURES:
            raise ConnectionError(FAILURES.pop(0))
        SENT.append(message)


def recording_gateway(settings: Settings) -> RecordingGateway:
    return RecordingGateway()


@pytest.fixture
def gateway(settings):
    SENT.clear()
    FAILURES.clear()
    settings.sms_sender = f"{__name__}:recording_gateway"  # what the db fixture's start() configures too
    SMS_SENDER.configure(settings)
    yield
    SMS_SENDER.use(None)


async def test_an_sms_gateway_adapter_gets_the_sms_after_commit_and_failures_are_retried(
    db, runner, platform, gateway, settings
):
    client_id, secret = platform["sandbox"]
    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=client_id, client_secret=secret)
    assert principal is not None
    FAILURES.append("gateway unreachable")
    async with db.transaction() as session:
        message_id = await service.send_sms(
            session,
            tenant=principal.tenant,
            to="+447700900123",
            text="Code 135790",
            category="customer.verify_phone",
        )
    await runner.run_until_idle()
    assert SENT == []
    async with db.read() as session:
        info = await service.get(session, tenant_id=principal.tenant.id, message_id=message_id)
    assert info is not None and info.status == "QUEUED"
    assert info.last_error == "ConnectionError: gateway unreachable"

    clock.advance(timedelta(seconds=settings.message_retry_base_seconds))
    await runner.run_until_idle()
    assert [(m.id, m.to, m.text, m.category) for m in SENT] == [
        (message_id, "+447700900123", "Code 135790", "customer.verify_phone")
    ]
    async with db.read() as session:
        _, [item] = await service.list_mailbox(
            session, tenant_id=principal.tenant.id, params=PageParams(limit=20, after_id=None)
        )
    assert item.status == "SENT" and item.channel == "SMS"
