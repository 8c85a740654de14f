"""POST /agents/me/transfer-out (bearer auth + policy evaluation + usage update) next to the platform's own
POST /transfer-out, in the same run, against the same `platpay serve` process on PostgreSQL.

Requirement measured: agent transfer-outs per second and p50/p99 at 8 connections, target >= 0.9
of the platform endpoint's rate (policy enforcement must not be the bottleneck). A benchmark, not a test: it
prints figures and never fails on them.

Setup, all on 127.0.0.1: a fresh database `platpay_bench_agents_<random>` (dropped afterwards), one
`platpay serve` process with the embedded job runner off (the request path is what is measured); N
customers seeded as bench/transfer_out.py seeds them (a USD internal account funded with $1B and an external
USD account each), and one agent per customer (AUTO, limits far above what a run spends, so every request
executes: the full path of an allowed request, usage row lock and update included). wrk (Lua) sends every
request with a fresh Idempotency-Key, a random customer's accounts and amount; the agent run uses that
customer's agent token. The two endpoints alternate, each after a warm-up, for `--rounds` rounds.

    .venv/bin/python bench/agent_transfer.py                    # 8 connections, 10 s per run, 2 rounds
    .venv/bin/python bench/agent_transfer.py --duration 20 --rounds 3 --customers 64
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import DEFAULT_PG_ADMIN, machine_summary, pg_database, pg_reachable, stop, tree_cpu_seconds
from http_config import ensure_wrk, parse_wrk, run_wrk, start_platpay
from transfer_out import BASE_PATH, Pair, seed, verify, write_wrk_lua

POLICY = {
    "permissions": ["CREATE_TRANSFERS"],
    "defaultExecutionMode": "AUTO",
    "spendingLimits": {
        "currency": "USD",
        "perTransactionLimit": 1_000_000,
        "dailyLimit": 100_000_000_000,
        "dailyTransactionLimit": 1_000_000_000,
        "monthlyLimit": 100_000_000_000,
    },
}


async def _agents(
    base_url: str, credentials: tuple[str, str], pairs: list[Pair], transport: Any = None
) -> list[str]:
    """One connected agent per customer: its access token, in the order of `pairs`."""
    import httpx

    async with httpx.AsyncClient(
        base_url=base_url + BASE_PATH, timeout=60, trust_env=False, transport=transport
    ) as client:

        async def one(pair: Pair) -> str:
            created = await client.post(
                "/agents",
                auth=credentials,
                json={"name": f"bench {pair.customer_id}", "customerId": pair.customer_id, "policy": POLICY},
            )
            created.raise_for_status()
            code = created.json()["deviceCode"]["code"]
            redeemed = await client.post(f"/agents/device-codes/{code}/redeem")
            redeemed.raise_for_status()
            return str(redeemed.json()["accessToken"])

        return [await one(pair) for pair in pairs]


def write_agent_lua(path: Path, pairs: list[Pair], tokens: list[str], run_token: str) -> None:
    table = ",\n".join(
        f'  {{"{p.internal_id}", "{p.external_id}", "Bearer {t}"}}'
        for p, t in zip(pairs, tokens, strict=True)
    )
    path.write_text(
        f"""-- POST /agents/me/transfer-out with a fresh Idempotency-Key per request (bench/agent_transfer.py)
local pairs = {{
{table}
}}
local run = "{run_token}"
local counter = 0

