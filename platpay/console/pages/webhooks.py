"""The console's webhooks pages: the endpoints' health (circuit breaker, next probe, the last day's
outcomes), the delivery log, one delivery (the request it makes, signature included, and its attempts);
redelivering one and sending a TEST event, through the services the API's operations call."""

from __future__ import annotations

import json

from fastapi import Request
from fastapi.responses import Response

from platpay.auth.schemas import Permission
from platpay.auth.sessions import service as sessions_service
from platpay.console import web
from platpay.errors import invalid_field
from platpay.events import service as events_service
from platpay.events.errors import WebhookDeliveryError
from platpay.events.state import DeliveryStatus
from platpay.kit.ids import new_id

router = web.console_router()

PAGE = f"{web.PREFIX}/webhooks"
SUBJECT = "WebhookDelivery"
STATUSES = tuple(s.value for s in DeliveryStatus)


@router.get("/webhooks")
async def webhooks(request: Request, console: web.Console = web.SignedIn) -> Response:
    status = request.query_params.get("status") or None
    if status is not None and status not in STATUSES:
        raise invalid_field("status", f"must be one of {', '.join(STATUSES)}")
    params = web.page_params(request)
    async with console.db.read() as session:
        health = await events_service.endpoint_health_summary(session, tenant_id=console.tenant_id)
        page = await events_service.list_deliveries_page(
            session, tenant_id=console.tenant_id, params=params, status=status
        )
    return web.render(
        console,
        "webhooks/index.html",
        request=request,
        title="Webhooks",
        health=health,
        sample=events_service.HEALTH_SAMPLE,
        deliveries=page.items,
        total=page.total_count,
        next_url=web.next_page_url(request, page),
        status_filter=status,
        statuses=STATUSES,
    )


@router.get("/webhooks/deliveries/{deliveryId}")
async def delivery(deliveryId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    async with console.db.read() as session:
        detail = await events_service.delivery_detail(
            session, tenant_id=console.tenant_id, delivery_id=deliveryId, settings=console.settings
        )
        trail = await sessions_service.actions_for(
            session, tenant_id=console.tenant_id, subject_id=deliveryId
        )
    try:
        pretty = json.dumps(json.loads(detail.body), indent=2)
    except ValueError:  # the envelope is always JSON; shown as it is otherwise
        pretty = detail.body
    return web.render(
        console,
        "webhooks/delivery.html",
        request=request,
        title=f"Delivery {deliveryId}",
        detail=detail,
        d=detail.delivery,
        body=pretty,
        trail=trail,
    )


@router.post("/webhooks/deliveries/{deliveryId}/redeliver")
async def redeliver(deliveryId: str, request: Request, console: web.Console = web.SignedIn) -> Response:
    """POST /webhooks/deliveries/{id}/redeliver's service (MANAGE, as the API's): sent again now with the
    same envelope id; a redelivery still waiting is superseded, not doubled."""
    await web.form_of(console, permission=Permission.MANAGE)
    async with console.db.transaction() as session:
        sent = await events_service.redeliver(session, tenant_id=console.tenant_id, delivery_id=deliveryId)
        await console.record(
            session,
            action="WEBHOOK_REDELIVERED",
            subject_type=SUBJECT,
            subject_id=deliveryId,
            type=sent.type,
            url=sent.url,
        )
    return web.redirect(f"{PAGE}/deliveries/{deliveryId}")


@router.post("/webhooks/test")
async def send_test(request: Request, console: web.Console = web.SignedIn) -> Response:
    """POST /sandbox/webhooks/test's service (sandbox only, MANAGE): a TEST event sent now; the page of its
    delivery shows what the endpoint answered. The send commits its own transactions (no transaction is
    open while the endpoint is called), so the trail records it in one of its own, after."""
    await web.form_of(console, permission=Permission.MANAGE)
    console.require_sandbox()
    delivery_id = new_id("Webhook")
    outcome: dict[str, object]
    try:
        result = await events_service.send_test_now(
            console.db, tenant=console.principal.tenant, settings=console.settings, delivery_id=delivery_id
        )
        outcome = {"url": result.url, "responseStatus": result.response_status}
    except WebhookDeliveryError as error:  # sent, and the endpoint failed: its attempt is on the page
        outcome = {
            "url": error.details.get("url"),
            "responseStatus": error.details.get("response_status"),
            "error": error.details.get("error"),
        }
    async with console.db.transaction() as session:
        await console.record(
            session,
            action="WEBHOOK_TEST_SENT",
            subject_type=SUBJECT,
            subject_id=delivery_id,
            **{k: v for k, v in outcome.items() if v is not None},
        )
    return web.redirect(f"{PAGE}/deliveries/{delivery_id}")
