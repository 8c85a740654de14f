"""What an agent does with money, and the platform's approvals (SPEC §3 agent action, §4.2).

Every money request of an agent runs in one transaction that first locks the agent's usage row
(PostgreSQL `FOR UPDATE`; SQLite has a single writer), so an agent's requests serialize: the policy is
judged (agents/policy.py `evaluate`) against usage that includes everything executed and everything still
pending approval, and the request's own amount is counted in the same transaction as its money moves.
Concurrent requests therefore never take an agent past a limit, and approving every pending action never
does either (approval judges again, against the state of that moment). Locking, planning and judging a
request is agents/planning.py, the one plan the dry-run (agents/dry_run/) walks too.

What an action reserves while it waits for approval, so approval cannot overdraw:
- TRANSFER_OUT: the transfer is planned (payments' `plan_transfer_out`): its PENDING transaction exists and
  its amount is held on the internal account, exactly like any transfer-out in flight. Approval starts it;
  rejection or expiry cancels it, releasing the hold.
- EXECUTE_QUOTE: the quote's sending amount is held on its source account (a ledger entry moving it from
  available to held, referencing the action: the mechanism a card authorization's hold uses). Approval
  releases the hold and executes the quote in the same transaction; rejection or expiry releases it.
- TRANSFER_IN takes nothing from the customer: its PENDING transaction is planned, started on approval.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.agents import planning, repository
from platpay.agents import policy as policies
from platpay.agents import service as agents_service
from platpay.agents.audit import service as audit
from platpay.agents.errors import ActionNotPending, AgentActionNotFound, PolicyForbids
from platpay.agents.models import AgentActionRow, AgentRow, AgentUsageRow
from platpay.agents.schemas import AgentAction, AgentTransferDetails
from platpay.agents.state import ACTION, ActionStatus, ActionType
from platpay.config import Settings
from platpay.db.unit_of_work import LeanSession, orm_session
from platpay.errors import ApiError
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.ledger import service as ledger
from platpay.payments import service as payments_service
from platpay.payments import transfers
from platpay.payments.quotes import service as quotes_service
from platpay.payments.schemas import AnyTransaction
from platpay.payments.state import TransactionStatus
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

EXPIRE_JOB = "agents.expire_action"
HOLD, RELEASE = "AGENT_ACTION_HOLD", "AGENT_ACTION_RELEASE"


# ---- rendering --------------------------------------------------------------------------------------------


async def to_schema(
    session: LeanSession,
    *,
    tenant: TenantContext,
    row: AgentActionRow,
    transaction: AnyTransaction | None = None,
) -> AgentAction:
    """The action as the API shows it (`transaction`: its transaction as just rendered, if the caller has it)."""
    quote = (
        await quotes_service.get_quote(orm_session(session), tenant=tenant, quote_id=row.quote_id)
        if row.quote_id is not None
        else None
    )
    transaction = transaction or (
        await payments_service.get_transaction(
            orm_session(session), tenant=tenant, transaction_id=row.transaction_id
        )
        if row.transaction_id is not None and row.started
        else None
    )
    failure = row.failure or {}
    return AgentAction(
        id=row.id,
        agent_id=row.agent_id,
        customer_id=row.customer_id,
        platform_customer_id=row.platform_customer_id,
        status=row.status,
        type=row.type,
        quote=quote,
        transfer_details=AgentTransferDetails.model_validate(row.transfer) if row.transfer else None,
        transaction=transaction,
        rejection_reason=row.rejection_reason,
        failure_reason=f"{failure['code']}: {failure['message']}" if failure else None,
        policy_decision=row.decision,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def _emit(
    session: LeanSession,
    *,
    tenant: TenantContext,
    row: AgentActionRow,
    announce: bool = True,
    transaction: AnyTransaction | None = None,
) -> AgentAction:
    """AGENT_ACTION.<status> with the action as GET returns it, in the caller's transaction. An action
    approved at once (`announce` false) is announced by its transaction's own webhook (which names the
    agent): every change of an action's status fires, and its creation when it needs approval."""
    if isinstance(session, AsyncSession):  # (a lean transaction's action is written once, by its INSERT)
        await session.flush()
    await _audit(session, row)
    action = await to_schema(session, tenant=tenant, row=row, transaction=transaction)
    if not announce:
        return action
    await events_service.emit(
        session, tenant_id=tenant.id, type=f"AGENT_ACTION.{row.status}", resource=action
    )
    return action


