"""The state machines of customers: a bulk customer import job's status (customers/bulk.py)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class BulkImportStatus(StrEnum):
    PENDING = "PENDING"  # stored and queued; no chunk has committed yet
    PROCESSING = "PROCESSING"  # chunks are being imported from the checkpoint
    COMPLETED = "COMPLETED"  # every row imported or refused (BULK_UPLOAD.COMPLETED)
    FAILED = "FAILED"  # the file could not be read, or a chunk kept failing (BULK_UPLOAD.FAILED)


_B = BulkImportStatus

BULK_IMPORT = StateMachine(
    "bulk customer import",
    BulkImportStatus,
    {
        # a job whose first chunk keeps failing is given up while still PENDING (its runs rolled back)
        _B.PENDING: {_B.PROCESSING, _B.FAILED},
        _B.PROCESSING: {_B.PROCESSING, _B.COMPLETED, _B.FAILED},  # every chunk's run moves it to PROCESSING
    },
    initial={_B.PENDING},
)
