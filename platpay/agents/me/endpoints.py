"""Agent operations (SPEC §4.2): `Authorization: Bearer <accessToken>` only, scoped to the agent's
customer. Money endpoints take `Idempotency-Key` (scoped to the agent) and answer an AgentAction.

The agents' credential lives here: the Bearer resolver (auth/principals.py `resolver`) turning an access
token into a Principal of kind AGENT_TOKEN, and `AgentAuth`, every agent operation's dependency (a platform
credential there is 403; a missing, unknown or deleted agent's token 401)."""

from __future__ import annotations

import asyncio
import weakref

from fastapi import Depends, Query, Request, Response
from fastapi.security import HTTPBearer

from platpay.accounts.schemas import (
    ExternalAccount,
    ExternalAccountCreateRequest,
    ExternalAccountListResponse,
    InternalAccountListResponse,
    InternalAccountType,
)
from platpay.agents import operations
from platpay.agents import service as agents_service
from platpay.agents.audit import service as audit
from platpay.agents.errors import InvalidAgentToken, NotAnAgent
from platpay.agents.me import service as me
from platpay.agents.schemas import (
    AGENT_EXTERNAL_ACCOUNT_EXAMPLES,
    AGENT_QUOTE_EXAMPLES,
    Agent,
    AgentAction,
    AgentActionListResponse,
    AgentActionStatus,
)
from platpay.auth.principal import Principal, PrincipalKind
from platpay.auth.principals import authenticate, get_db, resolver
from platpay.db.unit_of_work import LeanFirst
from platpay.errors import invalid_field
from platpay.kit.idempotency import Idempotency, Idempotent
from platpay.kit.pagination import PageParams, page_params, sorted_page_params
from platpay.kit.routing import QueryTimestamp, api_router
from platpay.payments.quotes.endpoints import destination_of, source_of, wallet_signature_header
from platpay.payments.quotes.schemas import Quote, QuoteRequest
from platpay.payments.schemas import (
    TRANSFER_IN_EXAMPLES,
    TRANSFER_OUT_EXAMPLES,
    TransactionListResponse,
    TransactionOneOf,
    TransactionStatus,
    TransactionType,
    TransferInRequest,
    TransferOutRequest,
)

CHALLENGE = {"WWW-Authenticate": 'Bearer realm="platpay"'}
# A bearer token that is no agent's: refused by whichever endpoint it reached, platform or agent: both schemes
BOTH = {"WWW-Authenticate": 'Basic realm="platpay", Bearer realm="platpay"'}


@resolver("Bearer")
async def _agent_token(request: Request) -> Principal:
    """An agent's access token: the live agent holding it, read on every request."""
    token = request.headers.get("Authorization", "").partition(" ")[2].strip()
    principal = await agents_service.authenticate_bearer(request.app.state.db, token=token)
    if principal is None:
        raise InvalidAgentToken("invalid or revoked agent access token", headers=BOTH)
    return principal


class AgentAuth(HTTPBearer):
    """Dependency: the calling agent. It is the Bearer security scheme itself (documented as AgentAuth on
    every agent operation) and authenticates in the same call."""

    def __init__(self) -> None:
        super().__init__(
            scheme_name="AgentAuth",
            auto_error=False,
            description="An agent's access token from POST /agents/device-codes/{code}/redeem",
        )

    async def __call__(self, request: Request) -> Principal:  # type: ignore[override]
        if not request.headers.get("Authorization"):
            raise InvalidAgentToken(
                "missing credentials: use Authorization: Bearer <accessToken>", headers=CHALLENGE
            )
        principal = await authenticate(request)
        if principal.kind != PrincipalKind.AGENT_TOKEN:
            raise NotAnAgent(
                "agent operations take an agent's access token (Authorization: Bearer), not platform credentials",
                details={"principalKind": principal.kind.value},
            )
        return principal


AgentCaller = Depends(AgentAuth())

# An agent's money requests serialize on its usage row in the database (that is what holds a limit, across
# processes). Within a process they also queue here first, holding no database connection while they wait:
# one agent's burst then takes at most one pooled connection per process instead of all of them.
_AGENT_QUEUES: weakref.WeakValueDictionary[str, asyncio.Lock] = weakref.WeakValueDictionary()


