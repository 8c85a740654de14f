"""The one lookup every repository makes: a row by its id, scoped to its tenant, optionally locked; and the
batch a pruning statement works on (`batch_of`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, select
from sqlalchemy.ext.asyncio import AsyncSession

RowT = TypeVar("RowT")


async def get_scoped(
    session: AsyncSession,
    model: type[RowT],
    *,
    id: str,
    tenant_id: str | None,
    where: Iterable[ColumnElement[bool]] = (),
    for_update: bool = False,
    shared: bool = False,
    refresh: bool = False,
) -> RowT | None:
    """The `model` row `id` of the tenant, or None (missing, or another tenant's): `SELECT … WHERE id = :id
    AND tenant_id = :tenant_id [AND where …] [FOR UPDATE]`. `tenant_id` None: whichever tenant's (a job's
    lookup, its id alone). `for_update` locks the row until the transaction ends (PostgreSQL; SQLite has one
    writer), `shared` in share mode (FOR SHARE); `refresh`: the locked row's values replace those of an
    instance the session already holds (read before the lock was taken)."""
    columns: Any = model  # a mapped class: its `id` and `tenant_id` columns
    stmt = select(model).where(columns.id == id)
    if tenant_id is not None:
        stmt = stmt.where(columns.tenant_id == tenant_id)
    for condition in where:
        stmt = stmt.where(condition)
    if for_update:
        stmt = stmt.with_for_update(read=shared)
        if refresh:
            stmt = stmt.execution_options(populate_existing=True)
    return await session.scalar(stmt)


def batch_of(id_column: Any, *where: ColumnElement[bool], order_by: Any, limit: int) -> Select[Any]:
    """The ids of at most `limit` rows matching `where`, first by `order_by`, for `DELETE … WHERE id IN (…)`
    or `UPDATE … WHERE id IN (…)` (PostgreSQL's DELETE and UPDATE take no LIMIT): a retention batch. Locked
    FOR UPDATE SKIP LOCKED on PostgreSQL, so runners pruning at once take different rows and never wait for
    each other or for a row a request holds (SQLite has one writer anyway).

    The batch is a CTE, selected from: PostgreSQL runs a CTE with FOR UPDATE once, whereas a plain
    `IN (subquery)` may be run again for each row of the outer scan (a nested-loop semi-join), and each run
    skips the rows the statement has already deleted (locked by itself) and takes the next `limit`, so one
    batch could delete far more than `limit` (seen: 21 jobs in a pass of 2 batches of 4)."""
    stmt = select(id_column)
    for condition in where:
        stmt = stmt.where(condition)
    batch = stmt.order_by(order_by).limit(limit).with_for_update(skip_locked=True).cte("batch")
    return select(batch.c[0])


async def batch_done(session: Any, statement: Any, id_column: Any) -> int:
    """Run the DELETE or UPDATE of a `batch_of` batch; how many rows it touched, counted from RETURNING (the
    batch's WITH comes first, and Python's sqlite3 reports no rowcount for a statement beginning with WITH)."""
    return len((await session.execute(statement.returning(id_column))).all())
