"""`advance` over a sandbox tenant with N due jobs: jobs/s until the call returns, SQLite and PostgreSQL.

A benchmark, not a test: it prints figures and never fails on them.

For each database (a fresh SQLite file; a fresh PostgreSQL database platpay_bench_<random>, dropped
afterwards), in this process, with the real code paths: create a platform, enqueue N `system.noop` jobs of
its sandbox tenant due in one hour on its clock (jobs.service.enqueue, B per transaction), then time
clocks.service.advance(seconds=3601), which is what POST /sandbox/clock/advance runs: it moves the clock,
recomputes run_at of the tenant's jobs (one UPDATE) and runs every due job through the runner's claims and
leases before it returns. jobs/s = N / its duration. `--steps K` spreads the due times over K distinct
instants (the advance then stops at each).

The runner's no-op throughput (unaffected tenants) is bench/jobs_throughput.py.

    .venv/bin/python bench/sandbox_clock.py                      # 10000 jobs, SQLite and PostgreSQL
    .venv/bin/python bench/sandbox_clock.py --jobs 2000 --backends sqlite --steps 100
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import secrets
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import DEFAULT_PG_ADMIN, machine_summary, pg_database, pg_reachable

NOOP = "system.noop"


async def bench(name: str, url: str, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    from sqlalchemy import func, select

    from platpay import domains
    from platpay.clocks import service as clocks_service
    from platpay.config import Settings
    from platpay.db import migrate
    from platpay.db.database import Database
    from platpay.jobs import service as jobs_service
    from platpay.jobs.models import JobRow
    from platpay.kit import clock
    from platpay.logging import configure as configure_logging
    from platpay.platforms import service as platforms_service
    from platpay.tenants import service as tenants_service

    settings = Settings(
        database_url=url,
        var_dir=workdir / "var",
        master_key=base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode(),
        log_level="WARNING",
    )
    configure_logging(settings.log_level, json_output=True)
    await asyncio.to_thread(migrate.upgrade, url)
    domains.start(settings)
    db = Database(url, pool_size=settings.db_pool_size)
    try:
        async with db.transaction() as session:
            created = await platforms_service.create_platform(
                session, name="Bench clock", is_regulated=False, currency_codes=None, uma_domain=None,
                settings=settings,
            )  # fmt: skip
        async with db.read() as session:
            tenant = await tenants_service.load_of_platform(
                session, platform_id=created.platform_id, environment="sandbox"
            )
        tenant_id = tenant.id
        start = clock.real_now()
        started = time.perf_counter()
        for first in range(0, args.jobs, args.batch):
            async with db.transaction() as session:
                for index in range(first, min(first + args.batch, args.jobs)):
                    due = start + timedelta(hours=1, seconds=(index % args.steps) if args.steps > 1 else 0)
                    await jobs_service.enqueue(session, NOOP, {}, tenant_id=tenant_id, run_at=due)
        enqueue_s = time.perf_counter() - started
        started = time.perf_counter()
        cpu = time.process_time()
        moved = await clocks_service.advance(db, settings, tenant_id=tenant_id, seconds=3600 + args.steps + 1)
        seconds = time.perf_counter() - started
        cpu = time.process_time() - cpu
        async with db.read() as session:
            done = await session.scalar(
                select(func.count()).where(JobRow.kind == NOOP, JobRow.state == "DONE")
            )
        print(
            f"  {name}: advance over {args.jobs} due jobs ({args.steps} due instant(s)) returned in "
            f"{seconds:.2f} s -> {args.jobs / seconds:,.0f} jobs/s (ran {moved.jobs_run}, DONE {done}; "
            f"this process's CPU {cpu * 1e6 / args.jobs:,.0f} µs/job; enqueue {args.jobs / enqueue_s:,.0f}/s)",
            flush=True,
        )
        return {"backend": name, "seconds": seconds, "jobs_per_s": args.jobs / seconds, "done": done}
    finally:
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=500, help="jobs enqueued per transaction")
    parser.add_argument("--steps", type=int, default=1, help="distinct due instants (one second apart)")
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    print(machine_summary(), flush=True)
    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    with tempfile.TemporaryDirectory(prefix="platpay-bench-clock-") as tmp:
        workdir = Path(tmp)
        if "sqlite" in backends:
            asyncio.run(bench("sqlite", f"sqlite+aiosqlite:///{workdir / 'bench.db'}", workdir, args))
        if "postgres" in backends:
            reason = pg_reachable(DEFAULT_PG_ADMIN)
            if reason is not None:
                print(f"  postgres: skipped ({reason})")
            else:
                with pg_database() as url:
                    asyncio.run(bench("postgres", url, workdir, args))


if __name__ == "__main__":
    main()
