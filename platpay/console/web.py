"""What every console page is made of: its route class (errors as pages, security headers), the signed-in
session as a dependency, forms with their CSRF check, permissions, rendering and list paging.

The console is a domain at the top of the layer graph: pages call services (the same ones the API's endpoints
call), never repositories, and hold no SQL. A page acts as the API token its session was opened with: the
same Principal, so the same permissions and tenant as the API (auth/sessions/service.py)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import structlog
from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.routing import APIRoute
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.datastructures import FormData
from starlette.routing import Match
from starlette.types import Scope

from platpay.auth.principal import Principal
from platpay.auth.principals import act_as
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.db.database import Database
from platpay.errors import ApiError, Forbidden, InvalidInput, invalid_field
from platpay.kit import currencies
from platpay.kit.pagination import DEFAULT_LIMIT, MAX_LIMIT, PageParams, PageResult, cursor_binding

log = structlog.get_logger("platpay.console")

PREFIX = "/console"
COOKIE = "platpay_console"
SIGNIN_PATH = f"{PREFIX}/sign-in"
SECURITY_HEADERS = {
    # No inline script or style at all: the stylesheet and the one script are files of the console.
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def _money(minor: int | None, code: str | None) -> str:
    """Minor units as a decimal amount with its currency code (no float: integer arithmetic)."""
    if minor is None:
        return "—"
    known = currencies.get(code or "")
    decimals = known.decimals if known is not None else 0
    sign = "-" if minor < 0 else ""
    whole, fraction = divmod(abs(int(minor)), 10**decimals) if decimals else (abs(int(minor)), 0)
    text = f"{whole:,}" + (f".{fraction:0{decimals}d}" if decimals else "")
    return f"{sign}{text} {code or ''}".strip()


def _when(value: datetime | str | None) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=select_autoescape(["html", "svg"]),
    trim_blocks=True,
    lstrip_blocks=True,
)
TEMPLATES.filters["money"] = _money
TEMPLATES.filters["when"] = _when


class SignInRequired(Exception):
    """No live session: the browser goes to the sign-in page (and comes back after)."""


class ConsoleRoute(APIRoute):
    """A console page: a refusal becomes a page with its status (never the API's JSON), a missing session a
    redirect to sign-in, and every answer carries the security headers."""

    matches_by_path_only = True  # its `matches` only turns requests away sooner (kit/routing.py RouteIndex)

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        kwargs["include_in_schema"] = False
        super().__init__(path, endpoint, **kwargs)
        self._literal_prefix = self.path_format.split("{", 1)[0]

    def matches(self, scope: Scope) -> tuple[Match, Scope]:
        if not scope.get("path", "").startswith(self._literal_prefix):
            return Match.NONE, {}
        return super().matches(scope)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page(request: Request) -> Response:
            try:
                response = await handler(request)
            except SignInRequired:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                response = RedirectResponse(f"{SIGNIN_PATH}?{urlencode({'next': target})}", status_code=303)
                response.delete_cookie(COOKIE, path=PREFIX)
            except ApiError as error:
                response = error_page(request, error)
            for name, value in SECURITY_HEADERS.items():
                response.headers.setdefault(name, value)
            return response

        return page


def console_router() -> APIRouter:
    return APIRouter(prefix=PREFIX, route_class=ConsoleRoute, include_in_schema=False)


@dataclass
class Console:
    """The signed-in session of a page: who acts (its token), in which tenant and environment."""

    session: sessions_service.ConsoleSession
    secret: str
    request: Request
    nav: list[NavItem] = field(default_factory=list)

    @property
    def principal(self) -> Principal:
        return self.session.principal

    @property
    def tenant_id(self) -> str:
        return self.session.principal.tenant.id

    @property
    def environment(self) -> str:
        return self.session.principal.tenant.environment

    @property
    def is_sandbox(self) -> bool:
        return self.session.principal.tenant.is_sandbox

    @property
    def db(self) -> Database:
        return self.request.app.state.db

    @property
    def settings(self) -> Any:
        return self.request.app.state.settings

    @property
    def csrf(self) -> str:
        return sessions_service.csrf_token(self.secret)

    def can(self, permission: Permission | str) -> bool:
        return self.principal.allows(Permission(permission))

    def require(self, permission: Permission) -> None:
        """The same refusal as the API's for a token without `permission`."""
        if not self.principal.allows(permission):
            raise Forbidden(
                f"this token lacks the {permission.value} permission",
                details={
                    "requiredPermission": permission.value,
                    "tokenPermissions": sorted(self.principal.permissions),
                },
            )

    def require_sandbox(self) -> None:
        if not self.is_sandbox:
            raise Forbidden(
                "sandbox tools are not available with production credentials",
                details={"environment": self.environment},
            )

    async def record(
        self, session: Any, *, action: str, subject_type: str, subject_id: str, **data: Any
    ) -> None:
        """Append this action to the tenant's console trail, in the action's own transaction `session`."""
        await sessions_service.record_action(
            session,
            console=self.session,
            action=action,
            subject_type=subject_type,
            subject_id=subject_id,
            data=data,
        )


@dataclass(frozen=True)
class NavItem:
    path: str
    label: str
    sandbox_only: bool = False


# The console's sections, in the order the navigation shows them.
NAV = (
    NavItem(f"{PREFIX}", "Overview"),
    NavItem(f"{PREFIX}/customers", "Customers"),
    NavItem(f"{PREFIX}/transactions", "Transactions"),
    NavItem(f"{PREFIX}/ledger", "Ledger"),
    NavItem(f"{PREFIX}/webhooks", "Webhooks"),
    NavItem(f"{PREFIX}/agents", "Agents"),
    NavItem(f"{PREFIX}/cards", "Cards"),
    NavItem(f"{PREFIX}/sandbox", "Sandbox tools", sandbox_only=True),
    NavItem(f"{PREFIX}/developers", "Developers"),
)


def cookie_value(environment: str, secret: str) -> str:
    """The session cookie: the environment it was opened in, then the secret."""
    return f"{environment}.{secret}"


async def signed_in(request: Request) -> Console:
    """The page's live session, or SignInRequired. A cookie naming another environment than its session's
    tenant, an expired or revoked session, a deleted token: all go back to sign-in."""
    environment, _, secret = (request.cookies.get(COOKIE) or "").partition(".")
    if not secret:
        raise SignInRequired()
    session = await sessions_service.resolve(request.app.state.db, secret=secret)
    if session is None or session.principal.tenant.environment != environment:
        raise SignInRequired()
    principal = session.principal
    await act_as(request, principal)  # as the API's authentication does: business time, audit actor
    nav = [item for item in NAV if principal.tenant.is_sandbox or not item.sandbox_only]
    console = Console(session=session, secret=secret, request=request, nav=nav)
    request.state.console_for_errors = console  # a refusal's page still shows who is signed in
    return console


SignedIn = Depends(signed_in)


async def form_of(console: Console, *, permission: Permission) -> FormData:
    """A state-changing form's fields, once its CSRF token is the session's and the session's token holds
    `permission` (else 403, nothing done)."""
    form = await console.request.form()
    presented = form.get("csrf")
    if not sessions_service.csrf_matches(console.secret, presented if isinstance(presented, str) else None):
        raise Forbidden(
            "this form was not sent by your console session (it may have ended): reload the page and try again"
        )
    console.require(permission)
    return form


def text_field(
    form: Mapping[str, Any], name: str, *, required: bool = True, max_length: int = 500
) -> str | None:
    """A form's text field, stripped; a missing required one is a 400 naming it."""
    value = form.get(name)
    text = value.strip() if isinstance(value, str) else ""
    if not text:
        if required:
            raise InvalidInput(
                f"{name} is required", details={"fields": [{"field": name, "reason": "required"}]}
            )
        return None
    if len(text) > max_length:
        raise InvalidInput(
            f"{name} is longer than {max_length} characters",
            details={"fields": [{"field": name, "reason": f"at most {max_length} characters"}]},
        )
    return text


def query_choice(request: Request, name: str, allowed: Collection[str]) -> str | None:
    """A list filter that must be one of `allowed` (None when absent or blank); else a 400 naming it."""
    value = (request.query_params.get(name) or "").strip()
    if not value:
        return None
    if value not in allowed:
        raise invalid_field(name, f"must be one of {', '.join(allowed)}", location="query")
    return value


def query_text(request: Request, name: str, *, max_length: int = 64) -> str | None:
    """A free-text list filter (an id, a search), stripped; None when blank; longer than `max_length`: 400."""
    value = (request.query_params.get(name) or "").strip()
    if len(value) > max_length:
        raise invalid_field(name, f"at most {max_length} characters", location="query")
    return value or None


def page_params(request: Request) -> PageParams:
    """The page of a list the URL asks for (`limit`, `cursor`: the API's cursors, bound to this page)."""
    raw_limit = request.query_params.get("limit") or str(DEFAULT_LIMIT)
    if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= MAX_LIMIT:
        raise InvalidInput(
            f"limit must be a whole number from 1 to {MAX_LIMIT}",
            details={"fields": [{"field": "limit", "reason": "out of range"}]},
        )
    binding = cursor_binding(request)
    cursor = request.query_params.get("cursor")
    return PageParams(
        limit=int(raw_limit), after_id=binding.decode(cursor, True) if cursor else None, binding=binding
    )


def next_page_url(request: Request, page: PageResult[Any]) -> str | None:
    """This page's URL with its filters and the next cursor; None on the last page."""
    if not page.has_more or page.next_cursor is None:
        return None
    query = {k: v for k, v in request.query_params.items() if k != "cursor"}
    query["cursor"] = page.next_cursor
    return f"{request.url.path}?{urlencode(query)}"


def render(
    console: Console | None, template: str, *, request: Request, status: int = 200, **values: Any
) -> HTMLResponse:
    html = TEMPLATES.get_template(template).render(console=console, request=request, **values)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def error_page(request: Request, error: ApiError) -> HTMLResponse:
    console = getattr(request.state, "console_for_errors", None)
    headers = dict(SECURITY_HEADERS)
    headers.update(error.headers or {})
    headers.pop("WWW-Authenticate", None)
    html = TEMPLATES.get_template("error.html").render(console=console, request=request, error=error)
    return HTMLResponse(html, status_code=error.status, headers=headers)


def redirect(path: str) -> RedirectResponse:
    """After a form: back to a page (303, so reloading does not send the form again)."""
    return RedirectResponse(path, status_code=303, headers=SECURITY_HEADERS)
