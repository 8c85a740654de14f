"""job claim indexes: the id at the end of the lanes' indexes

A keyed lane's claim takes each key's oldest due jobs in (run_at, id) order (jobs queued by one transaction
share a run_at; the id keeps them in the order they were queued). With indexes that ended at run_at, the
id's tiebreak made PostgreSQL sort every due job of the key (or of the lane) to return the first few: with a
webhook backlog of 45,000 deliveries, ~40 ms and ~26,000 buffers per claim. Ending both lane indexes with
the id makes that order a range of either index, read until the claim has enough.

Both indexes are rebuilt (a write lock on `jobs` while they build; the table holds queued, running and
recently finished jobs, pruned by retention).

Revision ID: 0030_job_claim_indexes
Revises: 0029_watch
Create Date: 2026-11-30 09:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = "0030_job_claim_indexes"
down_revision: str | None = "0029_watch"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_index("ix_jobs_lane_state_run_at_id", "jobs", ["lane", "state", "run_at", "id"], unique=False)
    op.create_index(
        "ix_jobs_lane_state_key_run_at_id",
        "jobs",
        ["lane", "state", "concurrency_key", "run_at", "id"],
        unique=False,
    )
    op.drop_index("ix_jobs_lane_state_run_at", table_name="jobs")
    op.drop_index("ix_jobs_lane_state_concurrency_key_run_at", table_name="jobs")


def downgrade() -> None:
    op.create_index(
        "ix_jobs_lane_state_concurrency_key_run_at",
        "jobs",
        ["lane", "state", "concurrency_key", "run_at"],
        unique=False,
    )
    op.create_index("ix_jobs_lane_state_run_at", "jobs", ["lane", "state", "run_at"], unique=False)
    op.drop_index("ix_jobs_lane_state_key_run_at_id", table_name="jobs")
    op.drop_index("ix_jobs_lane_state_run_at_id", table_name="jobs")
