"""All SQL on the wallets domain's tables, always tenant-scoped.

The statements of an EMAIL_OTP login (the target: >= 200 logins/s on one process, bench/wallet_auth.py) are
lean (db/lean.py), so that a login runs in `Database.lean_transaction()` (no ORM session on PostgreSQL): the
credential read on every challenge and verify (its row locked), an UNVERIFIED one made VERIFIED, the OTP
issued, used and read in one statement, the tenant's enclave key, the signed-retry challenge stored, taken
(and read, to say why not), the signing session looked up, the session and its audit row inserted. The rest
go through the ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import JSON, BigInteger, String, all_, any_, bindparam, func, select, true, update
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from platpay.db import lean, portable
from platpay.db.lean import Lean
from platpay.db.rows import get_scoped
from platpay.db.unit_of_work import LeanSession
from platpay.kit import rate_limits
from platpay.wallets.models import (
    AuditRow,
    ChallengeRow,
    CredentialRow,
    EnclaveKeyRow,
    OtpRow,
    SessionRow,
    WalletRow,
)
from platpay.wallets.state import CredentialStatus

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


# Wallets


async def insert_wallets(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    await portable.insert_ignore_many(session, WalletRow.__table__, rows)


async def get_wallet(session: AsyncSession, *, tenant_id: str, account_id: str) -> WalletRow | None:
    return await session.scalar(
        select(WalletRow).where(WalletRow.tenant_id == tenant_id, WalletRow.account_id == account_id)
    )


async def lock_wallet(session: AsyncSession, *, tenant_id: str, account_id: str) -> None:
    """Serialize changes to one wallet's set of credentials (PostgreSQL row lock; SQLite serializes writers)."""
    await session.execute(
        select(WalletRow.account_id)
        .where(WalletRow.tenant_id == tenant_id, WalletRow.account_id == account_id)
        .with_for_update()
    )


async def wallets_without_credentials(
    session: AsyncSession, *, tenant_id: str, customer_id: str
) -> list[str]:
    live = select(CredentialRow.id).where(
        CredentialRow.account_id == WalletRow.account_id, CredentialRow.revoked_at.is_(None)
    )
    rows = await session.scalars(
        select(WalletRow.account_id)
        .where(WalletRow.tenant_id == tenant_id, WalletRow.customer_id == customer_id, ~live.exists())
        .order_by(WalletRow.account_id)
    )
    return list(rows)


# Credentials


