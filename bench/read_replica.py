"""The share of reads a streaming standby takes (PLATPAY_DATABASE_READ_URL) in a mixed read/write run.

Setup, on 127.0.0.1 in temporary directories: a private PostgreSQL primary and its streaming standby
(tests/e2e/pg_cluster.py: initdb, pg_basebackup -R), `platpay serve --workers 2` with
PLATPAY_DATABASE_READ_URL on the standby, TENANTS platforms (their sandbox tenants), each with a funded
customer, its accounts and a first transfer. Then, for DURATION seconds, READERS threads per tenant loop over
GET /transactions, /transactions/{id}, /customers, /customers/{id}, /customers/internal-accounts,
/platform/internal-accounts, /webhooks/deliveries... and GET /config (which stays on the primary); the first
WRITERS tenants also send one POST /transfer-out every WRITE_INTERVAL seconds (their reads then stay on the
primary until the standby has replayed past their write).

Counted: every transaction each server ran in the run (pg_stat_database xact_commit + xact_rollback of the
database, read after the server processes exited so every backend flushed its counts), less the router's
freshness samples on the standby (one autocommit statement each, counted by the log of samples the standby
was asked: `log_statement`-free, estimated as two per second per process at most, printed separately).

    .venv/bin/python bench/read_replica.py                                     # 4 tenants, 2 writing, 15 s
    .venv/bin/python bench/read_replica.py --tenants 4 --writers 0             # reads only
    .venv/bin/python bench/read_replica.py --writers 4 --write-interval 0.2    # every tenant writes often
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from _support import BIN, free_port, machine_summary, wait_http  # noqa: E402

from tests.e2e.pg_cluster import PrivateCluster  # noqa: E402
from tests.support.api_checks import api_client  # noqa: E402
from tests.support.money import Holder, fund, open_holder, transfer_out_body  # noqa: E402
from tests.support.pg import PgProbe  # noqa: E402
from tests.support.processes import process_env  # noqa: E402

MASTER_KEY = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()  # a throwaway database's


def xacts(cluster: PrivateCluster) -> int:
    probe = PgProbe(cluster.dsn())
    try:
        return int(
            probe.fetchval(
                "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'platpay'"
            )
        )
    finally:
        probe.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tenants", type=int, default=4)
    parser.add_argument("--writers", type=int, default=2, help="tenants that also write")
    parser.add_argument(
        "--write-interval", type=float, default=1.0, help="seconds between a writer's transfers"
    )
    parser.add_argument("--readers", type=int, default=2, help="reading threads per tenant")
    parser.add_argument("--duration", type=float, default=15.0)
    parser.add_argument("--max-lag", type=float, default=2.0)
    args = parser.parse_args()
    print(machine_summary(), flush=True)

    primary = PrivateCluster()
    standby: PrivateCluster | None = None
    server: subprocess.Popen[bytes] | None = None
    workdir = Path(tempfile.mkdtemp(prefix="platpay-replica-bench-"))
    try:
        primary.start()
        primary.create_database("platpay")
        standby = PrivateCluster.standby_of(primary)
        standby.start()
        env = process_env(
            PLATPAY_DATABASE_URL=primary.url("platpay"),
            PLATPAY_DATABASE_READ_URL=standby.url("platpay"),
            PLATPAY_DATABASE_READ_MAX_LAG_SECONDS=str(args.max_lag),
            PLATPAY_MASTER_KEY=MASTER_KEY,
            PLATPAY_VAR_DIR=str(workdir / "var"),
            PLATPAY_LOG_LEVEL="WARNING",
            PLATPAY_SANDBOX_SETTLEMENT_SECONDS="0.2",
            PLATPAY_DB_POOL_SIZE="6",
        )
        tenants = []
        for _ in range(args.tenants):
            created = subprocess.run(
                [str(BIN / "platpay"), "platform", "create", "--name", "Bench", "--json"],
                env=env,
                cwd=workdir,
                capture_output=True,
                text=True,
                check=True,
            )
            sandbox = json.loads(created.stdout)["sandbox"]
            tenants.append((sandbox["clientId"], sandbox["clientSecret"]))
        port = free_port()
        with open(workdir / "server.log", "wb") as log:
            server = subprocess.Popen(
                [str(BIN / "platpay"), "serve", "--port", str(port), "--workers", "2"],
                env=env,
                cwd=workdir,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        base = f"http://127.0.0.1:{port}"
        wait_http(f"{base}/healthz", timeout=180, proc=server)

        seeded = []
        for auth in tenants:
            with api_client(base, auth) as client:
                holder = open_holder(client)
                assert fund(client, holder.account_id, 10_000_000).status_code == 200
                first = client.post(
                    "/transfer-out",
                    json=transfer_out_body(holder, 100),
                    headers={"Idempotency-Key": str(uuid.uuid4())},
                )
                assert first.status_code == 201, first.text
                seeded.append((auth, holder, first.json()["id"]))
        time.sleep(1.0)  # the seeding writes age past the standby's replay

        requests: Counter[str] = Counter()
        statuses: Counter[int] = Counter()
        lock = threading.Lock()
        stop_at = time.monotonic() + args.duration

        def reader(auth: tuple[str, str], holder: Holder, transaction_id: str, offset: int) -> None:
            paths = [
                "/transactions",
                f"/transactions/{transaction_id}",
                "/customers",
                f"/customers/{holder.customer_id}",
                f"/customers/internal-accounts?customerId={holder.customer_id}",
                "/platform/internal-accounts",
                "/webhooks/deliveries",
                "/config",
            ]
            n = offset
            with api_client(base, auth) as client:
                while time.monotonic() < stop_at:
                    path = paths[n % len(paths)]
                    n += 1
                    status = client.get(path).status_code
                    with lock:
                        requests["GET " + ("movable" if path != "/config" else "/config")] += 1
                        statuses[status] += 1

        def writer(auth: tuple[str, str], holder: Holder) -> None:
            with api_client(base, auth) as client:
                while time.monotonic() < stop_at:
                    response = client.post(
                        "/transfer-out",
                        json=transfer_out_body(holder, 100),
                        headers={"Idempotency-Key": str(uuid.uuid4())},
                    )
                    with lock:
                        requests["POST /transfer-out"] += 1
                        statuses[response.status_code] += 1
                    time.sleep(args.write_interval)

        before = {"primary": xacts(primary), "standby": xacts(standby)}
        threads = [
            threading.Thread(target=reader, args=(auth, holder, tx, r))
            for auth, holder, tx in seeded
            for r in range(args.readers)
        ]
        threads += [
            threading.Thread(target=writer, args=(auth, holder)) for auth, holder, _ in seeded[: args.writers]
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        server.terminate()
        server.wait(timeout=30)
        server = None
        time.sleep(0.5)  # exited backends have flushed their counts
        after = {"primary": xacts(primary), "standby": xacts(standby)}
        ran = {name: after[name] - before[name] for name in before}
        samples_max = int(elapsed * 2 * 2) + 4  # 2 processes, at most every 0.5 s each, both servers
        standby_reads = max(0, ran["standby"] - samples_max)
        gets = requests["GET movable"] + requests["GET /config"]
        print(
            f"\n{args.tenants} tenants, {args.writers} writing every {args.write_interval:g} s, "
            f"{args.readers} readers each, {elapsed:.1f} s, max lag {args.max_lag:g} s"
        )
        print(f"  requests: {dict(requests)}  statuses: {dict(statuses)}")
        print(
            f"  transactions run: primary {ran['primary']}, standby {ran['standby']} "
            f"(of which freshness samples: at most {samples_max})"
        )
        total = ran["primary"] + standby_reads
        print(
            f"  standby share of all database transactions (reads, writes, authentication): "
            f"{standby_reads / total:.1%}"
            if total
            else "  nothing ran"
        )
        if requests["GET movable"]:
            print(
                f"  standby share of movable GET requests: {standby_reads / requests['GET movable']:.1%}; "
                f"of all GET requests: {standby_reads / gets:.1%}"
            )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        if standby is not None:
            standby.destroy()
        primary.destroy()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
