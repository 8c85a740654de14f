"""Outbound email and SMS: queued in the caller's transaction, sent by a job once it commits.

`send_email` / `send_sms` write the message row and enqueue its send job in the caller's session: nothing is
sent unless that transaction commits, and nothing is sent inside it. The job (messages/jobs.py) reads the
message, sends it through the configured sender (messages/providers.py) with no transaction open, then
records the outcome: SENT, FAILED at once on a permanent refusal, or another attempt after a backoff
(PLATPAY_MESSAGE_RETRY_BASE_SECONDS doubling, at most 30 minutes) until PLATPAY_MESSAGE_MAX_ATTEMPTS.
Delivery is at least once: a worker that dies between the sender's acceptance and the record sends again.

Bodies: a sandbox tenant's messages are kept in its mailbox (GET /sandbox/mailbox); a production tenant's
body is sealed under the master key and wiped once the message is SENT or FAILED. Neither bodies nor
recipients are logged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db.database import Database
from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.crypto.sealing import Sealer, process_sealer
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.messages import providers, repository
from platpay.messages.models import MessageRow
from platpay.messages.schemas import MailboxMessage
from platpay.messages.state import MESSAGE, MessageStatus
from platpay.messages.types import Channel, Outbound, OutboundEmail, OutboundSms
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

log = structlog.get_logger("platpay.messages")

SEND_JOB = "messages.send"
LANE = "messages"
SEAL_PURPOSE = "platpay message content v1"
MAX_RETRY_INTERVAL = timedelta(minutes=30)

_EMAIL_PART = r"[^@\s<>()\[\],;:\"\\\x00-\x1f\x7f]+"  # no spaces, controls or specials: one bare address
_EMAIL_RE = re.compile(f"{_EMAIL_PART}@{_EMAIL_PART}")
_E164_RE = re.compile(r"\+[1-9][0-9]{1,14}")
_CATEGORY_RE = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
_MAX_TEXT = 100_000
_MAX_SUBJECT = 998  # one header line


def _check(ok: bool, name: str, message: str) -> None:
    if not ok:
        raise invalid_field(name, message)


def _check_email(value: str, name: str) -> None:
    _check(len(value) <= 320 and bool(_EMAIL_RE.fullmatch(value)), name, "is not an email address")


def _check_line(value: str, name: str, limit: int) -> None:
    _check("\r" not in value and "\n" not in value, name, "must be one line")
    _check(len(value) <= limit, name, f"must be at most {limit} characters")


def _check_common(*, text: str, category: str, **texts: str | None) -> None:
    _check(bool(_CATEGORY_RE.fullmatch(category)), "category", "must match [a-z0-9][a-z0-9_.-]{0,63}")
    _check(bool(text.strip()), "text", "must not be empty")
    _check(len(text) <= _MAX_TEXT, "text", f"must be at most {_MAX_TEXT} characters")
    for name, value in {
        "text": text,
        **texts,
    }.items():  # no text we store may hold NUL (PostgreSQL refuses it)
        _check(value is None or "\x00" not in value, name, "must not contain NUL characters")


async def send_email(
    session: LeanSession,
    *,
    tenant: TenantContext,
    to: str,
    subject: str,
    text: str,
    html: str | None = None,
    category: str,
    sender_address: str | None = None,
    sender_name: str | None = None,
    reply_to: str | None = None,
) -> str:
    """Queue an email in the caller's transaction; its id ("Message:<uuid>"). Bad arguments raise a 400
    (INVALID_INPUT) naming the argument. `sender_address` / `sender_name` default to PLATPAY_SMTP_FROM's."""
    _check_email(to, "to")
    _check_line(subject, "subject", _MAX_SUBJECT)
    _check_common(text=text, category=category, subject=subject, html=html, sender_name=sender_name)
    if html is not None:
        _check(len(html) <= _MAX_TEXT, "html", f"must be at most {_MAX_TEXT} characters")
    if sender_address is not None:
        _check_email(sender_address, "sender_address")
    if sender_name is not None:
        _check_line(sender_name, "sender_name", 200)
    if reply_to is not None:
        _check_email(reply_to, "reply_to")
    return await _queue(
        session,
        tenant=tenant,
        channel=Channel.EMAIL,
        to=to,
        category=category,
        content={"subject": subject, "text": text, "html": html},
        sender={"sender_address": sender_address, "sender_name": sender_name, "reply_to": reply_to},
    )


