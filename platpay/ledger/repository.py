"""All SQL on ledger tables. Balance changes are conditional updates: the WHERE clause refuses to take a
non-negative account below zero, which works the same on SQLite and PostgreSQL (no SELECT … FOR UPDATE)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Select, and_, bindparam, case, delete, func, or_, select, update
from sqlalchemy import false as sa_false
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.elements import ColumnElement

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.portable import insert_ignore_many, lean_in, only_if
from platpay.db.unit_of_work import LeanSession
from platpay.ledger.models import JournalEntryRow, LedgerAccountRow, LedgerHoldRow, PostingRow
from platpay.ledger.state import Bucket, HoldStatus

if TYPE_CHECKING:
    from sqlalchemy import CursorResult


_ACCOUNTS = LedgerAccountRow.__table__

# One statement for every balance change, cached once: add to both buckets unless that would take a
# non-negative account (allow_negative false) below zero in either bucket; the new buckets come back. The
# check is on `floor_*`: the change itself for one entry's; for several entries' changes applied as one
# (`apply`'s `floors`), the lowest running sum of them, so it allows exactly what applying them one after
# another would.
_APPLY = Lean(
    update(_ACCOUNTS)
    .where(
        _ACCOUNTS.c.id == bindparam("account_id"),
        _ACCOUNTS.c.tenant_id == bindparam("tenant"),
        _ACCOUNTS.c.currency == bindparam("ccy"),
        or_(
            _ACCOUNTS.c.allow_negative,
            and_(
                _ACCOUNTS.c.available + bindparam("floor_available", type_=_ACCOUNTS.c.available.type) >= 0,
                _ACCOUNTS.c.held + bindparam("floor_held", type_=_ACCOUNTS.c.held.type) >= 0,
            ),
        ),
    )
    .values(
        available=_ACCOUNTS.c.available + bindparam("d_available"),
        held=_ACCOUNTS.c.held + bindparam("d_held"),
        updated_at=bindparam("now"),
    )
    .returning(_ACCOUNTS.c.available, _ACCOUNTS.c.held)
)
# What a deferred _APPLY returns (db/lean.py, `defer_returning`), for a deferred write of the same statement
# to read: the balance after the change.
Returned = lean.Returned
_AFTER = lean.Returned.stand_in(_APPLY)
AVAILABLE_AFTER = _AFTER.c.available
TOTAL_AFTER = _AFTER.c.available + _AFTER.c.held


# One entry's balance-after among several applied together: what the UPDATE returned less the changes of the
# entries after it (a value of its own in the deferred statement, read as an UPDATE's RETURNING is read).
_LESS_LATER = Lean(
    select(
        (_AFTER.c.available - bindparam("later_available", type_=_ACCOUNTS.c.available.type)).label(
            "available"
        ),
        (_AFTER.c.held - bindparam("later_held", type_=_ACCOUNTS.c.held.type)).label("held"),
    )
)


def balance_filled(
    returned: lean.Returned, *, available: tuple[str, ...], total: tuple[str, ...]
) -> lean.Filled:
    """What a deferred write storing the balance a deferred `apply` returns fills in: at the JSON
    path `available` the available balance after it, at `total` the total (db/lean.py `Filled`)."""
    return lean.Filled(returned, ((available, AVAILABLE_AFTER), (total, TOTAL_AFTER)))


_INSERT_ENTRY = Lean(JournalEntryRow.__table__.insert())
_INSERT_POSTING = Lean(PostingRow.__table__.insert())


async def insert_accounts(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    await insert_ignore_many(session, _ACCOUNTS, rows)  # any number of rows


async def create_account_committed(engine: Any, row: dict[str, Any]) -> None:
    """Insert a ledger account on a connection of its own and commit at once (PostgreSQL): the same
    statement as `insert_accounts`."""
    async with engine.connect() as connection:
        await insert_ignore_many(connection, _ACCOUNTS, [row])
        await connection.commit()


def with_balance(stmt: Select[Any], *, account_id: ColumnElement[Any]) -> Select[Any]:
    """`stmt` (a Core SELECT) outer-joined to the ledger account its column `account_id` names, with that
    account's (available, held) appended as its last two columns (NULL when there is none)."""
    balance = _ACCOUNTS.alias("balance")
    return stmt.add_columns(balance.c.available, balance.c.held).outerjoin(
        balance, balance.c.id == account_id
    )


