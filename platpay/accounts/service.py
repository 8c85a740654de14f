"""Internal accounts, each backed by a ledger account with the same id. Balances come from the ledger; deposit
details from instructions.py.

Which accounts exist: the platform has one per configured currency; a customer has the platform-managed
holding account (INTERNAL_FIAT or INTERNAL_CRYPTO) in every configured currency and, when USDB is configured,
also an EMBEDDED_WALLET in USDB: the self-custodial wallet provisioned for the customer (INTERFACE-FACTS
§3.4), in addition to the USDB holding account. So a customer's account is one per (currency, type), and a
lookup without an id names the type it means: `holding_account_in` for money arriving from outside (UMA
payments, deposits), `customer_account_in(..., account_type=EMBEDDED_WALLET)` for the wallet."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from platpay.accounts import hooks as accounts_hooks
from platpay.accounts import instructions, repository
from platpay.accounts.errors import InternalAccountNotFound
from platpay.accounts.hooks import OpenedAccount
from platpay.accounts.models import ExternalAccountRow, InternalAccountRow
from platpay.accounts.providers import ISSUED, REFUSED, NewInternalAccount, provider_of
from platpay.accounts.schemas import InternalAccount, PaymentInstructions
from platpay.accounts.state import (
    HAS_DEPOSIT_DETAILS,
    INTERNAL_ACCOUNT,
    InternalAccountStatus,
    InternalAccountType,
)
from platpay.customers import hooks as customers_hooks
from platpay.customers import service as customers_service
from platpay.db.unit_of_work import LeanSession
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock, currencies
from platpay.kit.ids import new_id
from platpay.kit.money import currency_amount
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.ledger import service as ledger_service
from platpay.ledger.service import Balance, PendingBalance

BACKFILL_JOB = "accounts.backfill_currency"
BACKFILL_PAGE = 500
PROVISION_JOB = "accounts.provision_account"
# Provisioning attempts of a PENDING account before it is FAILED for good (each `provider.delay` apart).
PROVISION_ATTEMPTS = 5
STATUS_UPDATED = "INTERNAL_ACCOUNT.STATUS_UPDATED"
BALANCE_UPDATED = "INTERNAL_ACCOUNT.BALANCE_UPDATED"
FUNDING_INSTRUCTIONS_UPDATED = "INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED"
EVENT_TYPES = frozenset({STATUS_UPDATED, BALANCE_UPDATED, FUNDING_INSTRUCTIONS_UPDATED})


EMBEDDED_WALLET = InternalAccountType.EMBEDDED_WALLET
# embedded wallets are provisioned when the platform supports USDB (INTERFACE-FACTS §3.4)
WALLET_CURRENCY = "USDB"


def holding_type_for(currency: str) -> str:
    """The type of the platform-managed holding account in `currency`."""
    kind = currencies.require(currency).kind
    return InternalAccountType.INTERNAL_CRYPTO if kind == "CRYPTO" else InternalAccountType.INTERNAL_FIAT


def account_types_for(currency: str, *, customer: bool) -> tuple[str, ...]:
    """The accounts an owner gets in `currency`: the holding account, first; a customer's USDB adds the
    embedded wallet."""
    if customer and currency == WALLET_CURRENCY:
        return (holding_type_for(currency), EMBEDDED_WALLET)
    return (holding_type_for(currency),)


async def _open(
    session: AsyncSession, *, tenant_id: str, owners: list[str | None], codes: list[str]
) -> list[dict[str, Any]]:
    """Create the missing (owner, currency, type) accounts; existing ones are left alone (safe to repeat).
    Within an owner and currency the holding account is created first: ids are time-ordered, so it has the
    smaller id (lists, newest first by default, show the wallet before it)."""
    existing = await repository.existing_accounts(session, tenant_id=tenant_id, customer_ids=owners)
    now = clock.now()
    rows: list[dict[str, Any]] = [
        {
            "id": new_id("InternalAccount"),
            "tenant_id": tenant_id,
            "customer_id": owner,
            "currency": code,
            "type": kind,
            "status": InternalAccountStatus.ACTIVE,
            "private_enabled": False if kind == EMBEDDED_WALLET else None,
            "created_at": now,
            "updated_at": now,
        }
        for owner in owners
        for code in codes
        for kind in account_types_for(code, customer=owner is not None)
        if (owner, code, kind) not in existing
    ]
    provider = await provider_of(session, tenant_id=tenant_id)
    emails = await _owner_emails(
        session, tenant_id=tenant_id, provider_reads=provider.reads_owner_email, rows=rows
    )
    pending = [
        row
        for row in rows
        if not provider.opens_at_once(
            NewInternalAccount(
                id=row["id"],
                customer_id=row["customer_id"],
                currency=row["currency"],
                type=row["type"],
                owner_email=emails.get(row["customer_id"] or ""),
            )
        )
    ]
    for row in pending:
        row["status"] = InternalAccountStatus.PENDING
    await repository.insert_internal(session, rows)
    await ledger_service.open_internal_accounts(
        session, tenant_id=tenant_id, accounts=[(r["id"], r["currency"]) for r in rows]
    )
    if rows:
        opened = [OpenedAccount(r["id"], r["customer_id"], r["currency"], r["type"]) for r in rows]
        for on_opened in accounts_hooks.on_opened.subscribers():
            await on_opened(session, tenant_id=tenant_id, accounts=opened)
    for row in pending:
        await _schedule_provisioning(
            session,
            tenant_id=tenant_id,
            account_id=row["id"],
            attempt=1,
            run_at=now + provider.delay(),
        )
    return rows


async def _owner_emails(
    session: AsyncSession, *, tenant_id: str, provider_reads: bool, rows: list[dict[str, Any]]
) -> dict[str, str | None]:
    """The owning customers' emails, when the account provider decides by them (the sandbox's magic)."""
    customer_ids = sorted({row["customer_id"] for row in rows if row["customer_id"] is not None})
    if not provider_reads or not customer_ids:
        return {}
    return await customers_service.emails_of(session, tenant_id=tenant_id, customer_ids=customer_ids)


async def _schedule_provisioning(
    session: AsyncSession, *, tenant_id: str, account_id: str, attempt: int, run_at: datetime
) -> None:
    await jobs_service.enqueue(
        session,
        PROVISION_JOB,
        {"tenantId": tenant_id, "accountId": account_id, "attempt": attempt},
        tenant_id=tenant_id,
        run_at=run_at,
    )


async def provision(session: AsyncSession, *, tenant_id: str, account_id: str, attempt: int) -> None:
    """One provisioning attempt of a PENDING account (the provision job): its deposit details issued, it
    is ACTIVE (INTERNAL_ACCOUNT.STATUS_UPDATED, then INTERNAL_ACCOUNT.FUNDING_INSTRUCTIONS_UPDATED: its
    fundingPaymentInstructions were empty until now); refused, or not issued after PROVISION_ATTEMPTS
    attempts, it is FAILED for good (INTERNAL_ACCOUNT.STATUS_UPDATED); otherwise the next attempt is
    scheduled. An account no longer PENDING (its customer deleted meanwhile) is left alone."""
    row = await repository.get_internal(session, tenant_id=tenant_id, account_id=account_id, for_update=True)
    if row is None or row.status != InternalAccountStatus.PENDING:
        return
    provider = await provider_of(session, tenant_id=tenant_id)
    owner_email = None
    if provider.reads_owner_email and row.customer_id is not None:
        emails = await customers_service.emails_of(
            session, tenant_id=tenant_id, customer_ids=[row.customer_id]
        )
        owner_email = emails.get(row.customer_id)
    account = NewInternalAccount(
        id=row.id, customer_id=row.customer_id, currency=row.currency, type=row.type, owner_email=owner_email
    )
    outcome = provider.provision(account, attempt=attempt)
    now = clock.now()
    if outcome == ISSUED:
        await _move(
            session,
            row,
            InternalAccountStatus.ACTIVE,
            now=now,
            events=(STATUS_UPDATED, FUNDING_INSTRUCTIONS_UPDATED),
        )
    elif outcome == REFUSED or attempt >= PROVISION_ATTEMPTS:
        await _move(session, row, InternalAccountStatus.FAILED, now=now, events=(STATUS_UPDATED,))
    else:
        await _schedule_provisioning(
            session,
            tenant_id=tenant_id,
            account_id=account_id,
            attempt=attempt + 1,
            run_at=now + provider.delay(),
        )


async def _move(
    session: AsyncSession,
    row: InternalAccountRow,
    target: InternalAccountStatus,
    *,
    now: datetime,
    events: tuple[str, ...],
) -> None:
    row.status = INTERNAL_ACCOUNT.move(row.status, target, subject=row.id)
    row.updated_at = now
    await session.flush()
    [account] = await render(session, [row])
    for event_type in events:
        await events_service.emit(session, tenant_id=row.tenant_id, type=event_type, resource=account)


@customers_hooks.on_created.subscribe
async def open_customer_accounts(
    session: AsyncSession, *, tenant_id: str, customer_ids: list[str], currency_codes: list[str]
) -> None:
    """New customers get an account in every currency their tenant is configured with."""
    if customer_ids:
        await _open(session, tenant_id=tenant_id, owners=list(customer_ids), codes=currency_codes)


async def ensure_platform_accounts(session: AsyncSession, *, tenant_id: str, codes: list[str]) -> None:
    await _open(session, tenant_id=tenant_id, owners=[None], codes=codes)


async def on_currencies_added(session: AsyncSession, *, tenant_id: str, codes: list[str]) -> None:
    """A currency added to the config: the platform's account now, every customer's through a job (a
    platform may have millions of customers; the job works through them in pages and survives crashes)."""
    await ensure_platform_accounts(session, tenant_id=tenant_id, codes=codes)
    for code in codes:
        await jobs_service.enqueue(
            session, BACKFILL_JOB, {"tenantId": tenant_id, "currency": code}, tenant_id=tenant_id
        )


async def backfill_page(session: AsyncSession, *, tenant_id: str, currency: str) -> int:
    """Open `currency` accounts for the next page of active customers lacking one of the accounts they get
    in it (`account_types_for`: a customer with only the USDB wallet, from before customers got a USDB
    holding account too, gets the holding account); returns how many customers."""
    customer_ids = await repository.customers_without_account(
        session,
        tenant_id=tenant_id,
        currency=currency,
        account_types=account_types_for(currency, customer=True),
        limit=BACKFILL_PAGE,
    )
    if customer_ids:
        await _open(session, tenant_id=tenant_id, owners=list(customer_ids), codes=[currency])
    return len(customer_ids)


@customers_hooks.on_deleted.subscribe
async def close_customer_accounts(session: AsyncSession, *, tenant_id: str, customer_id: str) -> None:
    """A deleted customer's accounts close (INTERNAL_ACCOUNT.STATUS_UPDATED for each)."""
    closable = [
        s for s in INTERNAL_ACCOUNT.states if INTERNAL_ACCOUNT.can_move(s, InternalAccountStatus.CLOSED)
    ]
    rows = await repository.lock_customer_accounts(
        session, tenant_id=tenant_id, customer_id=customer_id, statuses=closable
    )
    now = clock.now()
    for row in rows:
        row.status = INTERNAL_ACCOUNT.move(row.status, InternalAccountStatus.CLOSED, subject=row.id)
        row.updated_at = now
    await session.flush()
    for account in await render(session, rows):
        await events_service.emit(session, tenant_id=tenant_id, type=STATUS_UPDATED, resource=account)


