"""A keyed claim's lease of its chains' jobs on PostgreSQL: the worker's CPU per leased job, for the two
statements platpay has for it, side by side in one run.

A benchmark, not a test: it prints figures and never fails on them.

`jobs.repository._lease_chains` leases each chain's jobs under the chain's own token: one lean statement of
one text whatever the number of jobs (on PostgreSQL `UPDATE jobs … FROM unnest(:ids, :tokens)`). The
statement it replaced, kept here (`_orm_lease`) to be measured beside it, was built per claim by the ORM: an
`IN` list and a `CASE` of one branch per job, a new statement text for every number of jobs. Both run here on the same PostgreSQL
database (a throwaway `platpay_bench_lease_<random>`, dropped afterwards): N queued jobs of one key, leased
as chains of 64 (a webhook lane's claim with its default batch size), the jobs set back to QUEUED between
leases, the two statements alternating, `--rounds` leases of each after warm-ups. Printed: CPU µs of this
process per leased job (time.process_time over the lease's transaction), median and spread.

The ORM statement is measured with the same N every time, so SQLAlchemy's compiled-statement cache and
asyncpg's prepared statements are warm for it: a served claim, whose N varies, pays more than shown here.

    .venv/bin/python bench/claim_lease.py [--jobs 512] [--rounds 15]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import DEFAULT_PG_ADMIN, machine_summary, pg_database, pg_reachable
from sqlalchemy import case, update
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import lean, migrate
from platpay.db.database import Database
from platpay.jobs import repository
from platpay.jobs.models import JobRow
from platpay.kit import clock
from platpay.kit.ids import new_id

CHAIN = 64


async def _orm_lease(
    session: AsyncSession, chains: list[list[str]], *, now: datetime, lease_until: datetime, token: str
) -> list[JobRow]:
    """The lease `_lease_chains` ran before (2279553): the ORM's UPDATE with an IN list and a CASE."""
    by_id: dict[str, str] = {}
    for index, ids in enumerate(chains):
        chain_token = str(uuid.uuid5(uuid.UUID(token), str(index)))
        by_id.update((job_id, chain_token) for job_id in ids)
    result = await session.execute(
        update(JobRow)
        .where(JobRow.id.in_(list(by_id)), repository._claimable(now))
        .values(
            state="RUNNING",
            lease_until=lease_until,
            lease_token=case(by_id, value=JobRow.id),
            attempts=JobRow.attempts + 1,
            updated_at=now,
        )
        .returning(*repository._JOB_COLUMNS)
        .execution_options(synchronize_session=False)
    )
    return [lean.snapshot(JobRow, repository._JOB_KEYS, found) for found in result.all()]


async def _measure(url: str, jobs: int, rounds: int) -> dict[str, list[float]]:
    db = Database(url, pool_size=2)
    try:
        now = clock.real_now()
        ids = [new_id("Job") for _ in range(jobs)]
        async with db.transaction() as session:
            for job_id in ids:
                session.add(
                    JobRow(id=job_id, kind="webhook.deliver", lane="webhooks", concurrency_key="endpoint",
                           tenant_id=None, payload={"deliveryId": new_id("WebhookDelivery")}, state="QUEUED",
                           run_at=now, attempts=0, max_attempts=5, created_at=now, updated_at=now)
                )  # fmt: skip
        chains = [ids[start : start + CHAIN] for start in range(0, jobs, CHAIN)]

        async def lease(lean_statement: bool) -> float:
            async with db.transaction() as session:
                await session.execute(
                    update(JobRow).values(state="QUEUED", lease_until=None, lease_token=None)
                )
            started = time.process_time()
            async with db.transaction() as session:
                now, token = clock.real_now(), str(uuid.uuid4())
                until = now + timedelta(seconds=30)
                if lean_statement:
                    leased = await repository._lease_chains(
                        session, chains, now=now, lease_until=until, token=token
                    )
                else:
                    leased = await _orm_lease(session, chains, now=now, lease_until=until, token=token)
            spent = time.process_time() - started
            assert len(leased) == jobs, (len(leased), jobs)
            return spent * 1e6 / jobs

        results: dict[str, list[float]] = {"ORM, IN + CASE": [], "lean, unnest arrays": []}
        for _ in range(3):  # warm-up: compiled, prepared, planned
            await lease(False)
            await lease(True)
        for _ in range(rounds):
            results["ORM, IN + CASE"].append(await lease(False))
            results["lean, unnest arrays"].append(await lease(True))
        return results
    finally:
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=512, help="jobs leased at once (chains of 64)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    args = parser.parse_args()
    problem = pg_reachable(args.pg_admin_url)
    if problem is not None:
        print(f"PostgreSQL not reachable ({problem}): nothing to measure")
        return
    print(machine_summary())
    with pg_database(args.pg_admin_url, prefix="platpay_bench_lease") as url:
        migrate.upgrade(url)
        results = asyncio.run(_measure(url, args.jobs, args.rounds))
    print(f"\n{args.jobs} jobs leased as chains of {CHAIN}, {args.rounds} leases of each, alternating")
    for name, values in results.items():
        print(
            f"  {name:22s} {statistics.median(values):7.1f} µs CPU per leased job "
            f"(min {min(values):.1f}, max {max(values):.1f})"
        )


if __name__ == "__main__":
    main()
