from __future__ import annotations

from fastapi import Request, Response

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.kit.routing import api_router
from platpay.platforms import service as platforms_service
from platpay.platforms.schemas import PlatformConfig, PlatformConfigUpdate

router = api_router(tags=["Platform Configuration"])


@router.get("/config", response_model=PlatformConfig)
async def get_config(principal: Principal = Viewer) -> Response:
    """Get this environment's platform configuration, including the webhook signing public key."""
    return Response(platforms_service.config_json(principal.tenant), media_type="application/json")


@router.patch("/config", response_model=PlatformConfig)
async def update_config(
    body: PlatformConfigUpdate, request: Request, principal: Principal = Manager
) -> PlatformConfig:
    """Update the configuration partially; a new webhookEndpoint receives one TEST event."""
    async with get_db(request).transaction() as session:
        return await platforms_service.update_config(
            session, tenant=principal.tenant, update=body, settings=request.app.state.settings
        )
