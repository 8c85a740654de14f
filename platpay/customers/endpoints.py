from __future__ import annotations

from collections.abc import Callable, Coroutine
from html import escape
from typing import Any

from fastapi import APIRouter, Body, Depends, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db, require_sandbox
from platpay.auth.schemas import Permission
from platpay.customers import drafts
from platpay.customers import service as customers_service
from platpay.customers.schemas import (
    CUSTOMER_CREATE_EXAMPLES,
    CUSTOMER_UPDATE_EXAMPLES,
    SANDBOX_KYC_EXAMPLES,
    Customer,
    CustomerCreateRequestOneOf,
    CustomerListResponse,
    CustomerOneOf,
    CustomerType,
    CustomerUpdateRequestOneOf,
    EndUserTerms,
    SandboxKycStatusRequest,
)
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.pagination import PageParams, page_params
from platpay.kit.routing import ApiRoute, QueryTimestamp, api_router
from platpay.kit.wallet_signature import SignedRequestChallenge, WalletSignature, wallet_signature_headers

router = api_router(tags=["Customers"])
sandbox_router = api_router(tags=["Sandbox"])
page_router = APIRouter(include_in_schema=False)


class _NamingEveryProblem(ApiRoute):
    """A create or PATCH body that fails schema validation (a wrong type, a too-short email) may also break
    the rules the service checks (a name with a digit, a birthDate in the future): one 400 names them all."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def naming_every_problem(request: Request) -> Response:
            try:
                return await handler(request)
            except RequestValidationError as error:
                raise await _with_rule_problems(request, error) from None

        return naming_every_problem


async def _with_rule_problems(request: Request, error: RequestValidationError) -> RequestValidationError:
    principal = getattr(request.state, "principal", None)
    body_errors = [e for e in error.errors() if tuple(e.get("loc", ()))[:1] == ("body",)]
    if not isinstance(principal, Principal) or not body_errors or not isinstance(error.body, dict):
        return error
    row = None
    model: type[CustomerCreateRequestOneOf | CustomerUpdateRequestOneOf] = CustomerCreateRequestOneOf
    if request.method == "PATCH":
        model = CustomerUpdateRequestOneOf
        async with get_db(request).read() as session:
            row = await customers_service.find_active(
                session, tenant_id=principal.tenant.id, customer_id=request.path_params["customerId"]
            )
    problems = drafts.problems_beside_schema_errors(
        error.body,
        [tuple(e["loc"])[1:] for e in body_errors],
        model=model,
        tenant=principal.tenant,
        settings=request.app.state.settings,
        row=row,
    )
    if not problems:
        return error
    more = [
        {
            "type": "value_error",
            "loc": ("body", *p.field.split(".")),
            "msg": p.message,
            "input": None,
            "ctx": {"constraint": p.constraint} if p.constraint else {},
        }
        for p in problems
    ]
    return RequestValidationError([*error.errors(), *more], body=error.body)


def _naming_every_problem(path: str, method: str, **kwargs: Any) -> Callable[[Any], Any]:
    def register(endpoint: Any) -> Any:
        router.add_api_route(
            path, endpoint, methods=[method], route_class_override=_NamingEveryProblem, **kwargs
        )
        return endpoint

    return register


@_naming_every_problem(
    "/customers",
    "POST",
    operation_id="createCustomer",
    openapi_extra=CUSTOMER_CREATE_EXAMPLES,
    status_code=201,
    response_model=CustomerOneOf,
)
async def create_customer(
    body: CustomerCreateRequestOneOf,
    idem: Idempotent = Idempotency,
    principal: Principal = Manager,
) -> Response:
    """Create an INDIVIDUAL or BUSINESS customer; its internal accounts are opened with it."""

    return await idem.run(
        body,
        lambda s: customers_service.create_customer(
            s, tenant=principal.tenant, draft=body.draft(), settings=idem.request.app.state.settings
        ),
    )


@router.get("/customers", operation_id="listCustomers", response_model=CustomerListResponse)
async def list_customers(
    request: Request,
    platform_customer_id: str | None = Query(None, alias="platformCustomerId", max_length=255),
    customer_type: CustomerType | None = Query(None, alias="customerType"),
    created_after: QueryTimestamp | None = Query(None, alias="createdAfter"),
    created_before: QueryTimestamp | None = Query(None, alias="createdBefore"),
    updated_after: QueryTimestamp | None = Query(None, alias="updatedAfter"),
    updated_before: QueryTimestamp | None = Query(None, alias="updatedBefore"),
    region: str | None = Query(
        None, min_length=2, max_length=2, pattern="^[A-Z]{2}$", description="ISO 3166-1 alpha-2"
    ),
    currency: str | None = Query(
        None, min_length=1, max_length=8, description="customers using this currency"
    ),
    uma_address: str | None = Query(None, alias="umaAddress", max_length=320, description="case-insensitive"),
    include_deleted: bool = Query(False, alias="isIncludingDeleted"),
    params: PageParams = Depends(page_params),
    principal: Principal = Viewer,
) -> dict:
    """List customers, newest first; filters combine."""
    db = get_db(request)

    async def listed(session: AsyncSession) -> tuple[Any, list[Any]]:
        page = await customers_service.list_customers(
            session,
            tenant_id=principal.tenant.id,
            dialect=db.dialect,
            params=params,
            platform_customer_id=platform_customer_id,
            customer_type=customer_type,
            created_after=created_after,
            created_before=created_before,
            updated_after=updated_after,
            updated_before=updated_before,
            region=region,
            currency=currency,
            uma_address=uma_address,
            include_deleted=include_deleted,
        )
        return page, await customers_service.render_many(session, page.items)

    page, customers = await db.replica_read(listed, tenant_id=principal.tenant.id)
    return page.envelope([customer.to_api() for customer in customers])


# Before /customers/{customerId}, which would take "end-user-terms" for an id.
@router.get("/customers/end-user-terms", operation_id="getEndUserTerms", response_model=EndUserTerms)
async def get_end_user_terms(request: Request, principal: Principal = Viewer) -> EndUserTerms:
    """Get the current End User Terms: the version a customer's endUserTermsConsent names, and its URL."""
    return customers_service.end_user_terms(request.app.state.settings)


