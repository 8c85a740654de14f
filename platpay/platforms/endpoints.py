from __future__ import annotations

from typing import Any

from fastapi import Request, Response

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.kit.routing import api_router
from platpay.platforms import service as platforms_service
from platpay.platforms.schemas import CONFIG_UPDATE_EXAMPLES, PlatformConfig, PlatformConfigUpdateRequest
from platpay.platforms.service import UNSET, Unset

router = api_router(tags=["Platform Configuration"])


@router.get("/config", operation_id="getPlatformConfig", response_model=PlatformConfig)
async def get_config(principal: Principal = Viewer) -> Response:
    """Get this environment's platform configuration, including the webhook signing public key."""
    return Response(platforms_service.config_json(principal.tenant), media_type="application/json")


@router.patch(
    "/config",
    operation_id="updatePlatformConfig",
    openapi_extra=CONFIG_UPDATE_EXAMPLES,
    response_model=PlatformConfig,
)
async def update_config(
    body: PlatformConfigUpdateRequest, request: Request, principal: Principal = Manager
) -> PlatformConfig:
    """Update the configuration partially; a new webhookEndpoint receives one TEST event."""
    given = body.model_fields_set  # a field absent keeps its value; one sent as null is not the same
    currencies: list[dict[str, Any]] | Unset | None = UNSET
    if body.supported_currencies is not None:
        currencies = [entry.model_dump(mode="json", by_alias=True) for entry in body.supported_currencies]
    elif "supported_currencies" in given:
        currencies = None
    wallet_config: dict[str, Any] | Unset | None = UNSET
    if body.embedded_wallet_config is not None:
        wallet_config = body.embedded_wallet_config.model_dump(mode="json", by_alias=True, exclude_unset=True)
    elif "embedded_wallet_config" in given:
        wallet_config = None
    fee_configs: list[dict[str, Any]] | Unset | None = UNSET
    if body.fee_configs is not None:
        fee_configs = [entry.model_dump(mode="json", by_alias=True) for entry in body.fee_configs]
    elif "fee_configs" in given:
        fee_configs = None
    async with get_db(request).transaction() as session:
        return await platforms_service.update_config(
            session,
            tenant=principal.tenant,
            uma_domain=body.uma_domain if "uma_domain" in given else UNSET,
            webhook_endpoint=body.webhook_endpoint if "webhook_endpoint" in given else UNSET,
            supported_currencies=currencies,
            embedded_wallet_config=wallet_config,
            end_user_terms_required=body.end_user_terms_required
            if "end_user_terms_required" in given
            else UNSET,
            fee_configs=fee_configs,
            settings=request.app.state.settings,
        )
