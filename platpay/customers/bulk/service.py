"""Bulk customer import (POST /customers/bulk/csv, GET /customers/bulk/jobs/{jobId}).

The upload is read as it streams: checked (UTF-8 CSV text, header, size, data rows counted) and then
stored in the database in FILE_CHUNK_BYTES slices with its job, in one transaction, so that any worker on
any machine can import it. The job runner imports it chunk by chunk: each run parses the next rows from the
resume checkpoint and hands them to `customers_service.create_many`, the one creation path POST /customers
uses, after the same request-body validation (CustomerCreateRequestOneOf), so a row is refused for exactly the reasons
the API would refuse it, with the same error code.

Exactly once: a chunk's customers, its row errors and the job's progress and checkpoint commit together in
the runner's `ctx.transaction()`. A worker that dies mid-chunk commits nothing; the next attempt starts at
the last committed checkpoint. Memory is bounded by one stored slice plus one chunk of rows, whatever the
size of the file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.customers import drafts as customer_drafts
from platpay.customers import service as customers_service
from platpay.customers.bulk import csv_parser as bulk_csv
from platpay.customers.bulk import repository
from platpay.customers.bulk.models import BulkImportJobRow
from platpay.customers.bulk.schemas import (
    BulkCustomerImportErrorEntry,
    BulkCustomerImportJob,
    BulkCustomerImportJobAccepted,
    BulkCustomerImportJobProgress,
)
from platpay.customers.errors import BulkUploadJobNotFound
from platpay.customers.schemas import CustomerCreateRequestOneOf
from platpay.customers.state import BULK_IMPORT, BulkImportStatus
from platpay.customers.types import CustomerDraft
from platpay.errors import InvalidInput
from platpay.events import service as events_service
from platpay.jobs import service as jobs_service
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.tenants import service as tenants_service
from platpay.tenants.context import TenantContext

log = structlog.get_logger("platpay.customers.bulk")

IMPORT_JOB = "customers.bulk_import"
IMPORT_MAX_ATTEMPTS = 10  # failed runs of one chunk (backing off) before the import is marked FAILED
FILE_CHUNK_BYTES = 1 << 20  # stored slices of an uploaded file
READ_BYTES = 256 << 10  # parsed at a time
MULTIPART_ALLOWANCE_BYTES = 1 << 20  # request body beyond the file limit, for the multipart envelope
ERRORS_SHOWN = 1000  # row errors listed in the job; the rest are counted in omittedErrorCount
ROW_FIELD = "row"  # names a problem with the row as a whole (its number of cells)

# A CSV file's part may be labelled any text type, or with what browsers and spreadsheet tools send.
_CSV_MEDIA_TYPES = {
    "application/csv",
    "application/x-csv",
    "application/vnd.ms-excel",
    "application/octet-stream",
}
_ZIP_MAGIC = b"PK\x03\x04"


class Upload(Protocol):
    """The uploaded file (Starlette's UploadFile): read in pieces, never whole."""

    content_type: str | None

    async def read(self, size: int = -1) -> bytes: ...

    async def seek(self, offset: int) -> None: ...


@dataclass(frozen=True)
class CheckedUpload:
    size: int  # bytes
    sha256: str
    columns: list[str]
    data_offset: int  # bytes: where the first data row starts
    total: int  # data rows


def _refused(message: str, **details: Any) -> InvalidInput:
    return InvalidInput(
        f"file: {message}", details={"fields": [{"field": "file", "message": message}], **details}
    )


async def check_upload(upload: Upload, *, max_bytes: int) -> CheckedUpload:
    """Read the uploaded file once, as it streams: its size, SHA-256, that it is UTF-8 CSV text with a
    usable header, and how many data rows it has. Only counters are kept; an unusable file is a 400."""
    media = (upload.content_type or "").split(";")[0].strip().lower()
    if media and not (media.startswith("text/") or media in _CSV_MEDIA_TYPES):
        raise _refused(f"is {media}, not CSV: upload a UTF-8 CSV file (text/csv)", contentType=media)
    parser = bulk_csv.RecordParser()
    digest = hashlib.sha256()
    size = total = data_offset = 0
    columns: list[str] | None = None
    type_at = 0
    customer_types: set[str] = set()
    while True:
        block = await upload.read(READ_BYTES)
        if size == 0 and block.startswith(_ZIP_MAGIC):
            raise _refused("is a ZIP archive (an .xlsx workbook?), not CSV: export the sheet as CSV")
        size += len(block)
        if size > max_bytes:
            raise _refused(f"is larger than the {max_bytes}-byte limit for one import", limitBytes=max_bytes)
        digest.update(block)
        try:
            records = parser.feed(block) if block else parser.close()
        except bulk_csv.CsvFormatError as error:
            raise _refused(str(error), offset=error.offset) from None
        for record in records:
            if columns is None:
                try:
                    columns = bulk_csv.read_header(record.cells)
                except bulk_csv.HeaderError as error:
                    raise _refused(str(error), **error.details) from None
                data_offset, type_at = record.end, columns.index("customerType")
                continue
            total += 1
            if type_at < len(record.cells) and record.cells[type_at] in bulk_csv.REQUIRED_FOR_TYPE:
                customer_types.add(record.cells[type_at])
        if not block:
            break
    if columns is None:
        raise _refused("is empty: it needs a header row and at least one data row")
    if total == 0:
        raise _refused("has a header but no data rows")
    try:
        bulk_csv.check_required_columns(columns, customer_types=customer_types)
    except bulk_csv.HeaderError as error:
        raise _refused(str(error), **error.details) from None
    return CheckedUpload(size, digest.hexdigest(), columns, data_offset, total)


async def _read_up_to(upload: Upload, size: int) -> bytes:
    parts, have = [], 0
    while have < size:
        block = await upload.read(size - have)
        if not block:
            break
        parts.append(block)
        have += len(block)
    return b"".join(parts)


async def start_import(
    session: AsyncSession, *, tenant_id: str, upload: Upload, checked: CheckedUpload
) -> BulkCustomerImportJobAccepted:
    """Store the checked file with a new PENDING job and enqueue its import, in the caller's transaction."""
    now = clock.now()
    job_id = new_id("Job")
    await repository.insert_job(
        session,
        {
            "id": job_id,
            "tenant_id": tenant_id,
            "status": BulkImportStatus.PENDING,
            "columns": checked.columns,
            "file_size": checked.size,
            "file_sha256": checked.sha256,
            "file_chunk_bytes": FILE_CHUNK_BYTES,
            "total": checked.total,
            "processed": 0,
            "successful": 0,
            "failed": 0,
            "resume_offset": checked.data_offset,
            "failure_reason": None,
            "created_at": now,
            "updated_at": now,
            "completed_at": None,
        },
    )
    await upload.seek(0)
    stored, seq = 0, 0
    while data := await _read_up_to(upload, FILE_CHUNK_BYTES):
        await repository.insert_file_chunk(session, tenant_id=tenant_id, job_id=job_id, seq=seq, data=data)
        stored, seq = stored + len(data), seq + 1
    if stored != checked.size:
        raise RuntimeError(f"the uploaded file changed while being stored ({stored} of {checked.size} bytes)")
    await jobs_service.enqueue(
        session,
        IMPORT_JOB,
        {"jobId": job_id, "tenantId": tenant_id},
        tenant_id=tenant_id,
        max_attempts=IMPORT_MAX_ATTEMPTS,
    )
    return BulkCustomerImportJobAccepted(job_id=job_id, status=BulkImportStatus.PENDING)


@dataclass(frozen=True)
class ChunkImported:
    more: bool  # rows remain: run again
    refresh_statistics: bool  # the import has doubled the rows it created: time for ANALYZE


def _statistics_due(chunks_done: int) -> bool:
    return chunks_done > 0 and chunks_done & (chunks_done - 1) == 0  # after chunk 1, 2, 4, 8, …


async def import_next_chunk(
    session: AsyncSession, *, tenant_id: str, job_id: str, max_rows: int, settings: Settings
) -> ChunkImported:
    """Import the next `max_rows` data rows from the checkpoint. The last run completes the job and fires
    BULK_UPLOAD.COMPLETED; a file that cannot be read fails it."""
    job = await repository.get_job(session, tenant_id=tenant_id, job_id=job_id, for_update=True)
    if job is None or BULK_IMPORT.is_terminal(job.status):
        return ChunkImported(more=False, refresh_statistics=False)
    job.status = BULK_IMPORT.move(job.status, BulkImportStatus.PROCESSING, subject=job.id)
    try:
        records, at_end = await _next_records(session, job, max_rows)
    except bulk_csv.CsvFormatError as error:
        await _finish(
            session, job, status=BulkImportStatus.FAILED, reason=f"the file could not be read: {error}"
        )
        return ChunkImported(more=False, refresh_statistics=False)
    if records:
        tenant = await tenants_service.load(session, tenant_id=tenant_id)
        created, refused = await _import_rows(
            session, tenant=tenant, job=job, records=records, settings=settings
        )
        job.processed += len(records)
        job.successful += created
        job.failed += refused
        job.resume_offset = records[-1].end
    job.updated_at = clock.now()
    if at_end:
        await _finish(session, job, status=BulkImportStatus.COMPLETED, reason=None)
        return ChunkImported(more=False, refresh_statistics=False)
    await session.flush()
    return ChunkImported(more=True, refresh_statistics=_statistics_due(job.processed // max_rows))


async def refresh_statistics(session: AsyncSession) -> None:
    """ANALYZE the tables a chunk queries (PostgreSQL), as PostgreSQL advises after loading much data.

    create_many looks up a chunk's platformCustomerIds, UMA addresses and accounts among the tenant's. With
    statistics from before the import (or none: autovacuum has not come round yet, or is off) the planner
    takes the tenant for a handful of rows and scans all of them by tenant_id instead of probing the unique
    indexes: every chunk then costs in proportion to the customers already imported (100k rows took 757 s
    instead of ~35 s; bench/README.md). Refreshed after chunk 1, 2, 4, 8, … (7 times for 100k rows), the
    plans stay index probes.
    """
    if session.bind is not None and session.bind.dialect.name == "postgresql":
        await repository.analyze_customer_tables(session)


async def fail_import(session: AsyncSession, *, tenant_id: str, job_id: str, reason: str) -> None:
    """Give up on an import (its chunk kept failing): FAILED, and BULK_UPLOAD.FAILED fires."""
    job = await repository.get_job(session, tenant_id=tenant_id, job_id=job_id, for_update=True)
    if job is not None and not BULK_IMPORT.is_terminal(job.status):
        await _finish(session, job, status=BulkImportStatus.FAILED, reason=reason)


async def _next_records(
    session: AsyncSession, job: BulkImportJobRow, max_rows: int
) -> tuple[list[bulk_csv.Record], bool]:
    """Up to `max_rows` records from the checkpoint, and whether they are the file's last ones. Reads one
    stored slice at a time and parses only as far as it needs."""
    parser = bulk_csv.RecordParser(offset=job.resume_offset)
    seq, skip = divmod(job.resume_offset, job.file_chunk_bytes)
    records: list[bulk_csv.Record] = []
    while seq * job.file_chunk_bytes < job.file_size:
        data = await repository.file_chunk(session, tenant_id=job.tenant_id, job_id=job.id, seq=seq)
        if data is None:
            raise bulk_csv.CsvFormatError(
                f"its stored slice {seq} is missing", offset=seq * job.file_chunk_bytes
            )
        for start in range(skip, len(data), READ_BYTES):
            records += parser.feed(data[start : start + READ_BYTES])
            if len(records) >= max_rows:
                return records[:max_rows], False
        seq, skip = seq + 1, 0
    records += parser.close()
    return records[:max_rows], len(records) <= max_rows


def _validation_problems(error: ValidationError) -> list[tuple[str, str]]:
    """Request-body validation errors as POST /customers reports them, named by CSV column."""
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"]) or ROW_FIELD
        message = str(item["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        problems.append((bulk_csv.column_of(field), message))
    return problems


def _row_error(
    job: BulkImportJobRow, number: int, values: dict[str, str], code: str, problems: list[tuple[str, str]]
) -> dict[str, Any]:
    first_by_field: dict[str, str] = {}
    for field, message in problems:
        first_by_field.setdefault(field, message)  # "customerType: is required" once, not per check
    fields = [{"field": field, "message": message} for field, message in first_by_field.items()]
    platform_customer_id = values.get("platformCustomerId", "")[:255] or None
    summary = "; ".join(f"{entry['field']}: {entry['message']}" for entry in fields[:5])
    return {
        "job_id": job.id,
        "tenant_id": job.tenant_id,
        "row_number": number,
        "correlation_id": platform_customer_id or f"row {number}",
        "code": code,
        "message": f"row {number}: {summary}",
        "details": {"row": number, "platformCustomerId": platform_customer_id, "fields": fields},
    }


async def _import_rows(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    job: BulkImportJobRow,
    records: list[bulk_csv.Record],
    settings: Settings,
) -> tuple[int, int]:
    """Create the chunk's valid rows in one create_many call and record the refused ones; returns
    (created, refused)."""
    errors: list[dict[str, Any]] = []
    drafts: list[CustomerDraft] = []
    origins: list[tuple[int, dict[str, str]]] = []
    width = len(job.columns)
    for number, record in enumerate(records, start=job.processed + 1):
        values = bulk_csv.row_values(job.columns, record.cells)
        problems = bulk_csv.missing_cells(values)
        if len(record.cells) != width:
            problems.insert(0, (ROW_FIELD, f"has {len(record.cells)} cells; the header has {width} columns"))
        raw = bulk_csv.request_body(values)
        failed: list[customer_drafts.Loc] = []
        try:
            body = CustomerCreateRequestOneOf.model_validate(raw)
        except ValidationError as error:
            problems += _validation_problems(error)
            failed = [tuple(item["loc"]) for item in error.errors()]
        if problems:  # the rules' problems with the row's other cells are named with them, as the API does
            problems += [
                (bulk_csv.column_of(problem.field), problem.message)
                for problem in customer_drafts.problems_beside_schema_errors(
                    raw, failed, model=CustomerCreateRequestOneOf, tenant=tenant, settings=settings
                )
            ]
            errors.append(_row_error(job, number, values, InvalidInput.code, problems))
            continue
        drafts.append(body.draft())
        origins.append((number, values))
    outcomes = (
        await customers_service.create_many(session, tenant=tenant, drafts=drafts, settings=settings)
        if drafts
        else []
    )
    created = 0
    for (number, values), outcome in zip(origins, outcomes, strict=True):
        if outcome.row is not None:
            created += 1
            continue
        # The error POST /customers would answer for the same data gives the row's code.
        code = customer_drafts.refusal(outcome.problems).code
        problems = [(bulk_csv.column_of(problem.field), problem.message) for problem in outcome.problems]
        errors.append(_row_error(job, number, values, code, problems))
    errors.sort(key=lambda error: error["row_number"])
    await repository.insert_errors(session, errors)
    return created, len(errors)


async def _finish(
    session: AsyncSession, job: BulkImportJobRow, *, status: BulkImportStatus, reason: str | None
) -> None:
    now = clock.now()
    job.status = BULK_IMPORT.move(job.status, status, subject=job.id)
    job.failure_reason = reason
    job.completed_at = job.updated_at = now
    if status == BulkImportStatus.COMPLETED:
        job.resume_offset = job.file_size
        if job.processed != job.total:  # the upload counted rows with the same parser: never expected
            log.warning(
                "customers.bulk_import.count_mismatch",
                job_id=job.id,
                total=job.total,
                processed=job.processed,
            )
    await repository.delete_file(session, tenant_id=job.tenant_id, job_id=job.id)  # no longer needed
    await session.flush()
    resource = await render(session, job)
    await events_service.emit(
        session, tenant_id=job.tenant_id, type=f"BULK_UPLOAD.{status}", resource=resource
    )
    log.info(
        "customers.bulk_import.finished",
        job_id=job.id,
        status=status,
        total=job.total,
        successful=job.successful,
        failed=job.failed,
        reason=reason,
    )


async def render(session: AsyncSession, job: BulkImportJobRow) -> BulkCustomerImportJob:
    errors = await repository.first_errors(
        session, tenant_id=job.tenant_id, job_id=job.id, limit=ERRORS_SHOWN
    )
    return BulkCustomerImportJob(
        id=job.id,
        status=job.status,
        progress=BulkCustomerImportJobProgress(
            total=job.total, processed=job.processed, successful=job.successful, failed=job.failed
        ),
        errors=[
            BulkCustomerImportErrorEntry(
                correlation_id=row.correlation_id, code=row.code, message=row.message, details=row.details
            )
            for row in errors
        ],
        omitted_error_count=job.failed - len(errors),
        failure_reason=job.failure_reason,
        completed_at=job.completed_at,
        created_at=job.created_at,
        updated_at=job.updated_at,
    )


async def get_job(session: AsyncSession, *, tenant_id: str, job_id: str) -> BulkCustomerImportJob:
    job = await repository.get_job(session, tenant_id=tenant_id, job_id=job_id)
    if job is None:
        raise BulkUploadJobNotFound(job_id)
    return await render(session, job)