async def emit_balance_updates(session: AsyncSession, *, tenant_id: str, account_ids: list[str]) -> None:
    """INTERNAL_ACCOUNT.BALANCE_UPDATED with each account as GET returns it (called after a ledger entry)."""
    rows = await repository.internal_by_ids(session, tenant_id=tenant_id, account_ids=account_ids)
    for account in await render(session, rows):
        await events_service.emit(session, tenant_id=tenant_id, type=BALANCE_UPDATED, resource=account)


# Where an INTERNAL_ACCOUNT.BALANCE_UPDATED's data holds the balance (InternalAccount's JSON)
_BALANCE_PATH, _TOTAL_PATH = ("balance", "amount"), ("totalBalance", "amount")


async def emit_balance_update(
    session: LeanSession, *, account: InternalAccountRow, balance: Balance | PendingBalance
) -> InternalAccount | None:
    """INTERNAL_ACCOUNT.BALANCE_UPDATED for `account`, whose balance is now `balance` (as the ledger entry that
    moved it returned it); the account as GET returns it. A pending balance (known only when the
    transaction's deferred writes are sent: ledger.PendingBalance) goes into the event from them: None."""
    if isinstance(balance, PendingBalance):
        [rendered] = _render([account], {account.id: Balance(0, 0)})  # placeholders, filled in SQL
        filled = balance.filled(available=_BALANCE_PATH, total=_TOTAL_PATH)
        await events_service.emit(
            session, tenant_id=account.tenant_id, type=BALANCE_UPDATED, resource=rendered, filled=filled
        )
        return None
    [rendered] = _render([account], {account.id: balance})
    await events_service.emit(session, tenant_id=account.tenant_id, type=BALANCE_UPDATED, resource=rendered)
    return rendered


