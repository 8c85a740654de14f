"""Enqueue durable jobs inside the caller's business transaction."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import get_settings
from platpay.jobs import repository
from platpay.kit import clock
from platpay.kit.ids import new_id

ENQUEUED_FLAG = "platpay_jobs_enqueued"


async def enqueue(
    session: AsyncSession,
    kind: str,
    payload: dict[str, Any],
    *,
    tenant_id: str | None = None,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
    max_attempts: int | None = None,
) -> str:
    """Write a job row in the current transaction; it runs only if that transaction commits."""
    now = clock.now()
    job_id = new_id("Task")
    await repository.insert(
        session,
        {
            "id": job_id,
            "kind": kind,
            "tenant_id": tenant_id,
            "payload": payload,
            "state": repository.QUEUED,
            "run_at": run_at or now,
            "attempts": 0,
            "max_attempts": max_attempts or get_settings().job_max_attempts,
            "lease_until": None,
            "lease_token": None,
            "dedupe_key": dedupe_key,
            "last_error": None,
            "created_at": now,
            "updated_at": now,
            "finished_at": None,
        },
    )
    session.info[ENQUEUED_FLAG] = True
    return job_id