_BALANCE = Lean(
    select(_ACCOUNTS.c.available, _ACCOUNTS.c.held).where(_ACCOUNTS.c.id == bindparam("account_id"))
)


_BALANCES = lean_in(
    lambda where: select(_ACCOUNTS.c.id, _ACCOUNTS.c.available, _ACCOUNTS.c.held).where(where),
    _ACCOUNTS.c.id,
    "account_ids",
)


async def balances(session: LeanSession, account_ids: list[str]) -> dict[str, tuple[int, int]]:
    """(available, held) of each account that exists, leanly (a card authorization reads its sources'
    balances in a LeanTransaction)."""
    if not account_ids:
        return {}
    if len(account_ids) == 1:  # the common case (a card's one source, an account's GET)
        [account_id] = account_ids
        found = await lean.first(session, _BALANCE, {"account_id": account_id})
        return {} if found is None else {account_id: (found[0], found[1])}
    rows = await lean.rows(session, _BALANCES, {"account_ids": list(account_ids)})
    return {account_id: (available, held) for account_id, available, held in rows}


async def apply(
    session: LeanSession,
    *,
    tenant_id: str,
    account_id: str,
    currency: str,
    deltas: tuple[int, int],
    now: datetime,
    floors: tuple[int, int] | None = None,
) -> tuple[int, int] | lean.Returned | None:
    """Move one account's buckets by `deltas` (available, held), unless that would take a non-negative
    account below zero (or there is no such account in that currency). `floors`: for the changes of several
    entries applied as one (their sum in `deltas`), the lowest running sums of them, so that what is
    allowed is what applying them one after another would allow.

    Deferred where it can be (a PostgreSQL LeanTransaction, db/lean.py `defer_returning`): a `Returned` for
    later deferred writes to read (AVAILABLE_AFTER, TOTAL_AFTER; `less_later`), and if it refuses, the
    statement that sends the transaction's writes fails (`Raced`: the operation runs again carefully, where
    it refuses at once). Elsewhere (SQLite, an ORM session, the account's balance already changing in that
    statement) now: the new (available, held), or None when refused."""
    params = {
        "account_id": account_id,
        "tenant": tenant_id,
        "ccy": currency,
        "d_available": deltas[0],
        "d_held": deltas[1],
        "floor_available": (floors or deltas)[0],
        "floor_held": (floors or deltas)[1],
        "now": now,
    }
    # (the balance row: locked after what the operation decided by, a card, an agent's usage)
    returned = await lean.defer_returning(session, _APPLY, params, row=account_id, last=True)
    if returned is not None:
        return returned
    found = await lean.first(session, _APPLY, params)
    return None if found is None else (found[0], found[1])


async def less_later(session: LeanSession, returned: lean.Returned, later: tuple[int, int]) -> lean.Returned:
    """What a deferred `apply` returns less the changes `later` (available, held) of the entries
    applied after one: that entry's balance-after, deferred as well."""
    params = {"later_available": later[0], "later_held": later[1]}
    return await lean.derive(session, _LESS_LATER, params, reading=returned)


async def get_account(session: LeanSession, *, tenant_id: str, account_id: str) -> LedgerAccountRow | None:
    """Leanly (a refused card hold explains itself from here, in a LeanTransaction)."""
    account: LedgerAccountRow | None = await lean.get(
        session, LedgerAccountRow, id=account_id, tenant_id=tenant_id
    )
    return account


async def account_id_by_code(session: AsyncSession, *, tenant_id: str, code: str) -> str | None:
    return await session.scalar(
        select(LedgerAccountRow.id).where(
            LedgerAccountRow.tenant_id == tenant_id, LedgerAccountRow.code == code
        )
    )


async def insert_entry(session: LeanSession, entry: dict[str, Any], postings: list[dict[str, Any]]) -> None:
    """Deferred (PostgreSQL: sent with the transaction's next statement, db/lean.py's write buffer)."""
    await lean.defer(session, _INSERT_ENTRY, entry)
    await lean.defer_many(session, _INSERT_POSTING, postings)


