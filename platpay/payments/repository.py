"""All SQL on transactions; every query is tenant-scoped."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, bindparam, case, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.db import lean
from platpay.db.lean import Lean
from platpay.db.portable import lean_in, only_if
from platpay.db.unit_of_work import LeanSession, Raced
from platpay.kit.pagination import keyset_page
from platpay.payments.models import TransactionRow
from platpay.payments.state import AWAITING, TransactionKind, TransactionStatus

if TYPE_CHECKING:  # the row type accounts.service returns
    from platpay.accounts.models import InternalAccountRow


async def get(
    session: LeanSession, *, tenant_id: str, transaction_id: str, for_update: bool = False
) -> TransactionRow | None:
    return await lean.get(
        session, TransactionRow, id=transaction_id, tenant_id=tenant_id, for_update=for_update
    )


def list_query(
    *,
    tenant_id: str,
    customer_id: str | None = None,
    platform_only: bool = False,
    platform_customer_id: str | None = None,
    account_identifier: str | None = None,
    sender_account_identifier: str | None = None,
    receiver_account_identifier: str | None = None,
    status: str | None = None,
    type_: str | None = None,
    reference: str | None = None,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> Select[Any]:
    stmt = select(TransactionRow).where(TransactionRow.tenant_id == tenant_id)
    if platform_only:
        stmt = stmt.where(TransactionRow.customer_id.is_(None))
    elif customer_id is not None:
        stmt = stmt.where(TransactionRow.customer_id == customer_id)
    if platform_customer_id is not None:
        stmt = stmt.where(TransactionRow.platform_customer_id == platform_customer_id)
    if account_identifier is not None:
        stmt = stmt.where(
            or_(
                TransactionRow.sender_account_id == account_identifier,
                TransactionRow.receiver_account_id == account_identifier,
            )
        )
    if sender_account_identifier is not None:
        stmt = stmt.where(TransactionRow.sender_account_id == sender_account_identifier)
    if receiver_account_identifier is not None:
        stmt = stmt.where(TransactionRow.receiver_account_id == receiver_account_identifier)
    if status is not None:
        stmt = stmt.where(TransactionRow.status == status)
    if type_ is not None:
        stmt = stmt.where(TransactionRow.type == type_)
    if reference is not None:
        stmt = stmt.where(TransactionRow.reference == reference)
    if start_date is not None:
        stmt = stmt.where(TransactionRow.created_at >= start_date)
    if end_date is not None:
        stmt = stmt.where(TransactionRow.created_at <= end_date)
    return stmt


async def page(
    session: AsyncSession,
    stmt: Select[Any],
    *,
    after: tuple[datetime, str] | None,
    descending: bool,
    limit: int,
) -> list[TransactionRow]:
    """At most `limit` rows of `list_query`'s `stmt`, in (created_at, id) order, strictly after `after`:
    read through ix_transactions_tenant_created, so a page costs its rows, not the tenant's size."""
    row = TransactionRow
    stmt = keyset_page(
        stmt, created_at=row.created_at, id_column=row.id, after=after, descending=descending, limit=limit
    )
    return list((await session.scalars(stmt)).all())


async def created_at_of(session: AsyncSession, *, tenant_id: str, transaction_id: str) -> datetime | None:
    return await session.scalar(
        select(TransactionRow.created_at).where(
            TransactionRow.id == transaction_id, TransactionRow.tenant_id == tenant_id
        )
    )


_INSERT = Lean(TransactionRow.__table__.insert())


# A transfer as a settlement step reads it, without a lock, with the internal account it moves (the source's
# of a transfer-out, else the destination's; the accounts domain's columns appended).
_TABLE = TransactionRow.__table__
_COLUMNS, _KEYS = lean.columns_of(TransactionRow)


def _with_account(where: Any) -> Any:
    return accounts_service.with_internal(
        select(*_COLUMNS).where(where, only_if(_TABLE.c.tenant_id, bindparam("tenant_id"))),
        account_id=case(
            (_TABLE.c.kind == TransactionKind.TRANSFER_OUT, _TABLE.c.source["accountId"].as_string()),
            else_=_TABLE.c.destination["accountId"].as_string(),
        ),
        tenant_id=_TABLE.c.tenant_id,
    )


