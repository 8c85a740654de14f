"""The bulk customer import job: one chunk of rows per run, rescheduled at once while rows remain."""

from __future__ import annotations

import structlog

from platpay.customers.bulk import service as bulk
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobContext, LeaseLost
from platpay.kit import clock

log = structlog.get_logger("platpay.customers.bulk")


@handler(bulk.IMPORT_JOB)
async def import_customers_chunk(ctx: JobContext) -> None:
    """Import the next chunk; its customers, row errors, progress and checkpoint commit with this run's
    completion (or rescheduling), so a crash or a lost lease never creates a customer twice.

    A failing chunk (the database briefly away; a platformCustomerId taken by a concurrent POST /customers
    between the check and the insert, which the next run reports as that row's error) is retried with
    backoff; after IMPORT_MAX_ATTEMPTS failed runs the import is marked FAILED.
    """
    tenant_id, job_id = ctx.payload["tenantId"], ctx.payload["jobId"]
    try:
        async with ctx.transaction() as session:
            chunk = await bulk.import_next_chunk(
                session,
                tenant_id=tenant_id,
                job_id=job_id,
                max_rows=ctx.settings.bulk_import_chunk_rows,
                settings=ctx.settings,
            )
            if chunk.more:
                ctx.retry_at(clock.now(), reason="next chunk")
    except LeaseLost:
        raise
    except Exception as error:
        if ctx.attempt < bulk.IMPORT_MAX_ATTEMPTS:
            raise
        async with ctx.transaction() as session:
            await bulk.fail_import(
                session,
                tenant_id=tenant_id,
                job_id=job_id,
                reason=f"a chunk failed {ctx.attempt} times; last error: {type(error).__name__}",
            )
        return
    if chunk.refresh_statistics:
        # Its own short transaction, after the chunk committed: an ANALYZE that fails costs nothing.
        try:
            async with ctx.db.transaction() as session:
                await bulk.refresh_statistics(session)
        except Exception as error:
            log.warning("customers.bulk_import.analyze_failed", job_id=job_id, error=repr(error))
