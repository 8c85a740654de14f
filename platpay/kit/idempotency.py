"""Idempotency-Key: one mechanism for every POST that creates a resource or moves money.

The effect, the stored response and the key are committed in ONE transaction, so a crash can never leave
an effect without its key or a key without its effect:

1. On PostgreSQL take a transaction-scoped advisory lock on (tenant, key), in the same statement that
   reads the stored response; if another request holds the lock, that duplicate is in flight: 409
   IDEMPOTENCY_KEY_IN_USE (retry later). (In a lean transaction that has not begun, db/lean.py, the read
   runs in autocommit and its lock guards only that read: a duplicate that runs meanwhile is caught by the
   key's primary key in step 3.) On SQLite writers are already serialized, so a duplicate simply waits and
   then finds the stored response.
2. A stored response for the key: same request fingerprint (method, path, body, calling API token) ->
   replay the identical status and body; a different fingerprint -> 400 INVALID_INPUT with
   details.reason IDEMPOTENCY_KEY_REUSED (the reference's 400 codes have none of its own), nothing
   runs. (A duplicate committing between the statement's snapshot and its lock is caught in step 3.)
3. Otherwise run the operation; its success is stored with the key in its own transaction. A 4xx
   ApiError (the request was executed and deterministically refused) rolls the operation's writes back
   and is stored under the key in a second transaction that claims the key again (if a duplicate stored
   an answer in between, that answer is replayed instead, so a key never has two answers). Anything else
   (5xx, crash) stores nothing, so a retry runs afresh; nor does a 401 (a missing or failed
   `Svc-Wallet-Signature` on a wallet-funded quote's execution): the request was not authorized, so it
   was never executed, and the retry carrying a valid stamp under the same key must run. No savepoint is needed on the success path. If
   storing the key finds it already stored (the race of step 2), the transaction rolls back and the
   stored answer is replayed.

Stored responses are sealed with the master key: a replay must be byte-identical, and some first
responses carry a secret that must not sit in the database in clear (POST /tokens' clientSecret).

A refusal some domain must record (an agent's money request refused by its policy: agents/audit/service.py) is
written by `on_refusal`, given the refusal: with a key, in the transaction that stores the refusal as the
key's answer (both commit or neither; a replay runs nothing, so records nothing); without one, in a
transaction of its own after the operation's rolled back. Only endpoints that pass it pay for it, and only
when they refuse.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, cast

from fastapi import Depends, Header, Request
from fastapi.responses import Response
from pydantic import BaseModel
from pydantic_core import to_jsonable_python
from sqlalchemy import BigInteger, String, Text, and_, bindparam, delete, func, literal, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from platpay.config import Settings
from platpay.db import json_text, lean
from platpay.db.base import Base
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.db.types import IdColumn, UtcDateTime
from platpay.db.unit_of_work import LeanFirst, LeanSession, Raced
from platpay.errors import ApiError, Conflict, InvalidInput
from platpay.kit import clock
from platpay.kit.api_model import ApiModel
from platpay.kit.crypto.sealing import Sealer, get_sealer

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


REPLAY_HEADER = "Idempotent-Replayed"
_UNIQUE_VIOLATION = "23505"  # PostgreSQL's SQLSTATE
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
# Lean statements: this runs on every request that moves money (no ORM identity map needed).
_STORED_COLUMNS = (_KEYS.c.fingerprint, _KEYS.c.response_status, _KEYS.c.response_body, _KEYS.c.expires_at)
_THIS_KEY = and_(_KEYS.c.tenant_id == bindparam("tenant_id"), _KEYS.c.key == bindparam("key"))
_STORED = Lean(select(*_STORED_COLUMNS).where(_THIS_KEY))
# PostgreSQL: the advisory lock and the stored answer (if any) in one row. It may run before a lean
# transaction's BEGIN (db/lean.py): the lock then guards only this read, and the key's primary key catches a
# duplicate that ran meanwhile (`_store`).
_LOCK_AND_STORED = Lean(
    select(
        func.pg_try_advisory_xact_lock(bindparam("lock_id", type_=BigInteger)), *_STORED_COLUMNS
    ).select_from(select(literal(1).label("one")).subquery().outerjoin(_KEYS, _THIS_KEY)),
    outside_transaction=True,
)
_DELETE = Lean(
    delete(_KEYS).where(_KEYS.c.tenant_id == bindparam("tenant_id"), _KEYS.c.key == bindparam("key"))
)
_INSERT = Lean(_KEYS.insert())


class IdempotencyKeyInUse(Conflict):
    code = "IDEMPOTENCY_KEY_IN_USE"


class IdempotencyKeyReused(InvalidInput):
    """400 INVALID_INPUT (a code of the reference's 400 enumeration); details.reason says why."""

    reason = "IDEMPOTENCY_KEY_REUSED"


class _Replay(Exception):
    """The key has a live stored answer: `response` replays it (see _claim)."""

    def __init__(self, response: Response) -> None:
        super().__init__("replay")
        self.response = response


class _StoredMeanwhile(Exception):
    """The key's row appeared between this request's claim and its store (see _claim)."""


Operation = Callable[[AsyncSession], Awaitable[tuple[int, Any]]]
LeanOperation = Callable[[LeanSession], Awaitable[tuple[int, Any]]]  # one whose every statement is lean
# Given an operation's refusal: what to write beside it (in the session given), or None for nothing.
OnRefusal = Callable[[ApiError], Callable[[LeanSession], Awaitable[None]] | None]


def fingerprint(method: str, path: str, body: Any, *, caller: str | None = None) -> str:
    """What makes two requests the same request: method, path, body and the calling credential. A key
    reused by another API token of the tenant is a different request (400), never a replay: the stored
    answer may hold what only the first caller may see (POST /tokens' clientSecret)."""
    canonical = json.dumps(
        [method.upper(), path, body, caller], sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


_PLAIN_PATH = re.compile(r"/[A-Za-z0-9._~:@!$&'()*+,;=/-]*")


def _path(request: Request) -> str:
    """`request.url.path` (what fingerprints have always held), without building the URL for a path it
    would keep as it is: one of plain characters not starting with `//` (the URL percent-encodes `?`, `#`
    and `\\`, and its parser drops tabs and newlines)."""
    path: str = request.scope["path"]
    if _PLAIN_PATH.fullmatch(path) and not path.startswith("//"):
        return path
    return request.url.path


def render(body: Any) -> bytes:
    """An answer's body as sent, stored and replayed."""
    return json_text.compact(body)


def _sealer(settings: Settings) -> Sealer:
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
    operation: Operation | LeanFirst[tuple[int, Any]],
    settings: Settings,
    on_refusal: OnRefusal | None = None,
) -> Response:
    """Run `operation(session) -> (status, json_body)` at most once per (tenant, key). A `LeanFirst`
    (db/unit_of_work.py): its lean attempt first in `db.lean_transaction()` (with a key, the one that claims and
    stores it), raced, its careful one. `on_refusal`: see the module docstring."""
    if not isinstance(operation, LeanFirst):
        return await _execute(
            db, tenant_id=tenant_id, key=key, request_fingerprint=request_fingerprint, operation=operation,
            lean=False, on_refusal=on_refusal, settings=settings,
        )  # fmt: skip
    try:
        return await _execute(
            db, tenant_id=tenant_id, key=key, request_fingerprint=request_fingerprint, operation=operation.lean,
            lean=True, on_refusal=on_refusal, settings=settings,
        )  # fmt: skip
    except Raced:  # its transaction rolled back: the careful attempt, from the start
        return await _execute(
            db, tenant_id=tenant_id, key=key, request_fingerprint=request_fingerprint,
            operation=operation.careful, lean=False, on_refusal=on_refusal, settings=settings,
        )  # fmt: skip


async def _execute(
    db: Database,
    *,
    tenant_id: str,
    key: str | None,
    request_fingerprint: str,
    operation: Operation,
    lean: bool,
    on_refusal: OnRefusal | None,
    settings: Settings,
) -> Response:
    """`execute` of one attempt; `lean`: the operation is a LeanOperation (it runs only lean statements), so
    it runs in `db.lean_transaction()` (with a key, beside the key's lean claim and store)."""
    if key is None:
        try:
            async with db.lean_transaction() if lean else db.transaction() as session:
                status, body = await operation(session)  # type: ignore[arg-type]  # lean: a LeanOperation
        except ApiError as error:
            write = on_refusal(error) if on_refusal is not None and _is_answer(error) else None
            if write is not None:  # the operation's transaction rolled back: the record gets one of its own
                async with db.transaction() as session:
                    await write(session)
            raise
        return _response(status, render(body), replayed=False)
    for _ in range(2):
        try:
            return await _execute_once(
                db,
                tenant_id=tenant_id,
                key=key,
                fingerprint=request_fingerprint,
                operation=operation,
                lean=lean,
                on_refusal=on_refusal,
                settings=settings,
            )
        except _StoredMeanwhile:
            # A duplicate committed its answer just before this request took the key (see _claim): this
            # request's writes were rolled back with its transaction; the next pass replays that answer.
            continue
    raise IdempotencyKeyInUse(  # a third request for the key raced this one twice: let the client retry
        f"a request with Idempotency-Key {key!r} is still in progress; retry shortly",
        headers={"Retry-After": "1"},
        details={"idempotencyKey": key},
    )


async def _execute_once(
    db: Database,
    *,
    tenant_id: str,
    key: str,
    fingerprint: str,
    operation: Operation,
    lean: bool,
    on_refusal: OnRefusal | None,
    settings: Settings,
) -> Response:
    """One pass of a keyed request: claim the key, run, store, in one transaction (a lean one for a
    LeanOperation: the claim and the store are lean statements too)."""
    try:
        async with db.lean_transaction() if lean else db.transaction() as session:
            await _claim(
                session, db, tenant_id=tenant_id, key=key, fingerprint=fingerprint, settings=settings
            )
            status, body = await operation(session)  # type: ignore[arg-type]  # lean: a LeanOperation
            rendered = render(body)
            await _store(
                session,
                tenant_id=tenant_id,
                key=key,
                fingerprint=fingerprint,
                status=status,
                body=rendered,
                settings=settings,
            )
        return _response(status, rendered, replayed=False)
    except _Replay as replay:  # the key's stored answer (its transaction rolled back: nothing was written)
        return replay.response
    except ApiError as error:
        if not _is_answer(error):
            raise
        refusal = error
    except Exception as error:
        if _key_taken(error):  # a duplicate stored it meanwhile: see _store
            raise _StoredMeanwhile from error
        raise
    # The operation refused the request (a 4xx: executed and deterministically refused). Its writes were
    # rolled back with its transaction; the refusal is stored under the key in a transaction of its own —
    # unless a duplicate got the key in between and stored its answer, which is then the key's answer —
    # with whatever `on_refusal` writes beside it (a failed store rolls that back too).
    write = on_refusal(refusal) if on_refusal is not None else None
    try:
        async with db.transaction() as session:
            await _claim(
                session, db, tenant_id=tenant_id, key=key, fingerprint=fingerprint, settings=settings
            )
            if write is not None:
                await write(session)
            rendered = render(refusal.body())
            await _store(
                session,
                tenant_id=tenant_id,
                key=key,
                fingerprint=fingerprint,
                status=refusal.status,
                body=rendered,
                settings=settings,
            )
    except _Replay as replay:
        return replay.response
    except Exception as error:
        if _key_taken(error):
            raise _StoredMeanwhile from error
        raise
    return _response(refusal.status, rendered, replayed=False)


def _is_answer(error: ApiError) -> bool:
    """Whether the operation's error is its answer to the request (stored under the key): a 4xx, but not a
    401 (a wallet stamp that failed: nothing ran) nor the key's own errors; a 5xx never is."""
    return (
        error.status < 500
        and error.status != 401
        and not isinstance(error, (IdempotencyKeyInUse, IdempotencyKeyReused))
    )


async def _claim(
    session: LeanSession, db: Database, *, tenant_id: str, key: str, fingerprint: str, settings: Settings
) -> None:
    """Own `key` for this transaction, or raise: `_Replay` with the stored response when the key has a live
    one, IdempotencyKeyInUse when a duplicate is in flight (PostgreSQL), IdempotencyKeyReused when the key
    was used for another request. In a lean transaction on PostgreSQL the lookup goes with the operation's
    first read (`lean.ahead`: one round trip fewer), so these come out of that read."""

    async def check(found: tuple[Any, ...] | None) -> None:
        replay = await _stored_answer(
            session, db, found, tenant_id=tenant_id, key=key, fingerprint=fingerprint, settings=settings
        )
        if replay is not None:
            raise _Replay(replay)

    if db.dialect == "postgresql":
        # The transaction-scoped lock (released by the COMMIT that stores the key, or by a rollback) and
        # the stored answer in one statement. The statement reads the keys as of its start, so a duplicate
        # that committed between that and taking the lock goes unseen: this request then runs and fails to
        # store the key (unique violation), rolls back, and replays the duplicate's answer instead.
        params = {"lock_id": _lock_id(tenant_id, key), "tenant_id": tenant_id, "key": key}
        await lean.ahead(session, _LOCK_AND_STORED, params, check)
    else:  # SQLite: one writer at a time, so the lookup alone decides
        await check(await lean.first(session, _STORED, {"tenant_id": tenant_id, "key": key}))


async def _stored_answer(
    session: LeanSession,
    db: Database,
    found: tuple[Any, ...] | None,
    *,
    tenant_id: str,
    key: str,
    fingerprint: str,
    settings: Settings,
) -> Response | None:
    """What the claim's row says: None when the key has no live stored response (run the operation), else
    the replay of the stored one; raises when a duplicate holds the key's lock or the key was used for
    another request."""
    if db.dialect == "postgresql":
        got_lock, *stored = found or (False,)
        if not got_lock:
            raise IdempotencyKeyInUse(
                f"a request with Idempotency-Key {key!r} is still in progress; retry shortly",
                headers={"Retry-After": "1"},
                details={"idempotencyKey": key},
            )
    else:
        stored = list(found or ())
    if not stored or stored[0] is None:
        return None
    stored_fingerprint, response_status, response_body, expires_at = stored
    if expires_at <= clock.real_now():
        await lean.rows(session, _DELETE, {"tenant_id": tenant_id, "key": key})
        return None
    if stored_fingerprint != fingerprint:
        raise IdempotencyKeyReused(
            f"Idempotency-Key {key!r} was already used with a different request (or by another API "
            "token); use a new key for a new request",
            details={"reason": IdempotencyKeyReused.reason, "idempotencyKey": key},
        )
    body_bytes = _sealer(settings).open(response_body, purpose=f"{SEAL_PURPOSE}:{tenant_id}:{key}")
    return _response(response_status, body_bytes, replayed=True)


async def _store(
    session: LeanSession,
    *,
    tenant_id: str,
    key: str,
    fingerprint: str,
    status: int,
    body: bytes,
    settings: Settings,
) -> None:
    now = clock.real_now()
    # Deferred (PostgreSQL: sent with the operation's other deferred writes, db/lean.py), so its primary key
    # refuses it when the transaction's writes are sent or it commits: a duplicate stored the key meanwhile
    # (the claim's lock guards only its own read where a lean transaction has not begun). `_execute_once`
    # tells that refusal (`_key_taken`) from any other and replays the duplicate's answer.
    await lean.defer(
        session,
        _INSERT,
        {
            "tenant_id": tenant_id,
            "key": key,
            "fingerprint": fingerprint,
            "response_status": status,
            "response_body": _sealer(settings).seal(body, purpose=f"{SEAL_PURPOSE}:{tenant_id}:{key}"),
            "created_at": now,
            "expires_at": now + timedelta(hours=settings.idempotency_retention_hours),
        },
    )


def _key_taken(error: BaseException) -> bool:
    """Whether `error` is the key's primary key refusing this request's INSERT (`_store`): SQLAlchemy's
    IntegrityError from an ORM session, the driver's own from a LeanTransaction; another constraint's
    refusal (a deferred write's sent in the same statement) is not."""
    cause: Any
    if isinstance(error, IntegrityError):
        cause = error.orig
        cause = getattr(cause, "__cause__", None) or cause
    else:
        cause = error
    if getattr(cause, "sqlstate", None) == _UNIQUE_VIOLATION:  # PostgreSQL: the constraint's table
        return getattr(cause, "table_name", None) == _KEYS.name
    # SQLite: its message names the columns, "UNIQUE constraint failed: idempotency_keys.tenant_id, ..."
    return isinstance(error, IntegrityError) and f"constraint failed: {_KEYS.name}." in str(cause)


async def purge_expired(session: AsyncSession, *, before: datetime) -> int:
    result = await session.execute(delete(IdempotencyKeyRow).where(IdempotencyKeyRow.expires_at <= before))
    return cast("CursorResult[Any]", result).rowcount or 0


async def find(session: AsyncSession, *, tenant_id: str, key: str) -> IdempotencyKeyRow | None:
    return await session.scalar(
        select(IdempotencyKeyRow).where(
            IdempotencyKeyRow.tenant_id == tenant_id, IdempotencyKeyRow.key == key
        )
    )


class Idempotent:
    """What every idempotent endpoint does, as a FastAPI dependency: `idem: Idempotent = Idempotency` takes the
    request and its Idempotency-Key header (documented on the operation as `IdempotencyKey` declares it);
    `return await idem.run(body, lambda s: service.f(s, ...), status=201)` fingerprints the request, runs the
    operation at most once per (tenant, key) in one unit of work and answers `status` with the resource it
    returns (or replays the first answer).

    The tenant and the calling credential are the ones authentication recorded on the request
    (`request.state.tenant_id`, `request.state.caller`), read when `run` is called, so the endpoint's
    principal dependency may be declared before or after this one.

    The one fingerprint rule for bodies (`canonical_body`): the body's JSON as the API spells it."""

    __slots__ = ("key", "request")

    def __init__(self, request: Request, idempotency_key: IdempotencyKey = None) -> None:
        self.request = request
        self.key = idempotency_key

    async def run(
        self,
        body: BaseModel | Mapping[str, Any] | None,
        operation: Callable[[AsyncSession], Awaitable[ApiModel]] | LeanFirst[Any],
        *,
        status: int = 201,
        on_refusal: OnRefusal | None = None,
    ) -> Response:
        """`operation`: a `LeanFirst` (db/unit_of_work.py) runs its lean attempt first, so a request without
        an Idempotency-Key runs it in `Database.lean_transaction()`, which has no ORM session. `on_refusal`:
        what to record beside a refusal (see the module docstring)."""
        request = self.request
        state = request.state

        def answering(attempt: Callable[[Any], Awaitable[ApiModel]]) -> LeanOperation:
            async def run(session: LeanSession) -> tuple[int, Any]:
                return status, (await attempt(session)).to_api()

            return run

        run: Operation | LeanFirst[tuple[int, Any]] = (
            LeanFirst(answering(operation.lean), answering(operation.careful))
            if isinstance(operation, LeanFirst)
            else answering(operation)
        )

        return await execute(
            request.app.state.db,
            tenant_id=state.tenant_id,
            key=self.key,
            request_fingerprint=fingerprint(
                request.method,
                _path(request),
                canonical_body(body),
                caller=getattr(state, "caller", None),
            ),
            operation=run,
            settings=request.app.state.settings,
            on_refusal=on_refusal,
        )


async def idempotent(request: Request, idempotency_key: IdempotencyKey = None) -> Idempotent:
    """The `Idempotent` of a request. A coroutine on purpose: FastAPI runs a dependency that is a class or a
    plain function in a worker thread, a thread hop per request (`Depends()` on the class cost the transfer
    path ~10 % of its CPU; tests/kit/test_routing_dependencies.py keeps every dependency a coroutine)."""
    return Idempotent(request, idempotency_key)


Idempotency = Depends(idempotent)


def canonical_body(body: BaseModel | Mapping[str, Any] | None) -> Any:
    """A request body as the fingerprint sees it, one rule for every endpoint: its JSON as the API spells
    it. A request model is serialized in JSON mode with its API (camelCase alias) field names and its
    defaults included (so a field omitted and the same field sent with its default value are the same
    request); a mapping is taken as already holding API-named JSON values (an upload's
    `{"sha256": ..., "size": ...}`) and None is a request without a body. (POST /quotes and /sandbox/send
    fingerprinted this form before; the other endpoints used Python field names, the same form wherever a
    body's field names are single words.)"""
    return to_jsonable_python(body, by_alias=True)
