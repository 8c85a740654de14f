"""Job runner throughput (no-op jobs/s) and webhook deliveries/s, on SQLite and on PostgreSQL.

A benchmark, not a test: it prints figures and never fails on them.

For each database (a fresh SQLite file in a temporary directory; a fresh PostgreSQL database
platpay_bench_<random>, dropped afterwards), in this process, with the real code paths:

  no-op jobs   enqueue N `system.noop` jobs with jobs.service.enqueue (B per Database.transaction()),
               then start one JobRunner (run_forever, the loop `platpay serve`/`platpay worker` run) and time
               it until all N are done: jobs/s = N / drain time.
  webhooks     create a platform, point its sandbox webhook endpoint at a local receiver (bench/receiver.py,
               a separate uvicorn process), emit N events with events.service.emit (B per transaction), then
               start one JobRunner and time it until all N deliveries are DELIVERED: each delivery is a
               claimed job that reads the delivery, signs the envelope (ECDSA P-256), POSTs it over HTTP
               and records the attempt.

The receiver is measured first, alone (wrk) and through httpx (the client deliveries use) at the runner's
concurrency, to show it is not the bottleneck; also the cost of one envelope signature.

    .venv/bin/python bench/jobs_throughput.py                      # 5000 no-op jobs, 2000 webhooks
    .venv/bin/python bench/jobs_throughput.py --jobs 20000 --events 5000 --backends postgres
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    DEFAULT_PG_ADMIN,
    ROOT,
    bench_env,
    child_setup,
    free_port,
    machine_summary,
    pg_database,
    pg_reachable,
    set_child_niceness,
    stop,
    wait_http,
)

NOOP = "system.noop"
EVENT_TYPE = "OUTGOING_PAYMENT.COMPLETED"


@dataclass
class BackendResult:
    backend: str
    jobs: int = 0
    enqueue_per_s: float = 0.0
    jobs_per_s: float = 0.0
    cpu_us_per_job: float = 0.0
    events: int = 0
    emit_per_s: float = 0.0
    deliveries_per_s: float = 0.0
    cpu_us_per_delivery: float = 0.0
    delivered: int = 0
    receiver_count: int = 0
    notes: list[str] = field(default_factory=list)


def _payload(i: int) -> dict[str, Any]:
    """A resource shaped like a transaction, ~700 bytes of JSON."""
    return {
        "id": f"Transaction:0195{i:012d}-0000-7000-8000-000000000000",
        "status": "COMPLETED",
        "type": "OUTGOING",
        "source": {"accountId": "InternalAccount:019542f5-b3e7-1d02-0000-000000000001", "currency": "USD"},
        "destination": {
            "accountId": "ExternalAccount:019542f5-b3e7-1d02-0000-000000000002",
            "currency": "EUR",
        },
        "sentAmount": {"amount": 12_345 + i, "currency": {"code": "USD", "symbol": "$", "decimals": 2}},
        "receivedAmount": {"amount": 11_234 + i, "currency": {"code": "EUR", "symbol": "€", "decimals": 2}},
        "exchangeRate": "0.91",
        "fees": {"amount": 100, "currency": {"code": "USD", "symbol": "$", "decimals": 2}},
        "customerId": "Customer:019542f5-b3e7-1d02-0000-000000000003",
        "platformCustomerId": f"customer-{i}",
        "description": "benchmark payment",
        "createdAt": "2025-10-13T12:00:00.000Z",
        "updatedAt": "2025-10-13T12:00:01.000Z",
        "settledAt": "2025-10-13T12:00:01.000Z",
    }


async def _wait_processed(runner: Any, target: int, timeout: float) -> tuple[float, float]:
    """Start `runner.run_forever()`; return (seconds, CPU seconds of this process) until it has finished
    `target` jobs."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    task = asyncio.create_task(runner.run_forever())
    try:
        while runner.processed < target:
            if task.done():
                task.result()
                raise RuntimeError("the runner stopped early")
            if time.perf_counter() - started > timeout:
                raise TimeoutError(f"only {runner.processed}/{target} jobs finished within {timeout:g}s")
            await asyncio.sleep(0.002)
        return time.perf_counter() - started, time.process_time() - cpu_started
    finally:
        runner.stop()
        await asyncio.wait_for(task, timeout=60)


