"""How evenly `platpay serve --workers 2` spreads keep-alive connections' requests over its processes.

Requirement measured (issue 33): with `serve --workers 2`, each process serves within ±15 % of an equal
share of the requests. This is a benchmark: it prints figures and never fails on them.

Two servers side by side in one run, on copies of one embedded SQLite database (same credentials):
  uvicorn   uvicorn's own supervisor (`uvicorn.run(..., workers=2)`, what `serve --workers 2` ran before):
            one shared listening socket, whichever process wakes first accepts
  uvicorn-nodelay  the same with TCP_NODELAY on its connections (its listener rebuilt from its descriptor):
            uvicorn's own listener has protocol 0, so asyncio leaves Nagle on for every connection it
            accepts and each response (head and body: two writes) waits ~40 ms for the client's delayed
            ACK; that, not the balance, made `uvicorn` ~8x slower than `platpay` on SQLite (asyncio's loop;
            uvloop sets TCP_NODELAY itself)
  platpay   `platpay serve --workers 2`: the parent accepts and hands each connection to the process with
            the fewest open connections (platpay/serving.py)
Each round opens C keep-alive connections at once (8, then 64), sends R authenticated GET /config on each,
one after the other per connection, all connections concurrently, then closes them; the two servers are
loaded in turn, never together. Requests per process are read from each process's own metrics file
(prometheus_client's multiprocess files under PLATPAY_VAR_DIR/metrics, counter_<pid>.db), not from
anything the server was changed to report. requests/s is informative only (shared, noisy machine).

    .venv/bin/python bench/serve_balance.py                  # 5 rounds, 8 and 64 connections
    .venv/bin/python bench/serve_balance.py --rounds 10 --requests 100
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    BIN,
    bench_env,
    child_setup,
    free_port,
    machine_summary,
    platform_credentials,
    stop,
    wait_http,
)

BASE_PATH = "/2025-10-13"
WORKERS = 2
TOLERANCE = 0.15  # each process within ±15 % of an equal share

# uvicorn's supervisor exactly as `serve --workers N` called it before (platpay/cli.py's `common` options).
_UVICORN_SUPERVISOR = """
import uvicorn
from platpay import metrics
from platpay.config import get_settings
from platpay.logging import configure, level_number, uvicorn_log_config

if __name__ == "__main__":  # (the spawned processes import this file again)
    if {nodelay}:
        # uvicorn's listener made with protocol 0: asyncio then leaves TCP_NODELAY off on every accepted
        # socket (it sets it only where the socket's protocol reads IPPROTO_TCP). The same socket rebuilt
        # from its descriptor reads its real protocol, 6, and its accepted sockets get TCP_NODELAY.
        import socket
        from uvicorn.config import Config

        bind_socket = Config.bind_socket
        Config.bind_socket = lambda self: socket.socket(fileno=bind_socket(self).detach())
    settings = get_settings()
    configure(settings.log_level, json_output=settings.log_json)
    metrics.enable_multiprocess(metrics.directory_for(settings), clear_dead=True)
    uvicorn.run(
        "platpay.app:factory", factory=True, workers={workers}, host=settings.host, port=settings.port,
        access_log=False, log_config=uvicorn_log_config(settings.log_level, json_output=settings.log_json),
        log_level=level_number(settings.log_level), loop=settings.chosen_event_loop(),
    )
