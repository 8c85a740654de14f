"""Webhook deliveries/s WHILE the money path runs, next to the events it produces (issue 33).

A benchmark, not a test: it prints figures and never fails on them.

For each database (a fresh PostgreSQL database platpay_bench_hook_<random>, dropped afterwards; a fresh
SQLite file), all on 127.0.0.1 in a temporary directory:

  - a fast receiver (bench/receiver.py, its own uvicorn process) answering every POST 200 at once;
  - PostgreSQL: `platpay serve --no-worker` plus `--workers N` `platpay worker` processes; SQLite: `platpay
    serve` with its embedded job runner (SQLite has one writer: the deployment it supports);
  - N customers seeded through the API (funded USD accounts and external accounts), then the tenant's
    webhook endpoint pointed at the receiver (the seeding's own events are not delivered);
  - each round: first `--prefill` s of POST /transfer-out through wrk (a fresh Idempotency-Key each, a
    random customer) with no job runner (PostgreSQL: the workers stopped; SQLite: serve restarted without
    its runner), so that a backlog of deliveries (and settlement steps) waits; then the runners on and the
    same money load for `--duration` s: the runners deliver the backlog and every new event (PENDING,
    BALANCE_UPDATED, then COMPLETED ... as settlement runs) while transfers run. Without that backlog the
    runners would only ever deliver what the (loaded, slow) money path produced, and deliveries/s would
    equal events/s whatever the runners could do.

Printed per round: transfers/s and their p99 (and the same with no runner, the backlog's making: what
delivering beside them costs the money path); events produced/s (delivery rows created per second of load);
deliveries/s (POSTs the receiver got) over the whole load and over the 2 s sampling intervals that ended with
a backlog still waiting (the runners' capacity while transfers run, never starved); the ratio capacity / events (the
target: >= 1.2), and the same ratio had settlement kept up (when the settlement backlog grows, the events its
late steps owe are not produced yet: at least two per transfer it fell behind by, added to the events); the backlog (PENDING deliveries) at the start and the end of the load and its trend
(least-squares slope, per s: > 0 grows without bound); then a drain of at most `--drain` s with no money load
(deliveries/s alone, time to empty). CPU per delivery of the job runners (PostgreSQL: the worker processes,
settlement steps included; SQLite: the serve process, which also served the transfers) and of PostgreSQL,
and the machine's other load in cores (other people's work) during the load.

Before/after: run the same command with PYTHONPATH=/tmp/pp-<commit> (an extracted tree) for the old code,
rounds interleaved by the caller.

    .venv/bin/python bench/webhook_throughput.py                          # both, 30 s load, 2 workers
    .venv/bin/python bench/webhook_throughput.py --backends postgres --duration 60 --rounds 3 --wait-quiet 20
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import secrets
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    BIN,
    DEFAULT_PG_ADMIN,
    ROOT,
    bench_env,
    child_setup,
    free_port,
    machine_summary,
    pg_cpu_seconds,
    pg_database,
    pg_reachable,
    stop,
    system_busy_seconds,
    tree_cpu_seconds,
    wait_http,
    wait_until_quiet,
)
from http_config import ensure_wrk, parse_wrk, run_wrk, start_platpay
from transfer_out import BASE_PATH, seed, write_wrk_lua

COUNTS = "SELECT count(*), count(*) FILTER (WHERE status = 'PENDING') FROM webhook_deliveries"
COUNTS_SQLITE = "SELECT count(*), coalesce(sum(status = 'PENDING'), 0) FROM webhook_deliveries"
# The settlement backlog: default-lane jobs (transfer steps) not finished yet, due or scheduled.
UNSETTLED = "SELECT count(*) FROM jobs WHERE lane = 'default' AND state IN ('QUEUED', 'RUNNING')"


class Counter:
    """Delivery rows created so far and how many are PENDING, read straight from the database (PostgreSQL:
    over one connection kept open, so a machine short of connections does not stop the sampling)."""

    def __init__(self, database_url: str) -> None:
        self.url = database_url
        self.sqlite = database_url.startswith("sqlite")
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.conn: Any = None

    def read(self) -> tuple[int, int]:
        total, pending, _ = self.read_all()
        return total, pending

    def read_all(self) -> tuple[int, int, int]:
        """(delivery rows, PENDING deliveries, unfinished default-lane jobs)."""
        with self.lock:
            if self.sqlite:
                path = self.url.split("///", 1)[1]
                conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
                try:
                    total, pending = conn.execute(COUNTS_SQLITE).fetchone()
                    (unsettled,) = conn.execute(UNSETTLED).fetchone()
                finally:
                    conn.close()
                return int(total), int(pending), int(unsettled)
            import asyncpg

            if self.loop is None:
                self.loop = asyncio.new_event_loop()
            for attempt in range(30):
                try:
                    if self.conn is None:
                        dsn = self.url.replace("postgresql+asyncpg://", "postgresql://")
                        self.conn = self.loop.run_until_complete(asyncpg.connect(dsn, timeout=10))
                    row = self.loop.run_until_complete(self.conn.fetchrow(COUNTS))
                    unsettled = self.loop.run_until_complete(self.conn.fetchval(UNSETTLED))
                    return int(row[0]), int(row[1]), int(unsettled)
                except (OSError, asyncpg.PostgresError):
                    self.conn = None
                    if attempt == 29:
                        raise
                    time.sleep(1.0)
            raise AssertionError("unreachable")

    def close(self) -> None:
        if self.loop is not None:
            if self.conn is not None:
                self.loop.run_until_complete(self.conn.close())
            self.loop.close()


def received(port: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/count", timeout=10) as response:
        return int(json.loads(response.read())["count"])


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (t, y)."""
    if len(points) < 2:
        return 0.0
    mean_t = statistics.fmean(t for t, _ in points)
    mean_y = statistics.fmean(y for _, y in points)
    den = sum((t - mean_t) ** 2 for t, _ in points)
    return sum((t - mean_t) * (y - mean_y) for t, y in points) / den if den else 0.0


