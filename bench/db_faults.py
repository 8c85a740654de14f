"""Money movement through database faults: how much of it answers 503 and how fast it comes back.

Setup, on 127.0.0.1 in a temporary directory: a throwaway PostgreSQL database, `platpay serve --workers 2
--no-worker` and a separate `platpay worker` on it, customers seeded through the API (funded USD account
+ external account each). Then CLIENTS threads send POST /transfer-out with a fresh Idempotency-Key per
transfer, retrying each until a definite answer (201) as a correct client does: after a 503 or a
dropped connection, the same key again 50 ms later (sooner than Retry-After, to measure recovery).

Faults, spread evenly over the run:

* `--terminations N` (default 3): `pg_terminate_backend` of every backend of the database, which is what
  a restart or a managed failover does to platpay's connections (the server itself stays up).
* `--restarts N` (default 0): a real immediate restart of this machine's PostgreSQL cluster
  (`pg_ctlcluster --skip-systemctl-redirect <version> main restart -m immediate`, as root). Disruptive to
  anything else using that server: opt-in. A probe connects every 10 ms to see when PostgreSQL refuses
  connections and when it accepts them again.

Printed: answers by status, the share of attempts answered 503, per fault the seconds from the fault (for a
restart: from PostgreSQL accepting connections again) to the first 201 of a request sent after it; then
the check that every acknowledged transfer exists exactly once and `platpay ledger verify`.

    .venv/bin/python bench/db_faults.py                          # 3 terminations in 20 s
    .venv/bin/python bench/db_faults.py --terminations 0 --restarts 3 --duration 30
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    BIN,
    DEFAULT_PG_ADMIN,
    bench_env,
    child_setup,
    machine_summary,
    pg_database,
    pg_reachable,
    stop,
)
from http_config import start_platpay
from transfer_out import BASE_PATH, Pair, seed


@dataclass
class Attempt:
    status: int  # 0: no answer (connection refused or dropped)
    sent_at: float
    answered_at: float


@dataclass
class Run:
    attempts: list[Attempt] = field(default_factory=list)
    acknowledged: dict[str, str] = field(default_factory=dict)  # Idempotency-Key -> transaction id
    lock: threading.Lock = field(default_factory=threading.Lock)


def client(base_url: str, auth: tuple[str, str], pairs: list[Pair], run: Run, until: float, n: int) -> None:
    with httpx.Client(base_url=base_url + BASE_PATH, auth=auth, timeout=30, trust_env=False) as http:
        serial = 0
        while time.monotonic() < until:
            pair = pairs[(n + serial) % len(pairs)]
            serial += 1
            key = f"faults-{uuid.uuid4()}"
            body: dict[str, Any] = {
                "source": {"accountId": pair.internal_id},
                "destination": {"accountId": pair.external_id},
            }
            body["amount"] = 100 + serial % 900
            while True:
                sent = time.monotonic()
                try:
                    response = http.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
                    status = response.status_code
                except httpx.TransportError:
                    status = 0
                with run.lock:
                    run.attempts.append(Attempt(status, sent, time.monotonic()))
                if status == 201:
                    with run.lock:
                        run.acknowledged[key] = response.json()["id"]
                    break
                if status not in (0, 503, 409):
                    raise RuntimeError(f"unexpected answer {status}: {response.text}")
                time.sleep(0.05)


def terminate_backends(admin_url: str, database_url: str) -> int:
    name = database_url.rsplit("/", 1)[1]

    async def run() -> int:
        conn = await asyncpg.connect(admin_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            return await conn.fetchval(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = $1 AND pid <> pg_backend_pid()) AS ended",
                name,
            )
        finally:
            await conn.close()

    return asyncio.run(run())


def restart_cluster(admin_url: str) -> tuple[float, float]:
    """Immediate restart of the local cluster; (when it stopped accepting, when it accepted again)."""
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[-1]
    dsn = admin_url.replace("postgresql+asyncpg://", "postgresql://")
    seen: dict[str, float] = {}

    async def probe() -> None:
        while "up" not in seen:
            try:
                conn = await asyncpg.connect(dsn, timeout=0.5)
                await conn.close()
                if "down" in seen:
                    seen["up"] = time.monotonic()
            except (TimeoutError, OSError, asyncpg.PostgresError):
                seen.setdefault("down", time.monotonic())
            await asyncio.sleep(0.01)

    prober = threading.Thread(target=lambda: asyncio.run(probe()))
    prober.start()
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart", "-m", "immediate"],
        check=True,
        capture_output=True,
    )
    prober.join(timeout=60)
    return seen["down"], seen["up"]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=20.0)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--terminations", type=int, default=3)
    parser.add_argument("--restarts", type=int, default=0)
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    args = parser.parse_args()
    if reason := pg_reachable(args.pg_admin_url):
        sys.exit(f"PostgreSQL is unreachable: {reason}")
    print(machine_summary(), flush=True)
    faults = ["terminate"] * args.terminations + ["restart"] * args.restarts
    with tempfile.TemporaryDirectory(prefix="platpay-faults-") as tmp, pg_database(args.pg_admin_url) as url:
        workdir = Path(tmp)
        server = start_platpay("postgres", url, workdir, {"PLATPAY_RUN_EMBEDDED_WORKER": "false"}, workers=2)
        worker_env = bench_env(PLATPAY_DATABASE_URL=url, PLATPAY_VAR_DIR=str(workdir / "postgres" / "var"))
        with (workdir / "worker.log").open("wb") as log:
            worker = subprocess.Popen(
                [str(BIN / "platpay"), "worker"], env=worker_env, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=child_setup,
            )  # fmt: skip
        try:
            assert server.credentials is not None
            pairs = seed(server, args.customers)
            base_url = f"http://127.0.0.1:{server.port}"
            run = Run()
            started = time.monotonic()
            until = started + args.duration
            threads = [
                threading.Thread(target=client, args=(base_url, server.credentials, pairs, run, until, n))
                for n in range(args.clients)
            ]
            for thread in threads:
                thread.start()
            moments: list[tuple[str, float, str]] = []
            for index, fault in enumerate(faults):
                time.sleep(
                    max(0.0, started + args.duration * (index + 1) / (len(faults) + 1) - time.monotonic())
                )
                if fault == "terminate":
                    at = time.monotonic()
                    ended = terminate_backends(args.pg_admin_url, url)
                    moments.append((fault, at, f"{ended} connections ended"))
                else:
                    down, up = restart_cluster(args.pg_admin_url)
                    moments.append((fault, up, f"refused connections for {up - down:.2f} s"))
            for thread in threads:
                thread.join()
            statuses = Counter(a.status for a in run.attempts)
            print(
                f"\n{len(run.acknowledged)} transfers acknowledged in {args.duration:g} s by {args.clients} "
                f"clients; {len(run.attempts)} attempts: {dict(statuses)} (0 = no answer); "
                f"503 share {statuses[503] / len(run.attempts):.2%}"
            )
            for fault, at, what in moments:
                first = min(
                    (a.answered_at - at for a in run.attempts if a.status == 201 and a.sent_at >= at),
                    default=float("nan"),
                )
                since = "accepting connections again" if fault == "restart" else "the termination"
                print(f"  {fault} ({what}): first transfer succeeded {first:.3f} s after {since}")

            async def stored() -> set[str]:
                conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://"))
                try:
                    return {row["id"] for row in await conn.fetch("SELECT id FROM transactions")}
                finally:
                    await conn.close()

            in_database = asyncio.run(stored())
            acknowledged = set(run.acknowledged.values())
            extra = in_database - acknowledged
            print(
                f"  every acknowledged transfer stored once: {acknowledged <= in_database}; "
                f"stored but not acknowledged: {len(extra)} (the seeding's sample transfer is 1)"
            )
            verify = subprocess.run(
                [str(BIN / "platpay"), "ledger", "verify"], env=worker_env, capture_output=True, text=True
            )
            print("  " + (verify.stdout.strip().splitlines() or ["ledger verify printed nothing"])[-1])
        finally:
            stop(worker)
            stop(server.proc)


if __name__ == "__main__":
    main()