async def _audit(session: LeanSession, row: AgentActionRow) -> None:
    """The action's change in the agent's audit trail (agents/audit/service.py), in this transaction."""
    failure = row.failure or {}
    if row.status == ActionStatus.PENDING_APPROVAL or (
        row.status == ActionStatus.APPROVED and not row.decided_by
    ):
        kind = "MONEY_REQUESTED"
    elif row.status == ActionStatus.APPROVED:
        kind = "ACTION_APPROVED"
    elif row.status == ActionStatus.REJECTED:
        kind = "ACTION_REJECTED"
    else:
        kind = "ACTION_EXPIRED" if failure.get("code") == "APPROVAL_EXPIRED" else "ACTION_FAILED"
    data = {
        "actionId": row.id,
        "type": row.type,
        "status": row.status,
        "amount": row.amount,
        "currency": row.currency,
        "accountId": row.account_id,
        "quoteId": row.quote_id,
        "transactionId": row.transaction_id if row.started else None,
        "decision": row.decision,
        "decidedBy": row.decided_by,
        "rejectionReason": row.rejection_reason,
        "failure": row.failure,
    }
    await audit.record(session, tenant_id=row.tenant_id, agent_id=row.agent_id, kind=kind, now=row.updated_at,
                       data=data)  # fmt: skip


# ---- usage ------------------------------------------------------------------------------------------------


async def _store_usage(
    session: LeanSession, row: AgentUsageRow, usage: policies.Usage, now: datetime
) -> None:
    """Set the (locked) usage row to `usage` and save it."""
    await repository.write_usage(session, row, day=usage.day, daily_spend=usage.daily_spend,
                                 daily_count=usage.daily_count, month=usage.month,
                                 monthly_spend=usage.monthly_spend, updated_at=now)  # fmt: skip


async def _uncount(session: AsyncSession, row: AgentUsageRow, action: AgentActionRow, now: datetime) -> None:
    """Take a pending action that will not execute out of the usage it was counted in (if that day or month
    is still the current one)."""
    current = agents_service.usage_of(row).as_of(now)
    converted = policies.convert(
        action.usage_amount, action.usage_currency, row.currency, agents_service.rates
    )
    amount = converted[0] if converted else 0
    daily = amount if action.usage_day == current.day else 0
    count = 1 if action.usage_day == current.day else 0
    monthly = amount if action.usage_month == current.month else 0
    await _store_usage(
        session,
        row,
        policies.Usage(
            day=current.day,
            daily_spend=max(current.daily_spend - daily, 0),
            daily_count=max(current.daily_count - count, 0),
            month=current.month,
            monthly_spend=max(current.monthly_spend - monthly, 0),
        ),
        now,
    )


def refuse(decision: policies.Decision) -> PolicyForbids:
    return PolicyForbids(f"the agent's policy refuses this: {decision.reason}", details=decision.details())


# ---- creating actions -------------------------------------------------------------------------------------


async def _record(
    session: LeanSession,
    *,
    tenant: TenantContext,
    agent: AgentRow,
    usage: AgentUsageRow,
    decision: policies.Decision,
    type: ActionType,
    status: ActionStatus,
    account_id: str | None,
    amount: int,
    currency: str,
    transaction_id: str | None,
    quote_id: str | None = None,
    transfer: dict[str, Any] | None = None,
    reserved_account_id: str | None = None,
    reserved_amount: int = 0,
    settings: Settings,
    now: datetime,
) -> AgentActionRow:
    """The action, its amount counted in the agent's usage, and (pending) its expiry job."""
    counted = decision.amount if decision.amount is not None else amount
    current = agents_service.usage_of(usage).as_of(now)
    await _store_usage(session, usage, current.plus(counted), now)
    pending = status == ActionStatus.PENDING_APPROVAL
    values = dict(
        id=new_id("AgentAction"),
        tenant_id=tenant.id,
        agent_id=agent.id,
        customer_id=agent.customer_id,
        platform_customer_id=agent.platform_customer_id,
        status=status.value,
        type=type.value,
        quote_id=quote_id,
        transfer=transfer,
        transaction_id=transaction_id,
        started=not pending,
        account_id=account_id,
        amount=amount,
        currency=currency,
        reserved_account_id=reserved_account_id,
        reserved_amount=reserved_amount,
        usage_amount=counted,
        usage_currency=usage.currency,
        usage_day=current.day,
        usage_month=current.month,
        decision=decision.details(),
        rejection_reason=None,
        failure=None,
        decided_by=None,
        expires_at=now + timedelta(seconds=settings.agent_approval_ttl_seconds) if pending else None,
        created_at=now,
        updated_at=now,
    )
    if status not in ACTION.initial:
        raise AssertionError(f"an agent action starts in {sorted(ACTION.initial)}, not {status}")
    row = await repository.insert_action(session, values)
    if pending:
        await jobs_service.enqueue(
            session, EXPIRE_JOB, {"actionId": row.id}, tenant_id=tenant.id, run_at=row.expires_at
        )
    return row


