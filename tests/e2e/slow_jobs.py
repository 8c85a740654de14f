"""A job handler that real worker processes load with PLATPAY_JOB_PLUGINS=tests.e2e.slow_jobs.

`e2e.effect` records every invocation in an attempt log (its own committed transaction, before any work,
so a crashed attempt leaves its trace), sleeps `payload["sleep"]` seconds, then writes its one effect row
inside `ctx.transaction()`, atomically with the job's completion. The tables belong to the test, which
creates them with `CREATE_TABLES` outside the migrations; they are deliberately not unique on job_id so a
double execution shows up as two rows instead of a constraint error.
"""

from __future__ import annotations

import asyncio
import os

from sqlalchemy import text

from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext

KIND = "e2e.effect"

CREATE_TABLES = (
    "CREATE TABLE e2e_job_attempts (id BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, pid INTEGER NOT NULL, "
    "attempt INTEGER NOT NULL, started_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())",
    "CREATE TABLE e2e_job_effects (id BIGSERIAL PRIMARY KEY, job_id TEXT NOT NULL, pid INTEGER NOT NULL, "
    "done_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())",
)


@handler(KIND)
async def record_effect(ctx: JobContext) -> None:
    async with ctx.db.transaction() as session:
        await session.execute(
            text("INSERT INTO e2e_job_attempts (job_id, pid, attempt) VALUES (:job_id, :pid, :attempt)"),
            {"job_id": ctx.job_id, "pid": os.getpid(), "attempt": ctx.attempt},
        )
    await asyncio.sleep(float(ctx.payload.get("sleep", 0)))
    async with ctx.transaction() as session:
        await session.execute(
            text("INSERT INTO e2e_job_effects (job_id, pid) VALUES (:job_id, :pid)"),
            {"job_id": ctx.job_id, "pid": os.getpid()},
        )