def wait_drained(counter: Counter, limit: float) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if counter.read()[1] == 0:
            return
        time.sleep(1.0)


def worker_lanes(args: argparse.Namespace) -> list[str]:
    """The `--lanes` of each `platpay worker` process ("": every lane): `--workers` of `--worker-lanes`,
    then `--webhook-workers` of `webhooks` only."""
    return [args.worker_lanes] * args.workers + ["webhooks"] * args.webhook_workers


class Deployment:
    """The server and its job runners; the runners switched off while a backlog is built (PostgreSQL: the
    `platpay worker` processes stopped; SQLite: `serve` restarted without its embedded runner)."""

    def __init__(self, name: str, url: str, args: argparse.Namespace, workdir: Path) -> None:
        self.name, self.url, self.args, self.workdir = name, url, args, workdir
        self.postgres = name == "postgres"
        # a small pool per process: PostgreSQL's max_connections is shared with other people's work
        self.extra = {"PLATPAY_LOG_LEVEL": "WARNING", "PLATPAY_DB_POOL_SIZE": str(args.pool_size)}
        for setting in args.env:  # --env PLATPAY_WEBHOOK_BATCH_SIZE=64
            setting_name, _, value = setting.partition("=")
            self.extra[setting_name] = value
        self.workers: list[subprocess.Popen[Any]] = []
        self.delivering = False
        self.target = start_platpay(
            name, url, workdir, {**self.extra, "PLATPAY_RUN_EMBEDDED_WORKER": "false"}
        )

    def runners(self, on: bool) -> None:
        if on == self.delivering:
            return
        self.delivering = on
        if self.postgres:
            if not on:
                for process in self.workers:
                    stop(process)
                self.workers = []
                return
            env = bench_env(
                PLATPAY_DATABASE_URL=self.url,
                PLATPAY_VAR_DIR=str(self.workdir / self.name / "var"),
                **self.extra,
            )
            for index, lanes in enumerate(worker_lanes(self.args)):
                log = (self.workdir / self.name / f"worker{index}.log").open("ab")
                self.workers.append(
                    subprocess.Popen(
                        [str(BIN / "platpay"), "worker", *(["--lanes", lanes] if lanes else [])],
                        cwd=self.workdir / self.name,
                        env=env,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        preexec_fn=child_setup,
                    )
                )
            return
        stop(self.target.proc)
        self.target = start_platpay(
            self.name,
            self.url,
            self.workdir,
            {**self.extra, "PLATPAY_RUN_EMBEDDED_WORKER": "true" if on else "false"},
            credentials=self.target.credentials,
        )

    @property
    def webhook_worker_pids(self) -> list[int]:
        """The `--webhook-workers` (`--lanes webhooks`) processes: they come last."""
        return [process.pid for process in self.workers[len(self.workers) - self.args.webhook_workers :]]

    @property
    def runner_pids(self) -> list[int]:
        return [process.pid for process in self.workers] if self.postgres else [self.target.proc.pid]

    def close(self) -> None:
        for process in self.workers:
            stop(process)
        stop(self.target.proc)


