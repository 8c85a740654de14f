"""Incoming UMA payments: the sandbox simulation and the platform's asynchronous approve / reject."""

from __future__ import annotations

from fastapi import Body, Depends, Request, Response

from platpay.auth.principal import Principal
from platpay.auth.principals import Transactor, require_sandbox
from platpay.auth.schemas import Permission
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.openapi import Responses
from platpay.kit.routing import api_router
from platpay.payments.incoming import receive as incoming_receive
from platpay.payments.incoming import service as incoming
from platpay.payments.incoming.schemas import (
    APPROVE_PAYMENT_EXAMPLES,
    REJECT_PAYMENT_EXAMPLES,
    SANDBOX_RECEIVE_EXAMPLES,
    ApprovePaymentRequest,
    RejectPaymentRequest,
    SandboxUmaReceiveRequest,
)
from platpay.payments.schemas import IncomingTransaction

router = api_router(tags=["Transactions"])
sandbox_router = api_router(tags=["Sandbox"])

_NOT_PENDING: Responses = {
    409: {"description": "TRANSACTION_NOT_PENDING_PLATFORM_APPROVAL: already decided or timed out"}
}


@router.post(
    "/transactions/{transactionId}/approve",
    operation_id="approvePendingPayment",
    openapi_extra=APPROVE_PAYMENT_EXAMPLES,
    response_model=IncomingTransaction,
    responses=_NOT_PENDING,
)
async def approve_incoming_payment(
    transactionId: str,
    body: ApprovePaymentRequest | None = Body(None),
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """Approve an incoming payment awaiting the platform's decision; the customer is credited."""
    body = body or ApprovePaymentRequest()
    return await idem.run(
        body,
        lambda s: incoming.approve(
            s, tenant=principal.tenant, transaction_id=transactionId, info=body.receiver_customer_info
        ),
        status=200,
    )


@router.post(
    "/transactions/{transactionId}/reject",
    operation_id="rejectPendingPayment",
    openapi_extra=REJECT_PAYMENT_EXAMPLES,
    response_model=IncomingTransaction,
    responses=_NOT_PENDING,
)
async def reject_incoming_payment(
    transactionId: str,
    body: RejectPaymentRequest | None = Body(None),
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """Reject an incoming payment awaiting the platform's decision; nothing is credited."""
    body = body or RejectPaymentRequest()
    return await idem.run(
        body,
        lambda s: incoming.reject(
            s, tenant=principal.tenant, transaction_id=transactionId, reason=body.reason
        ),
        status=200,
    )


@sandbox_router.post(
    "/sandbox/uma/receive",
    operation_id="sandboxReceive",
    openapi_extra=SANDBOX_RECEIVE_EXAMPLES,
    response_model=IncomingTransaction,
)
async def sandbox_uma_receive(
    body: SandboxUmaReceiveRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = Depends(require_sandbox(Permission.TRANSACT)),
) -> Response:
    """Simulate a sandbox UMA sender paying a customer: a PENDING incoming payment awaiting approval."""
    settings = request.app.state.settings
    return await idem.run(
        body,
        lambda s: incoming_receive.receive(
            s,
            tenant=principal.tenant,
            sender_uma_address=body.sender_uma_address,
            receiver_uma_address=body.receiver_uma_address,
            customer_id=body.customer_id,
            receiving_currency_code=body.receiving_currency_code,
            receiving_currency_amount=body.receiving_currency_amount,
            settings=settings,
        ),
        status=200,
    )
