"""Bulk customer import bodies (INTERFACE-FACTS §3.10): the upload's 202 answer and the job."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from platpay.kit.api_model import ApiModel

ImportStatus = Literal["PENDING", "PROCESSING", "COMPLETED", "FAILED"]


class BulkCustomerImportJobAccepted(ApiModel):
    job_id: str = Field(
        examples=["Job:019542f5-b3e7-7d02-8000-000000000001"],
        description="poll GET /customers/bulk/jobs/{jobId}",
    )
    status: Literal["PENDING", "PROCESSING"]


class BulkCustomerImportJobProgress(ApiModel):
    total: int = Field(description="data rows in the file (the header and blank lines are not rows)")
    processed: int = Field(description="rows done so far: successful + failed")
    successful: int = Field(description="rows that created a customer")
    failed: int = Field(description="rows refused; each has an entry in errors")


class BulkCustomerImportErrorEntry(ApiModel):
    correlation_id: str = Field(
        description="the row's platformCustomerId, or `row N` when that cell is empty"
    )
    code: str = Field(
        description="the code POST /customers answers for the same data, e.g. INVALID_INPUT, CONFLICT"
    )
    message: str
    details: dict[str, Any] = Field(
        description="`row` (1 = first row after the header), `platformCustomerId`, and `fields`: "
        "[{field, message}] naming each bad CSV column"
    )


class BulkCustomerImportJob(ApiModel):
    id: str = Field(examples=["Job:019542f5-b3e7-7d02-8000-000000000001"])
    status: ImportStatus
    progress: BulkCustomerImportJobProgress
    errors: list[BulkCustomerImportErrorEntry] = Field(
        description="refused rows in row order; at most the first 1000"
    )
    omitted_error_count: int = Field(description="refused rows not listed in errors (beyond the first 1000)")
    failure_reason: str | None = Field(default=None, description="why the import stopped (FAILED only)")
    completed_at: datetime | None = Field(default=None, description="set once COMPLETED or FAILED")
    created_at: datetime
    updated_at: datetime
