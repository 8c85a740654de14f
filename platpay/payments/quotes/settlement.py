"""A quote's money and lifecycle after creation: execution, real-time funding, payout, failure, refund.

Ledger, per step (S = totalSendingAmount, F = the fee schedule's fees, P = the platform's fee
(platformFeesIncluded; feesIncluded = F + P), R = totalReceivingAmount; src/dst = currencies):

    execute / funded   FUNDS(src) -S; FEES(src) +F; PLATFORM_FEES(src) +P; FX(src) +(S-F-P); FX(dst) -R;
                       CLEARING(rail, dst) +R   (no PLATFORM_FEES leg when P = 0)
                       FUNDS is the internal source (AVAILABLE, refused when short: 400 INSUFFICIENT_BALANCE),
                       CLEARING(ACH) for a pull (posted when the pull settles), CLEARING(REALTIME_FUNDING)
                       for a real-time-funded quote (posted when the funds arrive)
    payout settles     external / sandbox UMA: nothing (the money left with the rail at execution);
                       internal destination: CLEARING(rail, dst) -R; destination account +R, and the
                       recipient's COMPLETED INCOMING transaction (payments/incoming/internal.py);
                       and when P > 0: PLATFORM_FEES(src) -P; the platform's internal account in src +P
                       (PLATFORM_FEE_SETTLE; stays in PLATFORM_FEES if the platform has no active one)
    refund completes   the execution entry reversed: the FULL S, fees included (P too), back where it came
                       from; after a bank return of a completed payment whose P reached the platform's
                       account, first PLATFORM_FEE_RETURN: that account -P; PLATFORM_FEES(src) +P (when the
                       platform has already spent it: LOSS(src, PLATFORM_FEE) -P instead, the operator's)
    refund fails (007) CLEARING(rail, dst) -R; CLEARING(SUSPENSE, dst) +R (returned funds parked for ops)
    funding mismatch   CLEARING(REALTIME_FUNDING, src) -A; CLEARING(SUSPENSE, src) +A, refunded like above

The FX account of each currency is what makes each currency balance on its own; its running balance is the
platform's currency position. Every state change, its ledger entry and its OUTGOING_PAYMENT.* webhook
commit together (in the request, or in the job that runs the step).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.state import InternalAccountStatus
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.errors import InvalidInput, invalid_field
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.ledger import service as ledger
from platpay.payments import providers
from platpay.payments import service as payments_service
from platpay.payments.incoming import internal as incoming_internal
from platpay.payments.models import TransactionRow
from platpay.payments.quotes import outcomes, repository
from platpay.payments.quotes.errors import QuoteAlreadyExecuted, QuoteExpired, QuoteNotFound
from platpay.payments.quotes.models import QuoteRow
from platpay.payments.quotes.planning import EXTERNAL, INTERNAL, PULL, REALTIME_FUNDING
from platpay.payments.quotes.state import QUOTE, QuoteStatus
from platpay.payments.schemas import Transaction
from platpay.payments.state import REFUND, RefundStatus, TransactionStatus
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

STEP_JOB = "fx.quote_step"  # the job kind keeps its name: jobs already queued under it still run
FUNDING_QUALIFIER, SUSPENSE_QUALIFIER = "REALTIME_FUNDING", "SUSPENSE"
FUNDING_AMOUNT_MISMATCH = "FUNDING_AMOUNT_MISMATCH"


async def load_quote(
    session: AsyncSession, *, tenant_id: str, quote_id: str, for_update: bool = False
) -> QuoteRow:
    row = await repository.get_quote(session, tenant_id=tenant_id, quote_id=quote_id, for_update=for_update)
    if row is None:
        raise QuoteNotFound(quote_id)
    return row


def check_open(quote: QuoteRow) -> None:
    """409 unless the quote can still be executed (or paid)."""
    if quote.status == QuoteStatus.EXPIRED or (
        quote.status == QuoteStatus.PENDING and clock.now() >= quote.expires_at
    ):
        raise QuoteExpired(
            f"quote {quote.id} expired at {clock.isoformat(quote.expires_at)}; create a new quote",
            details={"quoteId": quote.id, "expiresAt": clock.isoformat(quote.expires_at)},
        )
    if quote.status != QuoteStatus.PENDING:
        raise QuoteAlreadyExecuted(
            f"quote {quote.id} was already executed (status {quote.status})",
            details={"quoteId": quote.id, "status": quote.status, "transactionId": quote.transaction_id},
        )


async def _clearing(session: AsyncSession, quote: QuoteRow, currency: str, qualifier: str) -> str:
    return await ledger.system_account(
        session, tenant_id=quote.tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=qualifier
    )


async def _platform_fees(session: AsyncSession, quote: QuoteRow) -> str:
    return await ledger.system_account(
        session, tenant_id=quote.tenant_id, kind=ledger.PLATFORM_FEES, currency=quote.sending_currency
    )


async def _platform_account(session: AsyncSession, quote: QuoteRow) -> str | None:
    """The platform's own active internal account in the quote's sending currency (its holding account),
    where a completed payment's platform fee goes; None when it has none."""
    currency = quote.sending_currency
    for account in await accounts_service.list_platform_accounts(
        session,
        tenant_id=quote.tenant_id,
        currency=currency,
        account_type=accounts_service.holding_type_for(currency),
    ):
        if account.status == InternalAccountStatus.ACTIVE:
            return account.id
    return None