async def send_sms(session: AsyncSession, *, tenant: TenantContext, to: str, text: str, category: str) -> str:
    """Queue an SMS to an E.164 number in the caller's transaction; its id ("Message:<uuid>")."""
    _check(bool(_E164_RE.fullmatch(to)), "to", "is not an E.164 phone number like +14155550123")
    _check_common(text=text, category=category)
    return await _queue(
        session,
        tenant=tenant,
        channel=Channel.SMS,
        to=to,
        category=category,
        content={"text": text},
        sender={},
    )


def _sealer() -> Sealer:
    return process_sealer()  # the process's master key, as kit/idempotency.py seals with


async def _queue(
    session: LeanSession,
    *,
    tenant: TenantContext,
    channel: Channel,
    to: str,
    category: str,
    content: dict[str, Any],
    sender: dict[str, str | None],
) -> str:
    custody = providers.custody_for(tenant)
    now = clock.now(tenant)
    message_id = new_id(repository.ID_PREFIX)
    stored = json.dumps(content, separators=(",", ":"))
    if custody.sealed:
        stored = _sealer().seal(stored.encode(), purpose=f"{SEAL_PURPOSE}:{message_id}")
    await repository.insert(
        session,
        {
            "id": message_id,
            "tenant_id": tenant.id,
            "channel": channel.value,
            "category": category,
            "recipient": to,
            **sender,
            "content": stored,
            "sealed": custody.sealed,
            "kept": custody.kept,
            "status": MessageStatus.QUEUED.value,
            "attempts": 0,
            "last_error": None,
            "created_at": now,
            "updated_at": now,
            "sent_at": None,
        },
    )
    await jobs_service.enqueue(
        session, SEND_JOB, {"messageId": message_id}, tenant_id=tenant.id, run_at=now, lane=LANE
    )
    return message_id


def _content(row: MessageRow) -> dict[str, Any]:
    raw = row.content or "{}"
    if row.sealed and row.content is not None:
        raw = _sealer().open(row.content, purpose=f"{SEAL_PURPOSE}:{row.id}").decode()
    return json.loads(raw)


async def outbound(db: Database, *, message_id: str) -> Outbound | None:
    """The message as its sender takes it, or None when it is no longer QUEUED (sent, failed, gone): one
    autocommit read, no transaction."""
    row = await repository.get_outside_transaction(db, message_id=message_id)
    if row is None or row.status != MessageStatus.QUEUED or row.content is None:
        return None
    content = _content(row)
    if row.channel == Channel.SMS:
        return OutboundSms(id=row.id, to=row.recipient, text=content["text"], category=row.category)
    return OutboundEmail(
        id=row.id,
        to=row.recipient,
        subject=content.get("subject") or "",
        text=content["text"],
        html=content.get("html"),
        category=row.category,
        from_address=row.sender_address,
        from_name=row.sender_name,
        reply_to=row.reply_to,
    )


def _retry_delay(attempts: int, settings: Settings) -> timedelta:
    delay = timedelta(seconds=settings.message_retry_base_seconds * 2 ** min(attempts - 1, 20))
    return min(delay, MAX_RETRY_INTERVAL)


@dataclass(frozen=True)
class Attempt:
    """What one send attempt came to: SENT, FAILED, or QUEUED again until `retry_at`."""

    channel: str
    category: str
    status: MessageStatus
    retry_at: datetime | None

    @property
    def outcome(self) -> str:
        return "retry" if self.retry_at is not None else self.status.lower()


