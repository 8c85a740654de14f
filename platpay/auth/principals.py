"""The one authentication dependency: the request's credentials resolved to a Principal (auth/principal.py)
by their Authorization scheme, and the permission checks endpoints declare."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from fastapi import Depends, Request
from fastapi.security import HTTPBasic

from platpay.auth import service as auth_service
from platpay.auth.principal import Principal, PrincipalKind
from platpay.auth.schemas import Permission
from platpay.db import replica
from platpay.db.database import Database
from platpay.errors import Forbidden, Unauthorized
from platpay.kit import clock

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


@resolver("basic")
async def _platform_token(request: Request) -> Principal:
    """A platform's API token: HTTP Basic clientId:clientSecret."""
    credentials = await _BASIC(request)
    if credentials is None:
        raise _missing()
    principal = await auth_service.authenticate_request(
        request.app.state.db, client_id=credentials.username, client_secret=credentials.password
    )
    if principal is None:
        raise Unauthorized("invalid clientId or clientSecret", headers=CHALLENGE)
    return principal


async def authenticate(request: Request) -> Principal:
    """The request's principal, resolved once by its Authorization scheme and kept on the request (so a
    request is authenticated once however many dependencies ask)."""
    principal = getattr(request.state, "principal", None)
    if isinstance(principal, Principal):
        return principal
    scheme = request.headers.get("Authorization", "").partition(" ")[0].lower()
    resolve = _RESOLVERS.get(scheme)
    if resolve is None:
        raise _missing()
    principal = await resolve(request)
    await act_as(request, principal)
    return principal


async def act_as(request: Request, principal: Principal) -> None:
    """Make `principal` the request's: whose idempotency keys and business time, and the authenticated
    hooks (who the audit trails name). The API's authentication and the console's sessions both end here."""
    request.state.principal = principal
    request.state.tenant_id = principal.tenant.id  # whose idempotency keys (kit/idempotency.py)
    request.state.caller = principal.id  # idempotency keys are scoped to the calling credential
    clock.use(principal.tenant.clock)  # the request's business time (the edge middleware scopes it)
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
