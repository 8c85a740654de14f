"""The agent's view of its customer (SPEC §4.2): everything scoped to the agent's customer, answered by the
owning domains' services. Another customer's resource is a 404, exactly like a missing one; a permission
the policy does not grant is a 403 naming the rule. Reads continue while the agent is paused; money
requests do not (operations.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.external import service as external_service
from platpay.accounts.schemas import ExternalAccount, InternalAccount
from platpay.agents import operations, repository
from platpay.agents import policy as policies
from platpay.agents import service as agents_service
from platpay.agents.schemas import Agent
from platpay.config import Settings
from platpay.customers.errors import CustomerNotFound
from platpay.errors import NotFound, invalid_field
from platpay.kit import clock
from platpay.kit.pagination import MAX_LIMIT, PageParams, PageResult, paginate_items
from platpay.payments import service as payments_service
from platpay.payments.errors import TransactionNotFound
from platpay.payments.quotes import service as quotes_service
from platpay.payments.quotes import types as quote_types
from platpay.payments.quotes.schemas import Quote
from platpay.payments.schemas import AnyTransaction
from platpay.tenants.context import TenantContext


async def get_me(session: AsyncSession, *, tenant: TenantContext, agent_id: str) -> Agent:
    return await agents_service.get_agent(session, tenant=tenant, agent_id=agent_id)


async def _require(session: AsyncSession, *, tenant: TenantContext, agent_id: str, operation: str,
                   account_id: str | None = None) -> Any:  # fmt: skip
    """The agent, after the policy's permission and account checks for a non-money `operation`."""
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    usage = await repository.usage(session, tenant_id=tenant.id, agent_id=agent.id)
    assert usage is not None
    decision = policies.evaluate(
        agent.policy,
        agents_service.usage_of(usage),
        policies.Request(
            operation=operation, account_id=account_id, amount=0, currency="", agent_paused=agent.is_paused
        ),
        agents_service.rates,
        clock.now(tenant),
    )
    if isinstance(decision, policies.Deny):
        raise operations.refuse(decision)
    return agent


def _manage_external(agent: Any) -> None:
    if "MANAGE_EXTERNAL_ACCOUNTS" not in (agent.policy.get("permissions") or ()):
        raise operations.refuse(
            policies.Deny("permissions", "the policy does not grant MANAGE_EXTERNAL_ACCOUNTS")
        )


async def list_internal_accounts(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    params: PageParams,
    currency: str | None,
    account_type: str | None,
) -> tuple[PageResult[InternalAccount], list[InternalAccount]]:
    """The customer's internal accounts the policy's `allowedAccountIds` lets the agent use (all when
    unrestricted)."""
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    allowed = (agent.policy.get("accountRestrictions") or {}).get("allowedAccountIds")
    _, accounts = await accounts_service.list_customer_accounts(
        session,
        tenant_id=tenant.id,
        params=PageParams(limit=MAX_LIMIT, after_id=None),
        customer_id=agent.customer_id,
        currency=currency,
        account_type=account_type,
    )
    visible = [a for a in accounts if allowed is None or a.id in allowed]
    ordered = sorted(visible, key=lambda a: a.id, reverse=params.descending)
    page = paginate_items(ordered, key=lambda a: a.id, params=params)
    return page, page.items


async def create_external_account(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    customer_id: str | None,
    currency: str,
    account_info: Any,
    platform_account_id: str | None,
    default_uma_deposit_account: bool,
    ownership_type: str | None = None,
) -> ExternalAccount:
    """POST /agents/me/external-accounts: for the agent's customer (customerId inferred; another → 404)."""
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    _manage_external(agent)
    if customer_id is not None and customer_id != agent.customer_id:
        raise CustomerNotFound(customer_id)
    return await external_service.create_external_account(
        session,
        tenant=tenant,
        customer_id=agent.customer_id,
        currency=currency,
        account_info=account_info,
        platform_account_id=platform_account_id,
        default_uma_deposit_account=default_uma_deposit_account,
        ownership_type=ownership_type,
    )


async def list_external_accounts(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, params: PageParams, currency: str | None
) -> tuple[PageResult[Any], list[ExternalAccount]]:
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    _manage_external(agent)
    page = await external_service.list_external_accounts(
        session,
        tenant_id=tenant.id,
        platform=False,
        params=params,
        customer_id=agent.customer_id,
        currency=currency,
    )
    return page, [external_service.to_schema(row) for row in page.items]


