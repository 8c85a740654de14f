"""One tenant's hanging webhook endpoint beside a healthy tenant: the healthy tenant's settlement and
webhook latency, with and without the hanging neighbor, on real processes.

For each backend: SQLite with `platpay serve` and its embedded job runner (default settings), and
PostgreSQL with `platpay serve --no-worker` and two `platpay worker` processes. Two platforms are created
with `platpay platform create`: X, whose webhook endpoint accepts connections and never answers (a
listening socket that reads and says nothing), and Y, whose endpoint answers 200 at once (a receiver in this
process that notes when each event arrives).

* `alone`: Y makes `--transfers` transfer-outs, one every `--every` s; X does nothing.
* `beside`: X makes `--neighbor-transfers` transfer-outs first (their events all go to the hanging
  endpoint), then Y makes its transfers as above.

Printed per backend and case: p50/p99 of Y's settlement latency (request to the transaction COMPLETED, as
GET /transactions/{id} shows it, polled every 50 ms) and of Y's first webhook (request to its
OUTGOING_PAYMENT.PENDING arriving); how many of Y's transfers settled and webhooks arrived within
`--patience` s. Run with PYTHONPATH set to another tree to measure that code (bench/README.md).

    .venv/bin/python bench/webhook_isolation.py
    .venv/bin/python bench/webhook_isolation.py --backends sqlite --neighbor-transfers 1000
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    BIN,
    DEFAULT_PG_ADMIN,
    bench_env,
    child_setup,
    free_port,
    machine_summary,
    pg_database,
    pg_reachable,
    platform_credentials,
    stop,
    wait_http,
)

BASE_PATH = "/2025-10-13"
PERSON = {
    "customerType": "INDIVIDUAL",
    "fullName": "Jane Doe",
    "birthDate": "1990-04-12",
    "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
}


class Arrivals:
    """Y's receiver: answers 200 at once and notes when each transaction's first event arrived."""

    def __init__(self) -> None:
        self.first_seen: dict[str, float] = {}
        arrivals = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                event = json.loads(body)
                if event["type"].startswith("OUTGOING_PAYMENT."):
                    arrivals.first_seen.setdefault(event["data"]["id"], time.monotonic())
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Hanging:
    """X's endpoint: accepts every connection, reads what comes, never answers."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1024)
        self.held: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/hooks"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.sock.close()
        for connection in self.held:
            connection.close()


def platform(env: dict[str, str], name: str) -> tuple[str, str]:
    return platform_credentials(env, name=name)


def open_account(api: httpx.Client, webhook_url: str, serial: int) -> tuple[str, str]:
    assert api.patch("/config", json={"webhookEndpoint": webhook_url}).status_code == 200
    person = api.post("/customers", json={**PERSON, "platformCustomerId": f"bench-{serial}"}).json()
    accounts = api.get("/customers/internal-accounts", params={"customerId": person["id"], "currency": "USD"})
    account = accounts.json()["data"][0]["id"]
    assert api.post(f"/sandbox/internal-accounts/{account}/fund", json={"amount": 10**11}).status_code == 200
    bank = api.post(
        "/customers/external-accounts",
        json={
            "customerId": person["id"],
            "currency": "USD",
            "accountInfo": {
                "accountType": "USD_ACCOUNT",
                "accountNumber": f"{100_000 + serial}900",
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            },
        },
    )
    return account, bank.json()["id"]


