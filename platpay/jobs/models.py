from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from platpay.db.base import Base, check_in
from platpay.db.types import IdColumn, JsonType, UtcDateTime
from platpay.jobs.state import JobState


class JobRow(Base):
    """A durable unit of background work, written in the business transaction that needs it.

    state: QUEUED (due at run_at) -> RUNNING (lease_until, lease_token) -> DONE | DEAD; a RUNNING job whose
    lease expired is claimable again, which is how a crashed worker's job gets retried.

    lane: which of the runner's lanes runs it; each lane has capacity of its own, so the jobs of one lane
    never wait behind another's (webhook deliveries cannot hold up settlement). concurrency_key: in a lane
    with a per-key cap, at most that many jobs sharing the key run at once, across every worker; the lane
    may also hold a key's jobs back altogether (a failing webhook endpoint's backlog, but for its probe).
    """

    __tablename__ = "jobs"
    __table_args__ = (
        # Each ends with the id: a key's oldest due jobs (ORDER BY run_at, id: jobs queued together share a
        # run_at) are then a range of either index read in its order, never a sort of the lane's backlog.
        Index("ix_jobs_lane_state_run_at_id", "lane", "state", "run_at", "id"),
        Index("ix_jobs_state_lease_until", "state", "lease_until"),
        Index("ix_jobs_lane_state_key_run_at_id", "lane", "state", "concurrency_key", "run_at", "id"),
        Index("ix_jobs_dedupe_key", "dedupe_key", unique=True),
        Index("ix_jobs_tenant_id_state_due_at", "tenant_id", "state", "due_at"),
        # Retention's oldest finished jobs (repository.prune_finished); queued and running ones stay out of it.
        Index(
            "ix_jobs_finished",
            "state",
            "finished_at",
            sqlite_where=text("finished_at IS NOT NULL"),
            postgresql_where=text("finished_at IS NOT NULL"),
        ),
        check_in("state", JobState),
    )

    id: Mapped[str] = mapped_column(IdColumn(), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    lane: Mapped[str] = mapped_column(String(16), default="default")
    concurrency_key: Mapped[str | None] = mapped_column(String(64))
    tenant_id: Mapped[str | None] = mapped_column(IdColumn())
    payload: Mapped[dict[str, Any]] = mapped_column(JsonType)
    state: Mapped[str] = mapped_column(String(16))
    run_at: Mapped[datetime] = mapped_column(UtcDateTime())  # on the process clock: what claims compare
    # A tenant job of the default lane: when it is due on its tenant's clock (kit/clock.py). When a sandbox
    # tenant's clock moves, run_at is recomputed from it (clocks.service); None: on real time only.
    due_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    attempts: Mapped[int] = mapped_column(default=0)  # claims so far, crashed ones included
    max_attempts: Mapped[int]
    lease_until: Mapped[datetime | None] = mapped_column(UtcDateTime())
    lease_token: Mapped[str | None] = mapped_column(String(36))
    dedupe_key: Mapped[str | None] = mapped_column(String(200))  # at most one job per key, ever
    last_error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime())
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