async def transfer(
    session: LeanSession,
    *,
    principal_tenant: TenantContext,
    agent_id: str,
    outgoing: bool,
    internal_account_id: str,
    external_account_id: str,
    amount: int | None,
    payment_rail: str | None = None,
    description: str | None = None,
    settings: Settings,
    remittance_information: str | None = None,
    purpose_of_payment: str | None = None,
) -> AgentAction:
    """POST /agents/me/transfer-out (outgoing) and /transfer-in: the accounts must be the agent's
    customer's (else 404); the policy decides: refused (403, its rule in details), executed at once
    (APPROVED with its transaction) or held for approval (PENDING_APPROVAL, funds reserved)."""
    tenant = principal_tenant
    now = clock.now(tenant)
    source, destination = (
        (internal_account_id, external_account_id) if outgoing else (external_account_id, internal_account_id)
    )
    planned = await planning.plan_transfer(
        session,
        tenant=tenant,
        agent_id=agent_id,
        outgoing=outgoing,
        source_account_id=source,
        destination_account_id=destination,
        amount=amount,
        payment_rail=payment_rail,
        description=description,
        remittance_information=remittance_information,
        purpose_of_payment=purpose_of_payment,
        now=now,
        settings=settings,
    )
    agent, usage, decision, plan = planned.agent, planned.usage, planned.decision, planned.plan
    if isinstance(decision, policies.Deny):
        raise refuse(decision)
    assert plan is not None  # only a refusal comes unplanned
    operation, internal, amount = planned.operation, plan.internal, plan.amount
    pending = isinstance(decision, policies.NeedsApproval)
    transaction = None if pending else await transfers.start_transfer(session, tenant=tenant, row=plan.row)
    if plan.hold is not None and (transaction is None or transaction.status != TransactionStatus.FAILED):
        # (a transfer that failed at once announced its released balance itself)
        await accounts_service.emit_balance_update(
            session, account=plan.internal, balance=plan.hold.balances[internal.id]
        )
    row = await _record(
        session,
        tenant=tenant,
        agent=agent,
        usage=usage,
        decision=decision,
        type=operation,
        status=ActionStatus.PENDING_APPROVAL if pending else ActionStatus.APPROVED,
        account_id=internal.id,
        amount=amount,
        currency=internal.currency,
        transaction_id=plan.transaction_id,
        transfer={
            "amount": amount,
            "currency": internal.currency,
            "sourceAccountId": source,
            "destinationAccountId": destination,
        },
        settings=settings,
        now=now,
    )
    return await _emit(session, tenant=tenant, row=row, announce=pending, transaction=transaction)


async def execute_quote(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    quote_id: str,
    wallet_signature: str | None = None,
    settings: Settings,
) -> AgentAction:
    """POST /agents/me/quotes/{quoteId}/execute: a quote this agent created (else 404), still executable
    (else 409), judged by the policy on its sending amount and source account. An EMBEDDED_WALLET source
    needs `wallet_signature` when it executes at once; one that waits for approval is executed at approval
    without a stamp, which such a source refuses (the action then FAILS): approval of wallet-funded agent
    quotes is not supported yet."""
    now = clock.now(tenant)
    planned = await planning.plan_quote(session, tenant=tenant, agent_id=agent_id, quote_id=quote_id, now=now)
    agent, usage, facts, decision = planned.agent, planned.usage, planned.facts, planned.decision
    if isinstance(decision, policies.Deny):
        raise refuse(decision)
    pending = isinstance(decision, policies.NeedsApproval)
    reserved: str | None = None
    if pending:
        reserved = facts.source_account_id
        assert reserved is not None
        await _hold(session, tenant=tenant, account_id=reserved, currency=facts.sending_currency,
                    amount=facts.sending_amount, reference=quote_id, release=False)  # fmt: skip
    else:
        await quotes_service.execute_quote(
            session, tenant=tenant, quote_id=quote_id, wallet_signature=wallet_signature
        )
    row = await _record(
        session,
        tenant=tenant,
        agent=agent,
        usage=usage,
        decision=decision,
        type=ActionType.EXECUTE_QUOTE,
        status=ActionStatus.PENDING_APPROVAL if pending else ActionStatus.APPROVED,
        account_id=facts.source_account_id,
        amount=facts.sending_amount,
        currency=facts.sending_currency,
        transaction_id=facts.quote.transaction_id,
        quote_id=quote_id,
        reserved_account_id=reserved,
        reserved_amount=facts.sending_amount if pending else 0,
        settings=settings,
        now=now,
    )
    return await _emit(session, tenant=tenant, row=row, announce=pending)