def one_round(
    args: argparse.Namespace,
    wrk: str,
    deployment: Deployment,
    counter: Counter,
    receiver_port: int,
    senders: list[Any],
    workdir: Path,
) -> dict[str, Any]:
    postgres = deployment.postgres

    def load(seconds: float) -> Any:
        target = deployment.target
        assert target.credentials is not None
        lua = workdir / f"transfer_out_{secrets.token_hex(4)}.lua"
        write_wrk_lua(lua, target.credentials, senders, f"wh{secrets.token_hex(6)}")
        url = f"http://127.0.0.1:{target.port}{BASE_PATH}/transfer-out"
        return parse_wrk(run_wrk(wrk, url, lua, connections=args.connections, threads=1, seconds=seconds))

    # 1. a backlog: the money path with no runner (its deliveries and settlement steps queue up)
    deployment.runners(False)
    alone = load(args.prefill)
    _, backlog0 = counter.read()
    # 2. the runners on, and the money load again: deliveries/s while transfers run and a backlog is waiting
    deployment.runners(True)
    before, deadline = received(receiver_port), time.monotonic() + 90
    while received(receiver_port) == before and time.monotonic() < deadline:
        time.sleep(0.5)  # the runners are up (a worker process takes seconds to start on a loaded machine)
    if args.wait_quiet > 0:
        wait_until_quiet(
            args.wait_quiet,
            threshold_cores=args.quiet_threshold,
            ours=[deployment.target.proc.pid, *deployment.runner_pids],
        )

    def cpu(pids: list[int]) -> float:
        return sum(tree_cpu_seconds(pid) or 0.0 for pid in pids)

    serve_pid = deployment.target.proc.pid
    created0, pending0, unsettled0 = counter.read_all()
    got0 = received(receiver_port)
    serve0, run0 = cpu([serve_pid]), cpu(deployment.runner_pids if postgres else [])
    hooks0 = cpu(deployment.webhook_worker_pids if postgres else [])
    pg0 = pg_cpu_seconds() if postgres else None
    busy0 = system_busy_seconds()
    samples: list[tuple[float, int, int]] = [(0.0, got0, pending0)]  # (t, received, pending)
    stop_sampling = threading.Event()
    started = time.monotonic()

    def sample() -> None:
        while not stop_sampling.wait(2.0):
            got = received(receiver_port)
            samples.append((time.monotonic() - started, got, counter.read()[1]))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    result = load(args.duration)
    loaded = time.monotonic() - started
    stop_sampling.set()
    sampler.join()
    created1, pending1, unsettled1 = counter.read_all()
    got1 = received(receiver_port)
    serve1, run1 = cpu([serve_pid]), cpu(deployment.runner_pids if postgres else [])
    hooks1 = cpu(deployment.webhook_worker_pids if postgres else [])
    pg1 = pg_cpu_seconds() if postgres else None
    busy1 = system_busy_seconds()
    # deliveries/s over the sampling intervals that ended with a backlog still waiting (never starved)
    busy_t = busy_n = 0.0
    for (t_a, got_a, _), (t_b, got_b, pending_b) in itertools.pairwise(samples):
        if pending_b > 0:
            busy_t += t_b - t_a
            busy_n += got_b - got_a
    # 3. drain, no money load
    drain_started = time.monotonic()
    pending = pending1
    while pending and time.monotonic() - drain_started < args.drain:
        time.sleep(1.0)
        pending = counter.read()[1]
    drained_in = time.monotonic() - drain_started
    got2 = received(receiver_port)
    deliveries = got1 - got0
    events = created1 - created0
    own = (serve1 - serve0) + (run1 - run0) + ((pg1 or 0.0) - (pg0 or 0.0))
    other = None
    if busy0 and busy1:
        other = max(0.0, (busy1[0] - busy0[0]) - own) / (busy1[1] - busy0[1])
    runner_cpu = (run1 - run0) if postgres else (serve1 - serve0)
    capacity = busy_n / busy_t if busy_t > 0 else None
    return {
        "transfers_s": result.rps,
        "p99_ms": result.p99_ms,
        # the money path with no runner (the backlog's making): what delivering beside it costs it
        "alone_s": alone.rps,
        "alone_p99_ms": alone.p99_ms,
        "errors": result.non_2xx + sum(result.socket_errors.values()),
        "backlog_start": backlog0,
        "events_s": events / loaded,
        "deliveries_s": deliveries / loaded,
        "capacity_s": capacity,
        "busy_share": busy_t / loaded,
        "ratio": capacity / (events / loaded) if capacity and events else None,
        # The events the money path would have produced had its settlement kept up: each transfer whose
        # settlement fell behind still owes at least its settle step's two events (COMPLETED and
        # INTERNAL_ACCOUNT.BALANCE_UPDATED; its PROCESSING too if its first step waited as well).
        "owed_s": max(0.0, 2 * (unsettled1 - unsettled0) / loaded),
        "ratio_settled": capacity / (events / loaded + max(0.0, 2 * (unsettled1 - unsettled0) / loaded))
        if capacity and events
        else None,
        "backlog_end": pending1,
        "unsettled_start": unsettled0,
        "unsettled_end": unsettled1,
        "unsettled_trend_s": (unsettled1 - unsettled0) / loaded,
        "trend_s": slope([(t, float(p)) for t, _, p in samples]),
        "drain_s": (got2 - got1) / drained_in if drained_in > 0 and got2 > got1 else None,
        "drained_in": drained_in if pending == 0 else None,
        "left": pending,
        "runner_cpu_us": runner_cpu * 1e6 / deliveries if deliveries else None,
        # the --webhook-workers alone (they deliver and do nothing else)
        "webhook_worker_cpu_us": (hooks1 - hooks0) * 1e6 / deliveries
        if deliveries and deployment.webhook_worker_pids
        else None,
        "serve_cpu_us": (serve1 - serve0) * 1e6 / max(1, deliveries) if postgres else None,
        "pg_cpu_us": ((pg1 - pg0) * 1e6 / deliveries)
        if postgres and deliveries and pg0 is not None and pg1 is not None
        else None,
        "other_cores": other,
    }


