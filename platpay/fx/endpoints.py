from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request
from pydantic import Field

from platpay.auth.principal import Principal
from platpay.auth.principals import Viewer
from platpay.fx import exchange_rates
from platpay.fx.schemas import MAX_AMOUNT, ExchangeRateListResponse
from platpay.kit.routing import api_router

router = api_router()


@router.get(
    "/exchange-rates",
    operation_id="getExchangeRates",
    response_model=ExchangeRateListResponse,
    tags=["Exchange Rates"],
)
async def list_exchange_rates(
    request: Request,
    source_currency: Annotated[str | None, Query(alias="sourceCurrency", min_length=1, max_length=8)] = None,
    destination_currency: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=8)]],
        Query(alias="destinationCurrency", max_length=50, description="repeatable"),
    ] = [],  # noqa: B006 - FastAPI copies query defaults
    sending_amount: Annotated[
        int,
        Query(alias="sendingAmount", ge=0, le=MAX_AMOUNT, description="minor units of the source currency"),
    ] = exchange_rates.DEFAULT_SENDING_AMOUNT,
    principal: Principal = Viewer,
) -> ExchangeRateListResponse:
    """Cached rates (about 5 minutes) per payout corridor, with this platform's fees for sendingAmount."""
    return exchange_rates.list_exchange_rates(
        tenant=principal.tenant,
        source_currency=source_currency,
        destination_currencies=destination_currency,
        sending_amount=sending_amount,
        ttl_seconds=request.app.state.settings.fx_rate_cache_seconds,
    )