async def _receiver_alone(url: str, *, requests: int, concurrency: int) -> float:
    """POSTs/s that httpx (the client webhook delivery uses) gets from the receiver, nothing else."""
    import httpx

    body = json.dumps({"id": "Webhook:x", "type": EVENT_TYPE, "data": _payload(0)}).encode()
    sem = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(
        trust_env=False, limits=httpx.Limits(max_keepalive_connections=20)
    ) as client:

        async def one() -> None:
            async with sem:
                response = await client.post(url, content=body, headers={"Content-Type": "application/json"})
                response.raise_for_status()

        await asyncio.gather(*(one() for _ in range(min(200, requests))))
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(requests)))
        return requests / (time.perf_counter() - started)


def _receiver_wrk(url: str, workdir: Path, *, connections: int) -> float | None:
    """POSTs/s the receiver answers to wrk (3 s), or None without wrk: the receiver's own ceiling."""
    wrk = shutil.which("wrk")
    if wrk is None:
        return None
    body = json.dumps({"id": "Webhook:x", "type": EVENT_TYPE, "data": _payload(0)})
    lua = workdir / "post.lua"
    lua.write_text(
        'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\n'
        f"wrk.body = {json.dumps(body)}\n",
        "utf-8",
    )
    result = subprocess.run(
        [wrk, "-t1", f"-c{connections}", "-d3s", "-s", str(lua), url],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        preexec_fn=child_setup,
    )
    for line in result.stdout.splitlines():
        if line.startswith("Requests/sec:"):
            return float(line.split()[1])
    return None


def _signature_cost_us(count: int = 500) -> float:
    from platpay.kit.crypto import p256
    from platpay.kit.crypto.webhook_signing import signature_header

    key = p256.generate_private_key()
    body = json.dumps({"id": "Webhook:x", "type": EVENT_TYPE, "data": _payload(0)}).encode()
    started = time.process_time()
    for _ in range(count):
        signature_header(key, body)
    return (time.process_time() - started) * 1e6 / count