async def _hold(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    account_id: str,
    currency: str,
    amount: int,
    reference: str,
    release: bool,
) -> None:
    """Move `amount` between the account's available and held buckets (InsufficientFunds when short), and
    announce the balance change."""
    sign = -1 if release else 1
    await ledger.post(
        session,
        tenant_id=tenant.id,
        kind=RELEASE if release else HOLD,
        reference=reference,
        legs=[
            ledger.Leg(account_id, currency, -sign * amount, ledger.AVAILABLE),
            ledger.Leg(account_id, currency, sign * amount, ledger.HELD),
        ],
    )
    await transfers.emit_balances(session, tenant_id=tenant.id, account_ids=[account_id])


# ---- deciding -----------------------------------------------------------------------------------------------


async def _pending(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, action_id: str
) -> tuple[AgentRow, AgentUsageRow, AgentActionRow]:
    agent, usage = await planning.lock(session, tenant=tenant, agent_id=agent_id)
    row = await repository.get_action(
        session, tenant_id=tenant.id, action_id=action_id, agent_id=agent.id, for_update=True
    )
    if row is None:
        raise AgentActionNotFound(action_id)
    if row.status != ActionStatus.PENDING_APPROVAL:
        raise ActionNotPending(
            f"action {action_id} is {row.status}, not PENDING_APPROVAL",
            details={"actionId": action_id, "status": row.status},
        )
    return agent, usage, row


async def _unreserve(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    row: AgentActionRow,
    cancel: TransactionStatus | None,
    why: dict[str, str],
) -> None:
    """Give back what a pending action reserved; `cancel`: also end its planned transfer in that status."""
    if row.reserved_account_id is not None and row.reserved_amount:
        await _hold(session, tenant=tenant, account_id=row.reserved_account_id, currency=row.currency,
                    amount=row.reserved_amount, reference=row.quote_id or row.id, release=True)  # fmt: skip
    if cancel is not None and row.type != ActionType.EXECUTE_QUOTE and row.transaction_id is not None:
        status = cancel if row.type == ActionType.TRANSFER_OUT else TransactionStatus.FAILED
        await transfers.cancel_transfer(
            session, tenant=tenant, transaction_id=row.transaction_id, status=status, failure_details=why
        )


def _finish(row: AgentActionRow, status: ActionStatus, now: datetime) -> None:
    row.status = ACTION.move(row.status, status, subject=row.id)
    row.updated_at = now


async def approve(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, action_id: str, decided_by: str
) -> AgentAction:
    """POST /agents/{agentId}/actions/{actionId}/approve: executes the action against the state of now.
    APPROVED with its transaction, or FAILED (nothing executed, reservation released) when the policy now
    refuses it (judged with this action's own pending amount taken out of the usage) or execution is no
    longer possible (a quote expired)."""
    now = clock.now(tenant)
    agent, usage, row = await _pending(session, tenant=tenant, agent_id=agent_id, action_id=action_id)
    row.decided_by = decided_by
    await _uncount(session, usage, row, now)
    decision = planning.judge(
        agent,
        usage,
        operation=row.type,
        account_id=row.account_id,
        amount=row.amount,
        currency=row.currency,
        now=now,
    )
    # An approved action may execute while the agent is paused: the platform decided it.
    if isinstance(decision, policies.Deny) and decision.rule != "isPaused":
        return await _fail(
            session, tenant=tenant, row=row, cause="POLICY_LIMIT", message=decision.reason, now=now
        )
    await _store_usage(
        session, usage, agents_service.usage_of(usage).as_of(now).plus(decision.amount or row.amount), now
    )
    if row.type == ActionType.EXECUTE_QUOTE:
        assert row.quote_id is not None
        await _unreserve(session, tenant=tenant, row=row, cancel=None, why={})
        try:
            async with session.begin_nested():
                await quotes_service.execute_quote(session, tenant=tenant, quote_id=row.quote_id)
        except ApiError as error:
            await _uncount(session, usage, row, now)
            row.reserved_amount = 0
            return await _fail(session, tenant=tenant, row=row, cause=error.code, message=error.message, now=now,
                               unreserve=False)  # fmt: skip
    else:
        assert row.transaction_id is not None
        planned = await transfers.load_planned(session, tenant=tenant, transaction_id=row.transaction_id)
        await transfers.start_transfer(session, tenant=tenant, row=planned)
    row.started = True
    row.reserved_amount = 0
    _finish(row, ActionStatus.APPROVED, now)
    return await _emit(session, tenant=tenant, row=row)


