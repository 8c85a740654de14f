"""Same-currency transfers between a customer's internal and external accounts (SPEC §4.7).

transfer-out: funds are HELD at creation (available drops, total keeps them), then the rail settles
(held → clearing) or fails (held → available again). transfer-in: only from sources that support pull;
nothing is credited until the rail settles (clearing → available). Steps run as jobs, each step's state
change, ledger entry and webhook committing together with the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.errors import ExternalAccountNotFound, InternalAccountNotFound
from platpay.accounts.state import ExternalAccountStatus, InternalAccountStatus
from platpay.accounts.validators import corridors
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.db.unit_of_work import LeanSession, Raced, orm_session
from platpay.errors import InvalidCurrency, InvalidInput, invalid_field
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.ledger import service as ledger
from platpay.payments import providers
from platpay.payments import sandbox_outcomes as outcomes
from platpay.payments import service as payments_service
from platpay.payments.errors import AmountOutOfRange, TransactionNotCancellable, TransactionNotFound
from platpay.payments.models import TransactionRow
from platpay.payments.schemas import AnyTransaction, Transaction
from platpay.payments.state import TransactionKind, TransactionStatus, TransactionType
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

if TYPE_CHECKING:  # row types accounts.service returns; payments never queries their tables
    from platpay.accounts.models import ExternalAccountRow, InternalAccountRow

STEP_JOB = "payments.transfer_step"
PULL_ACCOUNT_TYPES = {"USD_ACCOUNT": "ACH"}  # ACH debit; other rails only push
# POST /transactions/{id}/cancel: bank-rail transfers (ACH push or pull, wire) until the rail settles them
CANCELLABLE_RAILS = frozenset({"ACH", "WIRE"})
CANCELLED = "CANCELLED"  # failureDetails.code of a cancelled transfer


async def _accounts(
    session: LeanSession,
    *,
    tenant: TenantContext,
    internal_id: str,
    external_id: str,
    internal_field: str,
    external_field: str,
    customer_id: str | None = None,
) -> tuple[InternalAccountRow, ExternalAccountRow, Any]:
    """The transfer's internal and external accounts, checked, and the internal account's owner (None for
    the platform's), read with them. `customer_id`: both must be this customer's, another's is a 404 (an
    agent acting for the customer sees nothing else)."""
    internal, external, owner = await accounts_service.get_internal_with_external(
        session, tenant_id=tenant.id, internal_id=internal_id, external_id=external_id
    )
    if customer_id is not None:
        if internal.customer_id != customer_id:
            raise InternalAccountNotFound(internal_id)
        if external is None or external.customer_id != customer_id:
            raise ExternalAccountNotFound(external_id)
    if external is None:
        raise invalid_field(external_field, f"no external account {external_id!r}")
    if internal.customer_id != external.customer_id:
        raise invalid_field(
            external_field,
            "the internal and external accounts must belong to the same customer (or both to the platform)",
        )
    if internal.currency != external.currency:
        raise invalid_field(
            external_field,
            f"currencies differ ({internal.currency} vs {external.currency}): same-currency transfers only; use POST /quotes to convert",
        )
    if internal.status != InternalAccountStatus.ACTIVE:
        raise invalid_field(internal_field, f"internal account is {internal.status}")
    if external.status != ExternalAccountStatus.ACTIVE:
        raise invalid_field(external_field, f"external account is {external.status}")
    return internal, external, owner


def prefetch_accounts(
    session: LeanSession, *, tenant: TenantContext, internal_id: str, external_id: str
) -> None:
    """Read the accounts a transfer between `internal_id` and `external_id` checks with the transaction's
    next read (accounts_service.prefetch_internal_with_external): for a caller that plans the transfer after
    reads of its own (an agent's, its usage)."""
    accounts_service.prefetch_internal_with_external(
        session, tenant_id=tenant.id, internal_id=internal_id, external_id=external_id
    )


def _customer_checks(internal: InternalAccountRow, owner: Any) -> str | None:
    """The owner's platformCustomerId after checking it may move money in the account's currency (None for
    the platform's account)."""
    if internal.customer_id is None:
        return None
    customer = customers_service.check_can_move_money(
        owner, customer_id=internal.customer_id, currency=internal.currency
    )
    return customer.platform_customer_id


def check_amount(tenant: TenantContext, *, currency: str, amount: int, field: str = "amount") -> None:
    entry = next((c for c in tenant.supported_currencies if c["currencyCode"] == currency), None)
    if entry is None:
        raise invalid_field(
            field, f"{currency} is not among this platform's supportedCurrencies", error=InvalidCurrency
        )
    if not entry["minAmount"] <= amount <= entry["maxAmount"]:
        raise AmountOutOfRange(
            f"{amount} is outside this platform's {currency} range {entry['minAmount']}-{entry['maxAmount']} (minor units)",
            details={
                "fields": [{"field": field, "message": "out of range"}],
                "min": entry["minAmount"],
                "max": entry["maxAmount"],
            },
        )


async def emit_balances(session: AsyncSession, *, tenant_id: str, account_ids: list[str]) -> None:
    """INTERNAL_ACCOUNT.BALANCE_UPDATED for internal accounts whose balance just changed."""
    await accounts_service.emit_balance_updates(session, tenant_id=tenant_id, account_ids=account_ids)


class _AccountRef(TypedDict):
    """One side of a transfer, as its transaction's source or destination names it."""

    accountId: str
    currency: str
    paymentRail: NotRequired[str]


async def _create_transfer(
    session: LeanSession,
    *,
    tenant: TenantContext,
    outgoing: bool,
    internal: InternalAccountRow,
    external: ExternalAccountRow,
    amount: int,
    rail: str,
    platform_customer_id: str | None,
    description: str | None,
    agent_id: str | None,
    settings: Settings,
    rail_chosen: bool = False,
    remittance_information: str | None = None,
    purpose_of_payment: str | None = None,
) -> TransactionRow:
    """A new PENDING same-currency transfer between an internal and an external account, either way.
    `rail_chosen`: the request named the rail (railSelectionMode MANUAL). Its expected settlement is the
    rail's delay for its outcome from now (the process step runs at once)."""
    rail_provider = providers.rail_for(tenant)
    outcome = rail_provider.transfer_outcome(corridors.primary_identifier(external.account_info))
    delay = rail_provider.transfer_delay(outcome, settings)
    now = clock.now()
    internal_ref: _AccountRef = {"accountId": internal.id, "currency": internal.currency}
    external_ref: _AccountRef = (
        {"accountId": external.id, "currency": external.currency, "paymentRail": rail}
        if outgoing  # the payout's rail
        else {"accountId": external.id, "currency": external.currency}
    )
    sender, receiver = (internal_ref, external_ref) if outgoing else (external_ref, internal_ref)
    return await payments_service.create_transaction(
        session,
        tenant_id=tenant.id,
        type=TransactionType.OUTGOING if outgoing else TransactionType.INCOMING,
        kind=TransactionKind.TRANSFER_OUT if outgoing else TransactionKind.TRANSFER_IN,
        status=TransactionStatus.PENDING,
        customer_id=internal.customer_id,
        platform_customer_id=platform_customer_id,
        source={"sourceType": "ACCOUNT", **sender},
        destination={"destinationType": "ACCOUNT", **receiver},
        sender_account_id=sender["accountId"],
        receiver_account_id=receiver["accountId"],
        sent_amount=amount,
        sent_currency=internal.currency,
        received_amount=amount,
        received_currency=internal.currency,
        fee_amount=0,
        rail=rail,
        rail_selection_mode=("MANUAL" if rail_chosen else "AUTO") if outgoing else None,
        expected_settlement_at=now + delay,
        settlement_timeline_seconds=int(delay.total_seconds()),
        remittance_information=remittance_information,
        purpose_of_payment=purpose_of_payment,
        outcome=outcome,
        agent_id=agent_id,
        description=description,
        extra={},
        at=now,
    )


@dataclass(frozen=True, slots=True)
class TransferPlan:
    """A transfer recorded PENDING and not started yet (`plan_transfer_out` / `plan_transfer_in`): a
    transfer-out's amount is already held on its internal account. `start_transfer` sends it to the rail;
    `cancel_transfer` ends it unsent, releasing the hold. The agents domain puts an approval between the
    two; the platform's own endpoints start at once."""

    row: TransactionRow
    internal: InternalAccountRow
    hold: ledger.Entry | None  # transfer-out: the entry holding its amount

    @property
    def transaction_id(self) -> str:
        return self.row.id

    @property
    def amount(self) -> int:
        return self.row.received_amount or 0

    @property
    def currency(self) -> str:
        return self.internal.currency


async def plan_transfer_out(
    session: LeanSession,
    *,
    tenant: TenantContext,
    source_account_id: str,
    destination_account_id: str,
    payment_rail: str | None = None,
    amount: int | None = None,
    description: str | None = None,
    agent_id: str | None = None,
    customer_id: str | None = None,
    remittance_information: str | None = None,
    purpose_of_payment: str | None = None,
    settings: Settings,
) -> TransferPlan:
    """The checks of POST /transfer-out, then its PENDING transaction (no webhook yet) with the amount held
    on the internal account (InsufficientFunds refuses it): see `transfer_out`. `agent_id`: the agent
    initiating it; `customer_id`: the customer it acts for, whose accounts these must be (else 404)."""
    internal, external, owner = await _accounts(
        session,
        tenant=tenant,
        internal_id=source_account_id,
        external_id=destination_account_id,
        internal_field="source.accountId",
        external_field="destination.accountId",
        customer_id=customer_id,
    )
    rails = corridors.payment_rails(external.account_type)
    rail = payment_rail or (rails[0] if rails else external.account_type)
    if payment_rail is not None and payment_rail not in rails:
        raise invalid_field(
            "destination.paymentRail",
            f"{external.account_type} is paid over {rails}, not {payment_rail}",
        )
    platform_customer_id = _customer_checks(internal, owner)
    if amount is None:
        amount = (await ledger.balances(session, [internal.id]))[internal.id].available
        if amount <= 0:
            raise InvalidInput(
                "the source account has no available balance to transfer", details={"accountId": internal.id}
            )
    check_amount(tenant, currency=internal.currency, amount=amount)
    row = await _create_transfer(
        session,
        tenant=tenant,
        outgoing=True,
        internal=internal,
        external=external,
        amount=amount,
        rail=rail,
        platform_customer_id=platform_customer_id,
        description=description,
        agent_id=agent_id,
        settings=settings,
        rail_chosen=payment_rail is not None,
        remittance_information=remittance_information,
        purpose_of_payment=purpose_of_payment,
    )
    hold = await ledger.post(
        session,
        tenant_id=tenant.id,
        kind="TRANSFER_OUT_HOLD",
        reference=row.id,
        legs=[
            ledger.Leg(internal.id, internal.currency, -amount, ledger.AVAILABLE),
            ledger.Leg(internal.id, internal.currency, amount, ledger.HELD),
        ],
    )
    return TransferPlan(row=row, internal=internal, hold=hold)


async def plan_transfer_in(
    session: LeanSession,
    *,
    tenant: TenantContext,
    source_account_id: str,
    destination_account_id: str,
    amount: int,
    description: str | None = None,
    agent_id: str | None = None,
    customer_id: str | None = None,
    settings: Settings,
) -> TransferPlan:
    """The checks of POST /transfer-in, then its PENDING transaction (no webhook yet): see `transfer_in`."""
    internal, external, owner = await _accounts(
        session,
        tenant=tenant,
        internal_id=destination_account_id,
        external_id=source_account_id,
        internal_field="destination.accountId",
        external_field="source.accountId",
        customer_id=customer_id,
    )
    rail = PULL_ACCOUNT_TYPES.get(external.account_type)
    if rail is None:
        instructions = (
            "GET /customers/internal-accounts" if internal.customer_id else "GET /platform/internal-accounts"
        )
        raise invalid_field(
            "source.accountId",
            f"{external.account_type} accounts cannot be pulled from; deposit into the internal account using its "
            f"fundingPaymentInstructions ({instructions})",
        )
    platform_customer_id = _customer_checks(internal, owner)
    check_amount(tenant, currency=internal.currency, amount=amount)
    row = await _create_transfer(
        session,
        tenant=tenant,
        outgoing=False,
        internal=internal,
        external=external,
        amount=amount,
        rail=rail,
        platform_customer_id=platform_customer_id,
        description=description,
        agent_id=agent_id,
        settings=settings,
    )
    return TransferPlan(row=row, internal=internal, hold=None)


async def start_transfer(session: LeanSession, *, tenant: TenantContext, row: TransactionRow) -> Transaction:
    """Send a planned transfer: its first webhook (`<FAMILY>.PENDING`), then the rail's first step (or, for
    a sandbox account that fails at once, FAILED with a transfer-out's hold released: in a lean transaction
    that gives way, `LeanTransferGivesWay`). A planned transfer cancelled meanwhile (POST
    /transactions/{id}/cancel) stays as it is."""
    if row.status != TransactionStatus.PENDING:
        return payments_service.to_schema(row, platform_id=tenant.platform_id)
    if row.outcome in outcomes.IMMEDIATE_FAILURES and not isinstance(session, AsyncSession):
        raise LeanTransferGivesWay(f"transfer {row.id} fails at once ({row.outcome})")
    transaction = await payments_service.emit_status(session, row, platform_id=tenant.platform_id)
    if row.outcome in outcomes.IMMEDIATE_FAILURES:
        assert isinstance(session, AsyncSession)
        if row.kind == TransactionKind.TRANSFER_OUT:
            released = await _release(session, row)
            await accounts_service.emit_balance_update(
                session,
                account=await accounts_service.get_internal(
                    session, tenant_id=tenant.id, account_id=row.source["accountId"]
                ),
                balance=released.balances[row.source["accountId"]],
            )
        return await payments_service.move(
            session,
            row,
            TransactionStatus.FAILED,
            platform_id=tenant.platform_id,
            **outcomes.transfer_failure(row),
        )
    await jobs_service.enqueue(
        session, STEP_JOB, {"transactionId": row.id, "step": "process"}, tenant_id=tenant.id
    )
    return transaction


async def cancel_transfer(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    transaction_id: str,
    status: TransactionStatus,
    failure_details: dict[str, Any],
) -> Transaction:
    """End a planned (never started) transfer as FAILED or EXPIRED: a transfer-out's hold goes back to
    available. `failure_details` ({code, message}) says why (an agent action rejected or expired)."""
    row = await payments_service.load(
        session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True
    )
    if row.status != TransactionStatus.PENDING:  # cancelled meanwhile: its hold is back already
        return payments_service.to_schema(row, platform_id=tenant.platform_id)
    if row.kind == TransactionKind.TRANSFER_OUT:
        await _release(session, row)
        await emit_balances(session, tenant_id=tenant.id, account_ids=[row.source["accountId"]])
    return await payments_service.move(
        session, row, status, platform_id=tenant.platform_id, failure_details=failure_details
    )


async def load_planned(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str
) -> TransactionRow:
    """A planned transfer's row, locked, for `start_transfer`."""
    return await payments_service.load(
        session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True
    )


class LeanTransferGivesWay(Raced):
    """A transfer-out whose sandbox account fails at once changes its transaction row after inserting it
    (FAILED, the hold released), which only an ORM session saves: its lean attempt gives way (rolled back,
    nothing sent yet but its deferred writes) to the careful one (`LeanFirst.same`: the same service for both attempts)."""


async def transfer_out(
    session: LeanSession,
    *,
    tenant: TenantContext,
    source_account_id: str,
    destination_account_id: str,
    payment_rail: str | None = None,
    amount: int | None = None,
    description: str | None = None,
    settings: Settings,
    agent_id: str | None = None,
    remittance_information: str | None = None,
    purpose_of_payment: str | None = None,
) -> Transaction:
    """POST /transfer-out: from the internal account `source_account_id` to the same customer's external
    account `destination_account_id` (over `payment_rail`, default the account's first), `amount` minor units
    (None: the whole available balance), held until the rail settles. Refusals name the API's fields."""
    plan = await plan_transfer_out(
        session,
        tenant=tenant,
        source_account_id=source_account_id,
        destination_account_id=destination_account_id,
        payment_rail=payment_rail,
        amount=amount,
        description=description,
        agent_id=agent_id,
        remittance_information=remittance_information,
        purpose_of_payment=purpose_of_payment,
        settings=settings,
    )
    row, internal = plan.row, plan.internal
    assert plan.hold is not None
    transaction = await payments_service.emit_status(session, row, platform_id=tenant.platform_id)
    latest = plan.hold
    if row.outcome in outcomes.IMMEDIATE_FAILURES:
        if not isinstance(session, AsyncSession):
            raise LeanTransferGivesWay(f"transfer {row.id} fails at once ({row.outcome})")
        latest = await _release(session, row)
        transaction = await payments_service.move(
            session,
            row,
            TransactionStatus.FAILED,
            platform_id=tenant.platform_id,
            **outcomes.transfer_failure(row),
        )
    else:
        await jobs_service.enqueue(
            session, STEP_JOB, {"transactionId": row.id, "step": "process"}, tenant_id=tenant.id
        )
    await accounts_service.emit_balance_update(
        session, account=internal, balance=latest.balances[internal.id]
    )
    return transaction


async def transfer_in(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    source_account_id: str,
    destination_account_id: str,
    amount: int,
    description: str | None = None,
    settings: Settings,
    agent_id: str | None = None,
) -> Transaction:
    """POST /transfer-in: pull `amount` minor units from the external account `source_account_id` (one that
    supports pull) into the same customer's internal account `destination_account_id`."""
    plan = await plan_transfer_in(
        session,
        tenant=tenant,
        source_account_id=source_account_id,
        destination_account_id=destination_account_id,
        amount=amount,
        description=description,
        agent_id=agent_id,
        settings=settings,
    )
    return await start_transfer(session, tenant=tenant, row=plan.row)


async def cancel(
    session: AsyncSession, *, tenant: TenantContext, transaction_id: str, reason: str | None
) -> AnyTransaction:
    """POST /transactions/{transactionId}/cancel: a bank-rail transfer (ACH push or pull, wire) the rail has
    not settled yet ends FAILED (failureDetails.code CANCELLED, with `reason`), a transfer-out's hold back
    to available through the ledger, with its webhook; anything else is 409 TRANSACTION_NOT_CANCELLABLE.

    Cancel and settlement both take the transaction's row lock (FOR UPDATE; SQLite serializes writers), and
    each acts only on the status it expects: of a cancel racing the settle step, the one that locks first
    wins, the other finds the status moved (a settled transfer refuses the cancel; a cancelled one is not
    settled), so the held money moves exactly once."""
    if payments_service.is_card_transaction_id(transaction_id):
        # a card transaction is a transaction, but no bank transfer (the tenant's: else not found)
        await payments_service.get_transaction(session, tenant=tenant, transaction_id=transaction_id)
        raise TransactionNotCancellable(
            f"{transaction_id} is a card transaction: only bank transfers (ACH, wire) can be cancelled",
            details={"transactionId": transaction_id},
        )
    row = await payments_service.load(
        session, tenant_id=tenant.id, transaction_id=transaction_id, for_update=True
    )
    if (
        row.kind not in (TransactionKind.TRANSFER_OUT, TransactionKind.TRANSFER_IN)
        or row.rail not in CANCELLABLE_RAILS
    ):
        raise TransactionNotCancellable(
            f"{transaction_id} is not a bank transfer (ACH, wire): it cannot be cancelled",
            details={"transactionId": transaction_id},
        )
    if row.status not in (TransactionStatus.PENDING, TransactionStatus.PROCESSING):
        raise TransactionNotCancellable(
            f"{transaction_id} is {row.status}: the rail has it, it can no longer be cancelled",
            details={"transactionId": transaction_id, "status": row.status},
        )
    row.cancel_reason = reason
    if row.kind == TransactionKind.TRANSFER_OUT:
        await _release(session, row)
        await emit_balances(session, tenant_id=tenant.id, account_ids=[row.source["accountId"]])
    details = {"code": CANCELLED, "message": "cancelled through POST /transactions/{transactionId}/cancel"}
    return await payments_service.move(
        session,
        row,
        TransactionStatus.FAILED,
        platform_id=tenant.platform_id,
        failure_details={**details, **({"reason": reason} if reason else {})},
    )


async def _release(session: AsyncSession, row: TransactionRow) -> ledger.Entry:
    account_id = row.source["accountId"]
    return await ledger.post(
        session,
        tenant_id=row.tenant_id,
        kind="TRANSFER_OUT_RELEASE",
        reference=row.id,
        legs=[
            ledger.Leg(account_id, row.sent_currency or "", -(row.sent_amount or 0), ledger.HELD),
            ledger.Leg(account_id, row.sent_currency or "", row.sent_amount or 0, ledger.AVAILABLE),
        ],
    )


async def step(
    session: LeanSession, *, tenant_id: str, transaction_id: str, step_name: str, settings: Settings
) -> None:
    """Advance a transfer by one step; a step that no longer applies (already done) does nothing.

    In a lean transaction (the step job's first attempt: payments/jobs.py) the row is read without its
    lock and its change is written only if it is still as read (status, updatedAt); a rail's failure, a
    step that no longer applies and a race raise `Raced`, and the careful attempt (an ORM session, the row
    locked FOR UPDATE) decides again. An incoming transfer's first step changes no status: read leanly, a
    transfer cancelled meanwhile may get its settle step queued, which then finds it FAILED and does
    nothing, as it does for a step that arrives late."""
    careful = isinstance(session, AsyncSession)
    account: InternalAccountRow | None = None
    if careful:
        row = await payments_service.load(
            session, tenant_id=tenant_id, transaction_id=transaction_id, for_update=True
        )
    else:  # one read: the transfer, its account and the tenant's webhook endpoint
        await events_service.endpoint_ahead(session, tenant_id=tenant_id)
        row, account = await payments_service.read_with_account(
            session, tenant_id=tenant_id, transaction_id=transaction_id
        )
    await _advance(session, row, account, step_name=step_name, settings=settings)


async def steps(
    session: LeanSession, *, tenant_id: str, transfers: list[tuple[str, str]], settings: Settings
) -> None:
    """`step` for several of a tenant's transfers ((transaction id, step name) each) in one transaction:
    leanly, every transfer read in one statement (with the tenant's webhook endpoint) and every change sent
    with the transaction's writes, so a batch costs the round trips of one step (settle steps only: their
    entries posted together, `_settle_together`); carefully, one `step` after another (each row locked as
    `step` locks it)."""
    if isinstance(session, AsyncSession):
        for transaction_id, step_name in transfers:
            await step(
                session, tenant_id=tenant_id, transaction_id=transaction_id, step_name=step_name,
                settings=settings,
            )  # fmt: skip
        return
    await events_service.endpoint_ahead(session, tenant_id=tenant_id)
    read = await payments_service.read_many_with_account(
        session, tenant_id=tenant_id, transaction_ids=[transaction_id for transaction_id, _ in transfers]
    )
    for transaction_id, _ in transfers:
        if transaction_id not in read:
            raise TransactionNotFound(transaction_id)
    if {step_name for _, step_name in transfers} == {"settle"}:
        await _settle_together(session, [read[transaction_id] for transaction_id, _ in transfers])
        return
    for transaction_id, step_name in transfers:
        row, account = read[transaction_id]
        await _advance(session, row, account, step_name=step_name, settings=settings)


async def _advance(
    session: LeanSession,
    row: TransactionRow,
    account: InternalAccountRow | None,
    *,
    step_name: str,
    settings: Settings,
) -> None:
    """`step` on the transfer as read (`account`: its internal account, when read with it)."""
    careful = isinstance(session, AsyncSession)
    tenant_id = row.tenant_id
    platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)
    if step_name == "process" and row.status == TransactionStatus.PENDING:
        rail = await providers.rail_of(session, tenant_id=tenant_id)
        if (
            row.type == TransactionType.OUTGOING
        ):  # incoming payments go PENDING → COMPLETED | FAILED (no PROCESSING event)
            await payments_service.move(session, row, TransactionStatus.PROCESSING, platform_id=platform_id)
        await jobs_service.enqueue(
            session,
            STEP_JOB,
            {"transactionId": row.id, "step": "settle"},
            tenant_id=row.tenant_id,
            run_at=clock.now() + rail.transfer_delay(row.outcome or "", settings),
        )
    elif step_name == "settle" and row.status == (
        TransactionStatus.PROCESSING if row.type == TransactionType.OUTGOING else TransactionStatus.PENDING
    ):
        if row.outcome in outcomes.SETTLES:
            await _settle(session, row, account)
            await payments_service.move(session, row, TransactionStatus.COMPLETED, platform_id=platform_id)
        elif not careful:
            raise Raced(f"transfer {row.id} fails ({row.outcome}): in the careful attempt")
        else:
            orm = orm_session(session)
            if row.kind == TransactionKind.TRANSFER_OUT:
                await _release(orm, row)
                await emit_balances(orm, tenant_id=row.tenant_id, account_ids=[row.source["accountId"]])
            await payments_service.move(
                orm,
                row,
                TransactionStatus.FAILED,
                platform_id=platform_id,
                **outcomes.transfer_failure(row),
            )
    elif not careful:
        raise Raced(f"transfer {row.id} is {row.status}: its {step_name} step decided under its lock")