async def _settle_platform_fee(session: AsyncSession, quote: QuoteRow, reference: str) -> None:
    """A completed payment's platform fee leaves PLATFORM_FEES for the platform's internal account."""
    if not quote.platform_fee or quote.platform_fee_entry_id is not None:
        return
    account_id = await _platform_account(session, quote)
    if account_id is None:
        return
    src = quote.sending_currency
    entry = await ledger.post(
        session,
        tenant_id=quote.tenant_id,
        kind="PLATFORM_FEE_SETTLE",
        reference=reference,
        legs=[
            ledger.Leg(await _platform_fees(session, quote), src, -quote.platform_fee),
            ledger.Leg(account_id, src, quote.platform_fee),
        ],
    )
    quote.platform_fee_entry_id = entry.id
    await accounts_service.emit_balance_updates(session, tenant_id=quote.tenant_id, account_ids=[account_id])


async def _return_platform_fee(session: AsyncSession, quote: QuoteRow, reference: str) -> None:
    """Before a refund reverses the execution entry of a payment whose fee already reached the platform's
    account (a bank return): the fee comes back from that account into PLATFORM_FEES, so that the reversal
    takes it from there. A platform that has spent it meanwhile is not overdrawn: the operator covers it."""
    if quote.platform_fee_entry_id is None:
        return
    src, fee = quote.sending_currency, quote.platform_fee
    settled = await ledger.entries_for(session, tenant_id=quote.tenant_id, reference=reference)
    account_id = next(
        posting["accountId"]
        for entry in settled
        if entry["id"] == quote.platform_fee_entry_id
        for posting in entry["postings"]
        if posting["amount"] > 0
    )
    available = (await ledger.balances(session, [account_id]))[account_id].available
    payer = account_id
    if available < fee:
        payer = await ledger.system_account(
            session, tenant_id=quote.tenant_id, kind=ledger.LOSS, currency=src, qualifier="PLATFORM_FEE"
        )
    await ledger.post(
        session,
        tenant_id=quote.tenant_id,
        kind="PLATFORM_FEE_RETURN",
        reference=reference,
        legs=[ledger.Leg(payer, src, -fee), ledger.Leg(await _platform_fees(session, quote), src, fee)],
    )
    quote.platform_fee_entry_id = None
    if payer == account_id:
        await accounts_service.emit_balance_updates(session, tenant_id=quote.tenant_id, account_ids=[payer])


async def _post_exchange(session: AsyncSession, quote: QuoteRow, *, funds_account_id: str, kind: str) -> None:
    """The execution entry (see the module docstring); remembered on the quote for a refund to reverse."""
    src, dst = quote.sending_currency, quote.receiving_currency
    fees = quote.fixed_fee + quote.variable_fee
    tenant_id = quote.tenant_id
    legs = [ledger.Leg(funds_account_id, src, -quote.sending_amount)]
    if fees:
        fee_account = await ledger.system_account(
            session, tenant_id=tenant_id, kind=ledger.FEES, currency=src
        )
        legs.append(ledger.Leg(fee_account, src, fees))
    if quote.platform_fee:
        legs.append(ledger.Leg(await _platform_fees(session, quote), src, quote.platform_fee))
    fx_src = await ledger.system_account(session, tenant_id=tenant_id, kind=ledger.FX, currency=src)
    fx_dst = await ledger.system_account(session, tenant_id=tenant_id, kind=ledger.FX, currency=dst)
    legs += [
        ledger.Leg(fx_src, src, quote.sending_amount - fees - quote.platform_fee),
        ledger.Leg(fx_dst, dst, -quote.receiving_amount),
        ledger.Leg(await _clearing(session, quote, dst, quote.rail), dst, quote.receiving_amount),
    ]
    entry = await ledger.post(
        session, tenant_id=tenant_id, kind=kind, reference=quote.transaction_id, legs=legs
    )
    quote.debit_entry_id = entry.id