_WITH_ACCOUNT = Lean(_with_account(_TABLE.c.id == bindparam("transaction_id")))
_MANY_WITH_ACCOUNT = lean_in(_with_account, _TABLE.c.id, "transaction_ids")


async def read_with_account(
    session: LeanSession, *, tenant_id: str, transaction_id: str
) -> tuple[TransactionRow, InternalAccountRow | None] | None:
    """The transaction (a snapshot: a change to it is saved by `write_move`) and the internal account it
    moves (None: none), in one statement; None when the tenant has no such transaction."""
    found = await lean.first(
        session, _WITH_ACCOUNT, {"transaction_id": transaction_id, "tenant_id": tenant_id}
    )
    if found is None:
        return None
    return _with_account_from(found)


async def read_many_with_account(
    session: LeanSession, *, tenant_id: str, transaction_ids: list[str]
) -> dict[str, tuple[TransactionRow, InternalAccountRow | None]]:
    """`read_with_account` of several transactions of one tenant in one statement, by id (those the tenant
    has)."""
    found = await lean.rows(
        session, _MANY_WITH_ACCOUNT, {"transaction_ids": list(transaction_ids), "tenant_id": tenant_id}
    )
    read = [_with_account_from(values) for values in found]
    return {row.id: (row, account) for row, account in read}


def _with_account_from(values: Any) -> tuple[TransactionRow, InternalAccountRow | None]:
    width = len(_KEYS)
    return lean.snapshot(TransactionRow, _KEYS, values[:width]), accounts_service.internal_from(
        values[width:]
    )


# A status change in a lean transaction (a settlement step, platpay/payments/transfers.py): the columns
# `service.move` changes, written only if the row is still as it was read (its status, and its updatedAt,
# which every change of a transaction moves: no other change made meanwhile is overwritten).
_MOVE = Lean(
    _TABLE.update()
    .where(
        _TABLE.c.id == bindparam("row_id"),
        _TABLE.c.tenant_id == bindparam("row_tenant_id"),
        _TABLE.c.status == bindparam("was"),
        _TABLE.c.updated_at == bindparam("was_updated_at"),
    )
    .values(
        status=bindparam("status"),
        updated_at=bindparam("updated_at"),
        settled_at=bindparam("settled_at"),
        failure_reason=bindparam("failure_reason"),
        refund=bindparam("refund"),
        extra=bindparam("extra"),
    )
    .returning(_TABLE.c.id)
)


async def write_move(
    session: LeanSession, row: TransactionRow, *, was: str, was_updated_at: datetime
) -> None:
    """Save `row`'s status change (a row read leanly, not tracked by an ORM session) if the transaction is
    still as read (status `was`, updated at `was_updated_at`); else `Raced` (a concurrent change: the
    caller's careful attempt decides again under the row's lock). On PostgreSQL's lean transactions deferred
    to the statement that sends the writes."""
    params = {
        "row_id": row.id,
        "row_tenant_id": row.tenant_id,
        "was": was,
        "was_updated_at": was_updated_at,
        "status": row.status,
        "updated_at": row.updated_at,
        "settled_at": row.settled_at,
        "failure_reason": row.failure_reason,
        "refund": row.refund,
        "extra": row.extra,
    }
    if await lean.defer_returning(session, _MOVE, params, row=row.id) is not None:
        return
    if await lean.first(session, _MOVE, params) is None:
        raise Raced(f"transaction {row.id} is no longer {was}")


async def insert(session: LeanSession, values: dict[str, Any]) -> TransactionRow:
    """Insert a new transaction leanly (the only way transactions are inserted; `values` by attribute name)
    and return its row, persistent in the session: later changes to it flush as UPDATEs."""
    return await lean.add(session, _INSERT, TransactionRow, values)


async def count_awaiting_approval(session: AsyncSession, *, tenant_id: str, now: datetime) -> int:
    """The tenant's incoming UMA payments the platform may still approve or reject now: one statement."""
    return int(
        await session.scalar(
            select(func.count()).where(
                TransactionRow.tenant_id == tenant_id,
                TransactionRow.kind == TransactionKind.UMA_INCOMING,
                TransactionRow.status == TransactionStatus.PENDING,
                TransactionRow.approval_state.in_(AWAITING),
                or_(TransactionRow.approval_deadline.is_(None), TransactionRow.approval_deadline > now),
            )
        )
        or 0
    )
