"""API tokens: issue (secret shown once), list, read, delete; and credential checks."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.auth import repository
from platpay.auth.errors import LastManageToken, PermissionEscalation, TokenNotFound
from platpay.auth.models import ApiTokenRow
from platpay.auth.principal import Principal, PrincipalKind
from platpay.auth.schemas import ApiToken, Permission
from platpay.auth.sessions import service as sessions_service
from platpay.db.database import Database
from platpay.kit import clock
from platpay.kit.ids import new_id, uuid7
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.tenants import service as tenants_service


def _hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


# Compared against when the client id is unknown, so that path costs the same as a wrong secret.
_DUMMY_HASH = _hash_secret(secrets.token_hex(32))


def to_schema(row: ApiTokenRow, *, secret: str | None = None) -> ApiToken:
    return ApiToken(
        id=row.id,
        name=row.name,
        permissions=[Permission(p) for p in row.permissions],
        client_id=row.client_id,
        client_secret=secret,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def issue_token(
    session: AsyncSession, *, tenant_id: str, name: str, permissions: list[Permission]
) -> tuple[ApiTokenRow, str]:
    """Create a token; returns the row and the secret, which is not stored and never shown again."""
    now = clock.now()
    secret = secrets.token_hex(32)
    row = ApiTokenRow(
        id=new_id("Token"),
        tenant_id=tenant_id,
        name=name,
        permissions=[p.value for p in permissions],
        client_id=uuid7().hex,
        secret_sha256=_hash_secret(secret),
        created_at=now,
        updated_at=now,
        deleted_at=None,
    )
    session.add(row)
    await session.flush()
    return row, secret


async def create_token(
    session: AsyncSession, *, principal: Principal, name: str, permissions: list[Permission]
) -> ApiToken:
    missing = [p.value for p in permissions if p != Permission.VIEW and not principal.allows(p)]
    if missing:
        raise PermissionEscalation(
            f"this token cannot grant {', '.join(missing)}: a new token may only hold permissions "
            "the creating token has",
            details={"missingPermissions": missing},
        )
    row, secret = await issue_token(
        session, tenant_id=principal.tenant.id, name=name, permissions=permissions
    )
    return to_schema(row, secret=secret)


async def list_tokens(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    name: str | None = None,
    created_after: datetime | None = None,
    created_before: datetime | None = None,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
) -> PageResult[ApiTokenRow]:
    stmt = repository.list_query(
        tenant_id=tenant_id,
        name=name,
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
    )
    return await paginate(session, stmt, id_column=ApiTokenRow.id, params=params)


async def get_token(session: AsyncSession, *, tenant_id: str, token_id: str) -> ApiToken:
    row = await repository.get(session, tenant_id=tenant_id, token_id=token_id)
    if row is None:
        raise TokenNotFound(token_id)
    return to_schema(row)


async def delete_token(session: AsyncSession, *, tenant_id: str, token_id: str) -> None:
    """Tombstone the token; it stops authenticating at once, in every process (auth reads the row)."""
    live = await repository.live_tokens_for_update(session, tenant_id=tenant_id)
    target = next((row for row in live if row.id == token_id), None)
    if target is None:
        raise TokenNotFound(token_id)
    others_manage = [r for r in live if r.id != token_id and Permission.MANAGE.value in r.permissions]
    if Permission.MANAGE.value in target.permissions and not others_manage:
        raise LastManageToken(
            f"token {token_id!r} is the environment's last token with MANAGE; create another first",
            details={"tokenId": token_id},
        )
    await repository.soft_delete(session, tenant_id=tenant_id, token_id=token_id, now=clock.now())
    await sessions_service.revoke_for_token(session, tenant_id=tenant_id, token_id=token_id)


async def authenticate(session: AsyncSession, *, client_id: str, client_secret: str) -> Principal | None:
    """Check HTTP Basic credentials inside the caller's session."""
    row = await repository.credential_with_tenant(session, client_id) if _usable(client_id) else None
    return _principal(row, client_secret)


async def authenticate_request(db: Database, *, client_id: str, client_secret: str) -> Principal | None:
    """Check HTTP Basic credentials with one lean read (no ORM session), or none when this process keeps
    the credential (repository.credential): the per-request path. A deleted token stops authenticating
    at once in the process that deleted it, and in the others when PostgreSQL's notification reaches
    them."""
    row = await repository.credential(db, client_id) if _usable(client_id) else None
    return _principal(row, client_secret)


def _usable(client_id: str) -> bool:
    return len(client_id) <= 64 and "\x00" not in client_id  # PostgreSQL refuses text holding NUL


def _principal(row: tuple[Any, ...] | None, client_secret: str) -> Principal | None:
    """The principal for a repository.CREDENTIAL row whose secret matches; the comparison runs (against a
    dummy hash) even for an unknown client id, so both failures cost the same."""
    expected = row[2] if row is not None else _DUMMY_HASH
    if not hmac.compare_digest(_hash_secret(client_secret), expected) or row is None:
        return None
    token_id, permissions = row[0], row[1]
    return Principal(
        kind=PrincipalKind.PLATFORM_TOKEN,
        id=token_id,
        permissions=frozenset(permissions),
        tenant=tenants_service.context_from_columns(row[3:]),
    )
