"""The agents' audit trail: every event of an agent's life, appended in the transaction that causes it,
chained per agent so that an edited, removed or reordered record is detected.

A record's `hash` is SHA-256 over `previousHash` and the record's canonical content (its id, tenant, agent,
sequence, kind, actor, time and data as sorted, compact JSON); the first record's `previousHash` is 64
zeros. Appending locks the agent's chain head (`agent_audit_heads`), so the records of one agent serialize
and the chain never forks; the head also catches a removed tail. Records hold no secrets: no token, no
device code (a token's or code's prefix at most).

Two kinds are written in a transaction of their own, because the request's own may roll back or be none:
MONEY_REFUSED (`refusals`) and TOKEN_FIRST_USED (written by authentication, once per token:
agents.service.authenticate_bearer).

The actor is the credential of the request that caused the event (`PLATFORM_TOKEN:<id>`,
`AGENT_TOKEN:<agentId>`), `null` for the system (expiry jobs)."""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import AsyncIterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.agents.errors import PolicyForbids
from platpay.agents.models import AgentAuditHeadRow, AgentAuditRow
from platpay.auth.principal import Principal
from platpay.auth.principals import on_authenticated
from platpay.db.database import Database
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate

GENESIS = "0" * 64
KINDS = (
    "AGENT_CREATED",
    "DEVICE_CODE_ISSUED",
    "DEVICE_CODE_REDEEMED",
    "TOKEN_FIRST_USED",
    "AGENT_PAUSED",
    "AGENT_UNPAUSED",
    "AGENT_RENAMED",
    "POLICY_CHANGED",
    "MONEY_REQUESTED",
    "MONEY_REFUSED",
    "ACTION_APPROVED",
    "ACTION_REJECTED",
    "ACTION_EXECUTED",
    "ACTION_FAILED",
    "ACTION_EXPIRED",
    "AGENT_DELETED",
)

_actor: ContextVar[str | None] = ContextVar("platpay_agent_audit_actor", default=None)


@on_authenticated
async def _remember_actor(headers: Mapping[str, str], principal: Principal) -> None:
    """The request's credential, named on the records its request causes."""
    _actor.set(f"{principal.kind.value}:{principal.id}")