async def render(session: AsyncSession, rows: list[InternalAccountRow]) -> list[InternalAccount]:
    """Internal accounts as the API shows them, with their balances read now."""
    return _render(rows, await ledger_service.balances(session, [row.id for row in rows]))


def _render(rows: list[InternalAccountRow], balances: Mapping[str, Balance]) -> list[InternalAccount]:
    accounts = []
    for row in rows:
        balance = balances[row.id]
        accounts.append(
            InternalAccount(
                id=row.id,
                customer_id=row.customer_id,
                type=row.type,
                status=row.status,
                balance=currency_amount(balance.available, row.currency),
                total_balance=currency_amount(balance.total, row.currency),
                # none before provisioning issues them (PENDING), nor when it failed
                funding_payment_instructions=[
                    PaymentInstructions(**item) for item in instructions.funding_instructions(row)
                ]
                if row.status in HAS_DEPOSIT_DETAILS
                else [],
                private_enabled=row.private_enabled,
                created_at=row.created_at,
                updated_at=row.updated_at,
            )
        )
    return accounts


async def list_customer_accounts(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    customer_id: str | None = None,
    currency: str | None = None,
    account_type: str | None = None,
) -> tuple[PageResult[InternalAccountRow], list[InternalAccount]]:
    stmt = repository.internal_query(
        tenant_id=tenant_id,
        platform=False,
        customer_id=customer_id,
        currency=currency,
        account_type=account_type,
    )
    page = await paginate(session, stmt, id_column=InternalAccountRow.id, params=params)
    return page, await render(session, page.items)