def show(name: str, round_no: int, row: dict[str, Any]) -> None:
    def f(value: Any, spec: str) -> str:
        return "-" if value is None else format(value, spec)

    print(
        f"  {name} round {round_no}: transfers {row['transfers_s']:.0f}/s, p99 {row['p99_ms']:.0f} ms "
        f"({row['errors']} errors; with no runner {row['alone_s']:.0f}/s, p99 {row['alone_p99_ms']:.0f} ms), "
        f"events {row['events_s']:.0f}/s; deliveries {row['deliveries_s']:.0f}/s, "
        f"{f(row['capacity_s'], '.0f')}/s while a backlog waited ({row['busy_share']:.0%} of the load; "
        f"backlog {row['backlog_start']} at the start); ratio {f(row['ratio'], '.2f')} (had settlement kept up, "
        f"at least {row['owed_s']:.0f} events/s more: {f(row['ratio_settled'], '.2f')}); backlog at the end "
        f"{row['backlog_end']} (trend {row['trend_s']:+.1f}/s); settlement jobs unfinished "
        f"{row['unsettled_start']} -> {row['unsettled_end']} ({row['unsettled_trend_s']:+.1f}/s); then alone {f(row['drain_s'], '.0f')}/s, "
        f"emptied in {f(row['drained_in'], '.0f')} s (left {row['left']}); "
        f"runner CPU {f(row['runner_cpu_us'], '.0f')} us/delivery"
        + (
            f" (serve {f(row['serve_cpu_us'], '.0f')}, postgres {f(row['pg_cpu_us'], '.0f')})"
            if row["serve_cpu_us"] is not None
            else " (serve: transfers included)"
        )
        + (
            f", of which the webhook workers {row['webhook_worker_cpu_us']:.0f}"
            if row["webhook_worker_cpu_us"] is not None
            else ""
        )
        + f"; other load {f(row['other_cores'], '.2f')} cores",
        flush=True,
    )


def run_backend(
    name: str, url: str, args: argparse.Namespace, wrk: str, workdir: Path
) -> list[dict[str, Any]]:
    receiver_port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "receiver.py"), "--port", str(receiver_port)],
        preexec_fn=child_setup,
    )
    deployment: Deployment | None = None
    rows: list[dict[str, Any]] = []
    closing: list[Counter] = []
    try:
        wait_http(f"http://127.0.0.1:{receiver_port}/count", proc=receiver)
        deployment = Deployment(name, url, args, workdir)
        print(f"{name}: serve pid {deployment.target.proc.pid}", flush=True)
        pairs = seed(deployment.target, args.customers)
        import httpx

        target = deployment.target
        with httpx.Client(
            base_url=f"http://127.0.0.1:{target.port}{BASE_PATH}", auth=target.credentials, trust_env=False
        ) as api:
            response = api.patch(
                "/config", json={"webhookEndpoint": f"http://127.0.0.1:{receiver_port}/hooks"}
            )
            assert response.status_code == 200, response.text
        counter = Counter(url)
        closing.append(counter)
        deployment.runners(True)
        wait_drained(counter, args.drain)
        for round_no in range(1, args.rounds + 1):
            row = one_round(args, wrk, deployment, counter, receiver_port, pairs[:-1], workdir)
            rows.append(row)
            show(name, round_no, row)
    finally:
        for counter in closing:
            counter.close()
        if deployment is not None:
            deployment.close()
        stop(receiver)
    return rows