async def record_attempt(
    session: AsyncSession,
    *,
    message_id: str,
    error: str | None,
    permanent: bool,
    settings: Settings,
    now: datetime | None = None,
) -> Attempt | None:
    """Record one send attempt (`error` None: it was sent) at `now` on the message's tenant's clock (None:
    read the tenant's clock here); None when the message was no longer QUEUED."""
    if error is None and now is not None:
        return await record_sent(session, message_id=message_id, now=now)
    row = await repository.get_for_update(session, message_id=message_id)
    if row is None or row.status != MessageStatus.QUEUED:
        return None
    if now is None:
        now = clock.now(await tenants_service.load(session, tenant_id=row.tenant_id))
    row.attempts += 1
    row.updated_at = now
    retry_at = None
    if error is None:
        row.status = MESSAGE.move(row.status, MessageStatus.SENT, subject=row.id)
        row.sent_at = now
        row.last_error = None
    else:
        row.last_error = error[:1000]
        if permanent or row.attempts >= settings.message_max_attempts:
            row.status = MESSAGE.move(row.status, MessageStatus.FAILED, subject=row.id)
        else:
            retry_at = clock.real_now() + _retry_delay(row.attempts, settings)  # real time, as its lane runs
    if row.status != MessageStatus.QUEUED and not row.kept:
        row.content = None  # a production body is needed only until the message is sent
    await repository.record(session, row)
    log.info(
        "message.attempt",
        message_id=row.id,
        channel=row.channel,
        category=row.category,
        attempt=row.attempts,
        status=row.status,
        retry_at=retry_at.isoformat() if retry_at else None,
    )
    return Attempt(row.channel, row.category, MessageStatus(row.status), retry_at)


async def record_sent(session: LeanSession, *, message_id: str, now: datetime) -> Attempt | None:
    """A successful send at `now` (its tenant's clock), the common case: QUEUED -> SENT in one conditional
    UPDATE, no read first (lean statements only); None when the message was no longer QUEUED."""
    status = MESSAGE.move(MessageStatus.QUEUED, MessageStatus.SENT, subject=message_id)
    sent = await repository.record_sent(session, message_id=message_id, status=status, now=now)
    if sent is None:
        return None
    channel, category, attempts = sent
    log.info(
        "message.attempt",
        message_id=message_id,
        channel=channel,
        category=category,
        attempt=attempts,
        status=status,
        retry_at=None,
    )
    return Attempt(channel, category, status, None)


@dataclass(frozen=True)
class MessageInfo:
    """A message's delivery record (no body)."""

    id: str
    channel: str
    category: str
    status: str
    attempts: int
    last_error: str | None
    created_at: datetime
    sent_at: datetime | None
    body_stored: bool


async def get(session: AsyncSession, *, tenant_id: str, message_id: str) -> MessageInfo | None:
    row = await repository.get(session, message_id=message_id, tenant_id=tenant_id)
    if row is None:
        return None
    return MessageInfo(
        id=row.id,
        channel=row.channel,
        category=row.category,
        status=row.status,
        attempts=row.attempts,
        last_error=row.last_error,
        created_at=row.created_at,
        sent_at=row.sent_at,
        body_stored=row.content is not None,
    )


def _mailbox_item(row: MessageRow) -> MailboxMessage:
    content = _content(row)
    return MailboxMessage(
        id=row.id,
        channel=row.channel,
        to=row.recipient,
        subject=content.get("subject"),
        text=content.get("text", ""),
        html=content.get("html"),
        category=row.category,
        status=row.status,
        created_at=row.created_at,
        sent_at=row.sent_at,
    )


async def list_mailbox(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    to: str | None = None,
    channel: str | None = None,
    category: str | None = None,
) -> tuple[PageResult[MessageRow], list[MailboxMessage]]:
    """A sandbox tenant's mailbox, newest first."""
    stmt = repository.mailbox_query(tenant_id=tenant_id, to=to, channel=channel, category=category)
    page = await paginate(session, stmt, id_column=MessageRow.id, params=params)
    return page, [_mailbox_item(row) for row in page.items]
