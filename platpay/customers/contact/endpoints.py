from __future__ import annotations

from fastapi import Body, Request, Response
from fastapi.responses import JSONResponse

from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, get_db
from platpay.customers.contact import rules as contact
from platpay.customers.contact import service as verification
from platpay.customers.contact.schemas import (
    CONFIRM_EXAMPLES,
    PHONE_EXAMPLES,
    ContactVerificationConfirmRequest,
    PhoneVerificationRequest,
)
from platpay.customers.schemas import Customer
from platpay.kit.openapi import Responses
from platpay.kit.routing import api_router

router = api_router(tags=["Contact Verification"])

_CONFLICT: Responses = {
    409: {"description": "the customer's providers do not require this channel, or it is VERIFIED"}
}
_LIMITED: Responses = {429: {"description": "too many codes sent or attempts for this customer's channel"}}


async def _send(
    request: Request, principal: Principal, customer_id: str, channel: str, phone: str | None
) -> Response:
    async with get_db(request).transaction() as session:
        await verification.send_code(
            session, tenant=principal.tenant, customer_id=customer_id, channel=channel, phone_number=phone
        )
    return Response(status_code=204)


async def _confirm(
    request: Request, principal: Principal, customer_id: str, channel: str, code: str
) -> Response:
    async with get_db(request).transaction() as session:
        outcome = await verification.confirm_code(
            session, tenant=principal.tenant, customer_id=customer_id, channel=channel, code=code
        )
    if outcome.refusal is not None:  # raised once the attempt is counted (committed)
        raise outcome.refusal
    assert outcome.customer is not None
    # The customer as GET shows it, with its type's fields: the document names the reference's `Customer`
    # schema, which a response model would cut the answer down to.
    return JSONResponse(outcome.customer.to_api())


@router.post(
    "/customers/{customerId}/verify-email",
    operation_id="sendCustomerEmailVerification",
    status_code=204,
    responses={**_CONFLICT, **_LIMITED, 410: {"description": "customer deleted"}},
)
async def send_email_code(customerId: str, request: Request, principal: Principal = Manager) -> Response:
    """Send (or resend) a one-time code to the customer's email."""
    return await _send(request, principal, customerId, contact.EMAIL, None)


@router.post(
    "/customers/{customerId}/verify-email/confirm",
    operation_id="confirmCustomerEmailVerification",
    openapi_extra=CONFIRM_EXAMPLES,
    response_model=Customer,
    responses={**_CONFLICT, **_LIMITED, 410: {"description": "customer deleted"}},
)
async def confirm_email(
    customerId: str, body: ContactVerificationConfirmRequest, request: Request, principal: Principal = Manager
) -> Response:
    """Confirm the emailed code: contactVerification.email becomes VERIFIED."""
    return await _confirm(request, principal, customerId, contact.EMAIL, body.code)


@router.post(
    "/customers/{customerId}/verify-phone",
    operation_id="sendCustomerPhoneVerification",
    openapi_extra=PHONE_EXAMPLES,
    status_code=204,
    responses={**_CONFLICT, **_LIMITED, 410: {"description": "customer deleted"}},
)
async def send_phone_code(
    customerId: str,
    request: Request,
    body: PhoneVerificationRequest | None = Body(None),
    principal: Principal = Manager,
) -> Response:
    """Send (or resend) a one-time code by SMS to the number named (else the last one named)."""
    return await _send(request, principal, customerId, contact.PHONE, body.phone_number if body else None)


@router.post(
    "/customers/{customerId}/verify-phone/confirm",
    operation_id="confirmCustomerPhoneVerification",
    openapi_extra=CONFIRM_EXAMPLES,
    response_model=Customer,
    responses={**_CONFLICT, **_LIMITED, 410: {"description": "customer deleted"}},
)
async def confirm_phone(
    customerId: str, body: ContactVerificationConfirmRequest, request: Request, principal: Principal = Manager
) -> Response:
    """Confirm the texted code: contactVerification.phone becomes VERIFIED."""
    return await _confirm(request, principal, customerId, contact.PHONE, body.code)