async def get_external_account(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, account_id: str
) -> ExternalAccount:
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    _manage_external(agent)
    row = await agents_service.customers_external_account(
        session, tenant=tenant, customer_id=agent.customer_id, account_id=account_id
    )
    return external_service.to_schema(row)


async def delete_external_account(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, account_id: str
) -> None:
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    _manage_external(agent)
    await agents_service.customers_external_account(
        session, tenant=tenant, customer_id=agent.customer_id, account_id=account_id
    )
    await external_service.delete_external_account(
        session, tenant_id=tenant.id, account_id=account_id, platform=False
    )


async def create_quote(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    source: quote_types.QuoteSource,
    destination: quote_types.QuoteDestination,
    locked_currency_side: str,
    locked_currency_amount: int,
    lookup_id: str | None,
    immediately_execute: bool,
    description: str | None,
    purpose_of_payment: str | None,
    sender_customer_info: dict[str, Any] | None,
    settings: Settings,
    remittance_information: str | None = None,
    platform_fee_override: bool = False,
) -> Quote:
    """POST /agents/me/quotes: from one of the customer's internal accounts to an account of the customer
    or a UMA address; needs CREATE_QUOTES and an allowed source account. Executing it is a separate,
    policy-judged step (EXECUTE_QUOTES), so `immediatelyExecute` is refused, and so is a
    `platformFeeOverride` (the platform's fee is the platform's to set, not its customer's agent's)."""
    if platform_fee_override:
        raise invalid_field(
            "platformFeeOverride", "an agent's quotes carry the platform's configured fee; omit the override"
        )
    if immediately_execute:
        raise invalid_field(
            "immediatelyExecute",
            "an agent executes its quote through POST /agents/me/quotes/{quoteId}/execute",
        )
    if not isinstance(source, quote_types.AccountSource):
        raise invalid_field(
            "source.sourceType",
            "an agent's quote is funded from one of its customer's internal accounts (ACCOUNT)",
        )
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    await agents_service.customers_internal_account(
        session, tenant=tenant, customer_id=agent.customer_id, account_id=source.account_id
    )
    if isinstance(destination, quote_types.AccountDestination):
        await _customers_account(
            session, tenant=tenant, customer_id=agent.customer_id, account_id=destination.account_id
        )
    if lookup_id is not None:  # another customer's lookup names its receiver: as if there were none
        await quotes_service.check_lookup_sender(
            session, tenant=tenant, lookup_id=lookup_id, customer_id=agent.customer_id
        )
    await _require(
        session, tenant=tenant, agent_id=agent_id, operation="CREATE_QUOTE", account_id=source.account_id
    )
    return await quotes_service.create_quote(
        session,
        tenant=tenant,
        source=quote_types.AccountSource(account_id=source.account_id, customer_id=None),
        destination=destination,
        locked_currency_side=locked_currency_side,
        locked_currency_amount=locked_currency_amount,
        lookup_id=lookup_id,
        immediately_execute=False,
        description=description,
        purpose_of_payment=purpose_of_payment,
        remittance_information=remittance_information,
        sender_customer_info=sender_customer_info,
        settings=settings,
        agent_id=agent_id,
    )


async def _customers_account(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, account_id: str
) -> None:
    """An internal or external account of the customer; 404 otherwise."""
    if account_id.startswith("InternalAccount:"):
        await agents_service.customers_internal_account(
            session, tenant=tenant, customer_id=customer_id, account_id=account_id
        )
    else:
        await agents_service.customers_external_account(
            session, tenant=tenant, customer_id=customer_id, account_id=account_id
        )


async def get_quote(session: AsyncSession, *, tenant: TenantContext, agent_id: str, quote_id: str) -> Quote:
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    facts = await agents_service.own_quote(
        session, tenant=tenant, agent_id=agent.id, customer_id=agent.customer_id, quote_id=quote_id
    )
    return facts.quote


async def list_transactions(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, params: PageParams, **filters: Any
) -> tuple[PageResult[Any], list[AnyTransaction]]:
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    return await payments_service.list_transactions(
        session, tenant=tenant, params=params, customer_id=agent.customer_id, **filters
    )


async def get_transaction(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, transaction_id: str
) -> AnyTransaction:
    agent = await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    try:
        transaction = await payments_service.get_transaction(
            session, tenant=tenant, transaction_id=transaction_id
        )
    except NotFound:
        transaction = None
    if transaction is None or transaction.customer_id != agent.customer_id:
        raise TransactionNotFound(transaction_id)
    return transaction