def _queue(agent_id: str) -> asyncio.Lock:
    lock = _AGENT_QUEUES.get(agent_id)
    if lock is None:
        lock = _AGENT_QUEUES[agent_id] = asyncio.Lock()
    return lock


router = api_router(tags=["Agent Operations"])
CurrencyQuery = Query(None, min_length=1, max_length=8)


@router.get("/agents/me", operation_id="getAgentMe", response_model=Agent)
async def get_me(request: Request, principal: Principal = AgentCaller) -> Agent:
    """The calling agent: its profile, policy and current usage."""
    async with get_db(request).read() as session:
        return await me.get_me(session, tenant=principal.tenant, agent_id=principal.id)


@router.get(
    "/agents/me/internal-accounts",
    operation_id="agentListInternalAccounts",
    response_model=InternalAccountListResponse,
)
async def list_internal_accounts(
    request: Request,
    currency: str | None = CurrencyQuery,
    account_type: InternalAccountType | None = Query(None, alias="type"),
    params: PageParams = Depends(page_params),
    principal: Principal = AgentCaller,
) -> dict:
    """The customer's internal accounts the policy lets the agent use, with balances."""
    async with get_db(request).read() as session:
        page, accounts = await me.list_internal_accounts(
            session,
            tenant=principal.tenant,
            agent_id=principal.id,
            params=params,
            currency=currency,
            account_type=account_type,
        )
    return page.envelope([a.to_api() for a in accounts])


@router.get(
    "/agents/me/external-accounts",
    operation_id="agentListExternalAccounts",
    response_model=ExternalAccountListResponse,
)
async def list_external_accounts(
    request: Request,
    currency: str | None = CurrencyQuery,
    params: PageParams = Depends(page_params),
    principal: Principal = AgentCaller,
) -> dict:
    """The customer's external accounts (MANAGE_EXTERNAL_ACCOUNTS)."""
    async with get_db(request).read() as session:
        page, accounts = await me.list_external_accounts(
            session, tenant=principal.tenant, agent_id=principal.id, params=params, currency=currency
        )
    return page.envelope([a.to_api() for a in accounts])


@router.post(
    "/agents/me/external-accounts",
    operation_id="agentCreateExternalAccount",
    openapi_extra=AGENT_EXTERNAL_ACCOUNT_EXAMPLES,
    status_code=201,
    response_model=ExternalAccount,
    responses={409: {"description": "this account is already registered for the customer"}},
)
async def create_external_account(
    body: ExternalAccountCreateRequest, request: Request, principal: Principal = AgentCaller
) -> ExternalAccount:
    """Register an external account for the agent's customer (customerId inferred; MANAGE_EXTERNAL_ACCOUNTS)."""
    async with get_db(request).transaction() as session:
        return await me.create_external_account(
            session,
            tenant=principal.tenant,
            agent_id=principal.id,
            customer_id=body.customer_id,
            currency=body.currency,
            account_info=body.account_info,
            platform_account_id=body.platform_account_id,
            default_uma_deposit_account=body.default_uma_deposit_account,
            ownership_type=body.ownership_type,
        )


@router.get(
    "/agents/me/external-accounts/{externalAccountId}",
    operation_id="agentGetExternalAccount",
    response_model=ExternalAccount,
)
async def get_external_account(
    externalAccountId: str, request: Request, principal: Principal = AgentCaller
) -> ExternalAccount:
    """One of the customer's external accounts (MANAGE_EXTERNAL_ACCOUNTS)."""
    async with get_db(request).read() as session:
        return await me.get_external_account(
            session, tenant=principal.tenant, agent_id=principal.id, account_id=externalAccountId
        )


