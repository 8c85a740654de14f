"""The ledger: the only code that writes postings and balances.

Invariants, enforced here and checked again by `verify`:
1. An entry has at least two postings, and its postings sum to zero in every currency.
2. Postings are append-only; a correction is a new (reversing) entry.
3. A stored bucket (available, held) always equals the sum of the postings to it.
4. Internal accounts never go below zero in either bucket: the balance change is a conditional UPDATE
   that refuses instead (`InsufficientFunds`), so concurrent debits can never overdraw — on PostgreSQL
   the row lock re-checks the condition on the latest version; SQLite has one writer.
5. Accounts are updated in id order, so two entries touching the same accounts cannot deadlock.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import Enum
from typing import Any

from sqlalchemy import Select, event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Session, SessionTransaction
from sqlalchemy.sql.elements import ColumnElement

from platpay.db.database import COMMIT_HOOKS
from platpay.db.unit_of_work import LeanSession, Raced
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.kit.pagination import PageParams, PageResult, paginate
from platpay.ledger import repository
from platpay.ledger.errors import (
    HoldExhausted,
    InsufficientFunds,
    LedgerAccountMismatch,
    LedgerAccountNotFound,
    UnbalancedEntry,
)
from platpay.ledger.models import JournalEntryRow
from platpay.ledger.state import Bucket, HoldStatus, LedgerAccountKind
from platpay.ledger.types import AccountWithBalance, CurrencyTotals, EntryPosting, JournalEntry, MoneyFlow

INTERNAL = LedgerAccountKind.INTERNAL
AVAILABLE, HELD = Bucket.AVAILABLE, Bucket.HELD
# System account kinds: the outside world (clearing per rail), FX trading per currency, fee revenue,
# and the sandbox's source of simulated deposits. They may go negative.
CLEARING, FX, FEES, SANDBOX_FUNDING = (
    LedgerAccountKind.CLEARING,
    LedgerAccountKind.FX,
    LedgerAccountKind.FEES,
    LedgerAccountKind.SANDBOX_FUNDING,
)
# Platform fees in flight: what a payment's platform fee (PlatformConfig.feeConfigs) took from the sender
# at execution, until the payment completes and it moves to the platform's own internal account (or the
# payment fails and it goes back with the refund). May go negative like the other system accounts.
PLATFORM_FEES = LedgerAccountKind.PLATFORM_FEES
# The operator's losses: what it paid out that no customer's money covered (a card clearing whose post-hoc
# pull failed). May go negative like the other system accounts.
LOSS = LedgerAccountKind.LOSS


@dataclass(frozen=True, slots=True)
class Balance:
    available: int  # minor units
    held: int  # minor units

    @property
    def total(self) -> int:
        return self.available + self.held


@dataclass(frozen=True, slots=True)
class Leg:
    """One posting: `amount` minor units of `currency` into (+) or out of (−) a bucket of an account."""

    account_id: str
    currency: str
    amount: int
    bucket: str = AVAILABLE

    def __post_init__(self) -> None:
        if not isinstance(self.amount, int) or isinstance(self.amount, bool) or self.amount == 0:
            raise UnbalancedEntry(f"a posting amount is a non-zero int of minor units, got {self.amount!r}")
        if self.bucket not in (AVAILABLE, HELD):
            raise UnbalancedEntry(f"unknown bucket {self.bucket!r}")


async def open_internal_accounts(
    session: AsyncSession, *, tenant_id: str, accounts: list[tuple[str, str]]
) -> None:
    """Ledger accounts (zero balances, never negative) backing internal accounts: (id, currency) pairs."""
    now = clock.now()
    await repository.insert_accounts(
        session,
        [
            {
                "id": account_id,
                "tenant_id": tenant_id,
                "currency": currency,
                "kind": INTERNAL,
                "code": f"internal:{account_id}",
                "allow_negative": False,
                "available": 0,
                "held": 0,
                "created_at": now,
                "updated_at": now,
            }
            for account_id, currency in accounts
        ],
    )


_system_ids: dict[tuple[str, str], str] = {}  # (tenant, code) -> id; ids never change once created


async def system_account(
    session: LeanSession, *, tenant_id: str, kind: str, currency: str, qualifier: str = ""
) -> str:
    """The id of a tenant's system account (created on first use), e.g. CLEARING for ACH in USD. Known to
    the process once read; a lean transaction cannot read or create it (`Raced`: its careful attempt does)."""
    code = ":".join(part for part in (kind.lower(), qualifier, currency) if part)
    cached = _system_ids.get((tenant_id, code))
    if cached is not None:
        return cached
    if not isinstance(session, AsyncSession):
        raise Raced(f"system account {code} of tenant {tenant_id} is not known to this process yet")
    account_id = await repository.account_id_by_code(session, tenant_id=tenant_id, code=code)
    if account_id is None:
        now = clock.now()
        row = {
            "id": new_id("LedgerAccount"),
            "tenant_id": tenant_id,
            "currency": currency,
            "kind": kind,
            "code": code,
            "allow_negative": True,
            "available": 0,
            "held": 0,
            "created_at": now,
            "updated_at": now,
        }
        if session.bind is not None and session.bind.dialect.name == "postgresql":
            # In its own short committed transaction: created inside the business transaction, two
            # payments each creating one of two new system accounts would wait on each other's
            # uncommitted row (a deadlock). SQLite has a single writer, so it can create inline.
            await repository.create_account_committed(session.bind, row)
        else:
            await repository.insert_accounts(session, [row])
        account_id = await repository.account_id_by_code(session, tenant_id=tenant_id, code=code)
    assert account_id is not None
    # Cache only what is committed-to-exist: an id read in a transaction that rolls back could name a row
    # that was never committed, so the cache is filled on the next read instead if this one fails. The same
    # goes for a SAVEPOINT rolled back inside a transaction that commits (the idempotency wrapper stores a
    # refused request's 400 that way): the id is remembered with the savepoints it was read in.
    session.info.setdefault(_NEW_SYSTEM_IDS, []).append(((tenant_id, code), account_id, _savepoints(session)))
    return account_id


_NEW_SYSTEM_IDS = "platpay_ledger_new_system_ids"


def _savepoints(session: AsyncSession) -> tuple[SessionTransaction, ...]:
    """The savepoints open in `session`, innermost first."""
    open_ = []
    transaction = session.sync_session.get_nested_transaction()
    while transaction is not None and transaction.nested:
        open_.append(transaction)
        transaction = transaction.parent
    return tuple(open_)


@event.listens_for(Session, "after_soft_rollback")
def _forget_rolled_back_system_accounts(session: Session, previous_transaction: SessionTransaction) -> None:
    """A savepoint rolled back: ids read inside it may name rows that no longer exist."""
    staged = session.info.get(_NEW_SYSTEM_IDS)
    if staged:
        session.info[_NEW_SYSTEM_IDS] = [item for item in staged if previous_transaction not in item[2]]


def _remember_committed_system_accounts(session: LeanSession) -> None:
    """After-commit hook: system account ids read in a committed transaction (outside any savepoint that
    was rolled back) may be cached."""
    _system_ids.update({key: account_id for key, account_id, _ in session.info.pop(_NEW_SYSTEM_IDS, [])})


COMMIT_HOOKS.append(_remember_committed_system_accounts)


def _check_balanced(legs: list[Leg]) -> None:
    if len(legs) < 2:
        raise UnbalancedEntry("an entry needs at least two postings")
    totals: dict[str, int] = defaultdict(int)
    for leg in legs:
        totals[leg.currency] += leg.amount
    unbalanced = {currency: total for currency, total in totals.items() if total != 0}
    if unbalanced:
        raise UnbalancedEntry(f"postings do not sum to zero per currency: {unbalanced}")


class BalanceOrder(Enum):
    """When an entry moves the balances it touches, relative to its other writes (the entry, its postings, a
    hold's row): the ledger's one statement order knob.

    FIRST (the default): the balances move first, so a refusal (InsufficientFunds) has changed nothing.
    LAST: the other writes go first and the balances move as the last statements: a balance row is a hot row
    (every movement of the account waits on its lock until COMMIT), and taking its lock last keeps it held
    for the fewest round trips. A refusal then leaves the other writes done: the caller's transaction MUST
    be rolled back (a card authorization's lean attempt raises `Raced`: db/unit_of_work.py)."""

    FIRST = "first"
    LAST = "last"


@dataclass(frozen=True, slots=True)
class PendingBalance:
    """An account's balance after a change deferred to the statement that sends the transaction's writes
    (`repository.apply`, deferred): Python never knows it, so a deferred write that stores it (the event
    announcing it) takes it from what the change returns (`filled`)."""

    returned: repository.Returned

    def filled(self, *, available: tuple[str, ...], total: tuple[str, ...]) -> Any:
        """For a deferred write storing this balance as JSON (events' `filled`): the available balance at the
        path `available`, the total at `total`."""
        return repository.balance_filled(self.returned, available=available, total=total)


@dataclass
class Entry:
    id: str
    legs: list[Leg] = field(default_factory=list)
    # of the accounts it moved, after it (pending: known when the transaction's writes are sent)
    balances: dict[str, Balance | PendingBalance] = field(default_factory=dict)


async def post(
    session: LeanSession,
    *,
    tenant_id: str,
    kind: str,
    reference: str | None,
    legs: list[Leg],
    reverses_id: str | None = None,
    order: BalanceOrder = BalanceOrder.FIRST,
) -> Entry:
    """Write one balanced entry and move the balances it touches, or refuse with InsufficientFunds (with
    `BalanceOrder.LAST`, after writing the entry: roll back)."""
    _check_balanced(legs)
    now = clock.now()
    if order is BalanceOrder.LAST:
        entry_id = await _write_entry(
            session, tenant_id=tenant_id, kind=kind, reference=reference, legs=legs, reverses_id=reverses_id,
            now=now,
        )  # fmt: skip
        after = await _apply_legs(session, tenant_id=tenant_id, legs=legs, now=now)
    else:
        after = await _apply_legs(session, tenant_id=tenant_id, legs=legs, now=now)
        entry_id = await _write_entry(
            session, tenant_id=tenant_id, kind=kind, reference=reference, legs=legs, reverses_id=reverses_id,
            now=now,
        )  # fmt: skip
    return Entry(id=entry_id, legs=legs, balances=after)


@dataclass(frozen=True, slots=True)
class EntrySpec:
    """One entry of `post_many`: what `post` takes."""

    kind: str
    reference: str | None
    legs: list[Leg]


async def post_many(
    session: LeanSession, *, tenant_id: str, entries: list[EntrySpec], reported: Collection[str] = ()
) -> list[Entry]:
    """Write several balanced entries of one tenant and move the balances they touch as `post` would,
    one entry after another, but each account once: by the sum of the entries' changes, refused unless
    every entry would have been allowed in turn (the lowest running sum: `repository.apply`'s floors), the
    accounts in id order, after the entries' other writes in a PostgreSQL lean transaction (a batch of a
    tenant's settlements: its clearing account changes once, not once per entry). Each Entry's balances are
    those after it, of the accounts in `reported` (those whose balance the caller announces: in a lean
    transaction each costs a deferred value of its own). A refusal raises `Raced` (the caller rolls back and
    posts them one by one, where the entry that cannot pay says so). The transaction must not move these
    accounts otherwise."""
    for spec in entries:
        _check_balanced(spec.legs)
    now = clock.now()
    per_entry: list[dict[tuple[str, str], tuple[int, int]]] = []
    for spec in entries:
        deltas: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
        for leg in spec.legs:
            deltas[(leg.account_id, leg.currency)][0 if leg.bucket == AVAILABLE else 1] += leg.amount
        per_entry.append({key: (d[0], d[1]) for key, d in deltas.items() if d != [0, 0]})
    totals: dict[tuple[str, str], tuple[int, int]] = {}
    floors: dict[tuple[str, str], tuple[int, int]] = {}
    for deltas_of_entry in per_entry:
        for key, (d_available, d_held) in deltas_of_entry.items():
            available, held = totals.get(key, (0, 0))
            available, held = available + d_available, held + d_held
            totals[key] = (available, held)
            low_available, low_held = floors.get(key, (available, held))
            floors[key] = (min(low_available, available), min(low_held, held))
    finals: dict[tuple[str, str], tuple[int, int] | repository.Returned] = {}
    for key in sorted(totals):
        account_id, currency = key
        applied = await repository.apply(
            session, tenant_id=tenant_id, account_id=account_id, currency=currency, deltas=totals[key],
            floors=floors[key], now=now,
        )  # fmt: skip
        if applied is None:
            raise Raced(f"the entries' changes of account {account_id} are refused together: one by one")
        finals[key] = applied
    # each entry's balance-after: the final one less the changes of the entries after it
    later = dict(totals)
    posted = []
    for spec, deltas_of_entry in zip(entries, per_entry, strict=True):
        balances: dict[str, Balance | PendingBalance] = {}
        for key, (d_available, d_held) in deltas_of_entry.items():
            available, held = later[key]
            later[key] = (available - d_available, held - d_held)
            rest = later[key]
            if key[0] not in reported:
                continue
            final = finals[key]
            if isinstance(final, tuple):
                balances[key[0]] = Balance(final[0] - rest[0], final[1] - rest[1])
            elif rest == (0, 0):
                balances[key[0]] = PendingBalance(final)
            else:
                balances[key[0]] = PendingBalance(await repository.less_later(session, final, rest))
        entry_id = await _write_entry(
            session, tenant_id=tenant_id, kind=spec.kind, reference=spec.reference, legs=spec.legs,
            reverses_id=None, now=now,
        )  # fmt: skip
        posted.append(Entry(id=entry_id, legs=spec.legs, balances=balances))
    return posted


def with_balance(stmt: Select[Any], *, account_id: ColumnElement[Any]) -> Select[Any]:
    """`stmt` with the balance of the ledger account its column `account_id` names read in the same query,
    as its last two columns, which `balance_from` turns into the Balance: for a statement of another domain
    (a card authorization reads its sources' balances with the card)."""
    return repository.with_balance(stmt, account_id=account_id)


def balance_from(values: Sequence[Any]) -> Balance | None:
    """The Balance `with_balance`'s two columns hold; None when there is no such account."""
    available, held = values
    return None if available is None else Balance(available, held)


async def _apply_legs(
    session: LeanSession, *, tenant_id: str, legs: list[Leg], now: datetime
) -> dict[str, Balance | PendingBalance]:
    """Move the balances the legs touch (one conditional UPDATE per account, in id order so concurrent
    entries lock in one order); InsufficientFunds at the first account that cannot pay."""
    deltas: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for leg in legs:
        delta = deltas[(leg.account_id, leg.currency)]
        delta[0 if leg.bucket == AVAILABLE else 1] += leg.amount
    after: dict[str, Balance | PendingBalance] = {}
    # Each balance change is deferred where it can be (PostgreSQL's lean transactions): it then costs no round
    # trip of its own and locks the row only while the transaction's writes run, the rows in id order (the
    # statement takes its conditions' locks in the order they were made). One that cannot (an ORM session,
    # SQLite, a row this transaction already changes) runs now: the deferred ones before it go first.
    moving = [item for item in sorted(deltas.items()) if item[1] != [0, 0]]
    for (account_id, currency), (d_available, d_held) in moving:
        applied = await repository.apply(
            session, tenant_id=tenant_id, account_id=account_id, currency=currency,
            deltas=(d_available, d_held), now=now,
        )  # fmt: skip
        if applied is None:
            await _explain_refusal(
                session, tenant_id=tenant_id, account_id=account_id, currency=currency, needed=-d_available
            )
        elif isinstance(applied, tuple):
            after[account_id] = Balance(*applied)
        else:
            after[account_id] = PendingBalance(applied)
    return after


async def _write_entry(
    session: LeanSession,
    *,
    tenant_id: str,
    kind: str,
    reference: str | None,
    legs: list[Leg],
    reverses_id: str | None,
    now: datetime,
) -> str:
    entry_id = new_id("JournalEntry")
    await repository.insert_entry(
        session,
        {
            "id": entry_id,
            "tenant_id": tenant_id,
            "kind": kind,
            "reference": reference,
            "reverses_id": reverses_id,
            "created_at": now,
        },
        [
            {
                "id": new_id("Posting"),
                "entry_id": entry_id,
                "account_id": leg.account_id,
                "tenant_id": tenant_id,
                "currency": leg.currency,
                "bucket": leg.bucket,
                "amount": leg.amount,
                "created_at": now,
            }
            for leg in legs
        ],
    )
    return entry_id


async def _explain_refusal(
    session: LeanSession, *, tenant_id: str, account_id: str, currency: str, needed: int
) -> None:
    account = await repository.get_account(session, tenant_id=tenant_id, account_id=account_id)
    if account is None or account.currency != currency:
        raise LedgerAccountMismatch(f"no {currency} ledger account {account_id} in tenant {tenant_id}")
    raise InsufficientFunds(
        f"insufficient funds: account {account_id} has {account.available} {currency} available "
        f"(minor units), {needed} needed",
        details={
            "accountId": account_id,
            "available": account.available,
            "required": needed,
            "currency": currency,
        },
    )


async def reverse(
    session: AsyncSession, *, tenant_id: str, entry_id: str, kind: str, reference: str | None
) -> Entry:
    """The correction of an entry: the same postings with opposite signs, pointing back at it."""
    original = await repository.postings_of(session, [entry_id])
    legs = [Leg(p.account_id, p.currency, -p.amount, p.bucket) for p in original]
    return await post(
        session, tenant_id=tenant_id, kind=kind, reference=reference, legs=legs, reverses_id=entry_id
    )


@dataclass(frozen=True, slots=True)
class Hold:
    """Money reserved on an account for one business object (`reference`); see models.LedgerHoldRow."""

    id: str
    account_id: str
    currency: str
    amount: int  # minor units placed
    remaining: int  # minor units still held
    status: str  # OPEN | CLOSED
    reference: str


async def place_hold(
    session: LeanSession,
    *,
    tenant_id: str,
    account_id: str,
    currency: str,
    amount: int,
    reference: str,
    kind: str = "HOLD",
    order: BalanceOrder = BalanceOrder.FIRST,
) -> tuple[Hold, Entry]:
    """Reserve `amount` of an account's available money for `reference` (available ↓, total unchanged):
    a balanced entry moving it from AVAILABLE to HELD and the hold that owns it, or InsufficientFunds (the
    conditional UPDATE refuses, so concurrent holds can never overdraw). One hold per reference. `order`:
    see BalanceOrder (LAST: the entry and the hold are written before the balance moves, and a refusal
    leaves them written: roll back)."""
    now = clock.now()
    hold = Hold(new_id("Hold"), account_id, currency, amount, amount, HoldStatus.OPEN, reference)
    row = {
        "id": hold.id,
        "tenant_id": tenant_id,
        "account_id": account_id,
        "currency": currency,
        "amount": amount,
        "remaining": amount,
        "status": HoldStatus.OPEN,
        "reference": reference,
        "created_at": now,
        "updated_at": now,
    }
    legs = [Leg(account_id, currency, -amount, AVAILABLE), Leg(account_id, currency, amount, HELD)]
    if order is BalanceOrder.LAST:
        await repository.insert_hold(session, row)
    entry = await post(session, tenant_id=tenant_id, kind=kind, reference=reference, legs=legs, order=order)
    if order is BalanceOrder.FIRST:
        await repository.insert_hold(session, row)
    return hold, entry


async def hold_of(session: AsyncSession, *, tenant_id: str, reference: str) -> Hold | None:
    row = await repository.get_hold(session, tenant_id=tenant_id, reference=reference)
    if row is None:
        return None
    return Hold(row.id, row.account_id, row.currency, row.amount, row.remaining, row.status, row.reference)


async def _take(session: AsyncSession, *, tenant_id: str, reference: str, amount: int) -> tuple[str, str]:
    taken = await repository.take_from_hold(
        session, tenant_id=tenant_id, reference=reference, amount=amount, now=clock.now()
    )
    if taken is None:
        raise HoldExhausted(f"the hold of {reference} is closed or holds less than {amount} (minor units)")
    return taken[1], taken[2]


async def capture_hold(
    session: AsyncSession, *, tenant_id: str, reference: str, amount: int, to_account_id: str, kind: str
) -> Entry:
    """Pay `amount` of the hold out to `to_account_id` (a system account: the card network's clearing):
    HELD ↓ on the held account, total ↓. HoldExhausted when the hold is closed or holds less."""
    account_id, currency = await _take(session, tenant_id=tenant_id, reference=reference, amount=amount)
    return await post(
        session,
        tenant_id=tenant_id,
        kind=kind,
        reference=reference,
        legs=[Leg(account_id, currency, -amount, HELD), Leg(to_account_id, currency, amount)],
    )


async def release_hold(
    session: AsyncSession, *, tenant_id: str, reference: str, kind: str, amount: int | None = None
) -> Entry | None:
    """Give back whatever the hold still reserves (HELD → AVAILABLE) and close it, or only `amount` of it
    (it stays open while anything remains); None when nothing remained (already captured or released:
    releasing twice moves nothing)."""
    hold = await hold_of(session, tenant_id=tenant_id, reference=reference)
    if hold is None or hold.status != HoldStatus.OPEN or hold.remaining == 0:
        return None
    released = hold.remaining if amount is None else min(amount, hold.remaining)
    if released <= 0:
        return None
    account_id, currency = await _take(session, tenant_id=tenant_id, reference=reference, amount=released)
    return await post(
        session,
        tenant_id=tenant_id,
        kind=kind,
        reference=reference,
        legs=[Leg(account_id, currency, -released, HELD), Leg(account_id, currency, released, AVAILABLE)],
    )


async def grow_hold(
    session: AsyncSession, *, tenant_id: str, reference: str, amount: int, kind: str
) -> Entry:
    """Reserve `amount` more for the hold of `reference`, on its account (available ↓, held ↑), or refuse
    with InsufficientFunds, having changed nothing (the same conditional UPDATE as every debit). A hold taken
    to 0 (captured or released) opens again. HoldExhausted when `reference` has no hold."""
    hold = await hold_of(session, tenant_id=tenant_id, reference=reference)
    if hold is None:
        raise HoldExhausted(f"{reference} has no hold to grow")
    entry = await post(
        session,
        tenant_id=tenant_id,
        kind=kind,
        reference=reference,
        legs=[
            Leg(hold.account_id, hold.currency, -amount, AVAILABLE),
            Leg(hold.account_id, hold.currency, amount, HELD),
        ],
    )
    await repository.grow_hold(
        session, tenant_id=tenant_id, reference=reference, amount=amount, now=clock.now()
    )
    return entry


async def balances(session: LeanSession, account_ids: list[str]) -> dict[str, Balance]:
    found = await repository.balances(session, account_ids)
    return {account_id: Balance(*found.get(account_id, (0, 0))) for account_id in account_ids}


async def entries_for(session: AsyncSession, *, tenant_id: str, reference: str) -> list[dict[str, Any]]:
    """The entries recorded for a business object, with their postings (for audits and tests)."""
    entries = await repository.entries_for(session, tenant_id=tenant_id, reference=reference)
    postings = await repository.postings_of(session, [e.id for e in entries])
    return [
        {
            "id": e.id,
            "kind": e.kind,
            "reversesId": e.reverses_id,
            "postings": [
                {"accountId": p.account_id, "currency": p.currency, "bucket": p.bucket, "amount": p.amount}
                for p in postings
                if p.entry_id == e.id
            ],
        }
        for e in entries
    ]


@dataclass(frozen=True, slots=True)
class AccountEntry:
    """One journal entry as one account saw it: what it did to the account's buckets (minor units, signed:
    + money in) and the buckets once it and every earlier entry (in id order) are counted."""

    id: str
    kind: str
    reference: str | None
    created_at: datetime
    available_change: int
    held_change: int
    available_after: int
    held_after: int

    @property
    def total_change(self) -> int:
        return self.available_change + self.held_change

    @property
    def total_after(self) -> int:
        return self.available_after + self.held_after


async def account_entries(
    session: AsyncSession,
    *,
    tenant_id: str,
    account_id: str,
    params: PageParams,
    kinds: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> PageResult[AccountEntry]:
    """A page of the entries that moved an account, newest first (an account's statement).

    The running balances are exact sums of postings: the page's newest entry's comes from the account's
    stored buckets less the postings of later entries (one statement), each older one from the next newer
    one less that entry's change and the changes of entries the filters left out in between. So every
    `after` is what the account held once the entries up to it in id order were applied."""
    query = repository.account_entries_query(
        tenant_id=tenant_id, account_id=account_id, kinds=kinds, start=start, end=end
    )
    page = await paginate(session, query, id_column=JournalEntryRow.id, params=params)
    if not page.items:
        return PageResult([], page.has_more, page.next_cursor, page.total_count)
    ids = [row.id for row in page.items]
    newest, oldest = max(ids), min(ids)
    available, held = await repository.balance_after(session, account_id=account_id, entry_id=newest)
    changes = await repository.account_changes(
        session, account_id=account_id, first_id=oldest, last_id=newest
    )
    after: dict[str, tuple[int, int]] = {}
    for entry_id in sorted(changes, reverse=True):  # back in time from the newest
        after[entry_id] = (available, held)
        available, held = available - changes[entry_id][0], held - changes[entry_id][1]
    items = [
        AccountEntry(row.id, row.kind, row.reference, row.created_at, *changes[row.id], *after[row.id])
        for row in page.items
    ]
    return PageResult(items, page.has_more, page.next_cursor, page.total_count)


@dataclass
class VerifyReport:
    counts: dict[str, int]
    balance_mismatches: list[dict[str, Any]]
    unbalanced_entries: list[dict[str, Any]]
    thin_entries: list[str]
    nonzero_trial_balances: list[dict[str, Any]]
    negative_accounts: list[dict[str, Any]]
    foreign_postings: list[dict[str, Any]]
    trial_balances: list[dict[str, Any]]
    hold_mismatches: list[dict[str, Any]] = field(default_factory=list)
    held_below_holds: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.balance_mismatches
            or self.unbalanced_entries
            or self.thin_entries
            or self.nonzero_trial_balances
            or self.negative_accounts
            or self.foreign_postings
            or self.hold_mismatches
            or self.held_below_holds
        )

    def lines(self) -> list[str]:
        c = self.counts
        out = [f"ledger: {c['accounts']} accounts, {c['entries']} entries, {c['postings']} postings"]
        problems = [
            ("stored balance differs from its postings", self.balance_mismatches),
            ("entry does not sum to zero in a currency", self.unbalanced_entries),
            ("entry with fewer than two postings", [{"entryId": e} for e in self.thin_entries]),
            ("trial balance is not zero", self.nonzero_trial_balances),
            ("non-negative account below zero", self.negative_accounts),
            ("posting in another currency or tenant than its account", self.foreign_postings),
            ("hold's remaining differs from its HELD postings", self.hold_mismatches),
            ("held bucket below the account's open holds", self.held_below_holds),
        ]
        for title, items in problems:
            for item in items[:50]:
                out.append(f"MISMATCH {title}: {item}")
            if len(items) > 50:
                out.append(f"MISMATCH {title}: … {len(items) - 50} more")
        out.append(
            "OK: every balance equals its postings and every trial balance is zero" if self.ok else "FAILED"
        )
        return out


async def verify(session: AsyncSession, *, tenant_id: str | None = None) -> VerifyReport:
    """Recompute every balance from postings and check every invariant, across all tenants; with `tenant_id`,
    over that tenant's accounts, entries, postings and holds only (the console's check: a tenant sees no
    other tenant's rows)."""
    t = tenant_id
    trial = [
        {"tenantId": r.tenant_id, "currency": r.currency, "total": int(r.total or 0), "accounts": r.accounts}
        for r in await repository.trial_balances(session, t)
    ]
    return VerifyReport(
        counts=await repository.counts(session, t),
        balance_mismatches=[
            {
                "accountId": r.id,
                "currency": r.currency,
                "stored": {"available": r.available, "held": r.held},
                "posted": {"available": int(r.posted_available), "held": int(r.posted_held)},
            }
            for r in await repository.stored_vs_posted(session, t)
        ],
        unbalanced_entries=[
            {"entryId": r.entry_id, "currency": r.currency, "sum": int(r.total)}
            for r in await repository.unbalanced_entries(session, t)
        ],
        thin_entries=[r.id for r in await repository.thin_entries(session, t)],
        nonzero_trial_balances=[x for x in trial if x["total"] != 0],
        negative_accounts=[
            {"accountId": r.id, "available": r.available, "held": r.held}
            for r in await repository.negative_accounts(session, t)
        ],
        foreign_postings=[
            {"postingId": r.id, "accountId": r.account_id}
            for r in await repository.foreign_postings(session, t)
        ],
        trial_balances=trial,
        hold_mismatches=[
            {"holdId": r.id, "remaining": r.remaining, "status": r.status, "posted": int(r.posted)}
            for r in await repository.hold_mismatches(session, t)
        ],
        held_below_holds=[
            {"accountId": r.id, "held": r.held, "openHolds": int(r.reserved)}
            for r in await repository.held_below_open_holds(session, t)
        ],
    )


async def clear_tenant(session: AsyncSession, *, tenant_id: str) -> dict[str, int]:
    """A sandbox reset's part in the ledger: the tenant's postings and entries gone, its internal accounts'
    ledger accounts gone (their internal accounts go with them), its system accounts back at zero (kept:
    every process caches their ids). Rows deleted by table."""
    return await repository.clear_tenant(session, tenant_id=tenant_id, now=clock.now())


# The console's reads (platpay/console calls them): each runs a fixed number of statements, whatever the
# number of rows it returns.


async def entries_for_transaction(
    session: AsyncSession, *, tenant_id: str, transaction_id: str
) -> list[JournalEntry]:
    """The journal entries a transaction caused (every entry's `reference` names its business object: the
    transaction's id), oldest first, each with its postings and the kind and code of the account each hit.
    One statement. The owner of an INTERNAL account is the accounts domain's to say
    (`accounts.service.owners_of`)."""
    rows = await repository.postings_with_accounts(session, tenant_id=tenant_id, reference=transaction_id)
    entries: dict[str, tuple[JournalEntryRow, list[EntryPosting]]] = {}
    for entry, posting, account in rows:
        entries.setdefault(entry.id, (entry, []))[1].append(
            EntryPosting(
                id=posting.id,
                account_id=account.id,
                account_kind=account.kind,
                account_code=account.code,
                currency=posting.currency,
                bucket=posting.bucket,
                amount=posting.amount,
            )
        )
    return [
        JournalEntry(e.id, e.kind, e.reference, e.reverses_id, e.created_at, tuple(postings))
        for e, postings in entries.values()
    ]


async def account_statement(
    session: AsyncSession, *, tenant_id: str, ledger_account_id: str, params: PageParams
) -> PageResult[AccountEntry]:
    """One account's statement, newest first, each line with the balances after it: `account_entries`
    (which already existed: a line is an entry as the account saw it, its AVAILABLE and HELD postings
    together), under the console's name. Four statements a page (count, page, balance, changes)."""
    return await account_entries(session, tenant_id=tenant_id, account_id=ledger_account_id, params=params)


async def list_accounts_with_balances(
    session: AsyncSession,
    *,
    tenant_id: str,
    params: PageParams,
    kind: str | None = None,
    account_ids: Select[Any] | None = None,
) -> PageResult[AccountWithBalance]:
    """A page of the tenant's ledger accounts (by id, in `params`' direction) with their available and held
    balances and their count of OPEN holds; one statement, no total. `account_ids` narrows them to the ids a
    subquery selects: an owner's, built by the domain that knows owners
    (`accounts.service.internal_account_ids_of(tenant_id=…, customer_id=…)`)."""
    stmt = repository.accounts_with_holds_query(tenant_id=tenant_id, kind=kind, account_ids=account_ids)
    rows = await repository.page_of_accounts(
        session, stmt, after_id=params.after_id, descending=params.descending, limit=params.limit + 1
    )
    has_more = len(rows) > params.limit
    rows = rows[: params.limit]
    items = [
        AccountWithBalance(
            row.id, row.kind, row.code, row.currency, row.available, row.held, open_holds, row.created_at
        )
        for row, open_holds in rows
    ]
    cursor = params.next_cursor(items[-1].id) if has_more else None
    return PageResult(items, has_more, cursor, None)


async def balances_by_currency(
    session: AsyncSession, *, tenant_id: str, platform_accounts: Select[Any] | None = None
) -> list[CurrencyTotals]:
    """Per currency, the money on the tenant's INTERNAL accounts, the platform's own apart from its
    customers'; one statement. Which internal accounts are the platform's is the accounts domain's to say:
    `platform_accounts` selects their ids (`accounts.service.internal_account_ids_of(tenant_id=…,
    customer_id=None)`); without it every internal account counts as a customer's."""
    totals: dict[str, list[int]] = {}
    for currency, is_platform, available, held in await repository.internal_totals(
        session, tenant_id=tenant_id, platform_accounts=platform_accounts
    ):
        sums = totals.setdefault(currency, [0, 0, 0, 0])
        offset = 0 if is_platform else 2
        sums[offset] += available
        sums[offset + 1] += held
    return [CurrencyTotals(currency, *sums) for currency, sums in sorted(totals.items())]


async def money_flow(
    session: AsyncSession, *, tenant_id: str, since: datetime, bucket: str = "day"
) -> list[MoneyFlow]:
    """Per period (UTC `day` or `month`) and currency since `since`, the money that entered and left the
    tenant's ledger; one statement.

    Definition: the world outside platpay is represented by the outside accounts (CLEARING per rail, and
    SANDBOX_FUNDING, the sandbox's source of simulated deposits). Money in is what those accounts gave to the
    ledger (the sum of their negative postings, negated): deposits, transfers in, incoming payments. Money
    out is what they took from it (the sum of their positive postings): transfers out, payouts, card
    captures to the rail. Moves between accounts inside platpay (customer to customer, to fees, through FX)
    are neither. A reversal counts in the other direction on its own day (a failed payout's money coming
    back is money in), so a period's net (in - out) is exactly the change of what the ledger holds from the
    outside world's point of view."""
    if bucket not in ("day", "month"):
        raise ValueError(f"bucket is 'day' or 'month', not {bucket!r}")
    return [
        MoneyFlow(
            date.fromisoformat(period if bucket == "day" else f"{period}-01"), currency, money_in, money_out
        )
        for period, currency, money_in, money_out in await repository.outside_flows(
            session, tenant_id=tenant_id, since=since, bucket=bucket
        )
    ]


async def account_with_balance(
    session: AsyncSession, *, tenant_id: str, ledger_account_id: str
) -> AccountWithBalance:
    """One of the tenant's ledger accounts with its balances and count of OPEN holds; LedgerAccountNotFound
    for an unknown id or another tenant's (one answer). One statement."""
    found = await repository.account_with_holds(session, tenant_id=tenant_id, account_id=ledger_account_id)
    if found is None:
        raise LedgerAccountNotFound(ledger_account_id)
    row, open_holds = found
    return AccountWithBalance(
        row.id, row.kind, row.code, row.currency, row.available, row.held, open_holds, row.created_at
    )