async def _settle(session: LeanSession, row: TransactionRow, account: InternalAccountRow | None) -> None:
    """The settled transfer's ledger entry (the hold, or the clearing account's credit, to its end) and its
    internal account's INTERNAL_ACCOUNT.BALANCE_UPDATED with the balance the entry left (`account`: that
    account as read with the transfer, else read here)."""
    account, spec = await _settlement(session, row, account)
    entry = await ledger.post(
        session, tenant_id=row.tenant_id, kind=spec.kind, reference=spec.reference, legs=spec.legs
    )
    await accounts_service.emit_balance_update(session, account=account, balance=entry.balances[account.id])


async def _settle_together(
    session: LeanSession, read: list[tuple[TransactionRow, InternalAccountRow | None]]
) -> None:
    """`_settle` and COMPLETED for several of a tenant's transfers that all settle, in a lean transaction:
    their entries posted together (`ledger.post_many`: each account, the clearing account too, changed once),
    each transfer's BALANCE_UPDATED with the balance its own entry left, then its COMPLETED. A transfer that
    does not settle now (it fails, or its step no longer applies) raises `Raced`: the batch's steps then run
    one by one."""
    for row, _ in read:
        expected = (
            TransactionStatus.PROCESSING
            if row.type == TransactionType.OUTGOING
            else TransactionStatus.PENDING
        )
        if row.status != expected or row.outcome not in outcomes.SETTLES:
            raise Raced(f"transfer {row.id} does not settle now ({row.status}, {row.outcome}): one by one")
    tenant_id = read[0][0].tenant_id
    platform_id = await tenants_service.platform_of(session, tenant_id=tenant_id)
    settled = [await _settlement(session, row, account) for row, account in read]
    entries = await ledger.post_many(
        session,
        tenant_id=tenant_id,
        entries=[spec for _, spec in settled],
        reported={account.id for account, _ in settled},
    )
    for (row, _), (account, _), entry in zip(read, settled, entries, strict=True):
        await accounts_service.emit_balance_update(
            session, account=account, balance=entry.balances[account.id]
        )
        await payments_service.move(session, row, TransactionStatus.COMPLETED, platform_id=platform_id)