async def bench_backend(
    name: str, url: str, workdir: Path, receiver_url: str, args: argparse.Namespace
) -> BackendResult:
    from sqlalchemy import func, select

    from platpay import domains
    from platpay.auth import service as auth_service
    from platpay.config import Settings
    from platpay.db.database import Database
    from platpay.events import repository as events_repository
    from platpay.events import service as events_service
    from platpay.jobs import service as jobs_service
    from platpay.jobs.models import JobRow
    from platpay.jobs.runner import JobRunner
    from platpay.logging import configure as configure_logging
    from platpay.platforms import service as platforms_service

    overrides: dict[str, Any] = {
        "database_url": url,
        "var_dir": workdir / "var",
        "master_key": base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode(),
        "log_level": "WARNING",
    }
    if args.concurrency:
        overrides["job_concurrency"] = args.concurrency
    if args.claim_batch:
        overrides["job_batch_size"] = args.claim_batch
    settings = Settings(**overrides)
    configure_logging(settings.log_level, json_output=True)
    domains.start(settings)
    result = BackendResult(name)
    db = Database(url, pool_size=settings.db_pool_size)
    try:
        # ---- no-op jobs
        result.jobs = args.jobs
        started = time.perf_counter()
        for first in range(0, args.jobs, args.batch):
            async with db.transaction() as session:
                for _ in range(min(args.batch, args.jobs - first)):
                    await jobs_service.enqueue(session, NOOP, {})
        result.enqueue_per_s = args.jobs / (time.perf_counter() - started)
        seconds, cpu = await _wait_processed(
            JobRunner(db, settings, name="bench-noop"), args.jobs, args.timeout
        )
        result.jobs_per_s = args.jobs / seconds
        result.cpu_us_per_job = cpu * 1e6 / args.jobs
        async with db.read() as session:
            done = await session.scalar(
                select(func.count()).where(JobRow.kind == NOOP, JobRow.state == "DONE")
            )
        if done != args.jobs:
            result.notes.append(f"{done} of {args.jobs} no-op jobs DONE")
        print(
            f"  {name}: {args.jobs} no-op jobs drained in {seconds:.2f} s -> {result.jobs_per_s:,.0f} jobs/s "
            f"(enqueue {result.enqueue_per_s:,.0f}/s; runner CPU {result.cpu_us_per_job:,.0f} µs/job)",
            flush=True,
        )

        # ---- webhook deliveries
        async with db.transaction() as session:
            created = await platforms_service.create_platform(
                session,
                name=f"Bench {name}",
                is_regulated=False,
                currency_codes=None,
                uma_domain=None,
                settings=settings,
            )
        client_id, secret = created.credentials["sandbox"]
        async with db.read() as session:
            principal = await auth_service.authenticate(session, client_id=client_id, client_secret=secret)
        assert principal is not None
        async with db.transaction() as session:
            await platforms_service.update_config(
                session,
                tenant=principal.tenant,
                webhook_endpoint=receiver_url,
                settings=settings,
            )
        await JobRunner(db, settings, name="bench-drain").run_until_idle(timeout=60)  # the TEST event
        result.events = args.events
        started = time.perf_counter()
        for first in range(0, args.events, args.batch):
            async with db.transaction() as session:
                for i in range(first, min(first + args.batch, args.events)):
                    await events_service.emit(
                        session, tenant_id=principal.tenant.id, type=EVENT_TYPE, resource=_payload(i)
                    )
        result.emit_per_s = args.events / (time.perf_counter() - started)
        seconds, cpu = await _wait_processed(
            JobRunner(db, settings, name="bench-hooks"), args.events, args.timeout
        )
        result.deliveries_per_s = args.events / seconds
        result.cpu_us_per_delivery = cpu * 1e6 / args.events
        async with db.read() as session:
            counts = await events_repository.delivery_counts(session)
        result.delivered = counts.get("DELIVERED", 0) - 1  # minus the TEST event
        if result.delivered != args.events:
            result.notes.append(f"deliveries by status: {counts}")
        print(
            f"  {name}: {args.events} webhooks delivered in {seconds:.2f} s -> {result.deliveries_per_s:,.0f}/s "
            f"(emit {result.emit_per_s:,.0f} events/s; runner CPU {result.cpu_us_per_delivery:,.0f} µs/delivery)",
            flush=True,
        )
    finally:
        await db.dispose()
    return result