async def _fail(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    row: AgentActionRow,
    cause: str,
    message: str,
    now: datetime,
    unreserve: bool = True,
    cancel: TransactionStatus = TransactionStatus.FAILED,
) -> AgentAction:
    why = {"code": cause, "message": message}  # why it could not execute (not an API error code)
    if unreserve:
        await _unreserve(session, tenant=tenant, row=row, cancel=cancel, why=why)
    row.failure = why
    row.reserved_amount = 0
    _finish(row, ActionStatus.FAILED, now)
    return await _emit(session, tenant=tenant, row=row)


async def reject(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    agent_id: str,
    action_id: str,
    reason: str | None,
    decided_by: str,
) -> AgentAction:
    """POST /agents/{agentId}/actions/{actionId}/reject: nothing executes; the reservation is released."""
    now = clock.now(tenant)
    _, usage, row = await _pending(session, tenant=tenant, agent_id=agent_id, action_id=action_id)
    why = {"code": "AGENT_ACTION_REJECTED", "message": reason or "rejected by the platform"}
    await _unreserve(session, tenant=tenant, row=row, cancel=TransactionStatus.FAILED, why=why)
    await _uncount(session, usage, row, now)
    row.decided_by = decided_by
    row.rejection_reason = reason or "rejected by the platform"
    row.reserved_amount = 0
    _finish(row, ActionStatus.REJECTED, now)
    return await _emit(session, tenant=tenant, row=row)


async def expire(session: AsyncSession, *, tenant_id: str, action_id: str) -> None:
    """The expiry job: an action still pending at its expiresAt fails and releases what it reserved."""
    row = await repository.get_action(session, tenant_id=tenant_id, action_id=action_id)
    if row is None or row.status != ActionStatus.PENDING_APPROVAL:
        return
    tenant = await tenants_service.load(session, tenant_id=tenant_id)
    now = clock.now(tenant)
    if row.expires_at is not None and now < row.expires_at:
        return
    found = await repository.agent_with_usage(
        session, tenant_id=tenant_id, agent_id=row.agent_id
    )  # locks first
    row = await repository.get_action(session, tenant_id=tenant_id, action_id=action_id, for_update=True)
    if row is None or row.status != ActionStatus.PENDING_APPROVAL:
        return
    if found is not None:
        await _uncount(session, found[1], row, now)
    await _fail(session, tenant=tenant, row=row, cause="APPROVAL_EXPIRED",
                message="no decision before the action expired", now=now, cancel=TransactionStatus.EXPIRED)  # fmt: skip


async def reject_all_pending(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, reason: str, decided_by: str
) -> None:
    for action_id in await repository.pending_action_ids(session, tenant_id=tenant.id, agent_id=agent_id):
        await reject(
            session,
            tenant=tenant,
            agent_id=agent_id,
            action_id=action_id,
            reason=reason,
            decided_by=decided_by,
        )


async def delete_agent(
    session: AsyncSession, *, tenant: TenantContext, agent_id: str, decided_by: str
) -> None:
    """DELETE /agents/{id}: its pending actions are rejected (reservations released), then it is deleted."""
    await agents_service.load(session, tenant_id=tenant.id, agent_id=agent_id)
    await reject_all_pending(
        session, tenant=tenant, agent_id=agent_id, reason="the agent was deleted", decided_by=decided_by
    )
    await agents_service.delete_agent(session, tenant=tenant, agent_id=agent_id)


# ---- reads --------------------------------------------------------------------------------------------------


async def get_action(
    session: AsyncSession, *, tenant: TenantContext, action_id: str, agent_id: str | None = None
) -> AgentAction:
    row = await repository.get_action(session, tenant_id=tenant.id, action_id=action_id, agent_id=agent_id)
    if row is None:
        raise AgentActionNotFound(action_id)
    return await to_schema(session, tenant=tenant, row=row)


async def list_actions(
    session: AsyncSession, *, tenant: TenantContext, params: PageParams, **filters: Any
) -> tuple[PageResult[AgentActionRow], list[AgentAction]]:
    stmt = repository.actions_query(tenant_id=tenant.id, **filters)
    page = await paginate(session, stmt, id_column=AgentActionRow.id, params=params)
    return page, [await to_schema(session, tenant=tenant, row=row) for row in page.items]
