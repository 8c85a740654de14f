from __future__ import annotations

from enum import Enum

from fastapi import Depends, Path, Query, Request, Response

from platpay.accounts import discoveries, statement
from platpay.accounts import service as internal
from platpay.accounts.external import service as external
from platpay.accounts.schemas import (
    EXTERNAL_ACCOUNT_EXAMPLES,
    PLATFORM_EXTERNAL_ACCOUNT_EXAMPLES,
    DiscoveryListResponse,
    ExternalAccount,
    ExternalAccountCreateRequest,
    ExternalAccountListResponse,
    InternalAccountEntryListResponse,
    InternalAccountListResponse,
    InternalAccountType,
    PlatformExternalAccountCreateRequest,
    PlatformInternalAccountListResponse,
)
from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.pagination import PageParams, page_params
from platpay.kit.routing import QueryTimestamp, api_router

router = api_router()
CurrencyQuery = Query(None, min_length=1, max_length=8)


@router.get(
    "/customers/internal-accounts",
    operation_id="listCustomerInternalAccounts",
    response_model=InternalAccountListResponse,
    tags=["Internal Accounts"],
)
async def list_customer_internal_accounts(
    request: Request,
    currency: str | None = CurrencyQuery,
    customer_id: str | None = Query(None, alias="customerId", max_length=64),
    account_type: InternalAccountType | None = Query(None, alias="type"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List customers' internal accounts with balances and deposit instructions."""
    page, accounts = await get_db(request).replica_read(
        lambda session: internal.list_customer_accounts(
            session,
            tenant_id=principal.tenant.id,
            params=params,
            customer_id=customer_id,
            currency=currency,
            account_type=account_type,
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([a.to_api() for a in accounts])


@router.get(
    "/platform/internal-accounts",
    operation_id="listPlatformInternalAccounts",
    response_model=PlatformInternalAccountListResponse,
    tags=["Internal Accounts"],
)
async def list_platform_internal_accounts(
    request: Request,
    currency: str | None = CurrencyQuery,
    account_type: InternalAccountType | None = Query(None, alias="type"),
    principal: Principal = Viewer,
) -> dict:
    """The platform's own internal accounts, one per supported currency."""
    accounts = await get_db(request).replica_read(
        lambda session: internal.list_platform_accounts(
            session, tenant_id=principal.tenant.id, currency=currency, account_type=account_type
        ),
        tenant_id=principal.tenant.id,
    )
    return {"data": [a.to_api() for a in accounts]}


@router.get(
    "/internal-accounts/{id}/entries",
    operation_id="listInternalAccountEntries",
    response_model=InternalAccountEntryListResponse,
    tags=["Internal Accounts"],
)
async def list_internal_account_entries(
    request: Request,
    id: str = Path(description="the internal account (a customer's or the platform's)"),
    kind: list[str] | None = Query(None, description="only entries of these kinds (repeat for several)"),
    start_date: QueryTimestamp | None = Query(None, alias="startDate", description="created at or after"),
    end_date: QueryTimestamp | None = Query(None, alias="endDate", description="created at or before"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """An internal account's statement: every movement of its balance, newest first."""
    page, entries = await get_db(request).replica_read(
        lambda session: statement.list_entries(
            session,
            tenant_id=principal.tenant.id,
            account_id=id,
            params=params,
            kinds=kind,
            start=start_date,
            end=end_date,
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([entry.to_api() for entry in entries])


async def _create_external(
    idem: Idempotent,
    principal: Principal,
    body: ExternalAccountCreateRequest | PlatformExternalAccountCreateRequest,
    customer_id: str | None,
    default_deposit: bool,
) -> Response:
    return await idem.run(
        body,
        lambda s: external.create_external_account(
            s,
            tenant=principal.tenant,
            customer_id=customer_id,
            currency=body.currency,
            account_info=body.account_info,
            platform_account_id=body.platform_account_id,
            default_uma_deposit_account=default_deposit,
            ownership_type=body.ownership_type,
        ),
    )


@router.post(
    "/customers/external-accounts",
    operation_id="createCustomerExternalAccount",
    openapi_extra=EXTERNAL_ACCOUNT_EXAMPLES,
    status_code=201,
    response_model=ExternalAccount,
    tags=["External Accounts"],
)
async def create_customer_external_account(
    body: ExternalAccountCreateRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Register a customer's bank account or wallet (the platform's own when customerId is absent)."""
    return await _create_external(idem, principal, body, body.customer_id, body.default_uma_deposit_account)


@router.get(
    "/customers/external-accounts",
    operation_id="listCustomerExternalAccounts",
    response_model=ExternalAccountListResponse,
    tags=["External Accounts"],
)
async def list_customer_external_accounts(
    request: Request,
    currency: str | None = CurrencyQuery,
    customer_id: str | None = Query(None, alias="customerId", max_length=64),
    platform_account_id: str | None = Query(None, alias="platformAccountId", max_length=255),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List customers' external accounts, newest first."""
    page = await get_db(request).replica_read(
        lambda session: external.list_external_accounts(
            session,
            tenant_id=principal.tenant.id,
            platform=False,
            params=params,
            customer_id=customer_id,
            currency=currency,
            platform_account_id=platform_account_id,
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([external.to_schema(row).to_api() for row in page.items])


@router.post(
    "/platform/external-accounts",
    operation_id="createPlatformExternalAccount",
    openapi_extra=PLATFORM_EXTERNAL_ACCOUNT_EXAMPLES,
    status_code=201,
    response_model=ExternalAccount,
    tags=["External Accounts"],
)
async def create_platform_external_account(
    body: PlatformExternalAccountCreateRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Register one of the platform's own bank accounts or wallets."""
    return await _create_external(idem, principal, body, None, False)


@router.get(
    "/platform/external-accounts",
    operation_id="listPlatformExternalAccounts",
    response_model=ExternalAccountListResponse,
    tags=["External Accounts"],
)
async def list_platform_external_accounts(
    request: Request,
    currency: str | None = CurrencyQuery,
    platform_account_id: str | None = Query(None, alias="platformAccountId", max_length=255),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List the platform's external accounts, newest first."""
    page = await get_db(request).replica_read(
        lambda session: external.list_external_accounts(
            session,
            tenant_id=principal.tenant.id,
            platform=True,
            params=params,
            currency=currency,
            platform_account_id=platform_account_id,
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([external.to_schema(row).to_api() for row in page.items])


def _one_external_account_routes(owner: str, *, platform: bool) -> None:
    """GET and DELETE /{owner}/external-accounts/{externalAccountId}: the same for customers' accounts and
    the platform's own, each path seeing only its kind (the other kind's ids are 404 there)."""
    whose = "one of the platform's" if platform else "a customer's"
    whose_id = "Platform" if platform else "Customer"  # in the reference's operationIds

    async def get_account(
        externalAccountId: str, request: Request, principal: Principal = Viewer
    ) -> ExternalAccount:
        return await get_db(request).replica_read(
            lambda session: external.get_external_account(
                session, tenant_id=principal.tenant.id, account_id=externalAccountId, platform=platform
            ),
            tenant_id=principal.tenant.id,
        )

    async def delete_account(
        externalAccountId: str, request: Request, principal: Principal = Manager
    ) -> Response:
        async with get_db(request).transaction() as session:
            await external.delete_external_account(
                session, tenant_id=principal.tenant.id, account_id=externalAccountId, platform=platform
            )
        return Response(status_code=204)

    path = f"/{owner}/external-accounts/{{externalAccountId}}"
    tags: list[str | Enum] = ["External Accounts"]
    router.add_api_route(
        path,
        get_account,
        methods=["GET"],
        response_model=ExternalAccount,
        tags=tags,
        name=f"get_{owner}_external_account",
        operation_id=f"get{whose_id}ExternalAccountById",
        summary=f"Get {whose} external account",
    )
    router.add_api_route(
        path,
        delete_account,
        methods=["DELETE"],
        status_code=204,
        response_class=Response,
        tags=tags,
        name=f"delete_{owner}_external_account",
        operation_id=f"delete{whose_id}ExternalAccountById",
        summary=f"Delete {whose} external account",
    )


_one_external_account_routes("customers", platform=False)
_one_external_account_routes("platform", platform=True)


@router.get(
    "/discoveries", operation_id="getDiscoveries", response_model=DiscoveryListResponse, tags=["Discoveries"]
)
async def list_discoveries(
    country: str | None = Query(None, min_length=2, max_length=2, description="ISO 3166-1 alpha-2"),
    currency: str | None = CurrencyQuery,
    principal: Principal = Viewer,
) -> dict:
    """Receiving institutions per corridor; use bankName in external accounts."""
    return {"data": discoveries.list_institutions(country=country, currency=currency)}
