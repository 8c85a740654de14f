"""The CPU cost of the connection policy per statement (platpay.db.connect.ConnectionPolicy), measured as
CPU time rather than throughput, so that it holds on a busy machine: N times `SELECT 1` on one asyncpg
connection opened as platpay opens them, with the policy on (server statement_timeout and
idle_in_transaction_session_timeout, the client's command timeout, keepalives and TCP_USER_TIMEOUT) and off
(none of them), in alternating rounds. Printed per statement: the client's CPU (this process) and the
server backend's (from /proc/<pid>/stat of the backend, PostgreSQL on this machine), median of the rounds
and their spread. A benchmark, not a test: it never fails on a figure.

    .venv/bin/python bench/connection_policy.py [--statements 5000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.dialects.postgresql import asyncpg as pg_asyncpg
from sqlalchemy.engine import make_url

from platpay.db.connect import ConnectionPolicy, connect_arguments, tune_socket

ON = ConnectionPolicy(statement_timeout=20.0, idle_in_transaction_timeout=30.0)


def _backend_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_round(url: str, policy: bool, statements: int) -> tuple[float, float]:
    """(client µs, server µs) per statement."""
    arguments: dict[str, Any] = connect_arguments(pg_asyncpg.dialect(), make_url(url), ON)
    if not policy:
        arguments.pop("command_timeout", None)
        arguments["server_settings"] = {}
    connection = await asyncpg.connect(**arguments)
    try:
        if policy:
            tune_socket(connection, ON)
        backend = await connection.fetchval("SELECT pg_backend_pid()")
        for _ in range(200):  # warm: the prepared statement cached
            await connection.fetchval("SELECT 1")
        server_before, client_before = _backend_cpu(backend), time.process_time()
        for _ in range(statements):
            await connection.fetchval("SELECT 1")
        client = time.process_time() - client_before
        server = _backend_cpu(backend) - server_before
    finally:
        await connection.close()
    return client * 1e6 / statements, server * 1e6 / statements


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url",
        default=os.environ.get(
            "PLATPAY_BENCH_PG_URL", "postgresql+asyncpg://postgres@127.0.0.1:5432/postgres"
        ),
    )
    parser.add_argument("--statements", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--loop", choices=("uvloop", "asyncio"), default="uvloop", help="serve's on PostgreSQL: uvloop"
    )
    args = parser.parse_args()
    found: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for round_no in range(args.rounds):
        for policy in (True, False) if round_no % 2 == 0 else (False, True):
            found[policy].append(await one_round(args.url, policy, args.statements))
    print(
        f"{args.loop}: {args.statements} x SELECT 1 per round, {args.rounds} rounds; µs of CPU per statement: median (min-max)"
    )
    for policy in (True, False):
        client = [c for c, _ in found[policy]]
        server = [s for _, s in found[policy]]
        print(
            f"  policy {'on ' if policy else 'off'}: client {statistics.median(client):6.1f} "
            f"({min(client):.1f}-{max(client):.1f})   server {statistics.median(server):6.1f} "
            f"({min(server):.1f}-{max(server):.1f})"
        )
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")


if __name__ == "__main__":
    if "--loop" in sys.argv and sys.argv[sys.argv.index("--loop") + 1] == "asyncio":
        asyncio.run(main())
    else:
        import uvloop

        uvloop.run(main())