async def _transaction(session: AsyncSession, quote: QuoteRow) -> TransactionRow:
    return await payments_service.load(
        session, tenant_id=quote.tenant_id, transaction_id=quote.transaction_id, for_update=True
    )


async def _schedule(
    session: AsyncSession, quote: QuoteRow, step_name: str, delay: timedelta = timedelta(0)
) -> None:
    await jobs_service.enqueue(
        session,
        STEP_JOB,
        {"quoteId": quote.id, "step": step_name},
        tenant_id=quote.tenant_id,
        run_at=clock.now() + delay,
    )


async def _begin(
    session: AsyncSession, quote: QuoteRow, transaction: TransactionRow, *, platform_id: str
) -> None:
    """Executed: the quote is PROCESSING; its transaction fires OUTGOING_PAYMENT.PENDING (source debited)."""
    now = clock.now()
    quote.status = QUOTE.move(quote.status, QuoteStatus.PROCESSING, subject=quote.id)
    quote.executed_at, quote.updated_at = now, now
    await payments_service.announce(session, transaction, platform_id=platform_id, at=now)
    await _schedule(session, quote, "process")


async def execute(session: AsyncSession, *, quote: QuoteRow, tenant: TenantContext) -> None:
    """Execute a quote funded from an internal account (debited now) or by a pull (debited on settlement)."""
    check_open(quote)
    if quote.customer_id is not None:  # its KYC may have been rejected since the quote was made
        await customers_service.ensure_kyc_not_rejected(
            session, tenant_id=quote.tenant_id, customer_id=quote.customer_id
        )
    if quote.funding == REALTIME_FUNDING:
        raise InvalidInput(
            f"quote {quote.id} is funded in real time: it executes when its paymentInstructions are paid "
            "(in the sandbox: POST /sandbox/send), not through execute",
            details={"quoteId": quote.id, "sourceType": quote.source.get("sourceType")},
        )
    transaction = await _transaction(session, quote)
    if quote.funding == INTERNAL:
        assert quote.source_account_id is not None
        account = await accounts_service.get_internal(
            session, tenant_id=quote.tenant_id, account_id=quote.source_account_id
        )
        if account.status != InternalAccountStatus.ACTIVE:
            raise invalid_field("source.accountId", f"internal account {account.id} is {account.status}")
        await _post_exchange(session, quote, funds_account_id=quote.source_account_id, kind="QUOTE_EXECUTE")
        await accounts_service.emit_balance_updates(
            session, tenant_id=quote.tenant_id, account_ids=[quote.source_account_id]
        )
    await _begin(session, quote, transaction, platform_id=tenant.platform_id)


async def sandbox_send(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    quote_id: str,
    currency_code: str,
    currency_amount: int | None = None,
    settings: Settings,
) -> Transaction:
    """Funds for a real-time-funded quote arrive (`currency_amount` minor units of `currency_code`, default
    the quote's totalSendingAmount): the matching amount executes it; any other amount is held in suspense,
    the payment fails with FUNDING_AMOUNT_MISMATCH and the funds are refunded."""
    quote = await load_quote(session, tenant_id=tenant.id, quote_id=quote_id, for_update=True)
    if quote.funding != REALTIME_FUNDING:
        raise invalid_field(
            "quoteId",
            f"quote {quote.id} is funded from an account; execute it with POST /quotes/{{quoteId}}/execute",
        )
    check_open(quote)
    if currency_code != quote.sending_currency:
        raise invalid_field(
            "currencyCode",
            f"quote {quote.id} is funded in {quote.sending_currency}, not {currency_code}",
        )
    amount = currency_amount if currency_amount is not None else quote.sending_amount
    transaction = await _transaction(session, quote)
    funding_account = await _clearing(session, quote, quote.sending_currency, FUNDING_QUALIFIER)
    if amount == quote.sending_amount:
        await _post_exchange(session, quote, funds_account_id=funding_account, kind="QUOTE_FUNDED")
        await _begin(session, quote, transaction, platform_id=tenant.platform_id)
        return payments_service.to_schema(transaction, platform_id=tenant.platform_id)
    suspense = await _clearing(session, quote, quote.sending_currency, SUSPENSE_QUALIFIER)
    entry = await ledger.post(
        session,
        tenant_id=tenant.id,
        kind="QUOTE_FUNDING_MISMATCH",
        reference=transaction.id,
        legs=[
            ledger.Leg(funding_account, quote.sending_currency, -amount),
            ledger.Leg(suspense, quote.sending_currency, amount),
        ],
    )
    quote.debit_entry_id, quote.executed_at = entry.id, clock.now()
    return await _fail(
        session,
        quote,
        transaction,
        failure_reason=FUNDING_AMOUNT_MISMATCH,
        refund_reason="TRANSACTION_FAILED",
        platform_id=tenant.platform_id,
        settings=settings,
        extra={"receivedFunding": amount},
    )


