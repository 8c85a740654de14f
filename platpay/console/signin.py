"""Signing in to the console with an API token's credentials, and out.

The sign-in form is protected against cross-site submission before any session exists: the GET sets a
random value in a SameSite=Strict cookie and in the form, and the POST must carry both, equal. Attempts are
counted per client id and per address (kit/rate_limits.py: in the database, so every process shares them);
past either limit the answer is a 429 page, whatever the secret. A wrong client id and a wrong secret get the
same page with the same words (and cost the same: auth's comparison runs against a dummy hash)."""

from __future__ import annotations

import hmac
import secrets

from fastapi import Request
from fastapi.responses import Response

from platpay.auth import service as auth_service
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.console import web
from platpay.errors import Forbidden
from platpay.kit import clock, rate_limits

router = web.console_router()
PRE_COOKIE = "platpay_console_signin"
GENERIC = "Those credentials were not accepted. Check the client id and secret of an API token."


def _safe_next(value: str | None) -> str:
    """Where to go after signing in: a console path only (never another site)."""
    if value and value.startswith(web.PREFIX) and not value.startswith("//") and "\\" not in value:
        return value
    return web.PREFIX


def _form_page(
    request: Request, *, status: int = 200, error: str | None = None, client_id: str = ""
) -> Response:
    token = secrets.token_urlsafe(24)
    response = web.render(
        None,
        "signin.html",
        request=request,
        status=status,
        csrf=token,
        error=error,
        client_id=client_id,
        next=_safe_next(request.query_params.get("next")),
    )
    response.set_cookie(
        PRE_COOKIE,
        token,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=web.PREFIX,
    )
    return response


@router.get("/sign-in")
async def signin_form(request: Request) -> Response:
    return _form_page(request)


@router.post("/sign-in")
async def signin(request: Request) -> Response:
    form = await request.form()
    presented, expected = form.get("csrf"), request.cookies.get(PRE_COOKIE)
    if not (isinstance(presented, str) and expected and hmac.compare_digest(presented, expected)):
        raise Forbidden("this sign-in form has expired: load the page again")
    client_id = form.get("client_id")
    secret = form.get("client_secret")
    client_id = client_id.strip() if isinstance(client_id, str) else ""
    secret = secret.strip() if isinstance(secret, str) else ""
    settings = request.app.state.settings
    db = request.app.state.db
    address = request.client.host if request.client else "unknown"
    await rate_limits.hit(
        db,
        limits=sessions_service.signin_limits(
            client_id=client_id,
            address=address,
            per_client=settings.console_signin_per_client,
            per_address=settings.console_signin_per_address,
            window=settings.console_signin_window_seconds,
        ),
        now=clock.real_now(),
    )
    principal = (
        await auth_service.authenticate_request(db, client_id=client_id, client_secret=secret)
        if client_id and secret
        else None
    )
    if principal is None or not principal.allows(Permission.VIEW):
        return _form_page(request, status=401, error=GENERIC, client_id=client_id)
    async with db.transaction() as session:
        token = await auth_service.get_token(session, tenant_id=principal.tenant.id, token_id=principal.id)
        cookie, opened = await sessions_service.open_session(
            session,
            principal=principal,
            token_name=token.name,
            ttl_seconds=settings.console_session_seconds,
            address=address,
            user_agent=request.headers.get("user-agent", ""),
        )
        await sessions_service.record_action(
            session, console=opened, action="SIGNED_IN", subject_type="ApiToken", subject_id=principal.id
        )
    next_path = form.get("next")
    response = web.redirect(_safe_next(next_path if isinstance(next_path, str) else None))
    response.set_cookie(
        web.COOKIE,
        web.cookie_value(principal.tenant.environment, cookie),
        max_age=settings.console_session_seconds,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path=web.PREFIX,
    )
    response.delete_cookie(PRE_COOKIE, path=web.PREFIX)
    return response


@router.post("/sign-out")
async def signout(request: Request, console: web.Console = web.SignedIn) -> Response:
    await web.form_of(console, permission=Permission.VIEW)
    async with console.db.transaction() as session:
        await console.record(
            session, action="SIGNED_OUT", subject_type="ApiToken", subject_id=console.principal.id
        )
        await sessions_service.close_session(session, secret=console.secret)
    response = web.redirect(web.SIGNIN_PATH)
    response.delete_cookie(web.COOKIE, path=web.PREFIX)
    return response
