"""All SQL on the bulk import tables; every query is scoped to one tenant."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.customers.bulk.models import BulkImportErrorRow, BulkImportFileChunkRow, BulkImportJobRow
from platpay.db.rows import get_scoped


async def insert_job(session: AsyncSession, values: dict[str, Any]) -> None:
    await session.execute(BulkImportJobRow.__table__.insert(), [values])


async def insert_file_chunk(
    session: AsyncSession, *, tenant_id: str, job_id: str, seq: int, data: bytes
) -> None:
    await session.execute(
        BulkImportFileChunkRow.__table__.insert(),
        [{"tenant_id": tenant_id, "job_id": job_id, "seq": seq, "data": data}],
    )


async def get_job(
    session: AsyncSession, *, tenant_id: str, job_id: str, for_update: bool = False
) -> BulkImportJobRow | None:
    return await get_scoped(session, BulkImportJobRow, id=job_id, tenant_id=tenant_id, for_update=for_update)


async def file_chunk(session: AsyncSession, *, tenant_id: str, job_id: str, seq: int) -> bytes | None:
    return await session.scalar(
        select(BulkImportFileChunkRow.data).where(
            BulkImportFileChunkRow.tenant_id == tenant_id,
            BulkImportFileChunkRow.job_id == job_id,
            BulkImportFileChunkRow.seq == seq,
        )
    )


async def delete_file(session: AsyncSession, *, tenant_id: str, job_id: str) -> None:
    await session.execute(
        delete(BulkImportFileChunkRow).where(
            BulkImportFileChunkRow.tenant_id == tenant_id, BulkImportFileChunkRow.job_id == job_id
        )
    )


async def insert_errors(session: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await session.execute(BulkImportErrorRow.__table__.insert(), rows)  # one executemany


async def first_errors(
    session: AsyncSession, *, tenant_id: str, job_id: str, limit: int
) -> list[BulkImportErrorRow]:
    rows = await session.scalars(
        select(BulkImportErrorRow)
        .where(BulkImportErrorRow.tenant_id == tenant_id, BulkImportErrorRow.job_id == job_id)
        .order_by(BulkImportErrorRow.row_number)
        .limit(limit)
    )
    return list(rows.all())


# What create_many looks a chunk up in (its ledger accounts are only inserted: no plan to go wrong).
_LOOKED_UP_BY_IMPORT = ("customers", "internal_accounts")


async def analyze_customer_tables(session: AsyncSession) -> None:
    """PostgreSQL only: refresh the planner statistics of the tables an import fills and queries."""
    await session.execute(text(f"ANALYZE {', '.join(_LOOKED_UP_BY_IMPORT)}"))