async def _settlement(
    session: LeanSession, row: TransactionRow, account: InternalAccountRow | None
) -> tuple[InternalAccountRow, ledger.EntrySpec]:
    """The internal account a settling transfer moves (`account` when read with it, else read here) and its
    settlement's entry."""
    if row.kind == TransactionKind.TRANSFER_OUT:
        account_id, currency, amount = row.source["accountId"], row.sent_currency or "", row.sent_amount or 0
    else:
        account_id, currency, amount = (
            row.destination["accountId"],
            row.received_currency or "",
            row.received_amount or 0,
        )
    if account is None:
        account = await accounts_service.read_internal(
            session, tenant_id=row.tenant_id, account_id=account_id
        )
    clearing = await ledger.system_account(
        session, tenant_id=row.tenant_id, kind=ledger.CLEARING, currency=currency, qualifier=row.rail or ""
    )
    if row.kind == TransactionKind.TRANSFER_OUT:
        legs = [
            ledger.Leg(account_id, currency, -amount, ledger.HELD),
            ledger.Leg(clearing, currency, amount),
        ]
        return account, ledger.EntrySpec("TRANSFER_OUT_SETTLE", row.id, legs)
    legs = [ledger.Leg(clearing, currency, -amount), ledger.Leg(account_id, currency, amount)]
    return account, ledger.EntrySpec("TRANSFER_IN_SETTLE", row.id, legs)