def _timestamp(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def content_of(row: AgentAuditRow) -> dict[str, Any]:
    """What the hash covers."""
    return {
        "id": row.id,
        "tenantId": row.tenant_id,
        "agentId": row.agent_id,
        "sequence": row.sequence,
        "kind": row.kind,
        "actor": row.actor,
        "occurredAt": _timestamp(row.occurred_at),
        "data": row.data,
    }


def hash_of(previous_hash: str, content: dict[str, Any]) -> str:
    canonical = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((previous_hash + canonical).encode()).hexdigest()


async def record(
    session: AsyncSession,
    *,
    tenant_id: str,
    agent_id: str,
    kind: str,
    now: datetime,
    data: dict[str, Any] | None = None,
    actor: str | None = None,
) -> AgentAuditRow:
    """Append one record to the agent's chain, in the caller's transaction. `actor`: the request's credential
    unless given (authentication names its principal before the request's is known)."""
    assert kind in KINDS, kind
    head = await session.scalar(
        select(AgentAuditHeadRow).where(AgentAuditHeadRow.agent_id == agent_id).with_for_update()
    )
    if head is None:
        head = AgentAuditHeadRow(agent_id=agent_id, tenant_id=tenant_id, sequence=0, hash=GENESIS)
        session.add(head)
    row = AgentAuditRow(
        id=new_id("AgentAuditRecord"),
        tenant_id=tenant_id,
        agent_id=agent_id,
        sequence=head.sequence + 1,
        kind=kind,
        actor=actor or _actor.get(),
        occurred_at=now,
        data=json.loads(json.dumps(data or {}, default=str)),
        previous_hash=head.hash,
        hash="",
    )
    row.hash = hash_of(head.hash, content_of(row))
    session.add(row)
    head.sequence, head.hash = row.sequence, row.hash
    await session.flush()
    return row


@contextlib.asynccontextmanager
async def refusals(
    db: Database, principal: Principal, operation: str, asked: dict[str, Any]
) -> AsyncIterator[None]:
    """Around a money operation: a policy refusal (403) is recorded as MONEY_REFUSED in a transaction of its
    own (the request's was rolled back with everything else), then raised on."""
    try:
        yield
    except PolicyForbids as refused:
        async with db.transaction() as session:
            await record(session, tenant_id=principal.tenant.id, agent_id=principal.id, kind="MONEY_REFUSED",
                         now=clock.now(principal.tenant),
                         data={"type": operation, "request": asked, "decision": refused.details})  # fmt: skip
        raise


async def has_trail(session: AsyncSession, *, tenant_id: str, agent_id: str) -> bool:
    """Whether the tenant's agent ever had a record (its trail outlives the agent)."""
    head = await session.scalar(
        select(AgentAuditHeadRow.agent_id).where(
            AgentAuditHeadRow.agent_id == agent_id, AgentAuditHeadRow.tenant_id == tenant_id
        )
    )
    return head is not None


def to_api(row: AgentAuditRow) -> dict[str, Any]:
    return {**content_of(row), "previousHash": row.previous_hash, "hash": row.hash}


async def list_records(
    session: AsyncSession,
    *,
    tenant_id: str,
    agent_id: str,
    params: PageParams,
    kind: str | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> PageResult[Any]:
    stmt = select(AgentAuditRow).where(
        AgentAuditRow.tenant_id == tenant_id, AgentAuditRow.agent_id == agent_id
    )
    if kind is not None:
        stmt = stmt.where(AgentAuditRow.kind == kind)
    if start is not None:
        stmt = stmt.where(AgentAuditRow.occurred_at >= start)
    if end is not None:
        stmt = stmt.where(AgentAuditRow.occurred_at < end)
    return await paginate(session, stmt, id_column=AgentAuditRow.id, params=params)


async def export(session: AsyncSession, *, agent_id: str | None = None) -> list[dict[str, Any]]:
    """Every record (of one agent, or all), chain by chain, in sequence order."""
    stmt = select(AgentAuditRow).order_by(AgentAuditRow.agent_id, AgentAuditRow.sequence)
    if agent_id is not None:
        stmt = stmt.where(AgentAuditRow.agent_id == agent_id)
    return [to_api(row) for row in (await session.scalars(stmt)).all()]


@dataclass(frozen=True)
class Problem:
    agent_id: str
    sequence: int | None
    record_id: str | None
    message: str


async def verify(session: AsyncSession, *, agent_id: str | None = None) -> list[Problem]:
    """The first break of each agent's chain: a record whose hash does not match its content (edited), a
    sequence gap or a previousHash that is not the hash before it (removed or reordered), a chain that ends
    before its head (tail removed)."""
    problems: list[Problem] = []
    heads_stmt = select(AgentAuditHeadRow)
    if agent_id is not None:
        heads_stmt = heads_stmt.where(AgentAuditHeadRow.agent_id == agent_id)
    heads = {head.agent_id: head for head in (await session.scalars(heads_stmt)).all()}
    chains: dict[str, list[AgentAuditRow]] = {}
    records_stmt = select(AgentAuditRow).order_by(AgentAuditRow.agent_id, AgentAuditRow.sequence)
    if agent_id is not None:
        records_stmt = records_stmt.where(AgentAuditRow.agent_id == agent_id)
    for row in (await session.scalars(records_stmt)).all():
        chains.setdefault(row.agent_id, []).append(row)
    for agent in sorted(set(heads) | set(chains)):
        problem = _check_chain(agent, chains.get(agent, []), heads.get(agent))
        if problem is not None:
            problems.append(problem)
    return problems


def _check_chain(agent_id: str, rows: list[AgentAuditRow], head: AgentAuditHeadRow | None) -> Problem | None:
    previous = GENESIS
    for expected, row in enumerate(rows, start=1):
        if row.sequence != expected:
            return Problem(
                agent_id, expected, row.id, f"record {expected} is missing (found {row.sequence} next)"
            )
        if row.previous_hash != previous:
            return Problem(
                agent_id, row.sequence, row.id, "previousHash is not the hash of the record before it"
            )
        if hash_of(row.previous_hash, content_of(row)) != row.hash:
            return Problem(agent_id, row.sequence, row.id, "its content does not match its hash (altered)")
        previous = row.hash
    if head is None:
        return Problem(agent_id, None, None, "the chain has no head")
    if head.sequence != len(rows) or head.hash != previous:
        return Problem(
            agent_id, len(rows) + 1, None, f"the chain ends at {len(rows)} but its head is at {head.sequence}"
        )
    return None