function request()
  counter = counter + 1
  local pair = pairs[math.random(#pairs)]
  local body = '{{"source":{{"accountId":"' .. pair[1] .. '"}},"destination":{{"accountId":"' .. pair[2]
    .. '"}},"amount":' .. math.random(1, 1000) .. '}}'
  return wrk.format("POST", "{BASE_PATH}/agents/me/transfer-out", {{
    ["Authorization"] = pair[3],
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = run .. "-" .. counter,
  }}, body)
end
""",
        "utf-8",
    )


def measure(
    wrk: str, url: str, script: Callable[[], Path], args: argparse.Namespace, server_pid: int
) -> dict[str, Any]:
    """Warm up, then one measured run, each with a fresh script (so no Idempotency-Key repeats); with the
    server's CPU per request (the figure that holds on a machine other work is loading: the rate does not)."""
    if args.warmup > 0:
        run_wrk(wrk, url, script(), connections=args.connections, threads=1, seconds=args.warmup)
    lua = script()
    cpu_before = tree_cpu_seconds(server_pid) or 0.0
    result = parse_wrk(run_wrk(wrk, url, lua, connections=args.connections, threads=1, seconds=args.duration))
    cpu = (tree_cpu_seconds(server_pid) or 0.0) - cpu_before
    return {
        "rps": result.rps,
        "p50": result.p50_ms,
        "p99": result.p99_ms,
        "errors": result.non_2xx,
        "cpu_us": round(cpu * 1e6 / max(result.requests, 1)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--customers", type=int, default=32)
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    args = parser.parse_args()
    problem = pg_reachable(args.pg_admin_url)
    if problem is not None:
        sys.exit(f"PostgreSQL is not reachable at {args.pg_admin_url}: {problem}")
    wrk = ensure_wrk()
    print(machine_summary(), flush=True)
    with (
        tempfile.TemporaryDirectory(prefix="platpay-bench-agents-") as tmp,
        pg_database(args.pg_admin_url, prefix="platpay_bench_agents") as url,
    ):
        workdir = Path(tmp)
        target = start_platpay("postgres", url, workdir, {"PLATPAY_RUN_EMBEDDED_WORKER": "false"})
        try:
            assert target.credentials is not None
            pairs = seed(target, args.customers)[:-1]  # the customers' pairs (not the platform's account)
            base = f"http://127.0.0.1:{target.port}"
            tokens = asyncio.run(_agents(base, target.credentials, pairs))
            results: dict[str, list[dict[str, Any]]] = {"platform": [], "agent": []}
            credentials = target.credentials

            def platform_lua() -> Path:
                path = workdir / f"platform_{secrets.token_hex(4)}.lua"
                write_wrk_lua(path, credentials, pairs, f"p{secrets.token_hex(6)}")
                return path

            def agent_lua() -> Path:
                path = workdir / f"agent_{secrets.token_hex(4)}.lua"
                write_agent_lua(path, pairs, tokens, f"a{secrets.token_hex(6)}")
                return path

            for round_no in range(1, args.rounds + 1):
                results["platform"].append(
                    measure(wrk, f"{base}{BASE_PATH}/transfer-out", platform_lua, args, target.proc.pid)
                )
                results["agent"].append(
                    measure(
                        wrk, f"{base}{BASE_PATH}/agents/me/transfer-out", agent_lua, args, target.proc.pid
                    )
                )
                print(
                    f"  round {round_no}: platform {results['platform'][-1]}  agent {results['agent'][-1]}",
                    flush=True,
                )
            print(
                f"\nPostgreSQL, {args.connections} connections, {args.duration:.0f} s runs, {args.rounds} rounds:"
            )
            print(
                f"{'endpoint':32} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'non-2xx':>8} {'server CPU us/req':>18}"
            )
            medians, cpu = {}, {}
            for name, path in (("platform", "POST /transfer-out"), ("agent", "POST /agents/me/transfer-out")):
                runs = results[name]
                medians[name] = statistics.median(r["rps"] for r in runs)
                cpu[name] = statistics.median(r["cpu_us"] for r in runs)
                print(
                    f"{path:32} {medians[name]:8.0f} {statistics.median(r['p50'] for r in runs):8.2f} "
                    f"{statistics.median(r['p99'] for r in runs):8.2f} {sum(r['errors'] for r in runs):8d} "
                    f"{cpu[name]:18.0f}"
                )
            print(
                f"agent / platform rate: {medians['agent'] / medians['platform']:.2f} (target >= 0.9, issue 33)"
            )
            print(f"platform / agent server CPU per request: {cpu['platform'] / cpu['agent']:.2f}")
            verify(url)
        finally:
            stop(target.proc)


if __name__ == "__main__":
    main()
