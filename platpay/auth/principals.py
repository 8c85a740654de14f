"""FastAPI dependencies that authenticate the caller and enforce token permissions."""

from __future__ import annotations

from fastapi import Depends, Request
from fastapi.security import HTTPBasic, HTTPBasicCredentials

from platpay.auth import service as auth_service
from platpay.auth.schemas import Permission
from platpay.auth.service import Principal
from platpay.db.database import Database
from platpay.errors import Forbidden, Unauthorized
from platpay.tenants import service as tenants_service

CHALLENGE = {"WWW-Authenticate": 'Basic realm="platpay"'}


def get_db(request: Request) -> Database:
    return request.app.state.db


async def _authenticate(request: Request, credentials: HTTPBasicCredentials | None) -> Principal:
    """Check the request's credentials and keep the principal on the request (TokenAuth looks there first,
    so a request is authenticated once however many dependencies ask)."""
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
    request.state.known = tenants_service.known_facts(principal.tenant)  # for its unit of work
    request.state.caller = principal.token_id  # idempotency keys are scoped to the calling token
    return principal


class TokenAuth(HTTPBasic):
    """Dependency: an authenticated principal holding `permission` (VIEW is implied by any token), and
    with `sandbox_only`, credentials of a sandbox environment (production ones get 403).

    It is the HTTP Basic security scheme itself (so OpenAPI documents it on every operation using it)
    and authenticates in the same call: one dependency instead of a scheme plus a dependency on it,
    because FastAPI's dependency resolution costs per level on every authenticated request."""

    def __init__(self, permission: Permission, *, sandbox_only: bool = False) -> None:
        super().__init__(
            scheme_name="HTTPBasic",
            auto_error=False,
            realm="platpay",
            description="HTTP Basic with an API token: `clientId` as username, `clientSecret` as password",
        )
        self.permission = permission
        self.sandbox_only = sandbox_only

    async def __call__(self, request: Request) -> Principal:  # type: ignore[override]
        principal = getattr(request.state, "principal", None)
        if not isinstance(principal, Principal):
            principal = await _authenticate(request, await super().__call__(request))
        if not principal.allows(self.permission):
            raise Forbidden(
                f"this token lacks the {self.permission.value} permission",
                details={
                    "requiredPermission": self.permission.value,
                    "tokenPermissions": sorted(principal.permissions),
                },
            )
        if self.sandbox_only and not principal.tenant.is_sandbox:
            raise Forbidden(
                "sandbox endpoints are not available with production credentials",
                details={"environment": principal.tenant.environment},
            )
        return principal


def require(permission: Permission) -> TokenAuth:
    return TokenAuth(permission)


def require_sandbox(permission: Permission) -> TokenAuth:
    """Sandbox-only endpoints answer 403 to production credentials."""
    return TokenAuth(permission, sandbox_only=True)


Viewer = Depends(require(Permission.VIEW))
Manager = Depends(require(Permission.MANAGE))
Transactor = Depends(require(Permission.TRANSACT))