"""


def requests_by_process(metrics_dir: Path, route_suffix: str = "/config") -> dict[int, float]:
    """Requests each process has counted for routes ending in `route_suffix`, from its own metrics file."""
    from prometheus_client.mmap_dict import MmapedDict

    counts: dict[int, float] = {}
    for path in metrics_dir.glob("counter_*.db"):
        pid = int(path.stem.rsplit("_", 1)[1])
        total = 0.0
        for key, value, _timestamp, _pos in MmapedDict.read_all_values_from_file(str(path)):
            _name, sample, labels, _help = json.loads(key)
            if sample == "platpay_http_requests_total" and labels.get("route", "").endswith(route_suffix):
                total += value
        counts[pid] = total
    return counts


@dataclass
class Server:
    name: str
    proc: subprocess.Popen[bytes]
    port: int
    metrics_dir: Path
    rows: dict[int, list[tuple[list[float], float]]] = field(default_factory=dict)  # conns -> (shares, rps)
    sent: int = 0  # GET /config requests answered so far


def start(name: str, command: list[str], database: Path, home: Path) -> Server:
    port = free_port()
    home.mkdir(parents=True, exist_ok=True)
    env = bench_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{database}",
        PLATPAY_VAR_DIR=str(home / "var"),
        PLATPAY_HOST="127.0.0.1",
        PLATPAY_PORT=str(port),
        PLATPAY_RUN_EMBEDDED_WORKER="false",  # the same for both: only the HTTP processes run
    )
    with (home / "server.log").open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=home, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=child_setup
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=120, proc=proc)
    except BaseException:
        stop(proc)
        raise
    return Server(name, proc, port, home / "var" / "metrics")


async def _one_connection(port: int, request: bytes, count: int) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        for _ in range(count):
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = head.split(b" ", 2)[1]
            if status != b"200":
                raise RuntimeError(f"GET /config answered {head[:200]!r}")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            await reader.readexactly(length)
    finally:
        writer.close()
        await writer.wait_closed()


async def _load(port: int, request: bytes, connections: int, per_connection: int) -> None:
    await asyncio.gather(*(_one_connection(port, request, per_connection) for _ in range(connections)))


def settled_counts(server: Server) -> dict[int, float]:
    """Requests per process once every request sent so far shows (a process writes its counts every
    0.5 s)."""
    deadline = time.monotonic() + 15
    while True:
        now = requests_by_process(server.metrics_dir)
        if sum(now.values()) >= server.sent:
            return now
        if time.monotonic() > deadline:
            raise RuntimeError(f"{server.name}: {sum(now.values())} of {server.sent} requests counted: {now}")
        time.sleep(0.2)


def load(server: Server, request: bytes, connections: int, per_connection: int) -> float:
    """Seconds the load took."""
    started = time.perf_counter()
    asyncio.run(_load(server.port, request, connections, per_connection))
    server.sent += connections * per_connection
    return time.perf_counter() - started


def round_for(server: Server, request: bytes, connections: int, per_connection: int) -> None:
    before = settled_counts(server)
    elapsed = load(server, request, connections, per_connection)
    total = connections * per_connection
    after = settled_counts(server)
    delta = {pid: count - before.get(pid, 0.0) for pid, count in after.items()}
    served = sorted((count for count in delta.values() if count), reverse=True)
    served += [0.0] * (WORKERS - len(served))  # a process that served nothing is a share of 0
    shares = [count / total for count in served]
    server.rows.setdefault(connections, []).append((shares, total / elapsed))


def _deviation(shares: list[float]) -> float:
    """The largest distance of a process's share from an equal share, relative to it (0.15 = ±15 %)."""
    equal = 1 / len(shares)
    return max(abs(share - equal) / equal for share in shares)


def report(servers: list[Server], connection_counts: list[int]) -> None:
    print()
    for connections in connection_counts:
        print(f"== {connections} keep-alive connections, share of requests per process (largest first) ==")
        for server in servers:
            rows = server.rows.get(connections, [])
            cells = ["/".join(f"{share * 100:.0f}" for share in shares) for shares, _ in rows]
            within = sum(1 for shares, _ in rows if _deviation(shares) <= TOLERANCE)
            worst = max((_deviation(shares) for shares, _ in rows), default=0.0)
            rps = statistics.median(rate for _, rate in rows) if rows else 0.0
            print(
                f"  {server.name:15} rounds {'  '.join(cells)}\n"
                f"  {'':15} within ±15 %: {within}/{len(rows)} rounds, worst {worst * 100:.0f} % off an equal "
                f"share; median {rps:.0f} req/s"
            )
        print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--requests", type=int, default=200, help="requests per connection with 8 connections"
    )
    parser.add_argument("--connections", default="8,64", help="comma-separated connection counts")
    args = parser.parse_args()
    connection_counts = [int(value) for value in args.connections.split(",")]
    print(machine_summary())
    workdir = Path(tempfile.mkdtemp(prefix="serve_balance_"))
    servers: list[Server] = []
    try:
        template = workdir / "template.db"
        env = bench_env(
            PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{template}", PLATPAY_VAR_DIR=str(workdir / "var")
        )
        client_id, client_secret = platform_credentials(env, cwd=workdir, migrate=True)
        token = base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        for name in ("uvicorn", "uvicorn-nodelay", "platpay"):
            shutil.copy(template, workdir / f"{name}.db")
        for name, nodelay in (("uvicorn", False), ("uvicorn-nodelay", True)):
            script = workdir / f"{name}_supervisor.py"
            script.write_text(_UVICORN_SUPERVISOR.format(workers=WORKERS, nodelay=nodelay))
            servers.append(start(name, [sys.executable, str(script)], workdir / f"{name}.db", workdir / name))
        servers.append(
            start(
                "platpay",
                [str(BIN / "platpay"), "serve", "--workers", str(WORKERS)],
                workdir / "platpay.db",
                workdir / "platpay",
            )
        )
        for server in servers:  # each process up and warm: a few requests on fresh connections
            request = (
                f"GET {BASE_PATH}/config HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                f"Authorization: Basic {token}\r\n\r\n"
            ).encode()
            load(server, request, 16, 5)
        for number in range(1, args.rounds + 1):
            for connections in connection_counts:
                per_connection = max(1, args.requests * 8 // connections)
                for server in servers:
                    request = (
                        f"GET {BASE_PATH}/config HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
                        f"Authorization: Basic {token}\r\n\r\n"
                    ).encode()
                    round_for(server, request, connections, per_connection)
            print(f"round {number}/{args.rounds} done", flush=True)
        report(servers, connection_counts)
    finally:
        for server in servers:
            stop(server.proc, timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
