"""Console sessions and the console's action trail.

A session is what signing in to the console with an API token's credentials opens: 32 random bytes in a
cookie (only their SHA-256 is stored), expiring after PLATPAY_CONSOLE_SESSION_SECONDS of wall-clock time
(never a sandbox tenant's clock: moving it must not sign anyone out), revoked by signing out and when its token
is deleted. Each page reads the live session, its live token and the tenant in one query and acts as that
token: the same Principal, the same permissions as the API.

Every state-changing form carries the session's CSRF token: HMAC-SHA-256 of a fixed label under the session's
secret, so it needs no storage, differs per session and cannot be computed without the cookie.

Every action taken through the console is appended to the tenant's console trail, in the transaction of the
action, chained like the agents' audit trail (kit/crypto/chain.py, its own key): who (the token, the session),
what (the action, the subject), when, and the action's data."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.auth.principal import Principal, PrincipalKind
from platpay.auth.sessions import repository
from platpay.auth.sessions.models import ConsoleActionRow, ConsoleSessionRow
from platpay.db.database import Database
from platpay.kit import clock
from platpay.kit.crypto import chain
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.kit.rate_limits import Limit
from platpay.tenants import service as tenants_service

TRAIL_KEY_INFO = b"platpay console trail v1"
ACTION_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")  # what was done, past tense: REVIEW_DECIDED, CARD_FROZEN
_CSRF_LABEL = b"platpay console csrf v1"


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def csrf_token(secret: str) -> str:
    """The CSRF token of the session whose cookie holds `secret`."""
    return hmac.new(secret.encode(), _CSRF_LABEL, hashlib.sha256).hexdigest()


def csrf_matches(secret: str, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(csrf_token(secret), presented)


def signin_limits(
    *, client_id: str, address: str, per_client: int, per_address: int, window: int
) -> list[Limit]:
    """The sign-in attempts allowed per client id and per address (every attempt counts: a right secret
    after the limit is refused too, or guessing would go on)."""
    client = hashlib.sha256(client_id.encode(errors="replace")).hexdigest()[:32]
    return [
        Limit(f"console.signin:client:{client}", per_client, window, "sign-in attempts for this client id"),
        Limit(
            f"console.signin:address:{address[:64]}",
            per_address,
            window,
            "sign-in attempts from this address",
        ),
    ]


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    id: str
    principal: Principal
    token_name: str
    expires_at: datetime


async def open_session(
    session: AsyncSession,
    *,
    principal: Principal,
    token_name: str,
    ttl_seconds: int,
    address: str,
    user_agent: str,
) -> tuple[str, ConsoleSession]:
    """A new session for the token `principal` authenticated: the cookie's secret (not stored) and the
    session."""
    now = clock.real_now()
    secret = secrets.token_urlsafe(32)
    session_id = new_id("ConsoleSession")
    expires_at = now + timedelta(seconds=ttl_seconds)
    await repository.add_session(
        session,
        ConsoleSessionRow(
            id=session_id,
            tenant_id=principal.tenant.id,
            token_id=principal.id,
            secret_sha256=_digest(secret),
            address=address[:64],
            user_agent=user_agent[:200],
            created_at=now,
            expires_at=expires_at,
            revoked_at=None,
        ),
    )
    opened = ConsoleSession(id=session_id, principal=principal, token_name=token_name, expires_at=expires_at)
    return secret, opened


async def resolve(db: Database, *, secret: str) -> ConsoleSession | None:
    """The live session the cookie's `secret` opened, acting as its token; None when there is none (unknown,
    expired, revoked, or its token deleted)."""
    if not secret or len(secret) > 100:
        return None
    row = await repository.live_session(db, secret_sha256=_digest(secret), now=clock.real_now())
    if row is None:
        return None
    session_id, expires_at, token_id, token_name, permissions = row[:5]
    principal = Principal(
        kind=PrincipalKind.PLATFORM_TOKEN,
        id=token_id,
        permissions=frozenset(permissions),
        tenant=tenants_service.context_from_columns(tuple(row[5:])),
    )
    return ConsoleSession(id=session_id, principal=principal, token_name=token_name, expires_at=expires_at)


async def close_session(session: AsyncSession, *, secret: str) -> None:
    await repository.revoke(session, secret_sha256=_digest(secret), now=clock.real_now())


async def revoke_for_token(session: AsyncSession, *, tenant_id: str, token_id: str) -> None:
    """End every console session of a token (it is being deleted)."""
    await repository.revoke_for_token(session, tenant_id=tenant_id, token_id=token_id, now=clock.real_now())


# The trail.


def content_of(row: ConsoleActionRow) -> dict[str, Any]:
    """What a record's hash covers."""
    return {
        "id": row.id,
        "tenantId": row.tenant_id,
        "sequence": row.sequence,
        "tokenId": row.token_id,
        "sessionId": row.session_id,
        "action": row.action,
        "subjectType": row.subject_type,
        "subjectId": row.subject_id,
        "occurredAt": chain.timestamp(row.occurred_at),
        "data": row.data,
    }