async def _fail(
    session: AsyncSession,
    quote: QuoteRow,
    transaction: TransactionRow,
    *,
    failure_reason: str,
    refund_reason: str,
    platform_id: str,
    settings: Settings,
    extra: dict[str, Any] | None = None,
) -> Transaction:
    """FAILED, and when money had moved, an automatic refund: REFUND_PENDING now, settled by a job.
    `extra`: facts to keep on the transaction (a funding mismatch's receivedFunding)."""
    now = clock.now()
    quote.status, quote.updated_at = QUOTE.move(quote.status, QuoteStatus.FAILED, subject=quote.id), now
    refunding = quote.debit_entry_id is not None
    refund = None
    if refunding:
        refund = {
            "reference": f"REFUND-{transaction.id.rsplit('-', 1)[-1].upper()}",
            "initiatedAt": clock.isoformat(now),
            "status": RefundStatus.PENDING,
            "reason": refund_reason,
        }
    failed = await payments_service.move(
        session,
        transaction,
        TransactionStatus.FAILED,
        platform_id=platform_id,
        failure_reason=failure_reason,
        refund=refund,
        extra=extra,
    )
    if refunding:
        failed = await payments_service.emit_status(
            session, transaction, platform_id=platform_id, event="REFUND_PENDING"
        )
        await _schedule(session, quote, "refund", timedelta(seconds=settings.sandbox_refund_seconds))
    return failed


async def _complete(
    session: AsyncSession, quote: QuoteRow, transaction: TransactionRow, *, platform_id: str
) -> None:
    if quote.payout == INTERNAL:
        assert quote.destination_account_id is not None
        dst, amount = quote.receiving_currency, quote.receiving_amount
        await ledger.post(
            session,
            tenant_id=quote.tenant_id,
            kind="QUOTE_PAYOUT_SETTLE",
            reference=transaction.id,
            legs=[
                ledger.Leg(await _clearing(session, quote, dst, quote.rail), dst, -amount),
                ledger.Leg(quote.destination_account_id, dst, amount),
            ],
        )
        await accounts_service.emit_balance_updates(
            session, tenant_id=quote.tenant_id, account_ids=[quote.destination_account_id]
        )
        await incoming_internal.record_receipt(
            session, outgoing=transaction, account_id=quote.destination_account_id, platform_id=platform_id
        )
    await _settle_platform_fee(session, quote, transaction.id)
    quote.status = QUOTE.move(quote.status, QuoteStatus.COMPLETED, subject=quote.id)
    quote.updated_at = clock.now()
    await payments_service.move(session, transaction, TransactionStatus.COMPLETED, platform_id=platform_id)


async def _refund(
    session: AsyncSession, quote: QuoteRow, transaction: TransactionRow, *, platform_id: str
) -> None:
    refund = dict(transaction.refund or {})
    payout_attempted = transaction.failure_reason != FUNDING_AMOUNT_MISMATCH
    if quote.outcome == outcomes.PAYOUT_AND_REFUND_FAIL and payout_attempted:
        dst, amount = quote.receiving_currency, quote.receiving_amount
        await ledger.post(
            session,
            tenant_id=quote.tenant_id,
            kind="QUOTE_REFUND_FAILED",
            reference=transaction.id,
            legs=[
                ledger.Leg(await _clearing(session, quote, dst, quote.rail), dst, -amount),
                ledger.Leg(await _clearing(session, quote, dst, SUSPENSE_QUALIFIER), dst, amount),
            ],
        )
        refund["status"], event = (
            REFUND.move(refund.get("status"), RefundStatus.FAILED, subject=transaction.id),
            "REFUND_FAILED",
        )
    else:
        assert quote.debit_entry_id is not None
        await _return_platform_fee(session, quote, transaction.id)
        await ledger.reverse(
            session,
            tenant_id=quote.tenant_id,
            entry_id=quote.debit_entry_id,
            kind="QUOTE_REFUND",
            reference=transaction.id,
        )
        if quote.funding == INTERNAL and quote.source_account_id:
            await accounts_service.emit_balance_updates(
                session, tenant_id=quote.tenant_id, account_ids=[quote.source_account_id]
            )
        refund["status"], refund["settledAt"], event = (
            REFUND.move(refund.get("status"), RefundStatus.COMPLETED, subject=transaction.id),
            clock.isoformat(clock.now()),
            "REFUND_COMPLETED",
        )
    await payments_service.announce(session, transaction, platform_id=platform_id, event=event, refund=refund)


