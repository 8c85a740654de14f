"""Outbound messages through the service, the send job and a real SMTP server (tests/support/smtp.py)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from prometheus_client import CollectorRegistry
from sqlalchemy import text

from platpay import metrics
from platpay.auth import service as auth_service
from platpay.errors import ApiError
from platpay.kit import clock
from platpay.kit.pagination import PageParams
from platpay.messages import service
from platpay.messages.state import MessageStatus
from platpay.metrics import Metrics

EMAIL = {"subject": "Your code", "text": "Your code is 123456.", "category": "wallet.otp"}


@pytest.fixture
async def tenants(db, platform):
    """The sandbox and production TenantContext of the test platform."""
    found = {}
    async with db.read() as session:
        for environment in ("sandbox", "production"):
            client_id, secret = platform[environment]
            principal = await auth_service.authenticate(session, client_id=client_id, client_secret=secret)
            assert principal is not None
            found[environment] = principal.tenant
    return found


async def _info(db, tenant, message_id):
    async with db.read() as session:
        info = await service.get(session, tenant_id=tenant.id, message_id=message_id)
    assert info is not None
    return info


async def _mailbox(db, tenant, **filters):
    async with db.read() as session:
        _, items = await service.list_mailbox(
            session, tenant_id=tenant.id, params=PageParams(limit=100, after_id=None), **filters
        )
    return items


async def test_an_email_whose_transaction_rolls_back_is_never_sent(db, runner, smtp_server, tenants):
    with pytest.raises(RuntimeError, match="business failed"):
        async with db.transaction() as session:
            await service.send_email(session, tenant=tenants["sandbox"], to="jane@example.com", **EMAIL)
            raise RuntimeError("business failed")
    assert await runner.run_until_idle() == 0
    assert smtp_server.messages == []
    assert await _mailbox(db, tenants["sandbox"]) == []


async def test_a_committed_email_is_delivered_once_over_smtp(db, runner, smtp_server, tenants, settings):
    tenant = tenants["sandbox"]
    async with db.transaction() as session:
        message_id = await service.send_email(
            session, tenant=tenant, to="jane@example.com", html="<p>Your code is <b>123456</b>.</p>", **EMAIL
        )
    assert message_id.startswith("Message:")
    assert smtp_server.messages == []  # nothing goes out before the job runs

    assert await runner.run_until_idle() == 1
    mail = await smtp_server.wait_for(to="jane@example.com", timeout=5)
    assert mail.subject == "Your code"
    assert mail.to == "jane@example.com" and mail.rcpt_tos == ["jane@example.com"]
    assert mail.from_ == settings.smtp_from
    assert mail.text.strip() == "Your code is 123456."
    assert mail.html is not None and "<b>123456</b>" in mail.html
    assert mail.message["Message-ID"] == f"<{message_id.partition(':')[2]}@localhost>"

    assert await runner.run_until_idle() == 0  # sent: no job left
    assert len(smtp_server.messages) == 1
    info = await _info(db, tenant, message_id)
    assert (info.status, info.attempts, info.last_error) == (MessageStatus.SENT, 1, None)
    assert info.sent_at is not None and info.body_stored  # kept: it is a sandbox tenant's


async def test_sender_name_address_and_reply_to(db, runner, smtp_server, tenants):
    async with db.transaction() as session:
        await service.send_email(
            session,
            tenant=tenants["sandbox"],
            to="a@example.com",
            sender_address="wallet@acme.test",
            sender_name="Acme Wallet",
            reply_to="support@acme.test",
            **EMAIL,
        )
        await service.send_email(
            session, tenant=tenants["sandbox"], to="b@example.com", sender_name="Acme", **EMAIL
        )
    await runner.run_until_idle()
    first = await smtp_server.wait_for(to="a@example.com")
    assert first.from_ == "Acme Wallet <wallet@acme.test>" and first.mail_from == "wallet@acme.test"
    assert first.reply_to == "support@acme.test"
    second = await smtp_server.wait_for(to="b@example.com")
    assert second.from_ == "Acme <no-reply@localhost>" and second.reply_to is None


async def test_a_refusing_smtp_server_is_retried_with_backoff_then_delivered(
    db, runner, smtp_server, tenants, settings
):
    tenant = tenants["sandbox"]
    recorded = Metrics(CollectorRegistry())
    token = metrics.bind(recorded)  # the runner's tasks record here
    try:
        smtp_server.refuse_next(2)
        async with db.transaction() as session:
            message_id = await service.send_email(session, tenant=tenant, to="jane@example.com", **EMAIL)

        await runner.run_until_idle()
        info = await _info(db, tenant, message_id)
        assert (info.status, info.attempts) == (MessageStatus.QUEUED, 1)
        assert "451" in (info.last_error or "")
        assert await runner.run_until_idle() == 0  # the retry waits for its backoff

        clock.advance(timedelta(seconds=settings.message_retry_base_seconds))
        await runner.run_until_idle()
        assert (await _info(db, tenant, message_id)).attempts == 2
        clock.advance(timedelta(seconds=settings.message_retry_base_seconds))
        assert await runner.run_until_idle() == 0  # the second backoff is twice as long
        clock.advance(timedelta(seconds=settings.message_retry_base_seconds))
        await runner.run_until_idle()

        mail = await smtp_server.wait_for(to="jane@example.com")
        assert "123456" in mail.text and len(smtp_server.messages) == 1
        info = await _info(db, tenant, message_id)
        assert (info.status, info.attempts, info.last_error) == (MessageStatus.SENT, 3, None)
    finally:
        metrics.unbind(token)
    labels = {"channel": "EMAIL", "category": "wallet.otp"}
    count = recorded.registry.get_sample_value  # type: ignore[union-attr]
    assert count("platpay_message_attempts_total", {**labels, "outcome": "retry"}) == 2
    assert count("platpay_message_attempts_total", {**labels, "outcome": "sent"}) == 1


async def test_a_permanent_refusal_fails_at_once(db, runner, smtp_server, tenants):
    tenant = tenants["sandbox"]
    smtp_server.refuse_next(1, "550 5.1.1 no such user")
    async with db.transaction() as session:
        message_id = await service.send_email(session, tenant=tenant, to="nobody@example.com", **EMAIL)
    await runner.run_until_idle()
    clock.advance(timedelta(hours=2))
    assert await runner.run_until_idle() == 0
    info = await _info(db, tenant, message_id)
    assert (info.status, info.attempts) == (MessageStatus.FAILED, 1)
    assert "550" in (info.last_error or "")
    assert smtp_server.messages == []
    [item] = await _mailbox(db, tenant)
    assert item.status == "FAILED" and item.sent_at is None


async def test_a_message_is_failed_after_its_last_attempt(db, runner, smtp_server, tenants, settings):
    settings.message_max_attempts = 2
    smtp_server.refuse_next(5)
    async with db.transaction() as session:
        message_id = await service.send_email(session, tenant=tenants["sandbox"], to="j@example.com", **EMAIL)
    await runner.run_until_idle()
    clock.advance(timedelta(seconds=settings.message_retry_base_seconds))
    await runner.run_until_idle()
    clock.advance(timedelta(hours=2))
    assert await runner.run_until_idle() == 0
    info = await _info(db, tenants["sandbox"], message_id)
    assert (info.status, info.attempts) == (MessageStatus.FAILED, 2)
    assert smtp_server.messages == []


async def test_production_bodies_are_sealed_at_rest_and_wiped_once_sent(db, runner, smtp_server, tenants):
    tenant = tenants["production"]
    async with db.transaction() as session:
        message_id = await service.send_email(session, tenant=tenant, to="jane@example.com", **EMAIL)
        sms_id = await service.send_sms(
            session, tenant=tenant, to="+14155550123", text="Code 654321", category="customer.verify_phone"
        )

    async def stored(mid):
        async with db.read() as session:
            return (
                await session.execute(
                    text("SELECT content, sealed, kept FROM messages WHERE id = :id"), {"id": mid}
                )
            ).one()

    for mid, secret in ((message_id, "123456"), (sms_id, "654321")):
        content, sealed, kept = await stored(mid)
        assert sealed and not kept
        assert (
            content.startswith("v1.") and secret not in content and '"text"' not in content
        )  # no JSON: sealed

    await runner.run_until_idle()
    mail = await smtp_server.wait_for(to="jane@example.com")
    assert "123456" in mail.text
    for mid in (message_id, sms_id):
        assert (await stored(mid))[0] is None
        info = await _info(db, tenant, mid)
        assert info.status == MessageStatus.SENT and not info.body_stored
    assert await _mailbox(db, tenant) == []  # production messages are in no mailbox


async def test_sms_is_recorded_in_the_sandbox_mailbox(db, runner, tenants):
    tenant = tenants["sandbox"]
    async with db.transaction() as session:
        message_id = await service.send_sms(
            session,
            tenant=tenant,
            to="+14155550123",
            text="Your code is 246810",
            category="customer.verify_phone",
        )
    await runner.run_until_idle()
    [item] = await _mailbox(db, tenant, channel="SMS")
    assert item.to_api() == {
        "id": message_id,
        "channel": "SMS",
        "to": "+14155550123",
        "text": "Your code is 246810",
        "category": "customer.verify_phone",
        "status": "SENT",
        "createdAt": item.to_api()["createdAt"],
        "sentAt": item.to_api()["sentAt"],
    }


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"to": "not-an-address"}, "to"),
        ({"to": "jane@example.com\r\nBcc: x@example.com"}, "to"),
        ({"subject": "Hi\r\nBcc: x@example.com"}, "subject"),
        ({"category": "Wallet OTP"}, "category"),
        ({"category": ""}, "category"),
        ({"sender_address": "nope"}, "sender_address"),
        ({"sender_name": "A\nB"}, "sender_name"),
        ({"reply_to": "a@b@c"}, "reply_to"),
        ({"text": "  "}, "text"),
        ({"text": "code\x00"}, "text"),
        ({"html": "<p>\x00</p>"}, "html"),
        ({"text": "x" * 100_001}, "text"),
    ],
)
async def test_bad_email_arguments_are_refused_and_change_nothing(db, runner, tenants, kwargs, field):
    arguments = {"to": "jane@example.com", **EMAIL, **kwargs}
    async with db.transaction() as session:
        with pytest.raises(ApiError) as raised:
            await service.send_email(session, tenant=tenants["sandbox"], **arguments)
    assert raised.value.status == 400 and raised.value.code == "INVALID_INPUT"
    assert raised.value.details["fields"][0]["field"] == field
    assert await runner.run_until_idle() == 0
    assert await _mailbox(db, tenants["sandbox"]) == []


async def test_bad_sms_number_is_refused(db, tenants):
    async with db.transaction() as session:
        for number in ("4155550123", "+0123", "+1 415 555 0123"):
            with pytest.raises(ApiError) as raised:
                await service.send_sms(session, tenant=tenants["sandbox"], to=number, text="x", category="a")
            assert raised.value.details["fields"][0]["field"] == "to"