async def entries_for(session: AsyncSession, *, tenant_id: str, reference: str) -> list[JournalEntryRow]:
    stmt = (
        select(JournalEntryRow)
        .where(JournalEntryRow.tenant_id == tenant_id, JournalEntryRow.reference == reference)
        .order_by(JournalEntryRow.id)
    )
    return list((await session.scalars(stmt)).all())


async def postings_of(session: AsyncSession, entry_ids: list[str]) -> list[PostingRow]:
    if not entry_ids:
        return []
    stmt = select(PostingRow).where(PostingRow.entry_id.in_(entry_ids)).order_by(PostingRow.id)
    return list((await session.scalars(stmt)).all())


# An account's statement


def account_entries_query(
    *,
    tenant_id: str,
    account_id: str,
    kinds: list[str] | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> Select[Any]:
    """The tenant's journal entries with a posting on the account, filtered (the page runs it)."""
    on_account = select(PostingRow.entry_id).where(
        PostingRow.account_id == account_id, PostingRow.tenant_id == tenant_id
    )
    stmt = select(JournalEntryRow).where(
        JournalEntryRow.tenant_id == tenant_id, JournalEntryRow.id.in_(on_account)
    )
    if kinds:
        stmt = stmt.where(JournalEntryRow.kind.in_(kinds))
    if start is not None:
        stmt = stmt.where(JournalEntryRow.created_at >= start)
    if end is not None:
        stmt = stmt.where(JournalEntryRow.created_at <= end)
    return stmt


async def account_changes(
    session: AsyncSession, *, account_id: str, first_id: str, last_id: str
) -> dict[str, tuple[int, int]]:
    """What each entry with an id in [first_id, last_id] did to the account: (available, held) changes."""
    rows = await session.execute(
        select(PostingRow.entry_id, PostingRow.bucket, func.sum(PostingRow.amount))
        .where(
            PostingRow.account_id == account_id,
            PostingRow.entry_id >= first_id,
            PostingRow.entry_id <= last_id,
        )
        .group_by(PostingRow.entry_id, PostingRow.bucket)
    )
    changes: dict[str, list[int]] = {}
    for entry_id, bucket, amount in rows:
        changes.setdefault(entry_id, [0, 0])[0 if bucket == Bucket.AVAILABLE else 1] += int(amount)
    return {entry_id: (available, held) for entry_id, (available, held) in changes.items()}


async def balance_after(session: AsyncSession, *, account_id: str, entry_id: str) -> tuple[int, int]:
    """The account's (available, held) once every entry up to `entry_id` (in id order) is counted: its
    stored buckets less the postings of later entries, in one statement so that both are read in one
    snapshot (PostgreSQL's READ COMMITTED gives each statement its own)."""

    def later(bucket: str) -> Any:
        return (
            select(func.coalesce(func.sum(PostingRow.amount), 0))
            .where(
                PostingRow.account_id == account_id,
                PostingRow.bucket == bucket,
                PostingRow.entry_id > entry_id,
            )
            .scalar_subquery()
        )

    row = (
        await session.execute(
            select(
                LedgerAccountRow.available - later(Bucket.AVAILABLE),
                LedgerAccountRow.held - later(Bucket.HELD),
            ).where(LedgerAccountRow.id == account_id)
        )
    ).one()
    return int(row[0]), int(row[1])


# Holds


_INSERT_HOLD = Lean(LedgerHoldRow.__table__.insert())


async def insert_hold(session: LeanSession, row: dict[str, Any]) -> None:
    await lean.defer(session, _INSERT_HOLD, row)


async def get_hold(session: AsyncSession, *, tenant_id: str, reference: str) -> LedgerHoldRow | None:
    return (
        await session.execute(
            select(LedgerHoldRow)
            .where(LedgerHoldRow.tenant_id == tenant_id, LedgerHoldRow.reference == reference)
            .execution_options(populate_existing=True)
        )
    ).scalar_one_or_none()


async def take_from_hold(
    session: AsyncSession, *, tenant_id: str, reference: str, amount: int, now: datetime
) -> tuple[str, str, str, int] | None:
    """Take `amount` from an open hold in one conditional statement (never below zero, so two takers can
    never both take the last of it); its (id, account, currency, remaining after), None if refused."""
    table = LedgerHoldRow.__table__
    remaining = table.c.remaining - amount
    stmt = (
        update(table)
        .where(
            table.c.tenant_id == tenant_id,
            table.c.reference == reference,
            table.c.status == HoldStatus.OPEN,
            table.c.remaining >= amount,
        )
        .values(
            remaining=remaining,
            status=case((remaining == 0, HoldStatus.CLOSED), else_=HoldStatus.OPEN),
            updated_at=now,
        )
        .returning(table.c.id, table.c.account_id, table.c.currency, table.c.remaining)
    )
    row = (await session.execute(stmt)).first()
    return (row[0], row[1], row[2], row[3]) if row is not None else None


async def grow_hold(
    session: AsyncSession, *, tenant_id: str, reference: str, amount: int, now: datetime
) -> bool:
    """Add `amount` to a hold (placed and still reserved, reopened if it was taken to 0); whether one was
    there to grow."""
    table = LedgerHoldRow.__table__
    result = await session.execute(
        update(table)
        .where(table.c.tenant_id == tenant_id, table.c.reference == reference)
        .values(
            amount=table.c.amount + amount,
            remaining=table.c.remaining + amount,
            status=HoldStatus.OPEN,
            updated_at=now,
        )
    )
    return bool(cast("CursorResult[Any]", result).rowcount)


# Verification queries (the whole ledger, every tenant; or one tenant's rows with `tenant_id`)


def _of_tenant(stmt: Any, column: Any, tenant_id: str | None) -> Any:
    """`stmt` (a Select of any shape) narrowed to one tenant's rows by `column`, or as it is for None."""
    return stmt if tenant_id is None else stmt.where(column == tenant_id)


async def hold_mismatches(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    """Holds whose `remaining` differs from the HELD postings of their entries on their account, or whose
    status disagrees with it (CLOSED with something left, OPEN with nothing)."""
    per_hold = (
        select(
            LedgerHoldRow.id.label("hold_id"),
            func.coalesce(func.sum(PostingRow.amount), 0).label("posted"),
        )
        .select_from(LedgerHoldRow)
        .outerjoin(
            JournalEntryRow,
            and_(
                JournalEntryRow.tenant_id == LedgerHoldRow.tenant_id,
                JournalEntryRow.reference == LedgerHoldRow.reference,
            ),
        )
        .outerjoin(
            PostingRow,
            and_(
                PostingRow.entry_id == JournalEntryRow.id,
                PostingRow.account_id == LedgerHoldRow.account_id,
                PostingRow.bucket == Bucket.HELD,
            ),
        )
        .group_by(LedgerHoldRow.id)
    )
    posted = _of_tenant(per_hold, LedgerHoldRow.tenant_id, tenant_id).subquery()
    stmt = (
        select(LedgerHoldRow.id, LedgerHoldRow.remaining, LedgerHoldRow.status, posted.c.posted)
        .join(posted, posted.c.hold_id == LedgerHoldRow.id)
        .where(
            or_(
                LedgerHoldRow.remaining != posted.c.posted,
                and_(LedgerHoldRow.status == HoldStatus.CLOSED, LedgerHoldRow.remaining != 0),
                and_(LedgerHoldRow.status == HoldStatus.OPEN, LedgerHoldRow.remaining == 0),
            )
        )
    )
    return list((await session.execute(stmt)).all())


async def held_below_open_holds(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    """Accounts whose HELD bucket is less than what their open holds reserve (total − available must cover
    every open hold; other reservations, such as a transfer-out in flight, come on top)."""
    reserved = (
        select(LedgerHoldRow.account_id, func.sum(LedgerHoldRow.remaining).label("reserved"))
        .where(LedgerHoldRow.status == HoldStatus.OPEN)
        .group_by(LedgerHoldRow.account_id)
        .subquery()
    )
    stmt = (
        select(LedgerAccountRow.id, LedgerAccountRow.held, reserved.c.reserved)
        .join(reserved, reserved.c.account_id == LedgerAccountRow.id)
        .where(LedgerAccountRow.held < reserved.c.reserved)
    )
    stmt = _of_tenant(stmt, LedgerAccountRow.tenant_id, tenant_id)
    return list((await session.execute(stmt)).all())


async def stored_vs_posted(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    """Accounts whose stored buckets differ from the sum of their postings."""
    posted = (
        select(
            PostingRow.account_id.label("account_id"),
            func.coalesce(func.sum(PostingRow.amount).filter(PostingRow.bucket == Bucket.AVAILABLE), 0).label(
                "available"
            ),
            func.coalesce(func.sum(PostingRow.amount).filter(PostingRow.bucket == Bucket.HELD), 0).label(
                "held"
            ),
        )
        .group_by(PostingRow.account_id)
        .subquery()
    )
    stmt = (
        select(
            LedgerAccountRow.id,
            LedgerAccountRow.tenant_id,
            LedgerAccountRow.currency,
            LedgerAccountRow.available,
            LedgerAccountRow.held,
            func.coalesce(posted.c.available, 0).label("posted_available"),
            func.coalesce(posted.c.held, 0).label("posted_held"),
        )
        .outerjoin(posted, posted.c.account_id == LedgerAccountRow.id)
        .where(
            or_(
                LedgerAccountRow.available != func.coalesce(posted.c.available, 0),
                LedgerAccountRow.held != func.coalesce(posted.c.held, 0),
            )
        )
    )
    stmt = _of_tenant(stmt, LedgerAccountRow.tenant_id, tenant_id)
    return list((await session.execute(stmt)).all())


async def unbalanced_entries(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    stmt = _of_tenant(
        select(PostingRow.entry_id, PostingRow.currency, func.sum(PostingRow.amount).label("total")),
        PostingRow.tenant_id,
        tenant_id,
    )
    stmt = stmt.group_by(PostingRow.entry_id, PostingRow.currency).having(func.sum(PostingRow.amount) != 0)
    return list((await session.execute(stmt)).all())


async def trial_balances(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    """Sum of every account's buckets per tenant and currency (each must be zero)."""
    stmt = (
        _of_tenant(
            select(
                LedgerAccountRow.tenant_id,
                LedgerAccountRow.currency,
                func.sum(LedgerAccountRow.available + LedgerAccountRow.held).label("total"),
                func.count().label("accounts"),
            ),
            LedgerAccountRow.tenant_id,
            tenant_id,
        )
        .group_by(LedgerAccountRow.tenant_id, LedgerAccountRow.currency)
        .order_by(LedgerAccountRow.tenant_id, LedgerAccountRow.currency)
    )
    return list((await session.execute(stmt)).all())


async def negative_accounts(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    stmt = select(LedgerAccountRow.id, LedgerAccountRow.available, LedgerAccountRow.held).where(
        ~LedgerAccountRow.allow_negative, or_(LedgerAccountRow.available < 0, LedgerAccountRow.held < 0)
    )
    stmt = _of_tenant(stmt, LedgerAccountRow.tenant_id, tenant_id)
    return list((await session.execute(stmt)).all())


async def foreign_postings(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    """Postings whose currency or tenant differs from their account's (with `tenant_id`: the postings or
    accounts of that tenant)."""
    stmt = (
        select(PostingRow.id, PostingRow.account_id)
        .join(LedgerAccountRow, LedgerAccountRow.id == PostingRow.account_id)
        .where(
            or_(
                PostingRow.currency != LedgerAccountRow.currency,
                PostingRow.tenant_id != LedgerAccountRow.tenant_id,
            )
        )
    )
    if tenant_id is not None:
        stmt = stmt.where(or_(PostingRow.tenant_id == tenant_id, LedgerAccountRow.tenant_id == tenant_id))
    return list((await session.execute(stmt)).all())


async def thin_entries(session: AsyncSession, tenant_id: str | None = None) -> list[Any]:
    """Entries with fewer than two postings (a double-entry entry has at least two)."""
    counted = (
        _of_tenant(
            select(JournalEntryRow.id, func.count(PostingRow.id).label("n")),
            JournalEntryRow.tenant_id,
            tenant_id,
        )
        .outerjoin(PostingRow, PostingRow.entry_id == JournalEntryRow.id)
        .group_by(JournalEntryRow.id)
        .subquery()
    )
    return list((await session.execute(select(counted.c.id).where(counted.c.n < 2))).all())


async def counts(session: AsyncSession, tenant_id: str | None = None) -> dict[str, int]:
    accounts = await session.scalar(
        _of_tenant(select(func.count()).select_from(LedgerAccountRow), LedgerAccountRow.tenant_id, tenant_id)
    )
    entries = await session.scalar(
        _of_tenant(select(func.count()).select_from(JournalEntryRow), JournalEntryRow.tenant_id, tenant_id)
    )
    postings = await session.scalar(
        _of_tenant(select(func.count()).select_from(PostingRow), PostingRow.tenant_id, tenant_id)
    )
    return {"accounts": int(accounts or 0), "entries": int(entries or 0), "postings": int(postings or 0)}


def delete_postings_of(tenant_id: str) -> Any:
    """The DELETE of the tenant's postings, found by the tenant's entries: no index finds postings by tenant,
    and `WHERE tenant_id = ?` read every tenant's postings (the largest table)."""
    return delete(PostingRow).where(
        PostingRow.entry_id.in_(select(JournalEntryRow.id).where(JournalEntryRow.tenant_id == tenant_id)),
        only_if(PostingRow.tenant_id, tenant_id),
    )


async def clear_tenant(session: AsyncSession, *, tenant_id: str, now: datetime) -> dict[str, int]:
    """Every hold, posting and journal entry of the tenant deleted, its internal accounts' ledger accounts
    deleted and its system accounts kept at zero (processes cache their ids); rows affected by table."""
    holds = await session.execute(delete(LedgerHoldRow).where(LedgerHoldRow.tenant_id == tenant_id))
    postings = await session.execute(delete_postings_of(tenant_id))
    entries = await session.execute(delete(JournalEntryRow).where(JournalEntryRow.tenant_id == tenant_id))
    internal = await session.execute(
        delete(LedgerAccountRow).where(
            LedgerAccountRow.tenant_id == tenant_id, LedgerAccountRow.kind == "INTERNAL"
        )
    )
    await session.execute(
        update(LedgerAccountRow)
        .where(LedgerAccountRow.tenant_id == tenant_id)
        .values(available=0, held=0, updated_at=now)
    )
    return {
        "ledger_holds": max(cast("CursorResult[Any]", holds).rowcount or 0, 0),
        "postings": max(cast("CursorResult[Any]", postings).rowcount or 0, 0),
        "journal_entries": max(cast("CursorResult[Any]", entries).rowcount or 0, 0),
        "ledger_accounts": max(cast("CursorResult[Any]", internal).rowcount or 0, 0),
    }


# The console's reads: each a fixed number of statements, whatever the number of rows.

# The ledger accounts that stand for the world outside platpay: money entering the ledger is taken from one
# of them, money leaving it is put on one (money_flow).
OUTSIDE_KINDS = ("CLEARING", "SANDBOX_FUNDING")


async def postings_with_accounts(
    session: AsyncSession, *, tenant_id: str, reference: str
) -> list[tuple[JournalEntryRow, PostingRow, LedgerAccountRow]]:
    """Every posting of the tenant's entries carrying `reference`, with its entry and account: one statement."""
    stmt = (
        select(JournalEntryRow, PostingRow, LedgerAccountRow)
        .join(PostingRow, PostingRow.entry_id == JournalEntryRow.id)
        .join(LedgerAccountRow, LedgerAccountRow.id == PostingRow.account_id)
        .where(JournalEntryRow.tenant_id == tenant_id, JournalEntryRow.reference == reference)
        .order_by(JournalEntryRow.id, PostingRow.id)
    )
    return [(entry, posting, account) for entry, posting, account in (await session.execute(stmt)).all()]


def accounts_with_holds_query(
    *, tenant_id: str, kind: str | None, account_ids: Select[Any] | None
) -> Select[Any]:
    """The tenant's ledger accounts with their count of OPEN holds (a correlated subquery, not a query each)."""
    open_holds = (
        select(func.count())
        .where(LedgerHoldRow.account_id == LedgerAccountRow.id, LedgerHoldRow.status == HoldStatus.OPEN)
        .correlate(LedgerAccountRow)
        .scalar_subquery()
    )
    stmt = select(LedgerAccountRow, open_holds.label("open_holds")).where(
        LedgerAccountRow.tenant_id == tenant_id
    )
    if kind is not None:
        stmt = stmt.where(LedgerAccountRow.kind == kind)
    if account_ids is not None:
        stmt = stmt.where(LedgerAccountRow.id.in_(account_ids))
    return stmt


async def page_of_accounts(
    session: AsyncSession, stmt: Select[Any], *, after_id: str | None, descending: bool, limit: int
) -> list[tuple[LedgerAccountRow, int]]:
    """`limit` rows of `stmt` after `after_id` in id order: one statement, no count."""
    if after_id is not None:
        stmt = stmt.where(LedgerAccountRow.id < after_id if descending else LedgerAccountRow.id > after_id)
    stmt = stmt.order_by(LedgerAccountRow.id.desc() if descending else LedgerAccountRow.id.asc()).limit(limit)
    return [(row, int(holds)) for row, holds in (await session.execute(stmt)).all()]


async def internal_totals(
    session: AsyncSession, *, tenant_id: str, platform_accounts: Select[Any] | None
) -> list[tuple[str, bool, int, int]]:
    """(currency, is the platform's, available, held) summed over the tenant's INTERNAL accounts: one
    statement. `platform_accounts` selects the ids of the platform's own accounts (None: all are customers')."""
    is_platform: Any = (
        LedgerAccountRow.id.in_(platform_accounts) if platform_accounts is not None else sa_false()
    )
    label = case((is_platform, 1), else_=0).label("is_platform")
    rows = await session.execute(
        select(
            LedgerAccountRow.currency,
            label,
            func.coalesce(func.sum(LedgerAccountRow.available), 0),
            func.coalesce(func.sum(LedgerAccountRow.held), 0),
        )
        .where(LedgerAccountRow.tenant_id == tenant_id, LedgerAccountRow.kind == "INTERNAL")
        .group_by(LedgerAccountRow.currency, label)
        .order_by(LedgerAccountRow.currency)
    )
    return [
        (currency, bool(platform), int(available), int(held)) for currency, platform, available, held in rows
    ]


def _period(session: AsyncSession, column: Any, bucket: str) -> Any:
    """The UTC day (YYYY-MM-DD) or month (YYYY-MM) of a timestamp, as text on both backends. SQLite stores
    naive UTC in a fixed-width text format (db/types.UtcDateTime): its prefix is the period."""
    width = 10 if bucket == "day" else 7
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        return func.to_char(func.timezone("UTC", column), "YYYY-MM-DD" if bucket == "day" else "YYYY-MM")
    return func.substr(column, 1, width)


async def outside_flows(
    session: AsyncSession, *, tenant_id: str, since: datetime, bucket: str
) -> list[tuple[str, str, int, int]]:
    """(period, currency, money in, money out) from the postings on the tenant's outside accounts
    (OUTSIDE_KINDS) since `since`: one statement. Money in is what those accounts gave (their negative
    postings, negated), money out what they took (their positive postings)."""
    period = _period(session, PostingRow.created_at, bucket).label("period")
    gave = func.coalesce(func.sum(case((PostingRow.amount < 0, -PostingRow.amount), else_=0)), 0)
    took = func.coalesce(func.sum(case((PostingRow.amount > 0, PostingRow.amount), else_=0)), 0)
    outside = select(LedgerAccountRow.id).where(
        LedgerAccountRow.tenant_id == tenant_id, LedgerAccountRow.kind.in_(OUTSIDE_KINDS)
    )
    rows = await session.execute(
        select(period, PostingRow.currency, gave, took)
        .where(
            PostingRow.tenant_id == tenant_id,
            PostingRow.created_at >= since,
            PostingRow.account_id.in_(outside),
        )
        .group_by(period, PostingRow.currency)
        .order_by(period, PostingRow.currency)
    )
    return [(str(p), currency, int(money_in), int(money_out)) for p, currency, money_in, money_out in rows]


async def account_with_holds(
    session: AsyncSession, *, tenant_id: str, account_id: str
) -> tuple[LedgerAccountRow, int] | None:
    """One of the tenant's ledger accounts with its count of OPEN holds: one statement."""
    stmt = accounts_with_holds_query(tenant_id=tenant_id, kind=None, account_ids=None).where(
        LedgerAccountRow.id == account_id
    )
    found = (await session.execute(stmt)).first()
    return None if found is None else (found[0], int(found[1]))