async def _payout_delay(session: AsyncSession, quote: QuoteRow, settings: Settings) -> timedelta:
    """Internal destinations are credited as soon as the runner gets to it; rails take their time."""
    if quote.payout == INTERNAL:
        return timedelta(0)
    rail = await providers.rail_of(session, tenant_id=quote.tenant_id)
    return rail.payout_delay(quote.outcome, settings)


async def step(
    session: AsyncSession, *, tenant_id: str, quote_id: str, step_name: str, settings: Settings
) -> None:
    """Advance an executed quote by one step; a step that no longer applies does nothing (idempotent).

    process      PENDING -> PROCESSING (or FAILED at once: sandbox 002); schedules the pull or the payout
    pull         a pull source's money arrives: the exchange is posted (or the pull failed: FAILED)
    settle       the payout lands: COMPLETED, or FAILED with a refund (004, 006, 007, compliance)
    bank_return  COMPLETED -> FAILED with a refund (005)
    refund       the refund settles (REFUND_COMPLETED) or fails (REFUND_FAILED, 007)
    """
    quote = await load_quote(session, tenant_id=tenant_id, quote_id=quote_id, for_update=True)
    transaction = await _transaction(session, quote)
    platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)

    async def fail(failure_reason: str, refund_reason: str = "TRANSACTION_FAILED") -> None:
        await _fail(
            session,
            quote,
            transaction,
            failure_reason=failure_reason,
            refund_reason=refund_reason,
            platform_id=platform_id,
            settings=settings,
        )

    status = transaction.status
    if (
        step_name == "process"
        and status == TransactionStatus.PENDING
        and quote.status == QuoteStatus.PROCESSING
    ):
        if quote.funding != PULL and quote.outcome == outcomes.EXECUTION_FAILED:
            await fail("QUOTE_EXECUTION_FAILED")
            return
        await payments_service.move(
            session, transaction, TransactionStatus.PROCESSING, platform_id=platform_id
        )
        if quote.funding == PULL:
            rail = await providers.rail_of(session, tenant_id=quote.tenant_id)
            await _schedule(session, quote, "pull", rail.transfer_delay(providers.SUCCESS, settings))
        else:
            await _schedule(session, quote, "settle", await _payout_delay(session, quote, settings))
    elif step_name == "pull" and status == TransactionStatus.PROCESSING and quote.debit_entry_id is None:
        if quote.pull_outcome != outcomes.SUCCESS:
            await fail("QUOTE_EXECUTION_FAILED")  # nothing was taken, so nothing to refund
            return
        pull_rail = transaction.source.get("paymentRail", "ACH")
        pull_clearing = await _clearing(session, quote, quote.sending_currency, pull_rail)
        await _post_exchange(session, quote, funds_account_id=pull_clearing, kind="QUOTE_PULL_SETTLE")
        if quote.outcome == outcomes.EXECUTION_FAILED:
            await fail("QUOTE_EXECUTION_FAILED")
        else:
            await _schedule(session, quote, "settle", await _payout_delay(session, quote, settings))
    elif step_name == "settle" and status == TransactionStatus.PROCESSING:
        failure = outcomes.SETTLEMENT_FAILURES.get(quote.outcome)
        if failure is not None:
            await fail(*failure)
            return
        await _complete(session, quote, transaction, platform_id=platform_id)
        if quote.outcome == outcomes.BANK_RETURN:
            delay = timedelta(seconds=settings.sandbox_bank_return_seconds)
            await _schedule(session, quote, "bank_return", delay)
    elif step_name == "bank_return" and status == TransactionStatus.COMPLETED and quote.payout == EXTERNAL:
        await fail("COUNTERPARTY_POST_TX_FAILED")
    elif step_name == "refund" and (transaction.refund or {}).get("status") == RefundStatus.PENDING:
        await _refund(session, quote, transaction, platform_id=platform_id)