def summary(name: str, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return

    def spread(key: str, spec: str) -> str:
        values = sorted(row[key] for row in rows if row[key] is not None)
        if not values:
            return "-"
        return f"{format(statistics.median(values), spec)} [{format(values[0], spec)}-{format(values[-1], spec)}]"

    print(
        f"{name}: median [min-max] of {len(rows)}: transfers/s {spread('transfers_s', '.0f')} (with no runner "
        f"{spread('alone_s', '.0f')}), p99 {spread('p99_ms', '.0f')} ms, events/s {spread('events_s', '.0f')}, "
        f"deliveries/s {spread('deliveries_s', '.0f')}, while backlogged {spread('capacity_s', '.0f')}, ratio {spread('ratio', '.2f')} "
        f"(had settlement kept up {spread('ratio_settled', '.2f')}), backlog trend {spread('trend_s', '+.0f')}/s, settlement backlog trend "
        f"{spread('unsettled_trend_s', '+.0f')}/s, runner CPU/delivery {spread('runner_cpu_us', '.0f')} us, "
        f"other load {spread('other_cores', '.2f')} cores",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of money load per round")
    parser.add_argument("--connections", type=int, default=8, help="wrk connections sending transfers")
    parser.add_argument("--workers", type=int, default=2, help="`platpay worker` processes (PostgreSQL)")
    parser.add_argument(
        "--worker-lanes",
        default="",
        help="`--lanes` of those `--workers` processes (default: every lane), e.g. default,messages",
    )
    parser.add_argument(
        "--webhook-workers",
        type=int,
        default=0,
        help="more `platpay worker --lanes webhooks` processes beside `--workers` (PostgreSQL; default 0)",
    )
    parser.add_argument("--customers", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument(
        "--prefill", type=float, default=20.0, help="seconds of money load with no runner first (the backlog)"
    )
    parser.add_argument("--drain", type=float, default=60.0, help="longest wait for the backlog to empty")
    parser.add_argument(
        "--wait-quiet", type=float, default=0.0, help="wait up to this long for a quiet machine"
    )
    parser.add_argument("--quiet-threshold", type=float, default=0.3)
    parser.add_argument("--pool-size", type=int, default=8, help="PLATPAY_DB_POOL_SIZE of every process")
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    parser.add_argument(
        "--pg-prefix", default="platpay_bench_hook", help="the PostgreSQL database's name: <prefix>_<random>"
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="PLATPAY_SETTING=VALUE",
        help="a setting for every platpay process (repeatable): --env PLATPAY_WEBHOOK_BATCH_SIZE=64",
    )
    args = parser.parse_args()
    if "postgres" in args.backends.split(",") and not worker_lanes(args):
        parser.error("PostgreSQL needs at least one worker: --workers or --webhook-workers")
    wrk = ensure_wrk()
    print(f"webhook_throughput: {machine_summary()}; code from {__import__('platpay').__file__}", flush=True)
    if "postgres" in args.backends.split(","):
        print(
            "postgres workers: "
            + ", ".join(f"--lanes {lanes}" if lanes else "every lane" for lanes in worker_lanes(args)),
            flush=True,
        )
    results: dict[str, list[dict[str, Any]]] = {}
    workdir = Path(tempfile.mkdtemp(prefix="pp-bench-hook-"))
    try:
        for name in args.backends.split(","):
            if name == "postgres":
                reason = pg_reachable(args.pg_admin_url)
                if reason:
                    print(f"postgres: skipped ({reason})")
                    continue
                with pg_database(args.pg_admin_url, prefix=args.pg_prefix) as url:
                    results[name] = run_backend(name, url, args, wrk, workdir)
            elif name == "sqlite":
                (workdir / "sqlite").mkdir(exist_ok=True)
                url = f"sqlite+aiosqlite:///{workdir / 'sqlite' / 'bench.db'}"
                results[name] = run_backend(name, url, args, wrk, workdir)
        for name, rows in results.items():
            summary(name, rows)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
