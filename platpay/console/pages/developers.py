"""The console's developers pages: the environment's API tokens (list, create with the secret shown once,
delete), its webhook endpoint and its platform configuration (GET /config's content, the simple fields
editable). Every change goes through the service the API's operation calls and is recorded on the console
trail in the same transaction."""

from __future__ import annotations

import json
import secrets
from typing import Any

from fastapi import Request
from fastapi.responses import Response

from platpay.auth import service as auth_service
from platpay.auth.errors import PermissionEscalation
from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.console import web
from platpay.errors import ApiError, Conflict, InvalidInput, invalid_field
from platpay.kit import idempotency
from platpay.platforms import service as platforms_service
from platpay.platforms.service import UNSET

router = web.console_router()

PAGE = f"{web.PREFIX}/developers"
TOKEN_SUBJECT = "ApiToken"  # as signing in and out records it (console/signin.py)
CONFIG_SUBJECT = "PlatformConfig"


def _form_key() -> str:
    """A random key for one create form: a second submission of the same form replays the first one's
    result instead of creating a second token (kit/idempotency.py, as POST /tokens' Idempotency-Key)."""
    return secrets.token_urlsafe(18)


async def _page_values(console: web.Console, request: Request) -> dict[str, Any]:
    params = web.page_params(request)
    tenant = console.principal.tenant
    async with console.db.read() as session:
        page = await auth_service.list_tokens(session, tenant_id=console.tenant_id, params=params)
        token_actions = await sessions_service.actions_of_kind(
            session, tenant_id=console.tenant_id, subject_type=TOKEN_SUBJECT
        )
        config_actions = await sessions_service.actions_for(
            session, tenant_id=console.tenant_id, subject_id=tenant.config_id
        )
    config = json.loads(platforms_service.config_json(tenant))
    return {
        "tokens": [auth_service.to_schema(row) for row in page.items],
        "total": page.total_count,
        "next_url": web.next_page_url(request, page),
        "token_actions": token_actions,
        "config_actions": config_actions,
        "config": config,
        "config_json": json.dumps(config, indent=2, sort_keys=True),
        "form_key": _form_key(),
        "permissions": [p.value for p in Permission],
    }


@router.get("/developers")
async def developers(request: Request, console: web.Console = web.SignedIn) -> Response:
    values = await _page_values(console, request)
    return web.render(console, "developers/index.html", request=request, title="Developers", **values)


def _permissions_of(form: Any) -> list[Permission]:
    chosen = form.getlist("permissions")
    if not chosen:
        raise invalid_field("permissions", "choose at least one permission")
    known = {p.value for p in Permission}
    if any(not isinstance(value, str) or value not in known for value in chosen) or len(set(chosen)) != len(
        chosen
    ):
        raise invalid_field("permissions", f"each permission is one of {', '.join(sorted(known))}, once")
    return [Permission(value) for value in chosen]


def _name_of(form: Any) -> str:
    name = web.text_field(form, "name", max_length=200)
    assert name is not None
    if not name.isprintable():
        raise invalid_field("name", "must be printable")
    return name


@router.post("/developers/tokens")
async def create_token(request: Request, console: web.Console = web.SignedIn) -> Response:
    """POST /tokens' service (a token may not grant what the session's token lacks), run through the
    idempotent runner under the form's key; the answer (200, not a redirect) is the only page that ever
    shows the secret: a replay of the same form shows the token without it."""
    form = await web.form_of(console, permission=Permission.MANAGE)
    name, permissions = _name_of(form), _permissions_of(form)
    key = form.get("key")
    if not isinstance(key, str) or not 16 <= len(key) <= 64:
        raise invalid_field("key", "the form is missing its key: reload the page and try again")
    body = {"name": name, "permissions": [p.value for p in permissions]}

    async def operation(session: Any) -> tuple[int, Any]:
        token = await auth_service.create_token(
            session, principal=console.principal, name=name, permissions=permissions
        )
        await console.record(
            session,
            action="TOKEN_CREATED",
            subject_type=TOKEN_SUBJECT,
            subject_id=token.id,
            name=name,
            permissions=body["permissions"],
        )
        return 201, token.to_api()

    answer = await idempotency.execute(
        console.db,
        tenant_id=console.tenant_id,
        key=f"console:{key}",
        request_fingerprint=idempotency.fingerprint(
            "POST", f"{PAGE}/tokens", body, caller=console.principal.id
        ),
        operation=operation,
        settings=console.settings,
    )
    result = json.loads(bytes(answer.body))
    if answer.status_code >= 400:
        raise _refusal(answer.status_code, result)
    replayed = answer.headers.get(idempotency.REPLAY_HEADER) == "true"
    return web.render(
        console,
        "developers/created.html",
        request=request,
        title="Token created",
        token=result,
        secret=None if replayed else result.get("clientSecret"),
        replayed=replayed,
    )