async def record_action(
    session: AsyncSession,
    *,
    console: ConsoleSession,
    action: str,
    subject_type: str,
    subject_id: str,
    data: dict[str, Any] | None = None,
) -> ConsoleActionRow:
    """Append what `console` did to its tenant's trail, in the caller's transaction. `action` is one
    upper-case name (ACTION_NAME), as the agents' audit kinds are."""
    if not ACTION_NAME.fullmatch(action):
        raise ValueError(f"a console action is named like REVIEW_DECIDED, not {action!r}")
    tenant_id = console.principal.tenant.id
    head = await repository.lock_head(session, tenant_id=tenant_id)
    sequence, previous = head.sequence, head.hash
    row = ConsoleActionRow(
        id=new_id("ConsoleAction"),
        tenant_id=tenant_id,
        sequence=sequence + 1,
        token_id=console.principal.id,
        session_id=console.id,
        action=action,
        subject_type=subject_type,
        subject_id=subject_id,
        occurred_at=clock.real_now(),
        data=json.loads(json.dumps(data or {}, default=str)),
        previous_hash=previous,
        hash="",
    )
    row.hash = chain.hash_of(previous, content_of(row), key=chain.chain_key(TRAIL_KEY_INFO))
    await repository.append(session, record=row, head=head)
    return row


async def actions_for(
    session: AsyncSession, *, tenant_id: str, subject_id: str, limit: int = 50
) -> list[ConsoleActionRow]:
    """The latest console actions on one subject (a customer, a verification, a webhook delivery...)."""
    return await repository.actions_for(session, tenant_id=tenant_id, subject_id=subject_id, limit=limit)


async def actions_of_kind(
    session: AsyncSession, *, tenant_id: str, subject_type: str, limit: int = 20
) -> list[ConsoleActionRow]:
    """The latest console actions on subjects of one kind (e.g. every API token, deleted ones included:
    a deleted token has no page of its own to show them). One statement."""
    return await repository.actions_of_kind(
        session, tenant_id=tenant_id, subject_type=subject_type, limit=limit
    )


async def actions_for_subjects(
    session: AsyncSession, *, tenant_id: str, subject_ids: list[str], limit: int = 50
) -> list[ConsoleActionRow]:
    """The latest console actions on any of several subjects (a customer and its verifications), newest
    first, in one statement."""
    if not subject_ids:
        return []
    return await repository.actions_for_subjects(
        session, tenant_id=tenant_id, subject_ids=subject_ids, limit=limit
    )


async def list_actions(session: AsyncSession, *, tenant_id: str, params: PageParams) -> PageResult[Any]:
    return await paginate(
        session, repository.actions_query(tenant_id=tenant_id), id_column=ConsoleActionRow.id, params=params
    )


@dataclass(frozen=True, slots=True)
class TrailCheck:
    records: int
    problem: str | None  # None: every record's hash and link hold and the head is the last record


async def verify_trail(session: AsyncSession, *, tenant_id: str) -> TrailCheck:
    rows, head = await repository.chain(session, tenant_id=tenant_id)
    key = chain.chain_key(TRAIL_KEY_INFO)
    previous = chain.GENESIS
    for expected_sequence, row in enumerate(rows, start=1):
        if row.sequence != expected_sequence:
            return TrailCheck(
                len(rows), f"record {row.id}: sequence {row.sequence}, expected {expected_sequence}"
            )
        if row.previous_hash != previous:
            return TrailCheck(len(rows), f"record {row.id}: does not link to the record before it")
        if not hmac.compare_digest(chain.hash_of(previous, content_of(row), key=key), row.hash):
            return TrailCheck(len(rows), f"record {row.id}: its hash does not match its content")
        previous = row.hash
    last = (rows[-1].sequence, rows[-1].hash) if rows else (0, chain.GENESIS)
    if (head is not None and (head.sequence, head.hash) != last) or (head is None and rows):
        return TrailCheck(len(rows), "the trail's head is not its last record (records were removed)")
    return TrailCheck(len(rows), None)
