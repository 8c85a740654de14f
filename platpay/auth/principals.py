"""The one authentication dependency: the request's credentials resolved to a Principal (auth/principal.py)
by their Authorization scheme, and the permission checks endpoints declare."""

from __future__ import annotations

import binascii
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from fastapi import Depends, Request
from fastapi.security import HTTPBasic

from platpay.auth import service as auth_service
from platpay.auth.principal import Principal, PrincipalKind
from platpay.auth.schemas import Permission
from platpay.db import replica
from platpay.db.database import Database
from platpay.errors import Forbidden, Unauthorized
from platpay.kit import clock
from platpay.tenants import context as tenant_context

CHALLENGE = {"WWW-Authenticate": 'Basic realm="platpay"'}

# How the credentials of each Authorization scheme (lower case) become a Principal; raises Unauthorized.
Resolver = Callable[[Request], Awaitable[Principal]]
_RESOLVERS: dict[str, Resolver] = {}


def resolver(scheme: str) -> Callable[[Resolver], Resolver]:
    """Register the resolver of an Authorization scheme: a new kind of principal is one more of these."""

    def register(resolve: Resolver) -> Resolver:
        _RESOLVERS[scheme.lower()] = resolve
        return resolve

    return register


# Run once a request is authenticated, before its operation, with its headers (the sandbox's fault
# injection): may raise.
AuthenticatedHook = Callable[[Mapping[str, str], Principal], Awaitable[None]]
_AUTHENTICATED: list[AuthenticatedHook] = []


def on_authenticated(hook: AuthenticatedHook) -> AuthenticatedHook:
    if hook not in _AUTHENTICATED:
        _AUTHENTICATED.append(hook)
    return hook


def get_db(request: Request) -> Database:
    return request.app.state.db


def _missing() -> Unauthorized:
    return Unauthorized("missing credentials: use HTTP Basic with clientId:clientSecret", headers=CHALLENGE)


_BASIC = HTTPBasic(auto_error=False, realm="platpay")


def _authorization(scope: Mapping[str, Any]) -> str:
    """The request's (first) Authorization header, read from the raw headers as Starlette's `Headers.get`
    reads it (latin-1), without building a `Headers` for it on every request."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            return str(value.decode("latin-1"))
    return ""


def basic_credentials(authorization: str) -> tuple[str, str] | None:
    """HTTP Basic's (username, password), exactly as `fastapi.security.HTTPBasic` reads them: None without
    Basic credentials, its 401 (the malformed-header answer) for a Basic value that does not decode to
    `user:password`. Done here on the header's text: HTTPBasic builds a Headers, a credentials model and a
    validation per request (measured: ~4% of an authenticated GET /config's CPU)."""
    scheme, _, param = authorization.partition(" ")
    if not authorization or scheme.lower() != "basic":
        return None
    try:
        data = binascii.a2b_base64(param.strip().encode("ascii")).decode("ascii")
    except (ValueError, UnicodeDecodeError, binascii.Error) as error:
        raise _BASIC.make_not_authenticated_error() from error
    username, separator, password = data.partition(":")
    if not separator:
        raise _BASIC.make_not_authenticated_error()
    return username, password


@resolver("basic")
async def _platform_token(request: Request) -> Principal:
    """A platform's API token: HTTP Basic clientId:clientSecret."""
    credentials = basic_credentials(_authorization(request.scope))
    if credentials is None:
        raise _missing()
    principal = await auth_service.authenticate_request(
        request.app.state.db, client_id=credentials[0], client_secret=credentials[1]
    )
    if principal is None:
        raise Unauthorized("invalid clientId or clientSecret", headers=CHALLENGE)
    return principal


async def authenticate(request: Request) -> Principal:
    """The request's principal, resolved once by its Authorization scheme and kept on the request (so a
    request is authenticated once however many dependencies ask)."""
    # The request's state as a plain dict (what `request.state` wraps): cheaper than State's attributes.
    principal = request.scope.setdefault("state", {}).get("principal")
    if isinstance(principal, Principal):
        return principal
    scheme = _authorization(request.scope).partition(" ")[0].lower()
    resolve = _RESOLVERS.get(scheme)
    if resolve is None:
        raise _missing()
    principal = await resolve(request)
    await act_as(request, principal)
    return principal


async def act_as(request: Request, principal: Principal) -> None:
    """Make `principal` the request's: whose idempotency keys and business time, and the authenticated
    hooks (who the audit trails name). The API's authentication and the console's sessions both end here."""
    state = request.scope.setdefault("state", {})  # what request.state reads and writes
    state["principal"] = principal
    state["tenant_id"] = principal.tenant.id  # whose idempotency keys (kit/idempotency.py)
    state["caller"] = principal.id  # idempotency keys are scoped to the calling credential
    clock.use(principal.tenant.clock)  # the request's business time (the edge middleware scopes it)
    tenant_context.act_for(principal.tenant)  # what is known of its tenant (scoped there too)
    replica.acting_for(principal.tenant.id)  # whose reads stay on the primary after its writes (scoped too)
    for hook in _AUTHENTICATED:
        await hook(request.headers, principal)


class TokenAuth(HTTPBasic):
    """Dependency: an authenticated principal (of any kind) holding `permission` (VIEW is implied by any), and
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
        principal = await authenticate(request)
        if principal.kind != PrincipalKind.PLATFORM_TOKEN:
            raise Forbidden(
                "this operation takes the platform's credentials (HTTP Basic), not an agent's token",
                details={"principalKind": principal.kind.value},
            )
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
