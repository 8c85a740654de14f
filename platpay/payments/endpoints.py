from __future__ import annotations

from fastapi import Body, Depends, Query, Request, Response

from platpay.accounts.schemas import InternalAccount
from platpay.auth.principal import Principal
from platpay.auth.principals import Transactor, Viewer, get_db, require_sandbox
from platpay.auth.schemas import Permission
from platpay.db.unit_of_work import LeanFirst
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.pagination import PageParams, sorted_page_params
from platpay.kit.routing import QueryTimestamp, api_router
from platpay.payments import funding, transfers
from platpay.payments import service as payments_service
from platpay.payments.schemas import (
    CANCEL_TRANSACTION_EXAMPLES,
    CONFIRM_RECEIPT_EXAMPLES,
    SANDBOX_FUND_EXAMPLES,
    TRANSFER_IN_EXAMPLES,
    TRANSFER_OUT_EXAMPLES,
    AnyTransaction,
    CancelTransactionRequest,
    ConfirmReceiptDeliveryRequest,
    SandboxFundRequest,
    Transaction,
    TransactionListResponse,
    TransactionOneOf,
    TransactionStatus,
    TransactionType,
    TransferInRequest,
    TransferOutRequest,
)

router = api_router()
sandbox_router = api_router(tags=["Sandbox"])


@router.post(
    "/transfer-out",
    operation_id="createTransferOut",
    openapi_extra=TRANSFER_OUT_EXAMPLES,
    status_code=201,
    response_model=TransactionOneOf,
    tags=["Same-Currency Transfers"],
)
async def transfer_out(
    body: TransferOutRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """Send from an internal account to the same customer's external account; funds are held until it settles."""
    settings = request.app.state.settings
    return await idem.run(
        body,
        LeanFirst.same(  # lean first; a sandbox account that fails at once gives way (payments/transfers.py)
            transfers.transfer_out,
            tenant=principal.tenant,
            source_account_id=body.source.account_id,
            destination_account_id=body.destination.account_id,
            payment_rail=body.destination.payment_rail,
            amount=body.amount,
            description=body.description,
            settings=settings,
            remittance_information=body.remittance_information,
            purpose_of_payment=body.purpose_of_payment,
        ),
        status=201,
    )


@router.post(
    "/transfer-in",
    operation_id="createTransferIn",
    openapi_extra=TRANSFER_IN_EXAMPLES,
    status_code=201,
    response_model=TransactionOneOf,
    tags=["Same-Currency Transfers"],
)
async def transfer_in(
    body: TransferInRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """Pull from an external account that supports it (ACH debit) into the same customer's internal account."""
    settings = request.app.state.settings
    return await idem.run(
        body,
        lambda s: transfers.transfer_in(
            s,
            tenant=principal.tenant,
            source_account_id=body.source.account_id,
            destination_account_id=body.destination.account_id,
            amount=body.amount,
            description=body.description,
            settings=settings,
        ),
        status=201,
    )


@router.get(
    "/transactions",
    operation_id="listTransactions",
    response_model=TransactionListResponse,
    tags=["Transactions"],
)
async def list_transactions(
    request: Request,
    customer_id: str | None = Query(
        None, alias="customerId", max_length=64, description="the platform's id: its own transactions"
    ),
    platform_customer_id: str | None = Query(None, alias="platformCustomerId", max_length=255),
    account_identifier: str | None = Query(None, alias="accountIdentifier", max_length=320),
    sender_account_identifier: str | None = Query(None, alias="senderAccountIdentifier", max_length=320),
    receiver_account_identifier: str | None = Query(None, alias="receiverAccountIdentifier", max_length=320),
    status: TransactionStatus | None = Query(None, description="card transactions have none of these"),
    type_: TransactionType | None = Query(
        None, alias="type", description="either excludes card transactions"
    ),
    reference: str | None = Query(None, max_length=120),
    start_date: QueryTimestamp | None = Query(None, alias="startDate"),
    end_date: QueryTimestamp | None = Query(None, alias="endDate"),
    params: PageParams = Depends(sorted_page_params),
    principal: Principal = Viewer,
) -> dict:
    """List transactions (newest first unless sortOrder=asc); filters combine."""
    page, items = await get_db(request).replica_read(
        lambda session: payments_service.list_transactions(
            session,
            tenant=principal.tenant,
            params=params,
            customer_id=customer_id,
            platform_customer_id=platform_customer_id,
            account_identifier=account_identifier,
            sender_account_identifier=sender_account_identifier,
            receiver_account_identifier=receiver_account_identifier,
            status=status,
            type_=type_,
            reference=reference,
            start_date=start_date,
            end_date=end_date,
        ),
        tenant_id=principal.tenant.id,
    )
    return page.envelope([t.to_api() for t in items])


@router.get(
    "/transactions/{transactionId}",
    operation_id="getTransactionById",
    response_model=TransactionOneOf,
    tags=["Transactions"],
)
async def get_transaction(
    transactionId: str, request: Request, principal: Principal = Viewer
) -> AnyTransaction:
    """Get one transaction."""
    return await get_db(request).replica_read(
        lambda session: payments_service.get_transaction(
            session, tenant=principal.tenant, transaction_id=transactionId
        ),
        tenant_id=principal.tenant.id,
    )


@router.post(
    "/transactions/{transactionId}/confirm",
    operation_id="confirmReceiptDelivery",
    openapi_extra=CONFIRM_RECEIPT_EXAMPLES,
    response_model=TransactionOneOf,
    tags=["Transactions"],
)
async def confirm_receipt(
    transactionId: str,
    request: Request,
    body: ConfirmReceiptDeliveryRequest | None = Body(None),
    principal: Principal = Transactor,
) -> Transaction:
    """Record that the receipt reached the recipient (receiptDeliveryConfirmedAt, default now)."""
    async with get_db(request).transaction() as session:
        return await payments_service.confirm_receipt(
            session,
            tenant=principal.tenant,
            transaction_id=transactionId,
            at=body.receipt_delivery_confirmed_at if body else None,
        )


@router.post(
    "/transactions/{transactionId}/cancel",
    operation_id="cancelTransaction",
    openapi_extra=CANCEL_TRANSACTION_EXAMPLES,
    response_model=TransactionOneOf,
    tags=["Transactions"],
    responses={409: {"description": "the transaction is settled, or no bank transfer"}},
)
async def cancel_transaction(
    transactionId: str,
    request: Request,
    body: CancelTransactionRequest | None = Body(None),
    idem: Idempotent = Idempotency,
    principal: Principal = Transactor,
) -> Response:
    """Cancel a bank transfer (ACH push or pull, wire) the rail has not settled yet; its held funds come back."""
    return await idem.run(
        body,
        lambda s: transfers.cancel(
            s, tenant=principal.tenant, transaction_id=transactionId, reason=body.reason if body else None
        ),
        status=200,
    )


@sandbox_router.post(
    "/sandbox/internal-accounts/{accountId}/fund",
    operation_id="sandboxFundInternalAccount",
    openapi_extra=SANDBOX_FUND_EXAMPLES,
    response_model=InternalAccount,
)
async def fund_internal_account(
    accountId: str,
    body: SandboxFundRequest,
    idem: Idempotent = Idempotency,
    principal: Principal = Depends(require_sandbox(Permission.TRANSACT)),
) -> Response:
    """Deposit sandbox money into an internal account (fires INTERNAL_ACCOUNT.BALANCE_UPDATED)."""
    return await idem.run(
        body,
        lambda s: funding.fund_internal_account(
            s, tenant=principal.tenant, account_id=accountId, amount=body.amount
        ),
        status=200,
    )
