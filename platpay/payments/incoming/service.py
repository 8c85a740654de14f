"""Incoming UMA payments: money from a UMA sender reaches one of the tenant's customers once the platform
approves it (INTERFACE-FACTS §5.6, §8).

    POST /sandbox/uma/receive (incoming/receive.py) ─► PENDING ── INCOMING_PAYMENT.PENDING
      reply 200 / POST …/approve ─► approved ─► credited: COMPLETED, INCOMING_PAYMENT.COMPLETED
      reply 202 ─► the platform decides through POST /transactions/{id}/approve|reject before the deadline
                   (PLATPAY_INCOMING_APPROVAL_TIMEOUT_SECONDS after the reply), else FAILED
                   PAYMENT_APPROVAL_TIMED_OUT
      reply 403 / POST …/reject ─► FAILED PAY_REQUEST_FAILED (the sender's pay request is refused; the
                   platform's code/message/reason in failureDetails, code REJECTED_BY_PLATFORM if none)
      reply 422, a 200 missing mandatory receiver info ─► FAILED MISSING_MANDATORY_PAYEE_DATA
      any other reply, no reply ─► FAILED PAYMENT_APPROVAL_WEBHOOK_ERROR

The approval sub-state lives in the transaction's `approval_*` columns and moves only through
payments/state.py APPROVAL. Every step (the reply hook inside the webhook delivery's transaction, the API
calls, the deadline and arrival jobs) locks the transaction row and re-reads that state first, so a
redelivered webhook, a reply racing an API decision or a late job never decides twice or credits twice.

Money: the payment arrives through the UMA clearing account of its currency. Credited to the customer's
internal account: CLEARING(UMA) −amount, internal account +amount. Routed to the customer's
defaultUmaDepositAccount (an external account in the receiving currency): the funds pass straight through
to that account's payout rail, CLEARING(UMA) −amount, CLEARING(rail) +amount, and never sit in an internal
account. A rejected or failed payment posts nothing.

Returned to the sender (INCOMING_PAYMENT.REFUND_*): when paying a defaultUmaDepositAccount out fails (in
the sandbox, an account whose identifier ends in 002, 004 or 007, as for a quote's payout), the funds that
arrived come back from the bank: CLEARING(rail) −amount, CLEARING(SUSPENSE) +amount; the payment is FAILED
OFFRAMP_FAILED with a refund PENDING (INCOMING_PAYMENT.FAILED, INCOMING_PAYMENT.REFUND_PENDING). The refund
settles PLATPAY_SANDBOX_REFUND_SECONDS later, back to the sender over UMA: CLEARING(SUSPENSE) −amount,
CLEARING(UMA) +amount (INCOMING_PAYMENT.REFUND_COMPLETED), or, for 007, fails and the funds stay in
suspense for operations (INCOMING_PAYMENT.REFUND_FAILED).

Sandbox senders (payments/uma.py): `$success.*` arrive as soon as they are approved; `$pending.long.*` run
the same approval flow but arrive only PLATPAY_SANDBOX_UMA_LONG_PENDING_SECONDS after approval (PENDING
until then; approve/reject answer 409 meanwhile); `$fail.compliance.*` fail the sender screening before any
approval is asked: FAILED PAY_REQUEST_FAILED at once, only INCOMING_PAYMENT.FAILED is sent.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.config import Settings
from platpay.customers.errors import MissingMandatoryUserInfo
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.ledger import service as ledger
from platpay.payments import providers
from platpay.payments import service as payments_service
from platpay.payments.errors import TransactionNotPendingApproval
from platpay.payments.incoming import replies
from platpay.payments.models import TransactionRow
from platpay.payments.quotes import outcomes
from platpay.payments.schemas import Transaction
from platpay.payments.state import (
    APPROVAL,
    AWAITING,
    REFUND,
    ApprovalState,
    ApprovalTrigger,
    RefundStatus,
    TransactionKind,
    TransactionStatus,
)
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

UMA_INCOMING = TransactionKind.UMA_INCOMING
STEP_JOB = "payments.incoming_step"
PENDING_EVENT = "INCOMING_PAYMENT.PENDING"
UMA_RAIL = "UMA"
PAY_REQUEST_FAILED = replies.PAY_REQUEST_FAILED
OFFRAMP_FAILED = "OFFRAMP_FAILED"
SUSPENSE = "SUSPENSE"
# How paying a defaultUmaDepositAccount out can fail (the rail's payout outcome for it): the funds go back
# to the sender; for PAYOUT_AND_REFUND_FAIL the refund fails too.
OFFRAMP_FAILURES = {
    outcomes.EXECUTION_FAILED: "the deposit account's bank refused the payout at once",
    outcomes.DELIVERY_FAILED: "the deposit account's bank rejected the payout",
    outcomes.PAYOUT_AND_REFUND_FAIL: "the deposit account's bank rejected the payout",
}


def set_extra(row: TransactionRow, **values: Any) -> None:
    row.extra = {**(row.extra or {}), **values}  # a new dict: JSON columns track assignment, not mutation


def transition(row: TransactionRow, trigger: ApprovalTrigger, *, decided_by: str | None = None) -> None:
    """Move the approval on `trigger` (IllegalTransition if it does not apply); a decision records who
    made it and when."""
    row.approval_state = APPROVAL.fire(row.approval_state, trigger, subject=row.id)
    if decided_by is not None:
        row.approval_decided_at, row.approval_decided_by = clock.now(), decided_by


def _awaiting_state(row: TransactionRow) -> ApprovalState | None:
    """The approval state if the platform may still decide this payment now, else None."""
    if row.kind != UMA_INCOMING or row.status != TransactionStatus.PENDING:
        return None
    state = APPROVAL.state(row.approval_state)
    deadline = row.approval_deadline
    if state not in AWAITING or (deadline is not None and clock.now() >= deadline):
        return None
    return state


def _not_pending(row: TransactionRow) -> TransactionNotPendingApproval:
    if row.kind != UMA_INCOMING:
        why = "it is not an incoming UMA payment awaiting approval"
    elif row.status != TransactionStatus.PENDING:
        why = f"it is already {row.status}"
    elif row.approval_state == ApprovalState.APPROVED:
        why = "it was already approved; the funds are on their way"
    else:
        deadline = row.approval_deadline
        why = f"its approval window closed at {clock.isoformat(deadline) if deadline else 'its deadline'}"
    return TransactionNotPendingApproval(
        f"transaction {row.id} is not pending platform approval: {why}",
        details={"transactionId": row.id, "status": row.status},
    )


# --- decisions -------------------------------------------------------------------------------------------


async def schedule(session: AsyncSession, row: TransactionRow, step: str, *, at: datetime) -> None:
    await jobs_service.enqueue(
        session, STEP_JOB, {"transactionId": row.id, "step": step}, tenant_id=row.tenant_id, run_at=at
    )


async def _approve(
    session: AsyncSession, row: TransactionRow, *, platform_id: str, info: dict[str, Any], by: str
) -> None:
    now = clock.now()
    transition(row, ApprovalTrigger.APPROVE, decided_by=by)
    set_extra(row, receiverCustomerInfo=info)
    if row.outcome == providers.LONG_PENDING:
        delay = timedelta(microseconds=row.approval_arrival_delay_us or 0)
        await schedule(session, row, "arrive", at=now + delay)
        await session.flush()
    else:
        await _arrive(session, row, platform_id=platform_id)


async def _fail(
    session: AsyncSession,
    row: TransactionRow,
    trigger: ApprovalTrigger,
    *,
    platform_id: str,
    by: str,
    failure_reason: str | None,
    details: dict[str, Any],
) -> None:
    transition(row, trigger, decided_by=by)
    await payments_service.move(
        session,
        row,
        TransactionStatus.FAILED,
        platform_id=platform_id,
        failure_reason=failure_reason,
        failure_details=details,
    )


async def _arrive(session: AsyncSession, row: TransactionRow, *, platform_id: str) -> None:
    """The money arrives: post it, COMPLETED, and the balance event when an internal account was credited."""
    transition(row, ApprovalTrigger.ARRIVE)
    currency, amount = row.received_currency or "", row.received_amount or 0
    uma_clearing = await ledger.system_account(
        session, tenant_id=row.tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=UMA_RAIL
    )
    account_id = row.destination["accountId"]
    payout_rail = (row.extra or {}).get("payoutRail")
    if payout_rail:  # the defaultUmaDepositAccount: straight through to its rail
        rail_clearing = await ledger.system_account(
            session, tenant_id=row.tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=payout_rail
        )
        legs = [ledger.Leg(uma_clearing, currency, -amount), ledger.Leg(rail_clearing, currency, amount)]
        kind = "UMA_INCOMING_PAYOUT"
    else:
        legs = [ledger.Leg(uma_clearing, currency, -amount), ledger.Leg(account_id, currency, amount)]
        kind = "UMA_INCOMING_CREDIT"
    await ledger.post(session, tenant_id=row.tenant_id, kind=kind, reference=row.id, legs=legs)
    offramp = (row.extra or {}).get("offrampOutcome")
    if payout_rail and offramp in OFFRAMP_FAILURES:
        await _offramp_failed(session, row, platform_id=platform_id, rail_clearing=legs[1].account_id)
        return
    await payments_service.move(session, row, TransactionStatus.COMPLETED, platform_id=platform_id)
    if not payout_rail:
        await accounts_service.emit_balance_updates(
            session, tenant_id=row.tenant_id, account_ids=[account_id]
        )


async def _suspense(session: AsyncSession, row: TransactionRow) -> str:
    return await ledger.system_account(
        session,
        tenant_id=row.tenant_id,
        kind=ledger.CLEARING,
        currency=row.received_currency or "",
        qualifier=SUSPENSE,
    )


async def _offramp_failed(
    session: AsyncSession, row: TransactionRow, *, platform_id: str, rail_clearing: str
) -> None:
    """Paying the deposit account out failed: the funds come back into suspense, the payment is FAILED
    OFFRAMP_FAILED and its refund to the sender starts (REFUND_PENDING; the "refund" step settles it)."""
    currency, amount = row.received_currency or "", row.received_amount or 0
    await ledger.post(
        session,
        tenant_id=row.tenant_id,
        kind="UMA_INCOMING_OFFRAMP_RETURN",
        reference=row.id,
        legs=[
            ledger.Leg(rail_clearing, currency, -amount),
            ledger.Leg(await _suspense(session, row), currency, amount),
        ],
    )
    now = clock.now()
    offramp = (row.extra or {})["offrampOutcome"]
    await payments_service.move(
        session,
        row,
        TransactionStatus.FAILED,
        platform_id=platform_id,
        failure_reason=OFFRAMP_FAILED,
        failure_details={"code": offramp, "message": OFFRAMP_FAILURES[offramp]},
        refund={
            "reference": f"REFUND-{row.id.rsplit('-', 1)[-1].upper()}",
            "initiatedAt": clock.isoformat(now),
            "status": RefundStatus.PENDING,
            "reason": "TRANSACTION_FAILED",
        },
    )
    await payments_service.emit_status(session, row, platform_id=platform_id, event="REFUND_PENDING")
    await schedule(session, row, "refund", at=now)


async def _settle_refund(
    session: AsyncSession, row: TransactionRow, *, platform_id: str, settings: Settings | None
) -> datetime | None:
    """The refund of a returned incoming payment settles back to the sender (REFUND_COMPLETED) or fails
    (REFUND_FAILED, 007: the funds stay in suspense); returns when to try again if it is not due yet."""
    refund = dict(row.refund or {})
    delay = timedelta(seconds=settings.sandbox_refund_seconds if settings is not None else 0)
    due = datetime.fromisoformat(refund["initiatedAt"]) + delay
    if clock.now() < due:
        return due
    if (row.extra or {}).get("offrampOutcome") == outcomes.PAYOUT_AND_REFUND_FAIL:
        refund["status"], event = (
            REFUND.move(refund.get("status"), RefundStatus.FAILED, subject=row.id),
            "REFUND_FAILED",
        )
    else:
        currency, amount = row.received_currency or "", row.received_amount or 0
        uma_clearing = await ledger.system_account(
            session, tenant_id=row.tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=UMA_RAIL
        )
        await ledger.post(
            session,
            tenant_id=row.tenant_id,
            kind="UMA_INCOMING_REFUND",
            reference=row.id,
            legs=[
                ledger.Leg(await _suspense(session, row), currency, -amount),
                ledger.Leg(uma_clearing, currency, amount),
            ],
        )
        refund["status"], refund["settledAt"], event = (
            REFUND.move(refund.get("status"), RefundStatus.COMPLETED, subject=row.id),
            clock.isoformat(clock.now()),
            "REFUND_COMPLETED",
        )
    await payments_service.announce(session, row, platform_id=platform_id, event=event, refund=refund)
    return None


async def approve(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str, info: dict[str, Any] | None
) -> Transaction:
    """POST /transactions/{id}/approve: the platform approves a payment awaiting its decision."""
    row = await payments_service.load(
        session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True
    )
    if _awaiting_state(row) is None:
        raise _not_pending(row)
    info = info or {}
    missing = replies.missing_mandatory(
        (row.extra or {}).get("requestedReceiverCustomerInfoFields", []), info
    )
    if missing:
        raise MissingMandatoryUserInfo(
            f"receiverCustomerInfo lacks what the sender requires: {', '.join(missing)}",
            details={
                "fields": [
                    {
                        "field": f"receiverCustomerInfo.{name}",
                        "message": "requested by the sender as mandatory",
                    }
                    for name in missing
                ]
            },
        )
    await _approve(session, row, platform_id=tenant.platform_id, info=info, by="API")
    return payments_service.to_schema(row, platform_id=tenant.platform_id)


async def reject(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str, reason: str | None
) -> Transaction:
    """POST /transactions/{id}/reject: the platform refuses a payment awaiting its decision."""
    row = await payments_service.load(
        session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True
    )
    if _awaiting_state(row) is None:
        raise _not_pending(row)
    await _fail(
        session,
        row,
        ApprovalTrigger.REJECT,
        platform_id=tenant.platform_id,
        by="API",
        failure_reason=replies.PAY_REQUEST_FAILED,
        details=replies.rejection(
            "rejected through POST /transactions/{id}/reject", {"reason": reason} if reason else {}
        ),
    )
    return payments_service.to_schema(row, platform_id=tenant.platform_id)


async def on_pending_reply(
    session: AsyncSession,
    *,
    tenant_id: str,
    transaction_id: str,
    status: int | None,
    body: str | None,
    error: str | None,
) -> None:
    """Honour the platform's answer to INCOMING_PAYMENT.PENDING; runs in the transaction that records the
    delivery attempt. An answer for a payment that is no longer awaiting one (decided through the API,
    timed out, redelivered after the decision) changes nothing."""
    row = await payments_service.load(
        session, tenant_id=tenant_id, transaction_id=transaction_id, for_update=True
    )
    state = _awaiting_state(row)
    if state is None:
        return
    decision = replies.decide(
        status=status,
        body=body,
        error=error,
        requested=(row.extra or {}).get("requestedReceiverCustomerInfoFields", []),
        awaiting_decision=state == ApprovalState.AWAITING_DECISION,
    )
    platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)
    if decision.action == replies.APPROVE:
        await _approve(
            session, row, platform_id=platform_id, info=decision.receiver_customer_info, by="WEBHOOK"
        )
    elif decision.action == replies.DEFER:
        deadline = clock.now() + timedelta(microseconds=row.approval_timeout_us or 0)
        transition(row, ApprovalTrigger.DEFER)
        row.approval_deadline = deadline
        await schedule(session, row, "deadline", at=deadline)
    elif decision.action in (replies.REJECT, replies.FAIL):
        await _fail(
            session,
            row,
            ApprovalTrigger.REJECT if decision.action == replies.REJECT else ApprovalTrigger.FAIL,
            platform_id=platform_id,
            by="WEBHOOK",
            failure_reason=decision.failure_reason,
            details=decision.failure_details,
        )


async def step(
    session: AsyncSession,
    *,
    tenant_id: str,
    transaction_id: str,
    step_name: str,
    settings: Settings | None = None,
) -> datetime | None:
    """A scheduled step: "deadline" auto-rejects an undecided payment, "arrive" credits an approved one,
    "refund" settles the refund of a returned one. Returns when to run again if it ran early; a step that no
    longer applies does nothing."""
    row = await payments_service.load(
        session, tenant_id=tenant_id, transaction_id=transaction_id, for_update=True
    )
    if step_name == "refund":
        if (row.refund or {}).get("status") != RefundStatus.PENDING:
            return None
        platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)
        return await _settle_refund(session, row, platform_id=platform_id, settings=settings)
    if row.status != TransactionStatus.PENDING:
        return None
    state = row.approval_state
    platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)
    if step_name == "deadline" and state == ApprovalState.AWAITING_DECISION:
        deadline = row.approval_deadline
        if deadline is not None and clock.now() < deadline:
            return deadline
        await _fail(
            session,
            row,
            ApprovalTrigger.TIME_OUT,
            platform_id=platform_id,
            by="TIMEOUT",
            failure_reason=replies.TIMED_OUT,
            details={},
        )
    elif step_name == "arrive" and state == ApprovalState.APPROVED:
        await _arrive(session, row, platform_id=platform_id)
    return None


async def receive_sandbox_payment(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    sender_uma_address: str,
    receiving_currency_code: str,
    receiving_currency_amount: int,
    receiver_uma_address: str | None = None,
    customer_id: str | None = None,
    settings: Settings,
) -> Transaction:
    """POST /sandbox/uma/receive (receive.py): a sandbox UMA sender pays one of the tenant's customers."""
    return await _receive.receive(
        session,
        tenant=tenant,
        sender_uma_address=sender_uma_address,
        receiving_currency_code=receiving_currency_code,
        receiving_currency_amount=receiving_currency_amount,
        receiver_uma_address=receiver_uma_address,
        customer_id=customer_id,
        settings=settings,
    )


# Last: receive.py builds on this module (a module import, so either may be imported first).
from platpay.payments.incoming import receive as _receive  # noqa: E402