def transfer(api: httpx.Client, account: str, bank: str) -> str:
    body = {"source": {"accountId": account}, "destination": {"accountId": bank}, "amount": 100}
    response = api.post("/transfer-out", json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


def percentiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    return f"{statistics.median(ordered):.3f}/{ordered[max(0, round(len(ordered) * 0.99) - 1)]:.3f} s"


def measure_y(
    api: httpx.Client, account: str, bank: str, arrivals: Arrivals, args: argparse.Namespace
) -> str:
    sent: dict[str, float] = {}
    settled: dict[str, float] = {}
    stop_at = [float("inf")]

    def watch() -> None:  # when each transfer is first seen COMPLETED, polled every 50 ms
        with httpx.Client(base_url=str(api.base_url), auth=api.auth, timeout=30, trust_env=False) as poller:
            while time.monotonic() < stop_at[0] and (
                len(settled) < args.transfers or len(sent) < args.transfers
            ):
                now = time.monotonic()
                for transaction_id in list(set(sent) - set(settled)):
                    if poller.get(f"/transactions/{transaction_id}").json().get("status") == "COMPLETED":
                        settled[transaction_id] = now
                time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    watcher.start()
    for _ in range(args.transfers):
        started = time.monotonic()
        sent[transfer(api, account, bank)] = started
        time.sleep(max(0.0, args.every - (time.monotonic() - started)))
    stop_at[0] = time.monotonic() + args.patience
    watcher.join()
    settle = [settled[t] - sent[t] for t in settled]
    webhooks = [arrivals.first_seen[t] - sent[t] for t in sent if t in arrivals.first_seen]
    return (
        f"settlement p50/p99 {percentiles(settle)} ({len(settled)}/{len(sent)} settled within {args.patience:g} s); "
        f"first webhook p50/p99 {percentiles(webhooks)} ({len(webhooks)}/{len(sent)} arrived)"
    )


def run_backend(name: str, url: str, workdir: Path, args: argparse.Namespace) -> None:
    home = workdir / name
    home.mkdir()
    env = bench_env(PLATPAY_DATABASE_URL=url, PLATPAY_VAR_DIR=str(home / "var"), PLATPAY_LOG_LEVEL="WARNING")
    subprocess.run([str(BIN / "platpay"), "migrate"], env=env, check=True, capture_output=True)
    y_auth, x_auth = platform(env, "Y"), platform(env, "X")
    port = free_port()
    serve = [
        str(BIN / "platpay"),
        "serve",
        "--port",
        str(port),
        *([] if name == "sqlite" else ["--no-worker"]),
    ]
    processes = []
    logs: list[Any] = []
    try:
        for command in [serve] + ([[str(BIN / "platpay"), "worker"]] * 2 if name == "postgres" else []):
            log = (home / f"{len(logs)}.log").open("wb")
            logs.append(log)
            processes.append(
                subprocess.Popen(
                    command, env=env, stdout=log, stderr=subprocess.STDOUT, preexec_fn=child_setup
                )
            )
        wait_http(f"http://127.0.0.1:{port}/readyz", timeout=60, proc=processes[0])
        arrivals, hanging = Arrivals(), Hanging()
        base = f"http://127.0.0.1:{port}{BASE_PATH}"
        with (
            httpx.Client(base_url=base, auth=y_auth, timeout=30, trust_env=False) as y,
            httpx.Client(base_url=base, auth=x_auth, timeout=30, trust_env=False) as x,
        ):
            y_account, y_bank = open_account(y, arrivals.url, 1)
            x_account, x_bank = open_account(x, hanging.url, 2)
            print(f"  {name} alone:  {measure_y(y, y_account, y_bank, arrivals, args)}", flush=True)
            started = time.monotonic()
            for _ in range(args.neighbor_transfers):
                transfer(x, x_account, x_bank)
            print(
                f"  ({name}: X made {args.neighbor_transfers} transfers to a hanging endpoint in "
                f"{time.monotonic() - started:.1f} s)",
                flush=True,
            )
            print(f"  {name} beside: {measure_y(y, y_account, y_bank, arrivals, args)}", flush=True)
        arrivals.close()
        hanging.close()
    finally:
        for process in processes:
            stop(process)
        for log in logs:
            log.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--transfers", type=int, default=20, help="Y's transfers per case")
    parser.add_argument("--every", type=float, default=0.5, help="seconds between Y's transfers")
    parser.add_argument("--neighbor-transfers", type=int, default=300, help="X's transfers before Y's")
    parser.add_argument("--patience", type=float, default=60.0, help="how long to wait for Y's transfers")
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    args = parser.parse_args()
    print(machine_summary(), flush=True)
    backends = args.backends.split(",")
    with tempfile.TemporaryDirectory(prefix="platpay-isolation-") as tmp:
        workdir = Path(tmp)
        if "sqlite" in backends:
            run_backend("sqlite", f"sqlite+aiosqlite:///{workdir / 'platpay.db'}", workdir, args)
        if "postgres" in backends:
            if reason := pg_reachable(args.pg_admin_url):
                print(f"  postgres: skipped ({reason})")
            else:
                with pg_database(args.pg_admin_url) as url:
                    run_backend("postgres", url, workdir, args)


if __name__ == "__main__":
    main()