@page_router.get(f"{customers_service.TERMS_PAGE_PATH}/{{version}}", response_class=HTMLResponse)
async def end_user_terms_page(version: str, request: Request) -> HTMLResponse:
    """The End User Terms' default URL: a placeholder page (set PLATPAY_END_USER_TERMS_URL to your
    provider's terms)."""
    current = customers_service.end_user_terms(request.app.state.settings).version
    if version != current:
        return HTMLResponse(_terms_html("Not found", f"No End User Terms {version!r}."), status_code=404)
    return HTMLResponse(
        _terms_html(
            f"End User Terms {current}",
            "These are platpay's placeholder End User Terms: the terms your customers accept are your "
            "provider's, at the URL PLATPAY_END_USER_TERMS_URL names. Record a customer's acceptance with "
            f"endUserTermsConsent (termsVersion {current}).",
        )
    )


def _terms_html(title: str, text: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">'
        f"<title>{escape(title)}</title></head><body><main><h1>{escape(title)}</h1><p>{escape(text)}</p>"
        "</main></body></html>"
    )


@router.get("/customers/{customerId}", operation_id="getCustomerById", response_model=CustomerOneOf)
async def get_customer(customerId: str, request: Request, principal: Principal = Viewer) -> Customer:
    """Get a customer (a deleted one reports isDeleted: true)."""
    return await get_db(request).replica_read(
        lambda session: customers_service.get_customer(
            session, tenant_id=principal.tenant.id, customer_id=customerId
        ),
        tenant_id=principal.tenant.id,
    )


@_naming_every_problem(
    "/customers/{customerId}",
    "PATCH",
    operation_id="updateCustomerById",
    openapi_extra=CUSTOMER_UPDATE_EXAMPLES,
    response_model=CustomerOneOf,
    responses={
        202: {
            "model": SignedRequestChallenge,
            "description": "an email change of a customer whose wallets log in by EMAIL_OTP: stamp "
            "payloadToSign with a session of one of those wallets and retry the same body with "
            "Svc-Wallet-Signature and Request-Id",
        },
        410: {"description": "customer deleted"},
    },
)
async def update_customer(
    customerId: str,
    body: CustomerUpdateRequestOneOf,
    request: Request,
    principal: Principal = Manager,
    wallet_signature: WalletSignature = Depends(wallet_signature_headers),
) -> Customer | Response:
    """Update a customer's fields; customerType is required and selects which fields apply."""
    async with get_db(request).transaction() as session:
        updated = await customers_service.update_customer(
            session,
            tenant=principal.tenant,
            customer_id=customerId,
            changes=body.draft(),
            settings=request.app.state.settings,
            wallet_signature=wallet_signature,
        )
    if isinstance(updated, SignedRequestChallenge):
        return JSONResponse(updated.to_api(), status_code=202)
    return updated


@router.delete(
    "/customers/{customerId}",
    operation_id="deleteCustomerById",
    response_model=CustomerOneOf,
    responses={410: {"description": "already deleted"}},
)
async def delete_customer(customerId: str, request: Request, principal: Principal = Manager) -> Customer:
    """Delete a customer (soft: kept for audit, hidden from lists, its accounts closed)."""
    async with get_db(request).transaction() as session:
        return await customers_service.delete_customer(
            session, tenant_id=principal.tenant.id, customer_id=customerId
        )


@sandbox_router.post(
    "/sandbox/customers/{customerId}/kyc",
    operation_id="sandboxUpdateCustomerKycStatus",
    openapi_extra=SANDBOX_KYC_EXAMPLES,
    response_model=CustomerOneOf,
)
async def simulate_kyc_outcome(
    customerId: str,
    request: Request,
    body: SandboxKycStatusRequest = Body(...),
    principal: Principal = Depends(require_sandbox(Permission.MANAGE)),
) -> Customer:
    """Set a customer's kycStatus as a review would, firing CUSTOMER.KYC_*/KYB_* (sandbox only)."""
    async with get_db(request).transaction() as session:
        return await customers_service.set_kyc_status(
            session, tenant_id=principal.tenant.id, customer_id=customerId, status=body.kyc_status
        )
