"""Idempotency-Key: one mechanism for every POST that creates a resource or moves money.

The effect, the stored response and the key are committed in ONE transaction, so a crash can never leave
an effect without its key or a key without its effect:

1. On PostgreSQL take a transaction-scoped advisory lock on (tenant, key); if another request holds it,
   that duplicate is in flight: 409 IDEMPOTENCY_KEY_IN_USE (retry later). On SQLite writers are already
   serialized, so a duplicate simply waits and then finds the stored response.
2. A stored response for the key: same request fingerprint -> replay the identical status and body;
   a different fingerprint -> 400 IDEMPOTENCY_KEY_REUSED, nothing runs.
3. Otherwise run the operation inside a savepoint. Success or a 4xx ApiError (the request was executed
   and deterministically refused) is stored with the key; the 4xx's partial writes are rolled back to the
   savepoint. Anything else (5xx, crash) rolls the whole transaction back, key included, so a retry runs
   afresh.

Stored responses are sealed with the master key: a replay must be byte-identical, and some first
responses carry a secret that must not sit in the database in clear (POST /tokens' clientSecret).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Annotated, Any

from fastapi import Header, Request
from fastapi.responses import Response
from pydantic import BaseModel
from sqlalchemy import String, Text, bindparam, delete, select, text
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from platpay.config import get_settings
from platpay.db.base import Base
from platpay.db.database import Database
from platpay.db.types import IdColumn, UtcDateTime
from platpay.errors import ApiError, Conflict, InvalidInput
from platpay.kit import clock
from platpay.kit.api_model import ApiModel
from platpay.kit.crypto.sealing import get_sealer

REPLAY_HEADER = "Idempotent-Replayed"
SEAL_PURPOSE = "idempotent-response"

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        pattern=r"^[\x21-\x7e]+$",
        description="makes a retry safe: the first response is stored for 48 h and replayed",
    ),
]


class IdempotencyKeyRow(Base):
    __tablename__ = "idempotency_keys"

    tenant_id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    response_status: Mapped[int]
    response_body: Mapped[str] = mapped_column(Text)  # sealed; see the module docstring
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    expires_at: Mapped[datetime] = mapped_column(UtcDateTime(), index=True)


_KEYS = IdempotencyKeyRow.__table__
# Core statements built once: this runs on every request that moves money (no ORM identity map needed).
_STORED = select(
    _KEYS.c.fingerprint, _KEYS.c.response_status, _KEYS.c.response_body, _KEYS.c.expires_at
).where(_KEYS.c.tenant_id == bindparam("tenant_id"), _KEYS.c.key == bindparam("key"))


class IdempotencyKeyInUse(Conflict):
    code = "IDEMPOTENCY_KEY_IN_USE"


class IdempotencyKeyReused(InvalidInput):
    code = "IDEMPOTENCY_KEY_REUSED"


Operation = Callable[[AsyncSession], Awaitable[tuple[int, Any]]]


def fingerprint(method: str, path: str, body: Any) -> str:
    canonical = json.dumps([method.upper(), path, body], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def render(body: Any) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _sealer():  # type: ignore[no-untyped-def]
    settings = get_settings()
    return get_sealer(settings.master_key, settings.var_dir)


def _lock_id(tenant_id: str, key: str) -> int:
    digest = hashlib.sha256(f"idem\x00{tenant_id}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _response(status: int, body: bytes, *, replayed: bool) -> Response:
    headers = {REPLAY_HEADER: "true"} if replayed else {}
    if status == 204:
        return Response(status_code=status, headers=headers)
    return Response(content=body, status_code=status, media_type="application/json", headers=headers)


async def execute(
    db: Database,
    *,
    tenant_id: str,
    key: str | None,
    request_fingerprint: str,
    operation: Operation,
) -> Response:
    """Run `operation(session) -> (status, json_body)` at most once per (tenant, key)."""
    if key is None:
        async with db.transaction() as session:
            status, body = await operation(session)
        return _response(status, render(body), replayed=False)

    async with db.transaction() as session:
        if db.dialect == "postgresql":
            got_lock = await session.scalar(
                text("SELECT pg_try_advisory_xact_lock(:lock_id)"), {"lock_id": _lock_id(tenant_id, key)}
            )
            if not got_lock:
                raise IdempotencyKeyInUse(
                    f"a request with Idempotency-Key {key!r} is still in progress; retry shortly",
                    headers={"Retry-After": "1"},
                    details={"idempotencyKey": key},
                )
        now = clock.now()
        stored = (await session.execute(_STORED, {"tenant_id": tenant_id, "key": key})).first()
        if stored is not None and stored.expires_at <= now:
            await session.execute(
                delete(IdempotencyKeyRow).where(
                    IdempotencyKeyRow.tenant_id == tenant_id, IdempotencyKeyRow.key == key
                )
            )
            stored = None
        if stored is not None:
            if stored.fingerprint != request_fingerprint:
                raise IdempotencyKeyReused(
                    f"Idempotency-Key {key!r} was already used with a different request; "
                    "use a new key for a new request",
                    details={"idempotencyKey": key},
                )
            body_bytes = _sealer().open(stored.response_body, purpose=f"{SEAL_PURPOSE}:{tenant_id}:{key}")
            return _response(stored.response_status, body_bytes, replayed=True)

        try:
            async with session.begin_nested():
                status, body = await operation(session)
        except ApiError as error:
            if error.status >= 500 or isinstance(error, IdempotencyKeyInUse):
                raise
            status, body = error.status, error.body()
        rendered = render(body)
        await session.execute(
            _KEYS.insert(),
            {
                "tenant_id": tenant_id,
                "key": key,
                "fingerprint": request_fingerprint,
                "response_status": status,
                "response_body": _sealer().seal(rendered, purpose=f"{SEAL_PURPOSE}:{tenant_id}:{key}"),
                "created_at": now,
                "expires_at": now + timedelta(hours=get_settings().idempotency_retention_hours),
            },
        )
    return _response(status, rendered, replayed=False)


async def purge_expired(session: AsyncSession, *, before: datetime) -> int:
    result = await session.execute(delete(IdempotencyKeyRow).where(IdempotencyKeyRow.expires_at <= before))
    return result.rowcount or 0


async def find(session: AsyncSession, *, tenant_id: str, key: str) -> IdempotencyKeyRow | None:
    return await session.scalar(
        select(IdempotencyKeyRow).where(
            IdempotencyKeyRow.tenant_id == tenant_id, IdempotencyKeyRow.key == key
        )
    )


async def respond(
    request: Request,
    *,
    tenant_id: str,
    key: str | None,
    body: BaseModel | dict[str, Any],
    operation: Callable[[AsyncSession], Awaitable[ApiModel]],
    status: int = 201,
) -> Response:
    """What every idempotent endpoint does: fingerprint the request, run `operation` at most once per key,
    answer `status` with the resource it returns (or replay the first answer)."""
    payload = body.model_dump(mode="json") if isinstance(body, BaseModel) else body

    async def run(session: AsyncSession) -> tuple[int, Any]:
        return status, (await operation(session)).to_api()

    return await execute(
        request.app.state.db,
        tenant_id=tenant_id,
        key=key,
        request_fingerprint=fingerprint(request.method, request.url.path, payload),
        operation=run,
    )
