"""All SQL on ledger tables. Balance changes are conditional updates: the WHERE clause refuses to take a
non-negative account below zero, which works the same on SQLite and PostgreSQL (no SELECT … FOR UPDATE)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import and_, bindparam, delete, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.portable import insert_ignore_many
from platpay.ledger.models import JournalEntryRow, LedgerAccountRow, PostingRow

_ACCOUNTS = LedgerAccountRow.__table__

# One statement for every balance change, cached once: add to both buckets unless that would take a
# non-negative account (allow_negative false) below zero in either bucket; the new buckets come back.
_APPLY = Lean(
    update(_ACCOUNTS)
    .where(
        _ACCOUNTS.c.id == bindparam("account_id"),
        _ACCOUNTS.c.tenant_id == bindparam("tenant"),
        _ACCOUNTS.c.currency == bindparam("ccy"),
        or_(
            _ACCOUNTS.c.allow_negative,
            and_(
                _ACCOUNTS.c.available + bindparam("d_available") >= 0,
                _ACCOUNTS.c.held + bindparam("d_held") >= 0,
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


async def balances(session: AsyncSession, account_ids: list[str]) -> dict[str, tuple[int, int]]:
    if not account_ids:
        return {}
    rows = await session.execute(
        select(LedgerAccountRow.id, LedgerAccountRow.available, LedgerAccountRow.held).where(
            LedgerAccountRow.id.in_(account_ids)
        )
    )
    return {row.id: (row.available, row.held) for row in rows}


async def apply(
    session: AsyncSession,
    *,
    tenant_id: str,
    account_id: str,
    currency: str,
    d_available: int,
    d_held: int,
    now: datetime,
) -> tuple[int, int] | None:
    """Move one account's buckets; its new (available, held), or None when refused (it would go
    negative, or there is no such account in that currency)."""
    return await lean.first(
        session,
        _APPLY,
        {
            "account_id": account_id,
            "tenant": tenant_id,
            "ccy": currency,
            "d_available": d_available,
            "d_held": d_held,
            "now": now,
        },
    )  # type: ignore[return-value]


async def get_account(session: AsyncSession, *, tenant_id: str, account_id: str) -> LedgerAccountRow | None:
    return await session.scalar(
        select(LedgerAccountRow).where(
            LedgerAccountRow.id == account_id, LedgerAccountRow.tenant_id == tenant_id
        )
    )


async def account_id_by_code(session: AsyncSession, *, tenant_id: str, code: str) -> str | None:
    return await session.scalar(
        select(LedgerAccountRow.id).where(
            LedgerAccountRow.tenant_id == tenant_id, LedgerAccountRow.code == code
        )
    )


async def insert_entry(session: AsyncSession, entry: dict[str, Any], postings: list[dict[str, Any]]) -> None:
    await lean.rows(session, _INSERT_ENTRY, entry)
    await lean.execute_many(session, _INSERT_POSTING, postings)


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


# Verification queries (whole ledger, every tenant)


async def stored_vs_posted(session: AsyncSession) -> list[Any]:
    """Accounts whose stored buckets differ from the sum of their postings."""
    posted = (
        select(
            PostingRow.account_id.label("account_id"),
            func.coalesce(func.sum(PostingRow.amount).filter(PostingRow.bucket == "AVAILABLE"), 0).label(
                "available"
            ),
            func.coalesce(func.sum(PostingRow.amount).filter(PostingRow.bucket == "HELD"), 0).label("held"),
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
    return list((await session.execute(stmt)).all())


async def unbalanced_entries(session: AsyncSession) -> list[Any]:
    stmt = (
        select(PostingRow.entry_id, PostingRow.currency, func.sum(PostingRow.amount).label("total"))
        .group_by(PostingRow.entry_id, PostingRow.currency)
        .having(func.sum(PostingRow.amount) != 0)
    )
    return list((await session.execute(stmt)).all())


async def trial_balances(session: AsyncSession) -> list[Any]:
    """Sum of every account's buckets per tenant and currency (each must be zero)."""
    stmt = (
        select(
            LedgerAccountRow.tenant_id,
            LedgerAccountRow.currency,
            func.sum(LedgerAccountRow.available + LedgerAccountRow.held).label("total"),
            func.count().label("accounts"),
        )
        .group_by(LedgerAccountRow.tenant_id, LedgerAccountRow.currency)
        .order_by(LedgerAccountRow.tenant_id, LedgerAccountRow.currency)
    )
    return list((await session.execute(stmt)).all())


async def negative_accounts(session: AsyncSession) -> list[Any]:
    stmt = select(LedgerAccountRow.id, LedgerAccountRow.available, LedgerAccountRow.held).where(
        ~LedgerAccountRow.allow_negative, or_(LedgerAccountRow.available < 0, LedgerAccountRow.held < 0)
    )
    return list((await session.execute(stmt)).all())


async def foreign_postings(session: AsyncSession) -> list[Any]:
    """Postings whose currency or tenant differs from their account's."""
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
    return list((await session.execute(stmt)).all())


async def thin_entries(session: AsyncSession) -> list[Any]:
    """Entries with fewer than two postings (a double-entry entry has at least two)."""
    counted = (
        select(JournalEntryRow.id, func.count(PostingRow.id).label("n"))
        .outerjoin(PostingRow, PostingRow.entry_id == JournalEntryRow.id)
        .group_by(JournalEntryRow.id)
        .subquery()
    )
    return list((await session.execute(select(counted.c.id).where(counted.c.n < 2))).all())


async def counts(session: AsyncSession) -> dict[str, int]:
    accounts = await session.scalar(select(func.count()).select_from(LedgerAccountRow))
    entries = await session.scalar(select(func.count()).select_from(JournalEntryRow))
    postings = await session.scalar(select(func.count()).select_from(PostingRow))
    return {"accounts": int(accounts or 0), "entries": int(entries or 0), "postings": int(postings or 0)}


async def clear_tenant(session: AsyncSession, *, tenant_id: str, now: datetime) -> dict[str, int]:
    """Every posting and journal entry of the tenant deleted, its internal accounts' ledger accounts
    deleted and its system accounts kept at zero (processes cache their ids); rows affected by table."""
    postings = await session.execute(delete(PostingRow).where(PostingRow.tenant_id == tenant_id))
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
        "postings": max(postings.rowcount or 0, 0),
        "journal_entries": max(entries.rowcount or 0, 0),
        "ledger_accounts": max(internal.rowcount or 0, 0),
    }
