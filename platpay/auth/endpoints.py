from __future__ import annotations

from fastapi import Depends, Query, Request, Response

from platpay.auth import service as auth_service
from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.auth.schemas import TOKEN_CREATE_EXAMPLES, ApiToken, ApiTokenCreateRequest, TokenListResponse
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.pagination import PageParams, page_params
from platpay.kit.routing import QueryTimestamp, api_router, as_utc

router = api_router(tags=["API Tokens"])


@router.post(
    "/tokens",
    operation_id="createToken",
    openapi_extra=TOKEN_CREATE_EXAMPLES,
    status_code=201,
    response_model=ApiToken,
)
async def create_token(
    body: ApiTokenCreateRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Create an API token; its clientSecret is in this response only."""

    return await idem.run(
        body,
        lambda s: auth_service.create_token(
            s, principal=principal, name=body.name, permissions=body.permissions
        ),
    )


@router.get("/tokens", operation_id="listTokens", response_model=TokenListResponse)
async def list_tokens(
    request: Request,
    name: str | None = Query(None, max_length=200, description="exact token name"),
    created_after: QueryTimestamp | None = Query(None, alias="createdAfter"),
    created_before: QueryTimestamp | None = Query(None, alias="createdBefore"),
    updated_after: QueryTimestamp | None = Query(None, alias="updatedAfter"),
    updated_before: QueryTimestamp | None = Query(None, alias="updatedBefore"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List live API tokens, newest first."""
    async with get_db(request).read() as session:
        page = await auth_service.list_tokens(
            session,
            tenant_id=principal.tenant.id,
            params=params,
            name=name,
            created_after=as_utc(created_after),
            created_before=as_utc(created_before),
            updated_after=as_utc(updated_after),
            updated_before=as_utc(updated_before),
        )
    return page.envelope([auth_service.to_schema(row).to_api() for row in page.items])


@router.get("/tokens/{tokenId}", operation_id="getTokenById", response_model=ApiToken)
async def get_token(tokenId: str, request: Request, principal: Principal = Viewer) -> ApiToken:
    """Get an API token (never its secret)."""
    async with get_db(request).read() as session:
        return await auth_service.get_token(session, tenant_id=principal.tenant.id, token_id=tokenId)


@router.delete("/tokens/{tokenId}", operation_id="deleteTokenById", status_code=204, response_class=Response)
async def delete_token(tokenId: str, request: Request, principal: Principal = Manager) -> Response:
    """Delete an API token; it stops authenticating immediately."""
    async with get_db(request).transaction() as session:
        await auth_service.delete_token(session, tenant_id=principal.tenant.id, token_id=tokenId)
    return Response(status_code=204)
