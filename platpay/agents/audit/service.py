"""The agents' audit trail: every event of an agent's life, appended in the transaction that causes it,
chained per agent so that an edited, removed or reordered record is detected.

A record's `hash` is HMAC-SHA-256, under the audit key, of `previousHash` and the record's canonical content
(its id, tenant, agent, sequence, kind, actor, time and data as sorted, compact JSON); the first record's
`previousHash` is 64 zeros. The audit key is HKDF-SHA-256 of the master key (no salt, info
`platpay agent audit chain v1`, 32 bytes), so a record can be rewritten, and the chain re-linked after it,
only by someone holding the master key: a rewrite re-hashed without it fails verification. Whoever holds it
(the running server, an operator with PLATPAY_MASTER_KEY or var/master.key) can rewrite any chain, and
removing a chain's tail while rewinding its head is undetectable without a copy of the head kept elsewhere
(docs/agents.md, the audit trail: what it proves and what it does not).

Records written before the chain was keyed (revision 0016) keep their plain SHA-256 `hash`
(`hashAlgorithm` SHA-256), so what was exported or anchored before stays valid. Revision 0016 sealed each
such chain at its head: `legacySeal` on its last record is HMAC-SHA-256 under the audit key of
"legacy-seal", a NUL byte and that record's hash, which vouches for the plain records up to it (each
hash covers the one before). A plain record that no seal vouches for is a break: without it, relabelling a
keyed chain as SHA-256 and re-hashing it would pass.

Appending locks the agent's chain head (`agent_audit_heads`), so the records of one agent serialize and the
chain never forks; the head also catches a removed tail (unless it was rewound too). Records hold no
secrets: no token, no device code (a token's or code's prefix at most).

Two kinds are written outside the transaction of the request that causes them, because that one rolls
back or is none: MONEY_REFUSED (`record_refusals`, through the idempotency layer: with the refusal stored as
the Idempotency-Key's answer, or in a transaction of its own without a key) and TOKEN_FIRST_USED (written
by authentication, once per token: agents.service.authenticate_bearer).

The actor is the credential of the request that caused the event (`PLATFORM_TOKEN:<id>`,
`AGENT_TOKEN:<agentId>`), `null` for the system (expiry jobs)."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Awaitable, Callable, Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from pydantic import BaseModel
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.agents import repository
from platpay.agents.errors import PolicyForbids
from platpay.agents.models import AgentAuditHeadRow, AgentAuditRow
from platpay.auth.principal import Principal
from platpay.auth.principals import on_authenticated
from platpay.db.unit_of_work import LeanSession
from platpay.errors import ApiError
from platpay.kit import clock
from platpay.kit.crypto import chain
from platpay.kit.idempotency import OnRefusal
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate

GENESIS = chain.GENESIS
KEYED = "HMAC-SHA-256"  # every record since revision 0016
PLAIN = "SHA-256"  # records written before it, vouched for by their chain's legacy seal
KEY_INFO = b"platpay agent audit chain v1"  # HKDF's info: the audit key is for this and nothing else
_SEAL_LABEL = b"legacy-seal\x00"
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


_timestamp = chain.timestamp


def content_of(row: AgentAuditRow) -> dict[str, Any]:
    """What the hash covers."""
    return _content(row.id, row.tenant_id, row.agent_id, row.sequence, row.kind, row.actor, row.occurred_at,
                    row.data)  # fmt: skip


def _content(
    id: str,
    tenant_id: str,
    agent_id: str,
    sequence: int,
    kind: str,
    actor: str | None,
    occurred_at: datetime,
    data: Any,
) -> dict[str, Any]:
    return {
        "id": id,
        "tenantId": tenant_id,
        "agentId": agent_id,
        "sequence": sequence,
        "kind": kind,
        "actor": actor,
        "occurredAt": _timestamp(occurred_at),
        "data": data,
    }


def _as_stored(data: Any) -> Any:
    """`data` as a JSON column gives it back: a copy of JSON's own values, anything else as `str()` gives it
    (a time, an enum that is not a string). A plain value (chain.plain) is copied by orjson, the same value
    ~6x faster."""
    if chain.plain(data):
        try:
            return orjson.loads(orjson.dumps(data))
        except TypeError:  # (an integer beyond 64 bits: orjson.JSONEncodeError)
            pass
    return json.loads(json.dumps(data, default=str))


hash_of = chain.hash_of


def legacy_seal_of(record_hash: str, *, key: bytes) -> str:
    """The seal revision 0016 put on the last plain (SHA-256) record of each chain."""
    return hmac.new(key, _SEAL_LABEL + record_hash.encode(), hashlib.sha256).hexdigest()


def chain_key() -> bytes:
    """The audit key: HKDF-SHA-256 of the master key (no salt, info KEY_INFO, 32 bytes)."""
    return chain.chain_key(KEY_INFO)


async def record(
    session: LeanSession,
    *,
    tenant_id: str,
    agent_id: str,
    kind: str,
    now: datetime,
    data: dict[str, Any] | None = None,
    actor: str | None = None,
) -> None:
    """Append one record to the agent's chain, in the caller's transaction (lean statements: the head's locked
    read, its move, the record's INSERT). `actor`: the request's credential unless given (authentication
    names its principal before the request's is known)."""
    assert kind in KINDS, kind
    head = await repository.lock_audit_head(session, agent_id=agent_id)
    sequence, previous_hash = head if head is not None else (0, GENESIS)
    record_id, actor, stored = new_id("AgentAuditRecord"), actor or _actor.get(), _as_stored(data or {})
    content = _content(record_id, tenant_id, agent_id, sequence + 1, kind, actor, now, stored)
    values = {
        "id": record_id,
        "tenant_id": tenant_id,
        "agent_id": agent_id,
        "sequence": sequence + 1,
        "kind": kind,
        "actor": actor,
        "occurred_at": now,
        "data": stored,
        "previous_hash": previous_hash,
        "hash": hash_of(previous_hash, content, key=chain_key()),
        "hash_algorithm": KEYED,
        "legacy_seal": None,
    }
    await repository.append_audit(session, record=values, head_sequence=None if head is None else sequence)


def record_refusals(
    principal: Principal, operation: str, request: BaseModel | Mapping[str, Any]
) -> OnRefusal:
    """An agent's money request's `on_refusal` (kit/idempotency.py): a policy refusal (403) is recorded as
    MONEY_REFUSED with the request and the decision's details, exactly once: with an Idempotency-Key in the
    transaction that stores the refusal as the key's answer (a replay records nothing), without one in a
    transaction of its own (the request's rolled back with everything else). Any other refusal writes
    nothing. `request`: the body (serialized only if refused)."""

    def on_refusal(refusal: ApiError) -> Callable[[LeanSession], Awaitable[None]] | None:
        if not isinstance(refusal, PolicyForbids):
            return None
        asked = (
            request.model_dump(mode="json", by_alias=True, exclude_none=True)
            if isinstance(request, BaseModel)
            else dict(request)
        )

        async def write(session: LeanSession) -> None:
            await record(session, tenant_id=principal.tenant.id, agent_id=principal.id, kind="MONEY_REFUSED",
                         now=clock.now(principal.tenant),
                         data={"type": operation, "request": asked, "decision": refusal.details})  # fmt: skip

        return write

    return on_refusal


async def has_trail(session: AsyncSession, *, tenant_id: str, agent_id: str) -> bool:
    """Whether the tenant's agent ever had a record (its trail outlives the agent)."""
    head = await session.scalar(
        select(AgentAuditHeadRow.agent_id).where(
            AgentAuditHeadRow.agent_id == agent_id, AgentAuditHeadRow.tenant_id == tenant_id
        )
    )
    return head is not None


def to_api(row: AgentAuditRow) -> dict[str, Any]:
    """The record as the API, the export and verification see it: what verifying it offline needs."""
    return {
        **content_of(row),
        "previousHash": row.previous_hash,
        "hash": row.hash,
        "hashAlgorithm": row.hash_algorithm,
        "legacySeal": row.legacy_seal,
    }


CONTENT_FIELDS = ("id", "tenantId", "agentId", "sequence", "kind", "actor", "occurredAt", "data")


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
    """The first break of each agent's chain (see `check_records`), or a chain that ends before its head
    (tail removed)."""
    problems: list[Problem] = []
    heads_stmt = select(AgentAuditHeadRow)
    if agent_id is not None:
        heads_stmt = heads_stmt.where(AgentAuditHeadRow.agent_id == agent_id)
    heads = {head.agent_id: head for head in (await session.scalars(heads_stmt)).all()}
    chains: dict[str, list[dict[str, Any]]] = {}
    records_stmt = select(AgentAuditRow).order_by(AgentAuditRow.agent_id, AgentAuditRow.sequence)
    if agent_id is not None:
        records_stmt = records_stmt.where(AgentAuditRow.agent_id == agent_id)
    for row in (await session.scalars(records_stmt)).all():
        chains.setdefault(row.agent_id, []).append(to_api(row))
    key = chain_key()
    for agent in sorted(set(heads) | set(chains)):
        records = chains.get(agent, [])
        problem = check_records(agent, records, key=key) or _check_head(agent, records, heads.get(agent))
        if problem is not None:
            problems.append(problem)
    return problems


def verify_export(
    lines: Iterable[str], *, key: bytes, agent_id: str | None = None
) -> tuple[list[Problem], dict[str, tuple[int, str]]]:
    """`platpay agents audit export` output (of every agent, or `agent_id`'s) checked offline with the audit
    key: the first break of each chain, and where each chain ends (its sequence and hash: an export cannot
    show a removed tail, so compare these with a head kept elsewhere). ValueError: a line that is no
    record."""
    chains: dict[str, list[dict[str, Any]]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as error:
            raise ValueError(f"line {number} is not JSON ({error})") from None
        if not isinstance(record, dict):
            raise ValueError(f"line {number} is not a record (a JSON object)")
        # (the API omits a null actor: the system's records)
        missing = [n for n in (*CONTENT_FIELDS, "previousHash", "hash") if n not in record and n != "actor"]
        if missing:
            raise ValueError(f"line {number} has no {', '.join(missing)}")
        if agent_id is None or record["agentId"] == agent_id:
            chains.setdefault(record["agentId"], []).append(record)
    problems = [
        problem
        for agent, records in sorted(chains.items())
        if (problem := check_records(agent, records, key=key)) is not None
    ]
    ends = {agent: (records[-1]["sequence"], records[-1]["hash"]) for agent, records in chains.items()}
    return problems, ends


def check_records(agent_id: str, records: list[dict[str, Any]], *, key: bytes) -> Problem | None:
    """The first break of one chain, its records as `to_api` renders them in sequence order: a sequence
    gap or a previousHash that is not the hash before it (removed or reordered), a keyed record whose
    HMAC does not match (edited, or re-hashed without the key), a plain (SHA-256) record that does not
    match or that no legacy seal vouches for, a seal that does not verify."""
    sealed_to = next((r["sequence"] for r in records if r.get("legacySeal") is not None), 0)
    previous = GENESIS
    for expected, record in enumerate(records, start=1):
        sequence, record_id = record["sequence"], record["id"]
        if sequence != expected:
            return Problem(
                agent_id, expected, record_id, f"record {expected} is missing (found {sequence} next)"
            )
        if record["previousHash"] != previous:
            return Problem(
                agent_id, sequence, record_id, "previousHash is not the hash of the record before it"
            )
        content = {name: record.get(name) for name in CONTENT_FIELDS}
        algorithm, seal = record.get("hashAlgorithm"), record.get("legacySeal")
        if algorithm == KEYED:
            if not hmac.compare_digest(hash_of(previous, content, key=key), record["hash"]):
                return Problem(agent_id, sequence, record_id, "its content does not match its keyed hash "
                               "(HMAC-SHA-256): altered, or re-hashed without the key")  # fmt: skip
        elif algorithm == PLAIN:
            if sequence > sealed_to:
                return Problem(agent_id, sequence, record_id, "it is hashed without the key (SHA-256) and "
                               "no legacy seal vouches for it: rewritten without the key")  # fmt: skip
            if hash_of(previous, content, key=None) != record["hash"]:
                return Problem(agent_id, sequence, record_id, "its content does not match its hash (altered)")
        else:
            return Problem(agent_id, sequence, record_id, f"unknown hashAlgorithm {algorithm!r}")
        if seal is not None and (
            algorithm != PLAIN or not hmac.compare_digest(legacy_seal_of(record["hash"], key=key), seal)
        ):
            return Problem(agent_id, sequence, record_id, "its legacy seal does not verify (forged or moved)")
        previous = record["hash"]
    return None


def _check_head(
    agent_id: str, records: list[dict[str, Any]], head: AgentAuditHeadRow | None
) -> Problem | None:
    if head is None:
        return Problem(agent_id, None, None, "the chain has no head")
    last = records[-1]["hash"] if records else GENESIS
    if head.sequence != len(records) or head.hash != last:
        return Problem(
            agent_id,
            len(records) + 1,
            None,
            f"the chain ends at {len(records)} but its head is at {head.sequence}",
        )
    return None
