"""Lookups (SPEC §4.7): the UMA provider directory and crypto withdrawal fee estimates."""

from __future__ import annotations

from fastapi import Depends, Query, Request

from platpay.auth.principal import Principal
from platpay.auth.principals import Viewer, get_db
from platpay.kit.pagination import PageParams, sorted_page_params
from platpay.kit.routing import api_router
from platpay.payments import uma_providers, withdrawal_fees
from platpay.payments.lookups.schemas import (
    ESTIMATE_WITHDRAWAL_FEE_EXAMPLES,
    EstimateCryptoWithdrawalFeeRequest,
    EstimateCryptoWithdrawalFeeResponse,
    UmaProviderListResponse,
)

router = api_router()


@router.get(
    "/uma-providers",
    operation_id="getAvailableUmaProviders",
    response_model=UmaProviderListResponse,
    tags=["Available UMA Providers"],
)
async def list_uma_providers(
    country_code: str | None = Query(
        None,
        alias="countryCode",
        pattern=r"^[A-Z]{2}$",
        description="ISO 3166-1 alpha-2: providers operating there",
    ),
    currency_code: str | None = Query(
        None,
        alias="currencyCode",
        pattern=r"^[A-Z0-9]{3,5}$",
        description="providers supporting this currency",
    ),
    has_blocked_providers: bool = Query(
        True,
        alias="hasBlockedProviders",
        description="include providers not on the platform's allow list (default true)",
    ),
    params: PageParams = Depends(sorted_page_params),
    principal: Principal = Viewer,
) -> dict:
    """List UMA providers, most recently listed first unless sortOrder=asc; filters combine."""
    page = uma_providers.list_providers(
        sandbox=principal.tenant.is_sandbox,
        params=params,
        country_code=country_code,
        currency_code=currency_code,
        include_blocked=has_blocked_providers,
    )
    return page.envelope([provider.to_api() for provider in page.items])


@router.post(
    "/crypto/estimate-withdrawal-fee",
    operation_id="estimateCryptoWithdrawalFee",
    openapi_extra=ESTIMATE_WITHDRAWAL_FEE_EXAMPLES,
    response_model=EstimateCryptoWithdrawalFeeResponse,
    tags=["Cross-Currency Transfers"],
)
async def estimate_withdrawal_fee(
    body: EstimateCryptoWithdrawalFeeRequest, request: Request, principal: Principal = Viewer
) -> EstimateCryptoWithdrawalFeeResponse:
    """Estimate the network and application fees of a withdrawal from a crypto internal account."""
    async with get_db(request).read() as session:
        return await withdrawal_fees.estimate(
            session,
            tenant=principal.tenant,
            internal_account_id=body.internal_account_id,
            currency=body.currency,
            crypto_network=body.crypto_network,
            amount=body.amount,
            destination_address=body.destination_address,
        )