def _refusal(status: int, body: dict[str, Any]) -> ApiError:
    """A refusal the idempotent runner stored and answered as a response, as the error it was (its status's
    class: the page shows its status and message)."""
    message = str(body.get("message") or "refused")
    details = body.get("details") or {}
    if status == 403:
        return PermissionEscalation(message, details=details)
    if status == 409:
        return Conflict(message, details=details)
    return InvalidInput(message, details=details)


@router.post("/developers/tokens/{tokenId}/delete")
async def delete_token(tokenId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    """DELETE /tokens/{id}'s service: the last MANAGE token is refused (its error as a page); deleting the
    session's own token ends this session (the page says so and the cookie goes)."""
    await web.form_of(console, permission=Permission.MANAGE)
    async with console.db.transaction() as session:
        token = await auth_service.get_token(session, tenant_id=console.tenant_id, token_id=tokenId)
        await console.record(
            session,
            action="TOKEN_DELETED",
            subject_type=TOKEN_SUBJECT,
            subject_id=tokenId,
            name=token.name,
            permissions=[p.value for p in token.permissions],
        )
        await auth_service.delete_token(session, tenant_id=console.tenant_id, token_id=tokenId)
    if tokenId != console.principal.id:
        return web.redirect(PAGE)
    response = web.render(
        None,
        "developers/signed_out.html",
        request=request,
        title="Signed out",
        token_name=token.name,
    )
    response.delete_cookie(web.COOKIE, path=web.PREFIX)
    return response


@router.post("/developers/config")
async def update_config(request: Request, console: web.Console = web.SignedIn) -> Response:
    """PATCH /config's service with the fields the form changed: webhookEndpoint (empty removes it; a new
    one receives a TEST event), umaDomain, endUserTermsRequired."""
    form = await web.form_of(console, permission=Permission.MANAGE)
    tenant = console.principal.tenant
    changed: dict[str, Any] = {}
    if "webhook_endpoint" in form:  # the webhook endpoint's form
        endpoint = web.text_field(form, "webhook_endpoint", required=False, max_length=2048)
        if endpoint != tenant.webhook_endpoint:
            changed["webhookEndpoint"] = endpoint
    if "uma_domain" in form:  # the configuration's form
        uma_domain = web.text_field(form, "uma_domain", max_length=253)
        if uma_domain != tenant.uma_domain:
            changed["umaDomain"] = uma_domain
        terms_value = form.get("end_user_terms_required")
        if terms_value not in (None, "on"):
            raise invalid_field("end_user_terms_required", "a checkbox: on or absent")
        if (terms_value is not None) != tenant.end_user_terms_required:
            changed["endUserTermsRequired"] = terms_value is not None
    if not changed:
        return web.redirect(PAGE)
    async with console.db.transaction() as session:
        await platforms_service.update_config(
            session,
            tenant=tenant,
            webhook_endpoint=changed.get("webhookEndpoint", UNSET),
            uma_domain=changed.get("umaDomain", UNSET),
            end_user_terms_required=changed.get("endUserTermsRequired", UNSET),
            settings=console.settings,
        )
        await console.record(
            session,
            action="CONFIG_UPDATED",
            subject_type=CONFIG_SUBJECT,
            subject_id=tenant.config_id,
            **changed,
        )
    return web.redirect(PAGE)