async def list_platform_accounts(
    session: AsyncSession, *, tenant_id: str, currency: str | None = None, account_type: str | None = None
) -> list[InternalAccount]:
    stmt = repository.internal_query(
        tenant_id=tenant_id, platform=True, currency=currency, account_type=account_type
    )
    rows = await repository.all_of(session, stmt.order_by(InternalAccountRow.currency))
    return await render(session, rows)


async def get_internal(
    session: AsyncSession, *, tenant_id: str, account_id: str, for_update: bool = False
) -> InternalAccountRow:
    row = await repository.get_internal(
        session, tenant_id=tenant_id, account_id=account_id, for_update=for_update
    )
    if row is None:
        raise InternalAccountNotFound(account_id)
    return row


def with_internal(
    stmt: Select[Any], *, account_id: ColumnElement[Any], tenant_id: ColumnElement[Any]
) -> Select[Any]:
    """`stmt` with the internal account its column `account_id` names (in the tenant `tenant_id` names) read
    in the same query, its columns appended last (`INTERNAL_WIDTH` of them), which `internal_from` turns
    into the row: for a statement of another domain (a card authorization reads its sources with the card)."""
    return repository.with_internal(stmt, account_id=account_id, tenant_id=tenant_id)


def internal_from(values: Sequence[Any]) -> InternalAccountRow | None:
    """The internal account `with_internal`'s columns hold (a row for reading); None when there is none."""
    return repository.internal_from(values)


