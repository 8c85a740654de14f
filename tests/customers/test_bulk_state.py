"""customers/state.py: a bulk import's lifecycle as a table, and enforced where the import changes it."""

from __future__ import annotations

from typing import get_args

import pytest
from sqlalchemy import select

from platpay.customers.bulk import schemas as bulk_schemas
from platpay.customers.bulk import service as bulk
from platpay.customers.bulk.models import BulkImportJobRow
from platpay.customers.state import BULK_IMPORT, BulkImportStatus
from platpay.kit.states import IllegalTransition
from tests.support.bulk_import import csv_bytes, import_to_the_end, job_of, upload, valid_rows

B = BulkImportStatus


def test_the_table_is_the_documented_lifecycle():
    """PENDING -> PROCESSING -> COMPLETED | FAILED (bulk/models.py), and PENDING -> FAILED for an import
    whose first chunk never committed."""
    assert set(get_args(bulk_schemas.ImportStatus)) == set(BulkImportStatus)
    assert BULK_IMPORT.reachable() == BULK_IMPORT.states == set(BulkImportStatus)
    assert BULK_IMPORT.initial == {B.PENDING}
    assert BULK_IMPORT.terminal == {B.COMPLETED, B.FAILED}
    assert BULK_IMPORT.targets(B.PENDING) == {B.PROCESSING, B.FAILED}
    assert BULK_IMPORT.targets(B.PROCESSING) == {B.PROCESSING, B.COMPLETED, B.FAILED}


async def test_a_finished_import_stays_finished(client, auth, runner, db, settings):
    job_id = (await upload(client, auth, csv_bytes(valid_rows(3)))).json()["jobId"]
    done = await import_to_the_end(client, auth, runner, job_id)
    assert done["status"] == "COMPLETED"
    async with db.transaction() as session:
        job = await session.scalar(select(BulkImportJobRow).where(BulkImportJobRow.id == job_id))
        assert job is not None
        chunk = await bulk.import_next_chunk(
            session, tenant_id=job.tenant_id, job_id=job_id, max_rows=10, settings=settings
        )
        assert not chunk.more
        await bulk.fail_import(session, tenant_id=job.tenant_id, job_id=job_id, reason="late")
        for status in (B.FAILED, B.COMPLETED):
            with pytest.raises(IllegalTransition, match=f"bulk customer import {job_id}: no move from"):
                await bulk._finish(session, job, status=status, reason=None)
    assert await job_of(client, auth, job_id) == done