@router.delete(
    "/agents/me/external-accounts/{externalAccountId}",
    operation_id="agentDeleteExternalAccount",
    status_code=204,
    response_class=Response,
)
async def delete_external_account(
    externalAccountId: str, request: Request, principal: Principal = AgentCaller
) -> Response:
    """Delete one of the customer's external accounts (MANAGE_EXTERNAL_ACCOUNTS)."""
    async with get_db(request).transaction() as session:
        await me.delete_external_account(
            session, tenant=principal.tenant, agent_id=principal.id, account_id=externalAccountId
        )
    return Response(status_code=204)


@router.post(
    "/agents/me/transfer-out",
    operation_id="agentCreateTransferOut",
    openapi_extra=TRANSFER_OUT_EXAMPLES,
    status_code=201,
    response_model=AgentAction,
)
async def transfer_out(
    body: TransferOutRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = AgentCaller,
) -> Response:
    """Send from the customer's internal account to its external account (CREATE_TRANSFERS; approval per policy)."""
    return await _transfer(
        request,
        body,
        idem,
        principal,
        outgoing=True,
        internal_account_id=body.source.account_id,
        external_account_id=body.destination.account_id,
        payment_rail=body.destination.payment_rail,
    )


@router.post(
    "/agents/me/transfer-in",
    operation_id="agentCreateTransferIn",
    openapi_extra=TRANSFER_IN_EXAMPLES,
    status_code=201,
    response_model=AgentAction,
)
async def transfer_in(
    body: TransferInRequest,
    request: Request,
    idem: Idempotent = Idempotency,
    principal: Principal = AgentCaller,
) -> Response:
    """Pull from the customer's external account into its internal account (CREATE_TRANSFERS; approval per policy)."""
    return await _transfer(
        request,
        body,
        idem,
        principal,
        outgoing=False,
        internal_account_id=body.destination.account_id,
        external_account_id=body.source.account_id,
    )


async def _transfer(
    request: Request,
    body: TransferOutRequest | TransferInRequest,
    idem: Idempotent,
    principal: Principal,
    *,
    outgoing: bool,
    internal_account_id: str,
    external_account_id: str,
    payment_rail: str | None = None,
) -> Response:
    """Both transfer endpoints: one at a time per agent, policy refusals audited (MONEY_REFUSED, once per
    refusal, keyed or not: agents/audit/service.py `record_refusals`), the policy deciding in `operations.transfer`."""
    settings = request.app.state.settings
    kind = "TRANSFER_OUT" if outgoing else "TRANSFER_IN"
    async with _queue(principal.id):
        # Lean first (every statement of it is lean), as the platform's transfer-out: a sandbox account that
        # fails at once gives way to the careful attempt in an ORM session (payments/transfers.py).
        return await idem.run(
            body,
            LeanFirst.same(
                operations.transfer,
                principal_tenant=principal.tenant,
                agent_id=principal.id,
                outgoing=outgoing,
                internal_account_id=internal_account_id,
                external_account_id=external_account_id,
                payment_rail=payment_rail,
                amount=body.amount,
                description=body.description,
                settings=settings,
                remittance_information=getattr(body, "remittance_information", None),
                purpose_of_payment=getattr(body, "purpose_of_payment", None),
            ),
            status=201,
            on_refusal=audit.record_refusals(principal, kind, body),
        )


@router.post(
    "/agents/me/quotes",
    operation_id="agentCreateQuote",
    openapi_extra=AGENT_QUOTE_EXAMPLES,
    status_code=201,
    response_model=Quote,
)
async def create_quote(
    body: QuoteRequest, request: Request, idem: Idempotent = Idempotency, principal: Principal = AgentCaller
) -> Response:
    """Lock a price from the customer's internal account (CREATE_QUOTES); execute it separately."""
    settings = request.app.state.settings
    return await idem.run(
        body,
        lambda s: me.create_quote(
            s,
            tenant=principal.tenant,
            agent_id=principal.id,
            source=source_of(body.source),
            destination=destination_of(body.destination),
            locked_currency_side=body.locked_currency_side,
            locked_currency_amount=body.locked_currency_amount,
            lookup_id=body.lookup_id,
            immediately_execute=body.immediately_execute,
            description=body.description,
            purpose_of_payment=body.purpose_of_payment,
            remittance_information=body.remittance_information,
            sender_customer_info=body.sender_customer_info,
            platform_fee_override=body.platform_fee_override is not None,
            settings=settings,
        ),
        status=201,
        on_refusal=audit.record_refusals(principal, "CREATE_QUOTE", body),
    )