def _receiver_count(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=5) as response:
        return int(json.loads(response.read())["count"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=5000, help="no-op jobs per database")
    parser.add_argument("--events", type=int, default=2000, help="webhook events per database")
    parser.add_argument("--batch", type=int, default=500, help="jobs or events enqueued per transaction")
    parser.add_argument(
        "--backends", default="sqlite,postgres", help="comma-separated subset of sqlite,postgres"
    )
    parser.add_argument(
        "--concurrency", type=int, help="PLATPAY_JOB_CONCURRENCY for the runner (default: settings)"
    )
    parser.add_argument(
        "--claim-batch", type=int, help="PLATPAY_JOB_BATCH_SIZE for the runner (default: settings)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="give up a drain after this many seconds"
    )
    parser.add_argument(
        "--pg-admin-url", default=DEFAULT_PG_ADMIN, help="PostgreSQL maintenance database URL"
    )
    parser.add_argument(
        "--nice", type=int, default=0, help="niceness delta for this process and the receiver (root)"
    )
    parser.add_argument("--json-out", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()

    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(backends) - {"sqlite", "postgres"}:
        sys.exit("backends: sqlite, postgres")
    if args.nice:
        os.nice(args.nice)
        set_child_niceness(0)  # the receiver inherits our niceness
    if "postgres" in backends and (problem := pg_reachable(args.pg_admin_url)):
        print(f"PostgreSQL unreachable at {args.pg_admin_url} ({problem}): skipping postgres")
        backends.remove("postgres")

    from platpay.config import get_settings
    from platpay.db import migrate

    defaults = get_settings()
    concurrency = args.concurrency or defaults.job_concurrency
    workdir = Path(tempfile.mkdtemp(prefix="platpay-bench-jobs-"))
    port = free_port()
    receiver_url = f"http://127.0.0.1:{port}/webhooks"
    receiver = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("receiver.py")), "--port", str(port)],
        env=bench_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=child_setup,
    )
    results: list[BackendResult] = []
    try:
        wait_http(f"http://127.0.0.1:{port}/count", proc=receiver)
        print(f"machine: {machine_summary()}")
        print(
            f"runner settings: job_concurrency={concurrency}, "
            f"job_batch_size={args.claim_batch or defaults.job_batch_size}, "
            f"job_poll_seconds={defaults.job_poll_seconds}; enqueue batch {args.batch}"
        )
        ceiling = _receiver_wrk(receiver_url, workdir, connections=concurrency)
        alone = asyncio.run(_receiver_alone(receiver_url, requests=3000, concurrency=concurrency))
        signature = _signature_cost_us()
        print(
            f"receiver alone (wrk, {concurrency} connections): "
            f"{'-' if ceiling is None else format(ceiling, ',.0f')} POST/s; through httpx (the client "
            f"deliveries use, {concurrency} concurrent): {alone:,.0f} POST/s; one envelope signature "
            f"{signature:.0f} µs"
        )
        for name in backends:
            before = _receiver_count(port)
            if name == "sqlite":
                url = f"sqlite+aiosqlite:///{workdir / 'jobs.db'}"
                migrate.upgrade(url)
                result = asyncio.run(bench_backend(name, url, workdir, receiver_url, args))
            else:
                with pg_database(args.pg_admin_url) as url:
                    migrate.upgrade(url)
                    result = asyncio.run(bench_backend(name, url, workdir, receiver_url, args))
            result.receiver_count = _receiver_count(port) - before - 1  # minus the TEST event
            results.append(result)
    finally:
        stop(receiver)
        shutil.rmtree(workdir, ignore_errors=True)

    print()
    header = (
        f"{'database':<10} {'no-op jobs/s':>13} {'CPU µs/job':>11} {'enqueue/s':>10} {'webhooks/s':>11} "
        f"{'CPU µs/hook':>12} {'emit/s':>8} {'delivered':>10} {'received':>9}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        print(
            f"{r.backend:<10} {r.jobs_per_s:>13,.0f} {r.cpu_us_per_job:>11,.0f} {r.enqueue_per_s:>10,.0f} "
            f"{r.deliveries_per_s:>11,.0f} {r.cpu_us_per_delivery:>12,.0f} {r.emit_per_s:>8,.0f} "
            f"{r.delivered:>10} {r.receiver_count:>9}"
        )
        for note in r.notes:
            print(f"  note ({r.backend}): {note}")
    print(
        f"\n{args.jobs} no-op jobs and {args.events} webhook events per database; one JobRunner, "
        f"{concurrency} jobs at once. receiver alone (wrk): "
        f"{'-' if ceiling is None else format(ceiling, ',.0f')} POST/s; via httpx: {alone:,.0f} POST/s.\n"
        "CPU µs = CPU time of this process (the runner; the receiver is another process) per job or delivery."
    )
    if args.json_out:
        args.json_out.write_text(
            json.dumps(
                {
                    "machine": machine_summary(),
                    "job_concurrency": concurrency,
                    "receiver_wrk_post_per_s": round(ceiling, 1) if ceiling is not None else None,
                    "receiver_via_httpx_post_per_s": round(alone, 1),
                    "signature_us": round(signature, 1),
                    "results": [r.__dict__ for r in results],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