INTERNAL_WIDTH = repository.INTERNAL_WIDTH


async def read_internal(session: LeanSession, *, tenant_id: str, account_id: str) -> InternalAccountRow:
    """`get_internal` for reading only (the card authorization path): the row is a snapshot, a change to it
    is not saved; 404 when missing."""
    row = await repository.read_internal(session, tenant_id=tenant_id, account_id=account_id)
    if row is None:
        raise InternalAccountNotFound(account_id)
    return row


def prefetch_internal_with_external(
    session: LeanSession, *, tenant_id: str, internal_id: str, external_id: str
) -> None:
    """Read `get_internal_with_external`'s accounts with the transaction's next read, for when it asks."""
    repository.prefetch_internal_with_external(
        session, tenant_id=tenant_id, internal_id=internal_id, external_id=external_id
    )


async def get_internal_with_external(
    session: LeanSession, *, tenant_id: str, internal_id: str, external_id: str
) -> tuple[InternalAccountRow, ExternalAccountRow | None, Any]:
    """A transfer's two accounts and the internal account's owner in one read: the internal account (404
    when missing), the tenant's live external account if there is one with that id, and the owner as the
    customers domain reads it (`customers_service.with_owner`; None for a platform account), for
    `customers_service.check_can_move_money`. The three are rows for reading: a change to them is not saved."""
    internal, external, owner = await repository.internal_with_external(
        session, tenant_id=tenant_id, internal_id=internal_id, external_id=external_id
    )
    if internal is None:
        raise InternalAccountNotFound(internal_id)
    return internal, external, owner


async def customer_account_in(
    session: AsyncSession, *, tenant_id: str, customer_id: str, currency: str, account_type: str
) -> InternalAccountRow | None:
    """The customer's internal account of `account_type` in `currency` (one per customer, currency and
    type), if it has one."""
    stmt = repository.internal_query(
        tenant_id=tenant_id,
        platform=False,
        customer_id=customer_id,
        currency=currency,
        account_type=account_type,
    )
    rows = await repository.all_of(session, stmt)
    return rows[0] if rows else None


async def holding_account_in(
    session: AsyncSession, *, tenant_id: str, customer_id: str, currency: str
) -> InternalAccountRow | None:
    """The customer's platform-managed holding account in `currency` (INTERNAL_FIAT / INTERNAL_CRYPTO, never
    the embedded wallet): where money arriving from outside for "the customer in `currency`" lands."""
    return await customer_account_in(
        session,
        tenant_id=tenant_id,
        customer_id=customer_id,
        currency=currency,
        account_type=holding_type_for(currency),
    )


async def set_private_enabled(
    session: AsyncSession, *, tenant_id: str, account_id: str, private_enabled: bool, now: datetime
) -> InternalAccount:
    """Wallet privacy of an EMBEDDED_WALLET account (the wallets domain authorizes it); the account as GET
    returns it."""
    row = await get_internal(session, tenant_id=tenant_id, account_id=account_id, for_update=True)
    row.private_enabled = private_enabled
    row.updated_at = now
    await session.flush()
    [account] = await render(session, [row])
    return account


def internal_account_ids_of(*, tenant_id: str, customer_id: str | None) -> Select[Any]:
    """A subquery of the ids of one owner's internal accounts (customer_id None: the platform's own), for a
    lower domain's read to filter by owner in its own statement (`ledger.service.list_accounts_with_balances`,
    `balances_by_currency`)."""
    return repository.internal_ids_of(tenant_id=tenant_id, customer_id=customer_id)


async def owners_of(
    session: AsyncSession, *, tenant_id: str, account_ids: list[str]
) -> dict[str, str | None]:
    """Who owns each of these internal accounts: its customer's id, or None for the platform's (ids that are
    not the tenant's internal accounts are left out). One statement, however many ids."""
    return await repository.owners_of(session, tenant_id=tenant_id, account_ids=account_ids)
