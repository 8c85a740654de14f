"""Tables of the bulk customer import: the job, its uploaded file (in the database, so that any worker on
any machine can read it) and one error row per refused CSV row."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.customers.state import BulkImportStatus
from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime


class BulkImportJobRow(Base):
    """One uploaded CSV being imported, chunk by chunk, by the job runner.

    status: PENDING -> PROCESSING -> COMPLETED | FAILED. The resume checkpoint is (`processed` data rows,
    `resume_offset` bytes): every chunk advances both in the transaction that creates its customers, so a
    crashed worker's successor starts at the first row not yet committed, without re-reading the file.
    """

    __tablename__ = "customer_import_jobs"
    __table_args__ = (
        Index("ix_customer_import_jobs_tenant_id_id", "tenant_id", "id"),
        check_in("status", BulkImportStatus),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)  # Job:<uuid7>
    tenant_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("tenants.id"))
    status: Mapped[str] = mapped_column(String(16))
    columns: Mapped[list[str]] = mapped_column(JsonType)  # the header, canonical names in file order
    file_size: Mapped[int] = mapped_column(BigInteger)  # bytes
    file_sha256: Mapped[str] = mapped_column(String(64))
    file_chunk_bytes: Mapped[int] = mapped_column(Integer)  # every stored chunk but the last is this long
    total: Mapped[int] = mapped_column(Integer)  # data rows in the file (counted at upload)
    processed: Mapped[int] = mapped_column(Integer)  # data rows done: successful + failed
    successful: Mapped[int] = mapped_column(Integer)
    failed: Mapped[int] = mapped_column(Integer)
    resume_offset: Mapped[int] = mapped_column(BigInteger)  # bytes: where the first unprocessed row starts
    failure_reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    completed_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class BulkImportFileChunkRow(Base):
    """A slice of an uploaded file; deleted once its import has ended."""

    __tablename__ = "customer_import_file_chunks"

    job_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("customer_import_jobs.id"), primary_key=True)
    seq: Mapped[int] = mapped_column(
        Integer, primary_key=True, autoincrement=False
    )  # 0, 1, …: byte offset / file_chunk_bytes
    tenant_id: Mapped[str] = mapped_column(IdColumn())
    data: Mapped[bytes] = mapped_column(LargeBinary)


class BulkImportErrorRow(Base):
    """A CSV row that was not imported, and why (rendered as an entry of the job's `errors`)."""

    __tablename__ = "customer_import_errors"

    job_id: Mapped[str] = mapped_column(IdColumn(), ForeignKey("customer_import_jobs.id"), primary_key=True)
    row_number: Mapped[int] = mapped_column(
        Integer, primary_key=True, autoincrement=False
    )  # 1 = first data row
    tenant_id: Mapped[str] = mapped_column(IdColumn())
    correlation_id: Mapped[str] = mapped_column(String(255))  # the row's platformCustomerId, or "row N"
    code: Mapped[str] = mapped_column(String(64))
    message: Mapped[str] = mapped_column(Text)
    details: Mapped[dict[str, Any]] = mapped_column(
        JsonType
    )  # {row, platformCustomerId, fields: [{field, message}]}