async def insert_credentials(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(CredentialRow.__table__.insert(), rows)


def _live_credentials(tenant_id: str) -> Any:
    return select(CredentialRow).where(
        CredentialRow.tenant_id == tenant_id, CredentialRow.revoked_at.is_(None)
    )


async def get_credential(
    session: LeanSession, *, tenant_id: str, credential_id: str, for_update: bool = False
) -> CredentialRow | None:
    """The live credential: in an ORM session a persistent instance (changes to it flush with the unit of
    work), in a lean transaction a read-only snapshot."""
    row: CredentialRow | None = await lean.get(
        session, CredentialRow, for_update=for_update, id=credential_id, tenant_id=tenant_id, revoked_at=None
    )
    return row


_CREDENTIAL_COLUMNS, _CREDENTIAL_KEYS = lean.columns_of(CredentialRow)


def _take_otp(newest: Any) -> Any:
    """The OTP whose id `newest` selects marked used, if it is unused and unexpired at :now; it is returned."""
    return (
        update(OtpRow)
        .where(
            OtpRow.id == newest,
            OtpRow.used_at.is_(None),
            OtpRow.expires_at > bindparam("now", type_=OtpRow.expires_at.type),
        )
        .values(used_at=bindparam("now", type_=OtpRow.used_at.type))
        .returning(*_OTP_COLUMNS)
    )


def _counted_credential(*, taking: str | None = None) -> Any:
    credential = (
        select(*_CREDENTIAL_COLUMNS)
        .where(
            CredentialRow.id == bindparam("credential_id"),
            CredentialRow.tenant_id == bindparam("tenant_id"),
            CredentialRow.revoked_at.is_(None),
        )
        .with_for_update()
        .cte("credential")
    )
    start, end = BigInteger(), BigInteger()
    counted = rate_limits.counting(
        credential,
        [
            (
                bindparam("credential_key", type_=String()),
                bindparam("credential_window_start", type_=start),
                bindparam("credential_window_end", type_=end),
            ),
            (
                bindparam("account_key_prefix", type_=String()) + credential.c.account_id,
                bindparam("account_window_start", type_=start),
                bindparam("account_window_end", type_=end),
            ),
        ],
    )
    counts = (
        select(counted.c.count).where(counted.c.key == bindparam("credential_key")).scalar_subquery(),
        select(counted.c.count).where(counted.c.key != bindparam("credential_key")).scalar_subquery(),
    )
    if taking is None:
        return select(*credential.c, *counts)
    # What the attempt's work takes first, in the same statement once the credential is locked (the UPDATE
    # reads the credential's CTE: the same lock order as counting and then taking it apart). A concurrent
    # taker of the same row makes this UPDATE wait for it and then re-check the row (found used: nothing
    # taken), as the statement alone would.
    if taking == "challenge":  # `_TAKE_CHALLENGE`
        taken = (
            update(ChallengeRow)
            .where(
                ChallengeRow.tenant_id == bindparam("tenant_id"),
                ChallengeRow.id == bindparam("request_id"),
                ChallengeRow.consumed_at.is_(None),
                ChallengeRow.expires_at > bindparam("now", type_=ChallengeRow.expires_at.type),
                select(credential.c.id).exists(),
            )
            .values(consumed_at=bindparam("now", type_=ChallengeRow.consumed_at.type))
            .returning(*_CHALLENGE_COLUMNS)
            .cte("taken")
        )
    else:  # "otp": `_TAKE_OTP`. Its snapshot is the statement's, taken before it waited for the lock: an
        # issuance committed meanwhile is not seen, but it marked this older one used (`insert_otp`), which
        # the UPDATE's re-check of the row then finds.
        newest = (
            select(OtpRow.id)
            .where(
                OtpRow.tenant_id == bindparam("tenant_id"),
                OtpRow.credential_id == select(credential.c.id).scalar_subquery(),
            )
            .order_by(OtpRow.created_at.desc(), OtpRow.id.desc())
            .limit(1)
            .scalar_subquery()
        )
        taken = _take_otp(newest).cte("taken")
    return select(*credential.c, *counts, *taken.c).select_from(credential).outerjoin(taken, true())


# session.info: what `counted_credential` took for the attempt's work, (request_id or credential_id, the
# row or None), which `take_challenge` / `take_otp` then answer without a statement of their own
_TAKEN_CHALLENGE = "platpay_wallets_taken_challenge"
_TAKEN_OTP = "platpay_wallets_taken_otp"


async def counted_credential(
    session: LeanSession,
    *,
    tenant_id: str,
    credential_id: str,
    credential_limit: tuple[str, int, int],
    account_limit: tuple[str, int, int],
    retry_request_id: str | None = None,
    take_otp: bool = False,
    now: datetime | None = None,
) -> tuple[CredentialRow, dict[str, int]] | None:
    """PostgreSQL, one statement: the live credential, its row locked until the transaction ends, and one
    attempt counted against the limit (key, window start, window end) `credential_limit` and the one whose
    key is `account_limit`'s followed by the credential's account id; (a read-only snapshot of the
    credential, the counts by key), or None when there is no such credential (nothing is counted).

    `retry_request_id` (with `now`): the same statement also consumes that pending signed-retry challenge
    (`take_challenge`'s UPDATE), and `take_challenge` in this transaction answers what it took without
    another statement; `take_otp`: likewise the credential's pending OTP (`take_otp`). The transaction's
    rollback (a 429 past the limits, any refusal) gives it back."""
    prefix, account_start, account_end = account_limit
    params = {
        "tenant_id": tenant_id,
        "credential_id": credential_id,
        "credential_key": credential_limit[0],
        "credential_window_start": credential_limit[1],
        "credential_window_end": credential_limit[2],
        "account_key_prefix": prefix,
        "account_window_start": account_start,
        "account_window_end": account_end,
    }
    if retry_request_id is not None:
        params |= {"request_id": retry_request_id, "now": now}
        row = await lean.first(session, _COUNTED_CREDENTIAL_TAKING_CHALLENGE, params)
    elif take_otp:
        row = await lean.first(session, _COUNTED_CREDENTIAL_TAKING_OTP, params | {"now": now})
    else:
        row = await lean.first(session, _COUNTED_CREDENTIAL, params)
    if row is None:
        return None
    width = len(_CREDENTIAL_KEYS)
    credential: CredentialRow = lean.snapshot(CredentialRow, _CREDENTIAL_KEYS, row[:width])
    counts = {credential_limit[0]: row[width], prefix + credential.account_id: row[width + 1]}
    taken = row[width + 2 :]
    if retry_request_id is not None:
        session.info[_TAKEN_CHALLENGE] = (
            retry_request_id,
            None if taken[0] is None else lean.snapshot(ChallengeRow, _CHALLENGE_KEYS, taken),
        )
    elif take_otp:
        session.info[_TAKEN_OTP] = (
            credential_id,
            None if taken[0] is None else lean.snapshot(OtpRow, _OTP_KEYS, taken),
        )
    return credential, counts


_MARK_VERIFIED = Lean(
    update(CredentialRow)
    .where(
        CredentialRow.tenant_id == bindparam("tenant_id"),
        CredentialRow.id == bindparam("credential_id"),
        CredentialRow.status == bindparam("unverified"),
    )
    .values(
        status=bindparam("verified", type_=CredentialRow.status.type),
        verified_at=bindparam("now", type_=CredentialRow.verified_at.type),
        updated_at=bindparam("now", type_=CredentialRow.updated_at.type),
    )
)


async def mark_verified(
    session: LeanSession, *, credential: CredentialRow, status: str, now: datetime
) -> None:
    """An UNVERIFIED credential's first successful verify (`status`: VERIFIED), in one conditional UPDATE;
    `credential` (an instance or a snapshot) shows the new values without the unit of work writing them again."""
    await lean.rows(
        session,
        _MARK_VERIFIED,
        {
            "tenant_id": credential.tenant_id,
            "credential_id": credential.id,
            "unverified": CredentialStatus.UNVERIFIED.value,
            "verified": status,
            "now": now,
        },
    )
    for name, value in (("status", status), ("verified_at", now), ("updated_at", now)):
        set_committed_value(credential, name, value)


async def credentials_of(session: AsyncSession, *, tenant_id: str, account_id: str) -> list[CredentialRow]:
    stmt = (
        _live_credentials(tenant_id).where(CredentialRow.account_id == account_id).order_by(CredentialRow.id)
    )
    return list(await session.scalars(stmt))


async def email_otp_credentials_of_customer(
    session: AsyncSession, *, tenant_id: str, customer_id: str, for_update: bool = False
) -> list[CredentialRow]:
    stmt = (
        _live_credentials(tenant_id)
        .where(CredentialRow.customer_id == customer_id, CredentialRow.type == "EMAIL_OTP")
        .order_by(CredentialRow.id)
    )
    if for_update:
        stmt = stmt.with_for_update()
    return list(await session.scalars(stmt))


async def passkey_registered(
    session: AsyncSession, *, tenant_id: str, account_id: str, credential_id: str
) -> bool:
    stmt = _live_credentials(tenant_id).where(
        CredentialRow.account_id == account_id, CredentialRow.passkey_credential_id == credential_id
    )
    return (await session.scalar(stmt)) is not None


async def has_verified_credential(session: AsyncSession, *, tenant_id: str, account_id: str) -> bool:
    stmt = _live_credentials(tenant_id).where(
        CredentialRow.account_id == account_id, CredentialRow.status == CredentialStatus.VERIFIED
    )
    return (await session.scalar(stmt.limit(1))) is not None


# Sessions


_INSERT_SESSION = Lean(SessionRow.__table__.insert())


_SESSION_KEYS = lean.columns_of(SessionRow)[1]


async def insert_session(session: LeanSession, values: dict[str, Any]) -> SessionRow:
    """Insert a session (every column given; deferred: PostgreSQL's write buffer sends it with the
    transaction's next statement, db/lean.py); the row as a read-only snapshot (a session row is never
    changed but by `revoke_session`'s UPDATE)."""
    await lean.defer(session, _INSERT_SESSION, values)
    row: SessionRow = lean.snapshot(SessionRow, _SESSION_KEYS, [values[key] for key in _SESSION_KEYS])
    return row


def _active_sessions(tenant_id: str, now: datetime) -> Any:
    return select(SessionRow).where(
        SessionRow.tenant_id == tenant_id, SessionRow.revoked_at.is_(None), SessionRow.expires_at > now
    )


async def get_session(session: AsyncSession, *, tenant_id: str, session_id: str) -> SessionRow | None:
    return await get_scoped(session, SessionRow, id=session_id, tenant_id=tenant_id)


async def get_active_session(
    session: AsyncSession, *, tenant_id: str, session_id: str, now: datetime
) -> SessionRow | None:
    return await session.scalar(_active_sessions(tenant_id, now).where(SessionRow.id == session_id))


async def active_sessions_of(
    session: AsyncSession, *, tenant_id: str, account_id: str, now: datetime
) -> list[tuple[SessionRow, CredentialRow]]:
    stmt = (
        select(SessionRow, CredentialRow)
        .join(CredentialRow, CredentialRow.id == SessionRow.credential_id)
        .where(
            SessionRow.tenant_id == tenant_id,
            SessionRow.account_id == account_id,
            SessionRow.revoked_at.is_(None),
            SessionRow.expires_at > now,
            CredentialRow.revoked_at.is_(None),
        )
        .order_by(SessionRow.id)
    )
    return [(row[0], row[1]) for row in (await session.execute(stmt)).all()]


def _signing_session(account_ids: Any, excluded: Any) -> Any:
    return (
        select(*_SESSION_COLUMNS)
        .join(CredentialRow, CredentialRow.id == SessionRow.credential_id)
        .where(
            SessionRow.tenant_id == bindparam("tenant_id"),
            SessionRow.public_key == bindparam("public_key"),
            account_ids,
            excluded,
            SessionRow.revoked_at.is_(None),
            SessionRow.expires_at > bindparam("now", type_=SessionRow.expires_at.type),
            CredentialRow.revoked_at.is_(None),
        )
        .order_by(SessionRow.id.desc())
        .limit(1)
    )


def _json_list(name: str) -> Any:
    return select(func.json_each(bindparam(name, type_=JSON)).table_valued("value").c.value)


_SESSION_COLUMNS = lean.columns_of(SessionRow)[0]
# The lists bound whole (PostgreSQL arrays, SQLite JSON arrays): one statement whatever their lengths.
_SIGNING_SESSION = Lean(
    _signing_session(
        SessionRow.account_id.in_(_json_list("account_ids")),
        SessionRow.credential_id.not_in(_json_list("excluded_credential_ids")),
    ),
    dialects={
        "postgresql": _signing_session(
            SessionRow.account_id
            == any_(bindparam("account_ids", type_=postgresql.ARRAY(SessionRow.account_id.type))),
            SessionRow.credential_id
            != all_(
                bindparam("excluded_credential_ids", type_=postgresql.ARRAY(SessionRow.credential_id.type))
            ),
        )
    },
)


async def signing_session(
    session: LeanSession,
    *,
    tenant_id: str,
    public_key: str,
    account_ids: Sequence[str],
    excluded_credential_ids: Sequence[str],
    now: datetime,
) -> SessionRow | None:
    """An active session with API key `public_key` on one of `account_ids`, of a live credential not in
    `excluded_credential_ids` (the newest, if the same key was issued twice); a read-only snapshot."""
    row = await lean.first(
        session,
        _SIGNING_SESSION,
        {
            "tenant_id": tenant_id,
            "public_key": public_key,
            "account_ids": list(account_ids),
            "excluded_credential_ids": list(excluded_credential_ids),
            "now": now,
        },
    )
    if row is None:
        return None
    found: SessionRow = lean.snapshot(SessionRow, _SESSION_KEYS, row)
    return found


async def revoke_session(session: AsyncSession, *, tenant_id: str, session_id: str, now: datetime) -> bool:
    """Revoke an active session; False when it was not active (already revoked, expired, unknown)."""
    result = await session.execute(
        update(SessionRow)
        .where(
            SessionRow.tenant_id == tenant_id,
            SessionRow.id == session_id,
            SessionRow.revoked_at.is_(None),
            SessionRow.expires_at > now,
        )
        .values(revoked_at=now)
    )
    return (cast("CursorResult[Any]", result).rowcount or 0) == 1


async def revoke_sessions_of_credential(
    session: AsyncSession, *, tenant_id: str, credential_id: str, now: datetime
) -> int:
    result = await session.execute(
        update(SessionRow)
        .where(
            SessionRow.tenant_id == tenant_id,
            SessionRow.credential_id == credential_id,
            SessionRow.revoked_at.is_(None),
        )
        .values(revoked_at=now)
    )
    return cast("CursorResult[Any]", result).rowcount or 0


# Challenges


_INSERT_CHALLENGE = Lean(ChallengeRow.__table__.insert())
_CHALLENGE_COLUMNS, _CHALLENGE_KEYS = lean.columns_of(ChallengeRow)
_TAKE_CHALLENGE = Lean(
    update(ChallengeRow)
    .where(
        ChallengeRow.tenant_id == bindparam("tenant_id"),
        ChallengeRow.id == bindparam("request_id"),
        ChallengeRow.consumed_at.is_(None),
        ChallengeRow.expires_at > bindparam("now", type_=ChallengeRow.expires_at.type),
    )
    .values(consumed_at=bindparam("now", type_=ChallengeRow.consumed_at.type))
    .returning(*_CHALLENGE_COLUMNS)
)


async def insert_challenge(session: LeanSession, row: dict[str, Any]) -> None:
    await lean.rows(session, _INSERT_CHALLENGE, row)


async def get_challenge(session: LeanSession, *, tenant_id: str, request_id: str) -> ChallengeRow | None:
    found: ChallengeRow | None = await lean.get(session, ChallengeRow, id=request_id, tenant_id=tenant_id)
    return found


async def take_challenge(
    session: LeanSession, *, tenant_id: str, request_id: str, now: datetime
) -> ChallengeRow | None:
    """Consume a pending challenge and return it, in one statement (None when it is unknown, used or expired:
    `get_challenge` says which). A transaction that then refuses the retry rolls the consumption back; on
    PostgreSQL a concurrent consumer waits for this transaction and then finds the challenge used."""
    taken = session.info.pop(_TAKEN_CHALLENGE, None)
    if taken is not None and taken[0] == request_id:  # consumed with the attempt's count (counted_credential)
        found: ChallengeRow | None = taken[1]
        return found
    row = await lean.first(
        session, _TAKE_CHALLENGE, {"tenant_id": tenant_id, "request_id": request_id, "now": now}
    )
    # a read-only snapshot of the consumed row (nothing of it is changed afterwards)
    return None if row is None else lean.snapshot(ChallengeRow, _CHALLENGE_KEYS, row)


async def find_challenge(
    session: AsyncSession, *, tenant_id: str, operation: str, resource_id: str, payload: str
) -> ChallengeRow | None:
    return await session.scalar(
        select(ChallengeRow).where(
            ChallengeRow.tenant_id == tenant_id,
            ChallengeRow.resource_id == resource_id,
            ChallengeRow.operation == operation,
            ChallengeRow.payload == payload,
        )
    )


async def consume_challenge(session: AsyncSession, *, tenant_id: str, request_id: str, now: datetime) -> bool:
    """Mark a pending challenge used; False when another request used it first (the single-use guard: on
    PostgreSQL a concurrent consumer waits for this transaction and then finds it used)."""
    result = await session.execute(
        update(ChallengeRow)
        .where(
            ChallengeRow.tenant_id == tenant_id,
            ChallengeRow.id == request_id,
            ChallengeRow.consumed_at.is_(None),
            ChallengeRow.expires_at > now,
        )
        .values(consumed_at=now)
    )
    return (cast("CursorResult[Any]", result).rowcount or 0) == 1


async def purge_challenges(session: AsyncSession, *, before: datetime) -> int:
    result = await session.execute(ChallengeRow.__table__.delete().where(ChallengeRow.expires_at <= before))
    return cast("CursorResult[Any]", result).rowcount or 0


# OTPs


_INSERT_OTP = Lean(OtpRow.__table__.insert())
_OTP_COLUMNS, _OTP_KEYS = lean.columns_of(OtpRow)
_NEWEST_OTP_ID = (
    select(OtpRow.id)
    .where(OtpRow.tenant_id == bindparam("tenant_id"), OtpRow.credential_id == bindparam("credential_id"))
    .order_by(OtpRow.created_at.desc(), OtpRow.id.desc())
    .limit(1)
    .scalar_subquery()
)
_TAKE_OTP = Lean(_take_otp(_NEWEST_OTP_ID))


# PostgreSQL only (data-modifying CTEs): what a LeanTransaction counts a wallet attempt with
# (`counted_credential`), and the same taking what an EMAIL_OTP verify's leg takes first: the OTP (first leg),
# the signed retry's challenge (second leg); one round trip less each.
_COUNTED_CREDENTIAL = Lean(_counted_credential())
_COUNTED_CREDENTIAL_TAKING_CHALLENGE = Lean(_counted_credential(taking="challenge"))
_COUNTED_CREDENTIAL_TAKING_OTP = Lean(_counted_credential(taking="otp"))

_RETIRE_PENDING_OTPS = Lean(
    update(OtpRow)
    .where(
        OtpRow.tenant_id == bindparam("tenant_id"),
        OtpRow.credential_id == bindparam("credential_id"),
        OtpRow.used_at.is_(None),
    )
    .values(used_at=bindparam("now", type_=OtpRow.used_at.type))
)


async def insert_otp(session: LeanSession, row: dict[str, Any]) -> None:
    """A credential's new OTP issuance, which supersedes its pending ones: they are marked used first (only
    the newest counts: `take_otp` takes the newest, and a verify whose statement did not see this one yet
    finds the older one used once this commits). Both deferred (db/lean.py): on PostgreSQL they go with the
    challenge's OTP email and its job, in one statement."""
    await lean.defer(
        session,
        _RETIRE_PENDING_OTPS,
        {"tenant_id": row["tenant_id"], "credential_id": row["credential_id"], "now": row["created_at"]},
    )
    await lean.defer(session, _INSERT_OTP, row)


async def take_otp(
    session: LeanSession, *, tenant_id: str, credential_id: str, now: datetime
) -> OtpRow | None:
    """Use the credential's newest OTP issuance if it is pending (not used, not expired) and return it, in
    one statement (None otherwise: only the newest counts). A transaction that then refuses the attempt
    rolls the use back; on PostgreSQL a concurrent taker waits for this transaction, then finds it used."""
    taken = session.info.pop(_TAKEN_OTP, None)
    if taken is not None and taken[0] == credential_id:  # taken with the attempt's count (counted_credential)
        found: OtpRow | None = taken[1]
        return found
    row = await lean.first(
        session, _TAKE_OTP, {"tenant_id": tenant_id, "credential_id": credential_id, "now": now}
    )
    return None if row is None else lean.snapshot(OtpRow, _OTP_KEYS, row)


async def retire_otps(session: AsyncSession, *, credential_ids: list[str], now: datetime) -> None:
    """Outstanding OTPs of these credentials can no longer be used."""
    await session.execute(
        update(OtpRow)
        .where(OtpRow.credential_id.in_(credential_ids), OtpRow.used_at.is_(None))
        .values(used_at=now)
    )


async def purge_otps(session: AsyncSession, *, before: datetime) -> int:
    result = await session.execute(OtpRow.__table__.delete().where(OtpRow.expires_at <= before))
    return cast("CursorResult[Any]", result).rowcount or 0


# Enclave keys


_INSERT_ENCLAVE_KEY = portable.lean_insert_ignore(EnclaveKeyRow.__table__)


async def get_enclave_key(session: LeanSession, *, tenant_id: str) -> EnclaveKeyRow | None:
    found: EnclaveKeyRow | None = await lean.get(session, EnclaveKeyRow, tenant_id=tenant_id)
    return found


async def insert_enclave_key(session: LeanSession, row: dict[str, Any]) -> None:
    """Insert the tenant's enclave key unless one exists (a concurrent first use won)."""
    await lean.rows(session, _INSERT_ENCLAVE_KEY, row)


# Audit


_INSERT_AUDIT = Lean(AuditRow.__table__.insert())


async def insert_audit(session: LeanSession, rows: list[dict[str, Any]]) -> None:
    """Deferred (db/lean.py): nothing reads an audit row in the transaction that writes it."""
    await lean.defer_many(session, _INSERT_AUDIT, rows)


async def audit_of(session: AsyncSession, *, tenant_id: str, account_id: str) -> list[AuditRow]:
    stmt = (
        select(AuditRow)
        .where(AuditRow.tenant_id == tenant_id, AuditRow.account_id == account_id)
        .order_by(AuditRow.created_at, AuditRow.id)
    )
    return list(await session.scalars(stmt))
