"""All SQL on the messages table."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, case, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.rows import batch_done, batch_of, get_scoped
from platpay.db.unit_of_work import LeanSession
from platpay.kit.ids import first_at
from platpay.messages.models import MessageRow
from platpay.messages.state import MessageStatus

if TYPE_CHECKING:
    pass

ID_PREFIX = "Message"

# Lean (db/lean.py): the statements of queueing and sending one message, which every EMAIL_OTP login does
# (an OTP email per challenge; the target is >= 100 logins/s on one process).
_INSERT = Lean(MessageRow.__table__.insert())
_COLUMNS, _KEYS = lean.columns_of(MessageRow)
_BY_ID = Lean(select(*_COLUMNS).where(MessageRow.id == bindparam("message_id")))
_BY_ID_FOR_UPDATE = Lean(select(*_COLUMNS).where(MessageRow.id == bindparam("message_id")).with_for_update())
_RECORD = Lean(
    update(MessageRow)
    .where(MessageRow.id == bindparam("message_id"))
    .values(
        attempts=bindparam("new_attempts", type_=MessageRow.attempts.type),
        status=bindparam("new_status", type_=MessageRow.status.type),
        content=bindparam("new_content", type_=MessageRow.content.type),
        last_error=bindparam("new_last_error", type_=MessageRow.last_error.type),
        updated_at=bindparam("new_updated_at", type_=MessageRow.updated_at.type),
        sent_at=bindparam("new_sent_at", type_=MessageRow.sent_at.type),
    )
)


_RECORD_SENT = Lean(
    update(MessageRow)
    .where(MessageRow.id == bindparam("message_id"), MessageRow.status == bindparam("queued"))
    .values(
        attempts=MessageRow.attempts + 1,
        status=bindparam("new_status", type_=MessageRow.status.type),
        sent_at=bindparam("now", type_=MessageRow.sent_at.type),
        updated_at=bindparam("now", type_=MessageRow.updated_at.type),
        last_error=None,
        # a production body is needed only until the message is sent; a kept one (mailbox) stays
        content=case((MessageRow.kept, MessageRow.content), else_=None),
    )
    .returning(MessageRow.channel, MessageRow.category, MessageRow.attempts)
)


async def insert(session: LeanSession, values: dict[str, Any]) -> None:
    """Insert a message row (every column given: a lean INSERT applies no Python-side default); deferred
    (db/lean.py: on PostgreSQL it goes with the transaction's next statement, its send job's INSERT with it)."""
    await lean.defer(session, _INSERT, values)


def _row_of(values: Any) -> MessageRow:
    """A read-only MessageRow of a row a lean SELECT read (not attached to any session)."""
    row: MessageRow = lean.snapshot(MessageRow, _KEYS, values)
    return row


async def get_outside_transaction(db: Database, *, message_id: str) -> MessageRow | None:
    """The message, read in autocommit without a transaction (`Database.fetch_first`); a read-only
    snapshot."""
    found = await db.fetch_first(_BY_ID, {"message_id": message_id})
    return None if found is None else _row_of(found)


async def get_for_update(session: AsyncSession, *, message_id: str) -> MessageRow | None:
    """The message, its row locked until the transaction ends; a read-only snapshot (`record` writes)."""
    found = await lean.first(session, _BY_ID_FOR_UPDATE, {"message_id": message_id})
    return None if found is None else _row_of(found)


async def record_sent(
    session: LeanSession, *, message_id: str, status: str, now: datetime
) -> tuple[str, str, int] | None:
    """A QUEUED message's successful attempt, in one statement: (channel, category, attempts), or None when
    it was no longer QUEUED."""
    found = await lean.first(
        session,
        _RECORD_SENT,
        {"message_id": message_id, "queued": MessageStatus.QUEUED.value, "new_status": status, "now": now},
    )
    return None if found is None else (found[0], found[1], found[2])


async def record(session: AsyncSession, row: MessageRow) -> None:
    """Write a send attempt's columns of `row` (read by `get_for_update` in this transaction)."""
    await lean.rows(
        session,
        _RECORD,
        {
            "message_id": row.id,
            "new_attempts": row.attempts,
            "new_status": row.status,
            "new_content": row.content,
            "new_last_error": row.last_error,
            "new_updated_at": row.updated_at,
            "new_sent_at": row.sent_at,
        },
    )


async def get(
    session: AsyncSession, *, message_id: str, tenant_id: str | None = None, for_update: bool = False
) -> MessageRow | None:
    return await get_scoped(session, MessageRow, id=message_id, tenant_id=tenant_id, for_update=for_update)


def mailbox_query(
    *, tenant_id: str, to: str | None, channel: str | None, category: str | None
) -> Select[Any]:
    """A tenant's kept messages whose body is still stored (retention erases it: `prune_bodies`), filtered
    (`to` ignoring case)."""
    stmt = select(MessageRow).where(
        MessageRow.tenant_id == tenant_id, MessageRow.kept.is_(True), MessageRow.content.is_not(None)
    )
    if to is not None:
        stmt = stmt.where(func.lower(MessageRow.recipient) == to.lower())
    if channel is not None:
        stmt = stmt.where(MessageRow.channel == channel)
    if category is not None:
        stmt = stmt.where(MessageRow.category == category)
    return stmt


async def prune_bodies(session: AsyncSession, *, before: datetime, limit: int) -> int:
    """Erase the body of at most `limit` messages queued before `before` (on the wall clock: their
    time-ordered ids) that are no longer QUEUED, oldest first, through ix_messages_with_body (only messages
    that still have a body are in it); how many. The row stays: recipient, category, status, attempts,
    times."""
    batch = batch_of(
        MessageRow.id,
        MessageRow.content.is_not(None),
        MessageRow.id < first_at(ID_PREFIX, before),
        MessageRow.status != MessageStatus.QUEUED,
        order_by=MessageRow.id,
        limit=limit,
    )
    statement = MessageRow.__table__.update().where(MessageRow.id.in_(batch)).values(content=None)
    return await batch_done(session, statement, MessageRow.id)
