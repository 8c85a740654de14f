from __future__ import annotations

from typing import Literal

from fastapi import Body, Depends, Query, Request

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db, require_sandbox
from platpay.auth.schemas import Permission
from platpay.events import service as events_service
from platpay.events.schemas import (
    SandboxWebhookFaults,
    SandboxWebhookFaultsRequest,
    TestWebhookResponse,
    WebhookDelivery,
    WebhookDeliveryDetail,
    WebhookDeliveryListResponse,
    WebhookEndpointListResponse,
)
from platpay.kit.openapi import request_examples
from platpay.kit.pagination import PageParams, page_params
from platpay.kit.routing import QueryTimestamp, api_router, as_utc

router = api_router(tags=["Webhooks"])
sandbox_router = api_router(tags=["Sandbox"])


@router.get(
    "/webhooks/deliveries", operation_id="listWebhookDeliveries", response_model=WebhookDeliveryListResponse
)
async def list_deliveries(
    request: Request,
    status: Literal["PENDING", "DELIVERED", "FAILED"] | None = Query(None),
    event_type: str | None = Query(None, alias="type", max_length=64, description="event type, e.g. TEST"),
    created_after: QueryTimestamp | None = Query(None, alias="createdAfter"),
    created_before: QueryTimestamp | None = Query(None, alias="createdBefore"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List webhook deliveries, newest first."""
    page, items = await get_db(request).replica_read(
        lambda session: events_service.list_deliveries(
            session,
            tenant_id=principal.tenant.id,
            params=params,
            status=status,
            event_type=event_type,
            created_after=as_utc(created_after),
            created_before=as_utc(created_before),
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([item.to_api() for item in items])


@router.get(
    "/webhooks/endpoints", operation_id="listWebhookEndpoints", response_model=WebhookEndpointListResponse
)
async def list_endpoints(request: Request, principal: Principal = Viewer) -> dict:
    """How deliveries to each webhook endpoint are going (circuit breaker status, failures, next probe)."""
    health = await get_db(request).replica_read(
        lambda session: events_service.endpoint_health(session, tenant_id=principal.tenant.id),
        tenant_id=principal.tenant.id,
    )
    return {"data": [item.to_api() for item in health]}


@router.get(
    "/webhooks/deliveries/{deliveryId}",
    operation_id="getWebhookDeliveryById",
    response_model=WebhookDeliveryDetail,
)
async def get_delivery(
    deliveryId: str, request: Request, principal: Principal = Viewer
) -> WebhookDeliveryDetail:
    """Get one delivery with its payload and every attempt."""
    return await get_db(request).replica_read(
        lambda session: events_service.get_delivery(
            session, tenant_id=principal.tenant.id, delivery_id=deliveryId
        ),
        tenant_id=principal.tenant.id,
    )


@router.post(
    "/webhooks/deliveries/{deliveryId}/redeliver",
    operation_id="redeliverWebhookDelivery",
    status_code=202,
    response_model=WebhookDelivery,
)
async def redeliver(deliveryId: str, request: Request, principal: Principal = Manager) -> WebhookDelivery:
    """Send a delivery again now, with the same envelope id."""
    async with get_db(request).transaction() as session:
        return await events_service.redeliver(session, tenant_id=principal.tenant.id, delivery_id=deliveryId)


@sandbox_router.post(
    "/sandbox/webhooks/test", operation_id="sendTestWebhook", response_model=TestWebhookResponse
)
async def send_test_webhook(
    request: Request, principal: Principal = Depends(require_sandbox(Permission.MANAGE))
) -> dict:
    """Send a TEST webhook now and report what the endpoint answered (sandbox only)."""
    result = await events_service.send_test_now(
        get_db(request), tenant=principal.tenant, settings=request.app.state.settings
    )
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


FAULT_EXAMPLES = request_examples(
    duplicate=("Send every webhook twice (test your deduplication)", {"duplicate": True}),
    reorder=("Deliver out of order, within two seconds", {"reorderMs": 2000}),
    off=("Back to normal delivery", {}),
)


@sandbox_router.get(
    "/sandbox/webhooks/faults", operation_id="getSandboxWebhookFaults", response_model=SandboxWebhookFaults
)
async def get_webhook_faults(
    request: Request, principal: Principal = Depends(require_sandbox(Permission.VIEW))
) -> SandboxWebhookFaults:
    """How this sandbox delivers webhooks: duplicated, delayed, reordered (sandbox only)."""
    async with get_db(request).read() as session:
        return await events_service.sandbox_faults(session, tenant_id=principal.tenant.id)


@sandbox_router.put(
    "/sandbox/webhooks/faults",
    operation_id="setSandboxWebhookFaults",
    response_model=SandboxWebhookFaults,
    openapi_extra=FAULT_EXAMPLES,
)
async def set_webhook_faults(
    request: Request,
    body: SandboxWebhookFaultsRequest = Body(...),
    principal: Principal = Depends(require_sandbox(Permission.MANAGE)),
) -> SandboxWebhookFaults:
    """Duplicate, delay or reorder this sandbox's webhook deliveries, to test a receiver's deduplication
    and ordering; `{}` turns it all off (sandbox only; a sandbox reset turns it off too)."""
    async with get_db(request).transaction() as session:
        return await events_service.set_sandbox_faults(
            session,
            tenant_id=principal.tenant.id,
            duplicate=body.duplicate,
            delay_ms=body.delay_ms,
            reorder_ms=body.reorder_ms,
        )