@router.get("/agents/me/quotes/{quoteId}", operation_id="agentGetQuote", response_model=Quote)
async def get_quote(quoteId: str, request: Request, principal: Principal = AgentCaller) -> Quote:
    """A quote this agent created (any other is 404)."""
    async with get_db(request).read() as session:
        return await me.get_quote(session, tenant=principal.tenant, agent_id=principal.id, quote_id=quoteId)


@router.post(
    "/agents/me/quotes/{quoteId}/execute",
    operation_id="agentExecuteQuote",
    response_model=AgentAction,
    responses={409: {"description": "the quote expired or was already executed"}},
)
async def execute_quote(
    quoteId: str,
    request: Request,
    idem: Idempotent = Idempotency,
    wallet_signature: str | None = Depends(wallet_signature_header),
    principal: Principal = AgentCaller,
) -> Response:
    """Execute a quote this agent created (EXECUTE_QUOTES; approval per policy)."""
    settings = request.app.state.settings
    async with _queue(principal.id):
        return await idem.run(
            None,
            lambda s: operations.execute_quote(
                s,
                tenant=principal.tenant,
                agent_id=principal.id,
                quote_id=quoteId,
                wallet_signature=wallet_signature,
                settings=settings,
            ),
            status=200,
            on_refusal=audit.record_refusals(principal, "EXECUTE_QUOTE", {"quoteId": quoteId}),
        )


@router.get(
    "/agents/me/transactions", operation_id="agentListTransactions", response_model=TransactionListResponse
)
async def list_transactions(
    request: Request,
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
    principal: Principal = AgentCaller,
) -> dict:
    """The customer's transactions (newest first unless sortOrder=asc); no customer filter."""
    for name in ("customerId", "platformCustomerId"):
        if name in request.query_params:
            raise invalid_field(
                name, "an agent's transactions are its customer's: no customer filter", location="query"
            )
    async with get_db(request).read() as session:
        page, items = await me.list_transactions(
            session,
            tenant=principal.tenant,
            agent_id=principal.id,
            params=params,
            account_identifier=account_identifier,
            sender_account_identifier=sender_account_identifier,
            receiver_account_identifier=receiver_account_identifier,
            status=status,
            type_=type_,
            reference=reference,
            start_date=start_date,
            end_date=end_date,
        )
    return page.envelope([t.to_api() for t in items])


@router.get(
    "/agents/me/transactions/{transactionId}",
    operation_id="agentGetTransaction",
    response_model=TransactionOneOf,
)
async def get_transaction(transactionId: str, request: Request, principal: Principal = AgentCaller) -> dict:
    """One of the customer's transactions (another customer's is 404)."""
    async with get_db(request).read() as session:
        transaction = await me.get_transaction(
            session, tenant=principal.tenant, agent_id=principal.id, transaction_id=transactionId
        )
    return transaction.to_api()


@router.get("/agents/me/actions", operation_id="agentListActions", response_model=AgentActionListResponse)
async def list_actions(
    request: Request,
    status: AgentActionStatus | None = Query(None),
    params: PageParams = Depends(page_params),
    principal: Principal = AgentCaller,
) -> dict:
    """The agent's own actions, newest first: poll for approval decisions."""
    async with get_db(request).read() as session:
        page, actions = await operations.list_actions(
            session, tenant=principal.tenant, params=params, agent_id=principal.id, status=status
        )
    return page.envelope([a.to_api() for a in actions])


@router.get("/agents/me/actions/{actionId}", operation_id="agentGetAction", response_model=AgentAction)
async def get_action(actionId: str, request: Request, principal: Principal = AgentCaller) -> AgentAction:
    """One of the agent's actions: poll for APPROVED, REJECTED or FAILED."""
    async with get_db(request).read() as session:
        return await operations.get_action(
            session, tenant=principal.tenant, action_id=actionId, agent_id=principal.id
        )
