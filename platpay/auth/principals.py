"""FastAPI dependencies that authenticate the caller and enforce token permissions."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Depends, Request
from fastapi.security import HTTPBasic, HTTPBasicCredentials

from platpay.auth import service as auth_service
from platpay.auth.schemas import Permission
from platpay.auth.service import Principal
from platpay.db.database import Database
from platpay.errors import Forbidden, Unauthorized
from platpay.platforms import service as platforms_service

basic_scheme = HTTPBasic(
    auto_error=False,
    realm="platpay",
    description="HTTP Basic with an API token: `clientId` as username, `clientSecret` as password",
)

CHALLENGE = {"WWW-Authenticate": 'Basic realm="platpay"'}


def get_db(request: Request) -> Database:
    return request.app.state.db


async def _authenticate(request: Request, credentials: HTTPBasicCredentials | None) -> Principal:
    """The request's principal, checked once per request however many dependencies ask for it."""
    principal = getattr(request.state, "principal", None)
    if isinstance(principal, Principal):
        return principal
    if credentials is None:
        raise Unauthorized(
            "missing credentials: use HTTP Basic with clientId:clientSecret", headers=CHALLENGE
        )
    db: Database = request.app.state.db
    principal = await auth_service.authenticate_request(
        db, client_id=credentials.username, client_secret=credentials.password
    )
    if principal is None:
        raise Unauthorized("invalid clientId or clientSecret", headers=CHALLENGE)
    request.state.principal = principal
    request.state.known = platforms_service.known_facts(principal.tenant)  # for its unit of work
    request.state.caller = principal.token_id  # idempotency keys are scoped to the calling token
    return principal


async def current_principal(
    request: Request, credentials: HTTPBasicCredentials | None = Depends(basic_scheme)
) -> Principal:
    return await _authenticate(request, credentials)


def require(permission: Permission) -> Callable[..., Awaitable[Principal]]:
    """Dependency: an authenticated principal holding `permission` (VIEW is implied by any token).

    It authenticates itself rather than depending on `current_principal`: every level of FastAPI
    dependency costs per request, and this one runs on every authenticated call."""

    async def dependency(
        request: Request, credentials: HTTPBasicCredentials | None = Depends(basic_scheme)
    ) -> Principal:
        principal = await _authenticate(request, credentials)
        if not principal.allows(permission):
            raise Forbidden(
                f"this token lacks the {permission.value} permission",
                details={
                    "requiredPermission": permission.value,
                    "tokenPermissions": sorted(principal.permissions),
                },
            )
        return principal

    dependency.__name__ = f"require_{permission.value.lower()}"
    return dependency


def require_sandbox(permission: Permission) -> Callable[..., Awaitable[Principal]]:
    """Sandbox-only endpoints answer 403 to production credentials."""
    base = require(permission)

    async def dependency(principal: Principal = Depends(base)) -> Principal:
        if not principal.tenant.is_sandbox:
            raise Forbidden(
                "sandbox endpoints are not available with production credentials",
                details={"environment": principal.tenant.environment},
            )
        return principal

    dependency.__name__ = f"require_sandbox_{permission.value.lower()}"
    return dependency


Viewer = Depends(require(Permission.VIEW))
Manager = Depends(require(Permission.MANAGE))
Transactor = Depends(require(Permission.TRANSACT))
