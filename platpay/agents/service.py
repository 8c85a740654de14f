"""Agents (SPEC §2, §4.1): management by the platform, device codes, bearer access tokens, and what an
agent looks like to the API (its policy and usage). Money operations and approvals: agents/operations.py.

Secrets: a device code and an access token are random, shown once, and stored only as SHA-256 hashes. A
token is `gat_` followed by 64 hex characters (256 bits), so a leaked one is recognisable by its prefix; a
device code is `PLATPAY-AGENT-` and four groups of four characters from a 32-letter alphabet (80 bits),
valid for `agent_device_code_ttl_seconds` (24 h), redeemable once.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.errors import ExternalAccountNotFound, InternalAccountNotFound
from platpay.accounts.external import service as external_service

# operations imports this module too: neither uses the other at import time (the console's deciding calls)
from platpay.agents import operations, repository
from platpay.agents import policy as policies
from platpay.agents.audit import service as audit
from platpay.agents.errors import (
    AgentActionNotFound,
    AgentAlreadyConnected,
    AgentNotFound,
    DeviceCodeNotFound,
    DeviceCodeUnusable,
)
from platpay.agents.models import AgentRow, AgentUsageRow, DeviceCodeRow
from platpay.agents.schemas import (
    Agent,
    AgentAction,
    AgentCreateResponse,
    AgentDeviceCode,
    AgentDeviceCodeRedeemResponse,
    AgentDeviceCodeStatusResponse,
    AgentPolicy,
    AgentUsage,
)
from platpay.agents.types import ActionSummary, LimitUsage, PendingAction
from platpay.auth.principal import Principal, PrincipalKind
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.db.database import Database
from platpay.errors import InvalidInput, NotFound, field_error, invalid_field
from platpay.fx import service as fx_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.kit.validation_errors import constraint_of
from platpay.payments.quotes import service as quotes_service
from platpay.payments.quotes.errors import QuoteNotFound
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

TOKEN_PREFIX = "gat_"
CODE_PREFIX = "PLATPAY-AGENT-"
_CODE_ALPHABET = "23456789ABCDEFGHJKLMNPQRSTUVWXYZ"  # 32 letters: no 0/O, 1/I


def _sha256(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_device_code() -> str:
    groups = ["".join(secrets.choice(_CODE_ALPHABET) for _ in range(4)) for _ in range(4)]
    return CODE_PREFIX + "-".join(groups)


def new_access_token() -> str:
    return TOKEN_PREFIX + secrets.token_hex(32)


# ---- rates and usage -------------------------------------------------------------------------------


def rates(source: str, target: str) -> Any:
    """policy.Rates over the configured rate provider: minor units of `target` per minor unit of `source`
    at the mid rate, None when there is no rate."""
    try:
        return fx_service.minor_rate(fx_service.exact_mid(source, target), source, target)
    except (fx_service.UnsupportedCurrencyPair, InvalidInput):
        return None


def usage_of(row: AgentUsageRow) -> policies.Usage:
    return policies.Usage(
        day=row.day,
        daily_spend=row.daily_spend,
        daily_count=row.daily_count,
        month=row.month,
        monthly_spend=row.monthly_spend,
    )


def _usage_schema(row: AgentUsageRow | None, now: datetime) -> AgentUsage:
    current = (
        usage_of(row).as_of(now)
        if row is not None
        else policies.Usage(policies.utc_day(now), 0, 0, policies.utc_month(now), 0)
    )
    next_day = (now + timedelta(days=1)).date().isoformat()
    month = int(current.month[5:7])
    next_month = f"{int(current.month[:4]) + month // 12:04d}-{month % 12 + 1:02d}"
    return AgentUsage(
        daily_transaction_count=current.daily_count,
        daily_spend=current.daily_spend,
        daily_reset_date=next_day,
        monthly_spend=current.monthly_spend,
        monthly_reset_month=next_month,
    )


def to_schema(row: AgentRow, usage: AgentUsageRow | None, *, now: datetime) -> Agent:
    return Agent(
        id=row.id,
        name=row.name,
        customer_id=row.customer_id,
        is_paused=row.is_paused,
        is_connected=row.is_connected,
        policy=AgentPolicy.model_validate(row.policy),
        usage=_usage_schema(usage, now),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


# ---- policy validation --------------------------------------------------------------------------------


def _parsed(policy: dict[str, Any], prefix: str) -> AgentPolicy:
    """`policy` through its schema; a refusal is a 400 naming each bad field (under `prefix`)."""
    try:
        return AgentPolicy.model_validate(policy)
    except ValidationError as error:
        fields = [
            {
                "field": ".".join([*([prefix] if prefix else []), *(str(part) for part in problem["loc"])]),
                "message": problem["msg"],
            }
            for problem in error.errors()
        ]
        errors = [
            field_error(entry["field"], entry["message"], constraint_of(problem))
            for entry, problem in zip(fields, error.errors(), strict=True)
        ]
        summary = "; ".join(f"{f['field']}: {f['message']}" for f in fields[:5])
        raise InvalidInput(
            f"invalid policy: {summary}", details={"fields": fields, "errors": errors}
        ) from None


async def check_policy(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, policy: dict[str, Any], prefix: str
) -> dict[str, Any]:
    """`policy` (the API's JSON) as stored, after its schema (AgentPolicy) and the checks a schema cannot make,
    each refusal a 400 naming the field (under `prefix`): known currencies, a threshold's currency, accounts
    that are the customer's internal accounts, one rule per account."""
    parsed = _parsed(policy, prefix)
    at = f"{prefix}." if prefix else ""
    limits = parsed.spending_limits
    currencies.require(limits.currency, field=f"{at}spendingLimits.currency")
    thresholds = parsed.approval_thresholds
    if thresholds is not None:
        if thresholds.amount is not None and thresholds.currency is None:
            raise invalid_field(f"{at}approvalThresholds.currency", "required when amount is set")
        if thresholds.currency is not None:
            currencies.require(thresholds.currency, field=f"{at}approvalThresholds.currency")
    restrictions = parsed.account_restrictions
    if restrictions is not None:
        named = [
            (f"{at}accountRestrictions.allowedAccountIds.{i}", account_id)
            for i, account_id in enumerate(restrictions.allowed_account_ids or ())
        ]
        seen: set[str] = set()
        for i, rule in enumerate(restrictions.account_rules or ()):
            field = f"{at}accountRestrictions.accountRules.{i}.accountId"
            if rule.account_id in seen:
                raise invalid_field(field, "one rule per account")
            seen.add(rule.account_id)
            named.append((field, rule.account_id))
        for field, account_id in named:
            if not await _customers_account(
                session, tenant=tenant, customer_id=customer_id, account_id=account_id
            ):
                raise invalid_field(
                    field, f"{account_id!r} is not an internal account of customer {customer_id}"
                )
    stored = parsed.model_dump(mode="json", by_alias=True, exclude_none=True)
    stored["permissions"] = sorted(set(stored["permissions"]), key=policies.ACCEPTED_PERMISSIONS.index)
    return stored


async def _customers_account(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, account_id: str
) -> bool:
    try:
        await customers_internal_account(
            session, tenant=tenant, customer_id=customer_id, account_id=account_id
        )
    except NotFound:
        return False
    return True


# ---- management ---------------------------------------------------------------------------------------


async def load(session: AsyncSession, *, tenant_id: str, agent_id: str, for_update: bool = False) -> AgentRow:
    row = await repository.get_agent(session, tenant_id=tenant_id, agent_id=agent_id, for_update=for_update)
    if row is None:
        raise AgentNotFound(agent_id)
    return row


async def create_agent(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    name: str,
    customer_id: str,
    policy: dict[str, Any],
    settings: Settings,
) -> AgentCreateResponse:
    """POST /agents: the agent, its (zero) usage and its first device code."""
    customer = await customers_service.load_active(session, tenant_id=tenant.id, customer_id=customer_id)
    stored = await check_policy(
        session, tenant=tenant, customer_id=customer_id, policy=policy, prefix="policy"
    )
    now = clock.now(tenant)
    row = AgentRow(
        id=new_id("Agent"),
        tenant_id=tenant.id,
        customer_id=customer_id,
        platform_customer_id=customer.platform_customer_id,
        name=name,
        is_paused=False,
        is_connected=False,
        policy=stored,
        token_sha256=None,
        token_prefix=None,
        deleted_at=None,
        created_at=now,
        updated_at=now,
    )
    usage = AgentUsageRow(
        agent_id=row.id,
        tenant_id=tenant.id,
        currency=stored["spendingLimits"]["currency"],
        day=policies.utc_day(now),
        daily_spend=0,
        daily_count=0,
        month=policies.utc_month(now),
        monthly_spend=0,
        updated_at=now,
    )
    await repository.add(session, row)
    await repository.add(session, usage)
    await audit.record(session, tenant_id=tenant.id, agent_id=row.id, kind="AGENT_CREATED", now=now,
                       data={"name": name, "customerId": customer_id, "policy": stored})  # fmt: skip
    code = await _issue_code(session, tenant=tenant, agent=row, settings=settings, now=now)
    return AgentCreateResponse(agent=to_schema(row, usage, now=now), device_code=code)


async def get_agent(session: AsyncSession, *, tenant: TenantContext, agent_id: str) -> Agent:
    row = await load(session, tenant_id=tenant.id, agent_id=agent_id)
    usage = await repository.usage(session, tenant_id=tenant.id, agent_id=row.id)
    return to_schema(row, usage, now=clock.now(tenant))


async def list_agents(
    session: AsyncSession, *, tenant: TenantContext, params: PageParams, **filters: Any
) -> tuple[PageResult[AgentRow], list[Agent]]:
    stmt = repository.agents_query(tenant_id=tenant.id, **filters)
    page = await paginate(session, stmt, id_column=AgentRow.id, params=params)
    usages = await repository.usages(session, agent_ids=[row.id for row in page.items])
    now = clock.now(tenant)
    return page, [to_schema(row, usages.get(row.id), now=now) for row in page.items]


async def update_agent(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, name: str | None, is_paused: bool | None
) -> Agent:
    """PATCH /agents/{id}: its name and paused state (at least one)."""
    if name is None and is_paused is None:
        raise InvalidInput(
            "give name or isPaused", details={"fields": [{"field": "name", "message": "name or isPaused"}]}
        )
    row = await load(session, tenant_id=tenant.id, agent_id=agent_id, for_update=True)
    now = clock.now(tenant)
    if name is not None and name != row.name:
        await audit.record(session, tenant_id=tenant.id, agent_id=row.id, kind="AGENT_RENAMED", now=now,
                           data={"before": row.name, "after": name})  # fmt: skip
        row.name = name
    if is_paused is not None and is_paused != row.is_paused:
        kind = "AGENT_PAUSED" if is_paused else "AGENT_UNPAUSED"
        await audit.record(session, tenant_id=tenant.id, agent_id=row.id, kind=kind, now=now)
        row.is_paused = is_paused
    row.updated_at = now
    await session.flush()
    return to_schema(
        row, await repository.usage(session, tenant_id=tenant.id, agent_id=row.id), now=row.updated_at
    )


def _merged_policy(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """PATCH semantics: omitted fields keep their values; `permissions` replaces the list; `spendingLimits`
    merges field by field (null removes a limit); the other objects are replaced (null removes them)."""
    merged = dict(current)
    for key, value in changes.items():
        if key == "spendingLimits":
            limits = dict(current.get("spendingLimits") or {})
            for name, limit in (value or {}).items():
                if limit is None:
                    limits.pop(name, None)
                else:
                    limits[name] = limit
            merged[key] = limits
        elif value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


async def update_policy(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, changes: dict[str, Any]
) -> Agent:
    """PATCH /agents/{id}/policy, effective for the agent's next request. `changes` holds the fields sent
    (as the API spells them, null where sent as null). A new `spendingLimits.currency` re-denominates:
    the limits are taken in the new currency, and the usage counted so far is converted to it."""
    for name in ("currency", "perTransactionLimit"):
        if name in (changes.get("spendingLimits") or {}) and changes["spendingLimits"][name] is None:
            raise invalid_field(f"spendingLimits.{name}", "cannot be removed")
    for name in ("permissions", "defaultExecutionMode", "spendingLimits"):
        if name in changes and changes[name] is None:
            raise invalid_field(name, "cannot be removed")
    # the usage row first, then the agent: the order money requests and approvals lock them in
    usage = await repository.usage(session, tenant_id=tenant.id, agent_id=agent_id, for_update=True)
    row = await load(session, tenant_id=tenant.id, agent_id=agent_id, for_update=True)
    merged = _merged_policy(row.policy, changes)
    stored = await check_policy(session, tenant=tenant, customer_id=row.customer_id, policy=merged, prefix="")
    now = clock.now(tenant)
    if usage is not None and usage.currency != stored["spendingLimits"]["currency"]:
        target = stored["spendingLimits"]["currency"]
        for name in ("daily_spend", "monthly_spend"):
            converted = policies.convert(getattr(usage, name), usage.currency, target, rates)
            setattr(usage, name, converted[0] if converted else 0)
        usage.currency = target
        usage.updated_at = now
    await audit.record(session, tenant_id=tenant.id, agent_id=row.id, kind="POLICY_CHANGED", now=now,
                       data={"before": row.policy, "after": stored, "changes": changes})  # fmt: skip
    row.policy = stored
    row.updated_at = now
    await session.flush()
    return to_schema(row, usage, now=now)


async def delete_agent(session: AsyncSession, *, tenant: TenantContext, agent_id: str) -> AgentRow:
    """DELETE /agents/{id}: permanent. Its token hash is cleared in this transaction, so from its commit the
    token fails in every process (authentication reads the row on every request); its unredeemed codes
    are invalidated. Pending actions are rejected by the caller (operations.delete_agent)."""
    row = await load(session, tenant_id=tenant.id, agent_id=agent_id, for_update=True)
    now = clock.now(tenant)
    row.deleted_at = now
    row.updated_at = now
    row.token_sha256 = None
    await repository.invalidate_codes(session, tenant_id=tenant.id, agent_id=row.id, now=now)
    await audit.record(session, tenant_id=tenant.id, agent_id=row.id, kind="AGENT_DELETED", now=now)
    await session.flush()
    return row


# ---- device codes and tokens --------------------------------------------------------------------------


async def _issue_code(
    session: AsyncSession, *, tenant: TenantContext, agent: AgentRow, settings: Settings, now: datetime
) -> AgentDeviceCode:
    await repository.invalidate_codes(session, tenant_id=tenant.id, agent_id=agent.id, now=now)
    code = new_device_code()
    row = DeviceCodeRow(
        id=new_id("AgentDeviceCode"),
        tenant_id=tenant.id,
        agent_id=agent.id,
        code_sha256=_sha256(code),
        expires_at=now + timedelta(seconds=settings.agent_device_code_ttl_seconds),
        redeemed_at=None,
        invalidated_at=None,
        created_at=now,
    )
    await repository.add(session, row)
    await audit.record(session, tenant_id=tenant.id, agent_id=agent.id, kind="DEVICE_CODE_ISSUED", now=now,
                       data={"codePrefix": code[: len(CODE_PREFIX) + 4], "expiresAt": row.expires_at})  # fmt: skip
    return AgentDeviceCode(code=code, agent_id=agent.id, expires_at=row.expires_at, redeemed=False)


async def issue_device_code(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, settings: Settings
) -> AgentDeviceCode:
    """POST /agents/{id}/device-codes: a new code; earlier unredeemed ones stop working. 409 once the agent
    is connected (its software holds a token)."""
    agent = await load(session, tenant_id=tenant.id, agent_id=agent_id, for_update=True)
    if agent.is_connected:
        raise AgentAlreadyConnected(
            f"agent {agent_id} is already connected: a new device code cannot be issued",
            details={"agentId": agent_id},
        )
    return await _issue_code(session, tenant=tenant, agent=agent, settings=settings, now=clock.now(tenant))


async def device_code_status(
    session: AsyncSession, *, tenant: TenantContext, code: str
) -> AgentDeviceCodeStatusResponse:
    row = await repository.device_code(session, code_sha256=_sha256(code))
    if row is None or row.tenant_id != tenant.id:
        raise DeviceCodeNotFound(code)
    return AgentDeviceCodeStatusResponse(code=code, redeemed=row.redeemed_at is not None)


async def redeem(session: AsyncSession, *, code: str) -> AgentDeviceCodeRedeemResponse:
    """POST /agents/device-codes/{code}/redeem: the code is the proof. Exactly one of concurrent redeems
    gets the token (the code is claimed by one conditional UPDATE); used, replaced or expired → 400,
    unknown → 404. The token is returned now and never again."""
    digest = _sha256(code)
    now = clock.now()
    agent_id = await repository.claim_code(session, code_sha256=digest, now=now)
    if agent_id is None:
        row = await repository.device_code(session, code_sha256=digest)
        if row is None:
            raise DeviceCodeNotFound(code)
        reason = (
            "was already redeemed"
            if row.redeemed_at is not None
            else "was replaced by a newer code"
            if row.invalidated_at is not None
            else "has expired"
        )
        raise DeviceCodeUnusable(
            f"this device code {reason}", details={"fields": [{"field": "code", "message": reason}]}
        )
    code_row = await repository.device_code(session, code_sha256=digest)
    assert code_row is not None
    agent = await load(session, tenant_id=code_row.tenant_id, agent_id=agent_id, for_update=True)
    token = new_access_token()
    agent.token_sha256 = _sha256(token)
    agent.token_prefix = token[:8]
    agent.token_first_used_at = None  # a new token: its first request is recorded
    agent.is_connected = True
    agent.updated_at = now
    await audit.record(session, tenant_id=agent.tenant_id, agent_id=agent.id, kind="DEVICE_CODE_REDEEMED", now=now,
                       data={"codePrefix": code[: len(CODE_PREFIX) + 4], "tokenPrefix": agent.token_prefix})  # fmt: skip
    await session.flush()
    return AgentDeviceCodeRedeemResponse(
        agent_id=agent.id,
        agent_name=agent.name,
        access_token=token,
        policy=AgentPolicy.model_validate(agent.policy),
    )


async def authenticate_bearer(db: Database, *, token: str) -> Principal | None:
    """The principal of an agent's access token, or None: one read, or none while the process keeps the
    row (repository.by_token). The token's first request also records TOKEN_FIRST_USED (`_first_use`); the
    read says whether it is that request."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 128:
        return None
    digest = _sha256(token)
    row = await repository.by_token(db, digest)
    if row is None:
        return None
    principal = Principal(
        kind=PrincipalKind.AGENT_TOKEN,
        id=row[0],
        permissions=frozenset(),
        tenant=tenants_service.context_from_columns(row[3:]),
        customer_id=row[1],
    )
    if row[2] is None:
        await _first_use(db, principal=principal, token_sha256=digest)
    return principal


async def _first_use(db: Database, *, principal: Principal, token_sha256: str) -> None:
    """The token's first request: TOKEN_FIRST_USED in a small transaction of its own (whatever becomes of the
    request), recorded once however many first requests race (repository.claim_first_use)."""
    tenant = principal.tenant
    async with db.transaction() as session:
        now = clock.now(tenant)
        prefix = await repository.claim_first_use(
            session, tenant_id=tenant.id, agent_id=principal.id, token_sha256=token_sha256, now=now
        )
        if prefix is not None:
            await audit.record(session, tenant_id=tenant.id, agent_id=principal.id, kind="TOKEN_FIRST_USED",
                               now=now, data={"tokenPrefix": prefix},
                               actor=f"{principal.kind.value}:{principal.id}")  # fmt: skip


# ---- what belongs to the agent's customer -------------------------------------------------------------


async def customers_internal_account(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, account_id: str
) -> Any:
    """The customer's internal account `account_id`; 404 when it is another's or none."""
    try:
        row = await accounts_service.get_internal(session, tenant_id=tenant.id, account_id=account_id)
    except NotFound:
        row = None
    if row is None or row.customer_id != customer_id:
        raise InternalAccountNotFound(account_id)
    return row


async def customers_external_account(
    session: AsyncSession, *, tenant: TenantContext, customer_id: str, account_id: str
) -> Any:
    """The customer's live external account `account_id`; 404 when it is another's or none."""
    row = await external_service.find(session, tenant_id=tenant.id, account_id=account_id)
    if row is None or row.customer_id != customer_id:
        raise ExternalAccountNotFound(account_id)
    return row


async def own_quote(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, customer_id: str, quote_id: str
) -> quotes_service.QuoteFacts:
    """A quote this agent created; 404 for any other (another agent's, the platform's, none). Another
    customer's is refused at the first read, as an unknown id is."""
    try:
        facts = await quotes_service.quote_facts(
            session, tenant=tenant, quote_id=quote_id, customer_id=customer_id
        )
    except NotFound:
        facts = None
    if facts is None or facts.agent_id != agent_id:
        raise QuoteNotFound(quote_id)
    return facts


# ---- the console's reads: a fixed number of statements whatever the number of rows ----------------------


async def count_pending_approvals(session: AsyncSession, *, tenant_id: str) -> int:
    """How many actions of the tenant's agents await the platform's approval. One statement."""
    return await repository.count_pending(session, tenant_id=tenant_id)


async def list_pending_actions(
    session: AsyncSession, *, tenant_id: str, params: PageParams
) -> PageResult[PendingAction]:
    """A page of the actions awaiting approval across all the tenant's agents (by id, in `params`'
    direction), each with its agent's name; one statement, no total. (GET /agents/actions?status=
    PENDING_APPROVAL, `operations.list_actions`, renders each action's quote and transaction: a query or
    two per row, which a console's queue does not need.)"""
    rows = await repository.pending_with_agents(
        session,
        tenant_id=tenant_id,
        after_id=params.after_id,
        descending=params.descending,
        limit=params.limit + 1,
    )
    items = [
        PendingAction(
            id=row.id,
            agent_id=row.agent_id,
            agent_name=name,
            customer_id=row.customer_id,
            platform_customer_id=row.platform_customer_id,
            type=row.type,
            amount=row.amount,
            currency=row.currency,
            quote_id=row.quote_id,
            transfer=row.transfer,
            decision=row.decision,
            created_at=row.created_at,
        )
        for row, name in rows[: params.limit]
    ]
    has_more = len(rows) > params.limit
    return PageResult(items, has_more, params.next_cursor(items[-1].id) if has_more else None, None)


async def usage_against_limits(session: AsyncSession, *, tenant_id: str, agent_id: str) -> list[LimitUsage]:
    """Each limit of the agent's policy with what it used in the current window (UTC day or month, on the
    tenant's clock; executed plus pending approval, as the policy counts it) and what remains. One
    statement; AgentNotFound for an agent that is not the tenant's live one."""
    found = await repository.agent_and_usage(session, tenant_id=tenant_id, agent_id=agent_id)
    if found is None:
        raise AgentNotFound(agent_id)
    agent, usage_row = found
    now = clock.now()
    usage = _usage_schema(usage_row, now)  # the current windows' counters and when they reset
    current = (
        usage_of(usage_row).as_of(now)
        if usage_row is not None
        else policies.Usage(policies.utc_day(now), 0, 0, policies.utc_month(now), 0)
    )
    limits = agent.policy.get("spendingLimits") or {}
    currency = limits.get("currency")
    left = policies.remaining(agent.policy, current)
    next_day, next_month = usage.daily_reset_date, f"{usage.monthly_reset_month}-01"
    return [
        LimitUsage("perTransaction", limits.get("perTransactionLimit"), 0, left["perTransaction"], "TRANSACTION",
                   None, currency),
        LimitUsage("daily", limits.get("dailyLimit"), usage.daily_spend, left["daily"], "DAY", next_day, currency),
        LimitUsage("dailyCount", limits.get("dailyTransactionLimit"), usage.daily_transaction_count,
                   left["dailyCount"], "DAY", next_day, None),
        LimitUsage("monthly", limits.get("monthlyLimit"), usage.monthly_spend, left["monthly"], "MONTH",
                   next_month, currency),
    ]  # fmt: skip


async def list_agent_actions(
    session: AsyncSession, *, tenant_id: str, agent_id: str, params: PageParams
) -> PageResult[ActionSummary]:
    """A page of one agent's actions (any status, by id in `params`' direction) with the policy's decision
    as stored: one statement, no total. (GET /agents/actions renders each action's quote and transaction, a
    query or two per row, which the console's list does not need.)"""
    rows = await repository.agent_actions_page(
        session,
        tenant_id=tenant_id,
        agent_id=agent_id,
        after_id=params.after_id,
        descending=params.descending,
        limit=params.limit + 1,
    )
    items = [
        ActionSummary(
            id=row.id,
            agent_id=row.agent_id,
            status=row.status,
            type=row.type,
            amount=row.amount,
            currency=row.currency,
            quote_id=row.quote_id,
            transaction_id=row.transaction_id if row.started else None,
            transfer=row.transfer,
            decision=row.decision,
            rejection_reason=row.rejection_reason,
            failure=row.failure,
            decided_by=row.decided_by,
            expires_at=row.expires_at,
            created_at=row.created_at,
            updated_at=row.updated_at,
        )
        for row in rows[: params.limit]
    ]
    has_more = len(rows) > params.limit
    return PageResult(items, has_more, params.next_cursor(items[-1].id) if has_more else None, None)


# ---- deciding an action, for callers outside agents (the console) ---------------------------------------


async def approve_action(
    session: AsyncSession, *, tenant: TenantContext, action_id: str, decided_by: str
) -> AgentAction:
    """POST /agents/{agentId}/actions/{actionId}/approve for a caller that knows only the action (operations.
    approve: the same locks, policy judgement, execution and events). AgentActionNotFound for an action that
    is not the tenant's; ActionNotPending (409) once it was decided."""
    agent_id = await _agent_of_action(session, tenant_id=tenant.id, action_id=action_id)
    return await operations.approve(
        session, tenant=tenant, agent_id=agent_id, action_id=action_id, decided_by=decided_by
    )


async def reject_action(
    session: AsyncSession, *, tenant: TenantContext, action_id: str, reason: str | None, decided_by: str
) -> AgentAction:
    """POST /agents/{agentId}/actions/{actionId}/reject for a caller that knows only the action
    (operations.reject)."""
    agent_id = await _agent_of_action(session, tenant_id=tenant.id, action_id=action_id)
    return await operations.reject(
        session, tenant=tenant, agent_id=agent_id, action_id=action_id, reason=reason, decided_by=decided_by
    )


async def _agent_of_action(session: AsyncSession, *, tenant_id: str, action_id: str) -> str:
    row = await repository.get_action(session, tenant_id=tenant_id, action_id=action_id)
    if row is None:
        raise AgentActionNotFound(action_id)
    return row.agent_id
