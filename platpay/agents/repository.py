"""All SQL on the agents domain's tables; every query is tenant-scoped (the token and device-code lookups
find their tenant through the row they match)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

from sqlalchemy import Select, bindparam, event, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction

from platpay.agents.models import (
    AgentActionRow,
    AgentAuditHeadRow,
    AgentAuditRow,
    AgentRow,
    AgentUsageRow,
    DeviceCodeRow,
)
from platpay.agents.state import ActionStatus
from platpay.db import lean
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.rows import get_scoped
from platpay.db.unit_of_work import LeanSession, Raced
from platpay.db.watch import Watched
from platpay.tenants import service as tenants_service

# Bearer authentication runs on every agent request: one read of the live agent holding the token, with
# its tenant's columns (tenants_service.join_context), kept by the process while no change to an agent,
# token, tenant, platform or clock was committed since (platpay.db.watch): a deleted agent (whose token hash
# is cleared) stops authenticating at once in the process that deleted it, and in the others when
# PostgreSQL's notification reaches them. It also reads whether the token was used before, so that only a
# token's first request writes (its TOKEN_FIRST_USED record).
TOKEN = Lean(
    tenants_service.join_context(
        select(AgentRow.id, AgentRow.customer_id, AgentRow.token_first_used_at), AgentRow.tenant_id
    ).where(AgentRow.token_sha256 == bindparam("token_sha256"), AgentRow.deleted_at.is_(None))
)


_TOKENS = Watched(TOKEN, "platpay_credentials")


async def by_token(db: Database, token_sha256: str) -> tuple[Any, ...] | None:
    """(agent id, customer id, token first used at, *the tenant's context columns), or None."""
    return await _TOKENS.first(db, {"token_sha256": token_sha256}, token_sha256)


async def claim_first_use(
    session: AsyncSession, *, tenant_id: str, agent_id: str, token_sha256: str, now: datetime
) -> str | None:
    """Mark the agent's token used if no request marked it before (one conditional UPDATE: of concurrent first
    requests one wins; on PostgreSQL the others wait on the row and then match nothing); the token's prefix
    when this call won, else None."""
    result = await session.execute(
        update(AgentRow)
        .where(
            AgentRow.id == agent_id,
            AgentRow.tenant_id == tenant_id,
            AgentRow.token_sha256 == token_sha256,
            AgentRow.token_first_used_at.is_(None),
            AgentRow.deleted_at.is_(None),
        )
        .values(token_first_used_at=now)
        .returning(AgentRow.token_prefix)
    )
    won = result.first()
    return None if won is None else won[0] or ""


async def get_agent(
    session: AsyncSession, *, tenant_id: str, agent_id: str, for_update: bool = False
) -> AgentRow | None:
    return await get_scoped(
        session,
        AgentRow,
        id=agent_id,
        tenant_id=tenant_id,
        where=(AgentRow.deleted_at.is_(None),),
        for_update=for_update,
    )


def agents_query(
    *,
    tenant_id: str,
    customer_id: str | None = None,
    is_paused: bool | None = None,
    is_connected: bool | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
) -> Select[Any]:
    stmt = select(AgentRow).where(AgentRow.tenant_id == tenant_id, AgentRow.deleted_at.is_(None))
    for column, value in (
        (AgentRow.customer_id, customer_id),
        (AgentRow.is_paused, is_paused),
        (AgentRow.is_connected, is_connected),
    ):
        if value is not None:
            stmt = stmt.where(column == value)
    if created_after is not None:
        stmt = stmt.where(AgentRow.created_at >= created_after)
    if created_before is not None:
        stmt = stmt.where(AgentRow.created_at <= created_before)
    if updated_after is not None:
        stmt = stmt.where(AgentRow.updated_at >= updated_after)
    if updated_before is not None:
        stmt = stmt.where(AgentRow.updated_at <= updated_before)
    return stmt


async def add(session: AsyncSession, *rows: Any) -> None:
    session.add_all(rows)
    await session.flush()


async def usage(
    session: AsyncSession, *, tenant_id: str, agent_id: str, for_update: bool = False
) -> AgentUsageRow | None:
    """The agent's usage row; `for_update` locks it (PostgreSQL; SQLite has one writer): the agent's money
    requests take this lock first, so they serialize."""
    stmt = select(AgentUsageRow).where(
        AgentUsageRow.agent_id == agent_id, AgentUsageRow.tenant_id == tenant_id
    )
    if for_update:
        stmt = stmt.with_for_update()
    return await session.scalar(stmt)


async def usages(session: AsyncSession, *, agent_ids: list[str]) -> dict[str, AgentUsageRow]:
    if not agent_ids:
        return {}
    rows = await session.scalars(select(AgentUsageRow).where(AgentUsageRow.agent_id.in_(agent_ids)))
    return {row.agent_id: row for row in rows}


async def invalidate_codes(session: AsyncSession, *, tenant_id: str, agent_id: str, now: datetime) -> None:
    await session.execute(
        update(DeviceCodeRow)
        .where(
            DeviceCodeRow.tenant_id == tenant_id,
            DeviceCodeRow.agent_id == agent_id,
            DeviceCodeRow.redeemed_at.is_(None),
            DeviceCodeRow.invalidated_at.is_(None),
        )
        .values(invalidated_at=now)
    )


async def device_code(session: AsyncSession, *, code_sha256: str) -> DeviceCodeRow | None:
    return await session.scalar(select(DeviceCodeRow).where(DeviceCodeRow.code_sha256 == code_sha256))


async def claim_code(session: AsyncSession, *, code_sha256: str, now: datetime) -> str | None:
    """Mark the code redeemed if it still can be (one statement: of concurrent redeems one wins); the agent
    id it belongs to, or None."""
    result = await session.execute(
        update(DeviceCodeRow)
        .where(
            DeviceCodeRow.code_sha256 == code_sha256,
            DeviceCodeRow.redeemed_at.is_(None),
            DeviceCodeRow.invalidated_at.is_(None),
            DeviceCodeRow.expires_at > now,
        )
        .values(redeemed_at=now)
        .returning(DeviceCodeRow.agent_id)
    )
    return result.scalar_one_or_none()


async def get_action(
    session: AsyncSession,
    *,
    tenant_id: str,
    action_id: str,
    agent_id: str | None = None,
    for_update: bool = False,
) -> AgentActionRow | None:
    return await get_scoped(
        session,
        AgentActionRow,
        id=action_id,
        tenant_id=tenant_id,
        where=() if agent_id is None else (AgentActionRow.agent_id == agent_id,),
        for_update=for_update,
        refresh=True,  # the locked version
    )


def actions_query(
    *,
    tenant_id: str,
    agent_id: str | None = None,
    customer_id: str | None = None,
    status: str | None = None,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> Select[Any]:
    stmt = select(AgentActionRow).where(AgentActionRow.tenant_id == tenant_id)
    if agent_id is not None:
        stmt = stmt.where(AgentActionRow.agent_id == agent_id)
    if customer_id is not None:
        stmt = stmt.where(AgentActionRow.customer_id == customer_id)
    if status is not None:
        stmt = stmt.where(AgentActionRow.status == status)
    if start_date is not None:
        stmt = stmt.where(AgentActionRow.created_at >= start_date)
    if end_date is not None:
        stmt = stmt.where(AgentActionRow.created_at <= end_date)
    return stmt


async def pending_action_ids(session: AsyncSession, *, tenant_id: str, agent_id: str) -> list[str]:
    return list(
        await session.scalars(
            select(AgentActionRow.id).where(
                AgentActionRow.tenant_id == tenant_id,
                AgentActionRow.agent_id == agent_id,
                AgentActionRow.status == ActionStatus.PENDING_APPROVAL,
            )
        )
    )


_ACTION_INSERT = Lean(AgentActionRow.__table__.insert())


async def insert_action(session: LeanSession, values: dict[str, Any]) -> AgentActionRow:
    """Insert a new action leanly (every agent money request writes one) and return its row, attached to the
    session: later changes flush as UPDATEs."""
    return await lean.add(session, _ACTION_INSERT, AgentActionRow, values)


# Every money request of an agent (and every approval) starts with one read of the agent and its usage row,
# the usage row locked, and ends with one write of the usage: lean statements, like the transfer path's.
_AGENT_COLUMNS, _AGENT_KEYS = lean.columns_of(AgentRow)
_USAGE_COLUMNS, _USAGE_KEYS = lean.columns_of(AgentUsageRow)
_AGENT_WITH_USAGE_SELECT = (
    select(*_AGENT_COLUMNS, *_USAGE_COLUMNS)
    .join_from(AgentRow, AgentUsageRow, AgentUsageRow.agent_id == AgentRow.id)
    .where(
        AgentRow.id == bindparam("agent_id"),
        AgentRow.tenant_id == bindparam("tenant_id"),
        AgentRow.deleted_at.is_(None),
    )
)
_AGENT_WITH_USAGE = Lean(_AGENT_WITH_USAGE_SELECT.with_for_update(of=AgentUsageRow))
_AGENT_WITH_USAGE_READ = Lean(_AGENT_WITH_USAGE_SELECT)  # unlocked: see _READ_USAGE
_USAGE_SET = (
    update(AgentUsageRow)
    .where(AgentUsageRow.agent_id == bindparam("usage_agent_id"))
    .values(
        day=bindparam("new_day"),
        daily_spend=bindparam("new_daily_spend"),
        daily_count=bindparam("new_daily_count"),
        month=bindparam("new_month"),
        monthly_spend=bindparam("new_monthly_spend"),
        updated_at=bindparam("new_updated_at"),
    )
)
_USAGE_WRITE = Lean(_USAGE_SET)
_USAGE_WRITE_IF_AS_READ = Lean(  # (its RETURNING: that it found the row as read)
    _USAGE_SET.where(
        AgentUsageRow.day.is_not_distinct_from(bindparam("read_day")),
        AgentUsageRow.daily_spend == bindparam("read_daily_spend"),
        AgentUsageRow.daily_count == bindparam("read_daily_count"),
        AgentUsageRow.month.is_not_distinct_from(bindparam("read_month")),
        AgentUsageRow.monthly_spend == bindparam("read_monthly_spend"),
    ).returning(AgentUsageRow.agent_id)
)


# The same read with the agent's audit chain head, locked after the usage row (`FOR UPDATE OF` locks in its
# order; every path that takes both takes the usage row first): the money request's audit record then needs
# no read of its own (`lock_audit_head` takes the head from here, once). An agent without a chain yet is read
# by the statement above.
_AGENT_WITH_USAGE_AND_HEAD_SELECT = (
    select(*_AGENT_COLUMNS, *_USAGE_COLUMNS, AgentAuditHeadRow.sequence, AgentAuditHeadRow.hash)
    .join_from(AgentRow, AgentUsageRow, AgentUsageRow.agent_id == AgentRow.id)
    .join(AgentAuditHeadRow, AgentAuditHeadRow.agent_id == AgentRow.id)
    .where(
        AgentRow.id == bindparam("agent_id"),
        AgentRow.tenant_id == bindparam("tenant_id"),
        AgentRow.deleted_at.is_(None),
    )
)
_AGENT_WITH_USAGE_AND_HEAD = Lean(
    _AGENT_WITH_USAGE_AND_HEAD_SELECT.with_for_update(of=(AgentUsageRow, AgentAuditHeadRow))
)
_AGENT_WITH_USAGE_AND_HEAD_READ = Lean(_AGENT_WITH_USAGE_AND_HEAD_SELECT)  # unlocked: see _READ_USAGE
_LOCKED_HEADS = "platpay_agent_audit_heads"  # session.info: {agent id: (sequence, hash)} locked, not yet used
# Where a transaction checks its conditions with its deferred writes (a PostgreSQL lean transaction: db/lean.py),
# the same reads take no lock: the usage row's and the head's writes are then conditional on the values read
# (`write_usage`, `append_audit`: deferred, each must find its row as read), so a concurrent request of the
# same agent that moved either sends this one to the careful attempt, which takes the locks.
_READ_USAGE = "platpay_agent_usage_read"  # session.info: {agent id: the usage row's values as read, unlocked}


@event.listens_for(Session, "after_transaction_end")
def _forget_locked_heads(session: Session, transaction: SessionTransaction) -> None:
    if transaction.parent is None:
        session.info.pop(_LOCKED_HEADS, None)


async def agent_with_usage(
    session: LeanSession, *, tenant_id: str, agent_id: str
) -> tuple[AgentRow, AgentUsageRow] | None:
    """The live agent and its usage row (read-only snapshots: `write_usage` saves the usage), the usage row
    locked (PostgreSQL `FOR UPDATE OF agent_usage`; SQLite has one writer), or None. The agent's audit chain
    head is locked by the same statement and kept for the transaction's next `lock_audit_head`."""
    params = {"agent_id": agent_id, "tenant_id": tenant_id}
    n = len(_AGENT_KEYS) + len(_USAGE_KEYS)
    unlocked = lean.defers_checks(session)
    with_head = _AGENT_WITH_USAGE_AND_HEAD_READ if unlocked else _AGENT_WITH_USAGE_AND_HEAD
    row = await lean.first(session, with_head, params)
    if row is not None:
        session.info.setdefault(_LOCKED_HEADS, {})[agent_id] = (row[n], row[n + 1])
        row = row[:n]
    else:
        row = await lean.first(session, _AGENT_WITH_USAGE_READ if unlocked else _AGENT_WITH_USAGE, params)
        if row is None:
            return None
    n = len(_AGENT_KEYS)
    usage = lean.snapshot(AgentUsageRow, _USAGE_KEYS, row[n:])
    if unlocked:
        session.info.setdefault(_READ_USAGE, {})[agent_id] = _usage_values(usage)
    return lean.snapshot(AgentRow, _AGENT_KEYS, row[:n]), usage


def _usage_values(usage: AgentUsageRow) -> dict[str, Any]:
    return {
        "day": usage.day,
        "daily_spend": usage.daily_spend,
        "daily_count": usage.daily_count,
        "month": usage.month,
        "monthly_spend": usage.monthly_spend,
    }


async def write_usage(
    session: LeanSession,
    usage: AgentUsageRow,
    *,
    day: str,
    daily_spend: int,
    daily_count: int,
    month: str,
    monthly_spend: int,
    updated_at: datetime,
) -> None:
    """Set a usage snapshot's counters (from `agent_with_usage`: its row is locked in this transaction) and
    save them: a deferred write (db/lean.py), sent with the transaction's next statement. Read without the
    lock (see _READ_USAGE): the write must find the row as it was read, or the transaction is raced."""
    lean.set_in_snapshot(usage, day=day, daily_spend=daily_spend, daily_count=daily_count, month=month,
                         monthly_spend=monthly_spend, updated_at=updated_at)  # fmt: skip
    params = {
        "usage_agent_id": usage.agent_id,
        "new_day": day,
        "new_daily_spend": daily_spend,
        "new_daily_count": daily_count,
        "new_month": month,
        "new_monthly_spend": monthly_spend,
        "new_updated_at": updated_at,
    }
    read = session.info.get(_READ_USAGE, {}).pop(usage.agent_id, None)
    if read is not None:
        params |= {f"read_{name}": value for name, value in read.items()}
        if await lean.defer_returning(session, _USAGE_WRITE_IF_AS_READ, params, row=usage.agent_id):
            return
        raise Raced("an agent's usage written twice in one transaction read without its lock")
    await lean.defer(session, _USAGE_WRITE, params)


# The audit trail's append (agents/audit/service.py `record`), on every money request of an agent: the chain head's
# locked read, the head moved (or created) and the record inserted, as lean statements (through the ORM they
# cost ~0.5 ms of CPU per request: bench/README.md, agent_transfer.py).
_AUDIT_HEAD = Lean(
    select(AgentAuditHeadRow.sequence, AgentAuditHeadRow.hash)
    .where(AgentAuditHeadRow.agent_id == bindparam("agent_id"))
    .with_for_update()
)
_AUDIT_HEAD_INSERT = Lean(
    insert(AgentAuditHeadRow).values(
        agent_id=bindparam("agent_id"),
        tenant_id=bindparam("tenant_id"),
        sequence=bindparam("new_sequence"),
        hash=bindparam("new_hash"),
    )
)
_HEAD_MOVE = (  # the head moved from the sequence this transaction locked (or read)
    update(AgentAuditHeadRow)
    .where(
        AgentAuditHeadRow.agent_id == bindparam("head_agent_id"),
        AgentAuditHeadRow.sequence == bindparam("old_sequence"),
    )
    .values(sequence=bindparam("new_sequence"), hash=bindparam("new_hash"))
)
_AUDIT_HEAD_SET = Lean(_HEAD_MOVE)
_AUDIT_HEAD_MOVE = Lean(_HEAD_MOVE.returning(AgentAuditHeadRow.agent_id))  # (its RETURNING: that it matched)
_AUDIT_INSERT = Lean(AgentAuditRow.__table__.insert())


async def lock_audit_head(session: LeanSession, *, agent_id: str) -> tuple[int, str] | None:
    """The agent's audit chain head (sequence, hash), locked until the transaction ends; None: no chain yet."""
    locked = session.info.get(_LOCKED_HEADS)
    if locked and agent_id in locked:  # locked by `agent_with_usage` in this transaction and not moved since
        return cast("tuple[int, str]", locked.pop(agent_id))
    row = await lean.first(session, _AUDIT_HEAD, {"agent_id": agent_id})
    return None if row is None else (row[0], row[1])


async def append_audit(session: LeanSession, *, record: dict[str, Any], head_sequence: int | None) -> None:
    """Insert the audit record (`record` by column name) and move the agent's chain head to it (the head read
    by `lock_audit_head`, in this transaction: `head_sequence` None creates it). A first record racing
    another fails on the head's primary key, as the ORM's INSERT would."""
    head = {
        "agent_id": record["agent_id"],
        "tenant_id": record["tenant_id"],
        "head_agent_id": record["agent_id"],
        "old_sequence": head_sequence,
        "new_sequence": record["sequence"],
        "new_hash": record["hash"],
    }
    if head_sequence is None:
        await lean.rows(session, _AUDIT_HEAD_INSERT, head)
        await lean.defer(session, _AUDIT_INSERT, record)
        return
    # Both are deferred writes (db/lean.py: on PostgreSQL they ride with the transaction's next statement;
    # SQLite runs them at once). The head is locked by this transaction, so its move matches; were it not,
    # the record's (agent_id, sequence) would already be taken and its INSERT would fail (a unique
    # constraint): never a gap in the chain. Read without the lock (see _READ_USAGE), the move must find the
    # head where it was read, or the transaction is raced.
    if not await lean.defer_returning(session, _AUDIT_HEAD_MOVE, head, row=record["agent_id"]):
        if lean.defers_checks(session):  # moved already in this statement: a second move would be lost
            raise Raced("an agent's audit head moved twice in one transaction read without its lock")
        await lean.defer(session, _AUDIT_HEAD_SET, head)
    await lean.defer(session, _AUDIT_INSERT, record)


# The console's reads: a fixed number of statements whatever the number of rows.


async def count_pending(session: AsyncSession, *, tenant_id: str) -> int:
    return int(
        await session.scalar(
            select(func.count()).where(
                AgentActionRow.tenant_id == tenant_id, AgentActionRow.status == ActionStatus.PENDING_APPROVAL
            )
        )
        or 0
    )


async def pending_with_agents(
    session: AsyncSession, *, tenant_id: str, after_id: str | None, descending: bool, limit: int
) -> list[tuple[AgentActionRow, str]]:
    """`limit` of the tenant's PENDING_APPROVAL actions after `after_id` in id order, each with its agent's
    name: one statement."""
    stmt = (
        select(AgentActionRow, AgentRow.name)
        .join(AgentRow, AgentRow.id == AgentActionRow.agent_id)
        .where(AgentActionRow.tenant_id == tenant_id, AgentActionRow.status == ActionStatus.PENDING_APPROVAL)
    )
    if after_id is not None:
        stmt = stmt.where(AgentActionRow.id < after_id if descending else AgentActionRow.id > after_id)
    stmt = stmt.order_by(AgentActionRow.id.desc() if descending else AgentActionRow.id.asc()).limit(limit)
    return [(row, name) for row, name in (await session.execute(stmt)).all()]


async def agent_and_usage(
    session: AsyncSession, *, tenant_id: str, agent_id: str
) -> tuple[AgentRow, AgentUsageRow | None] | None:
    """The live agent and its usage row (None before its first money request), unlocked: one statement."""
    row = (
        await session.execute(
            select(AgentRow, AgentUsageRow)
            .outerjoin(AgentUsageRow, AgentUsageRow.agent_id == AgentRow.id)
            .where(AgentRow.id == agent_id, AgentRow.tenant_id == tenant_id, AgentRow.deleted_at.is_(None))
        )
    ).first()
    return None if row is None else (row[0], row[1])


async def agent_actions_page(
    session: AsyncSession,
    *,
    tenant_id: str,
    agent_id: str,
    after_id: str | None,
    descending: bool,
    limit: int,
) -> list[AgentActionRow]:
    """`limit` of one agent's actions after `after_id` in id order: one statement."""
    stmt = select(AgentActionRow).where(
        AgentActionRow.tenant_id == tenant_id, AgentActionRow.agent_id == agent_id
    )
    if after_id is not None:
        stmt = stmt.where(AgentActionRow.id < after_id if descending else AgentActionRow.id > after_id)
    stmt = stmt.order_by(AgentActionRow.id.desc() if descending else AgentActionRow.id.asc()).limit(limit)
    return list((await session.scalars(stmt)).all())
