"""`platpay mcp` tool calls over Streamable HTTP next to the same operations as direct HTTP calls, in the
same run; and the policy dry-run's rate next to GET /agents/me's.

Requirements measured: the MCP layer adds at most 2 ms at p50 to `get_me` and `transfer_out`;
POST /agents/me/policy/evaluate runs at >= 0.8 x the rate of GET /agents/me. A benchmark, not a test: it
prints figures and never fails on them.

Setup, all on 127.0.0.1: a fresh SQLite database in a temporary directory, one `platpay serve` (embedded
job runner off), one customer seeded as bench/transfer_out.py seeds them (funded with $1B), one agent
(AUTO, limits far above a run's spending, so every transfer executes), and one `platpay mcp --http`
process bound to its token. Each measurement is sequential, on one connection (latency, not throughput):
`--calls` calls after a short warm-up; direct and MCP runs alternate for `--rounds` rounds.

    .venv/bin/python bench/mcp_agent.py                  # 200 calls per run, 2 rounds (about 30 s)
    .venv/bin/python bench/mcp_agent.py --calls 500 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import httpx
from _support import bench_env, cpu_seconds, free_port, machine_summary, stop, wait_http
from agent_transfer import _agents
from http_config import BIN, start_platpay
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from transfer_out import BASE_PATH, seed


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def _cpu(pids: dict[str, int]) -> dict[str, float]:
    return {
        name: (time.process_time() if pid == 0 else cpu_seconds(pid) or 0.0) for name, pid in pids.items()
    }


async def timed(call: Callable[[], Awaitable[Any]], calls: int, warmup: int = 20) -> list[float]:
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


async def run(
    api: str, token: str, mcp_url: str, pair: Any, calls: int, rounds: int, pids: dict[str, int]
) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    body = {
        "source": {"accountId": pair.internal_id},
        "destination": {"accountId": pair.external_id},
        "amount": 1,
    }
    dry = {"type": "TRANSFER_OUT", **body}
    results: dict[str, list[float]] = {}
    cpu: dict[str, dict[str, float]] = {}  # run -> process -> CPU seconds spent during it
    async with (
        httpx.AsyncClient(base_url=api, headers=headers, timeout=30, trust_env=False) as http,
        streamable_http_client(mcp_url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()

        async def direct_me() -> None:
            assert (await http.get("/agents/me")).status_code == 200

        async def direct_transfer() -> None:
            response = await http.post(
                "/agents/me/transfer-out", json=body, headers={"Idempotency-Key": str(uuid.uuid4())}
            )
            assert response.status_code == 201, response.text

        async def mcp_me() -> None:
            assert not (await session.call_tool("get_me", {})).is_error

        async def mcp_transfer() -> None:
            result = await session.call_tool("transfer_out", body)
            assert not result.is_error, result

        async def dry_run() -> None:
            assert (await http.post("/agents/me/policy/evaluate", json=dry)).status_code == 200

        runs = {
            "direct GET /agents/me": direct_me,
            "MCP get_me": mcp_me,
            "direct POST /agents/me/transfer-out": direct_transfer,
            "MCP transfer_out": mcp_transfer,
            "GET /agents/me (rate)": direct_me,
            "POST /agents/me/policy/evaluate (rate)": dry_run,
        }
        for _ in range(rounds):
            for name, call in runs.items():
                for _ in range(20):  # warm-up, outside the CPU accounting
                    await call()
                before = _cpu(pids)
                results.setdefault(name, []).extend(await timed(call, calls, warmup=0))
                after = _cpu(pids)
                spent = cpu.setdefault(name, {})
                for process in pids:
                    spent[process] = spent.get(process, 0.0) + after[process] - before[process]
    names = list(pids)
    cpu_head = " ".join(f"{p + ' us':>10}" for p in names)
    print(f"\n{'run':42} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'per s':>8}  CPU per call: {cpu_head}")
    for name, samples in results.items():
        p50, p99 = percentiles(samples)
        per_call = " ".join(f"{cpu[name][p] / len(samples) * 1e6:10.0f}" for p in names)
        print(
            f"{name:42} {len(samples):6d} {p50:8.2f} {p99:8.2f} {1000 / statistics.mean(samples):8.0f}"
            f"                {per_call}"
        )
    me, mcp_me_ = percentiles(results["direct GET /agents/me"])[0], percentiles(results["MCP get_me"])[0]
    out = percentiles(results["direct POST /agents/me/transfer-out"])[0]
    mcp_out = percentiles(results["MCP transfer_out"])[0]
    rate = statistics.mean(results["GET /agents/me (rate)"]) / statistics.mean(
        results["POST /agents/me/policy/evaluate (rate)"]
    )
    print(
        f"\nMCP adds at p50: get_me {mcp_me_ - me:+.2f} ms, transfer_out {mcp_out - out:+.2f} ms (target <= 2 ms)"
    )
    print(f"dry-run rate / GET /agents/me rate: {rate:.2f} (target >= 0.8)")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    print(machine_summary())
    with tempfile.TemporaryDirectory(prefix="platpay-bench-mcp-") as tmp:
        workdir = Path(tmp)
        target = start_platpay(
            "serve",
            f"sqlite+aiosqlite:///{workdir / 'platpay.db'}",
            workdir,
            {"PLATPAY_RUN_EMBEDDED_WORKER": "false"},
        )
        mcp_proc = None
        try:
            base = f"http://127.0.0.1:{target.port}"
            pair = seed(target, 1)[0]  # (the platform's own account comes last)
            assert target.credentials is not None
            [token] = asyncio.run(_agents(base, target.credentials, [pair]))
            port = free_port()
            env = bench_env(PLATPAY_AGENT_TOKEN=token, PLATPAY_API_URL=base + BASE_PATH)
            log = (workdir / "mcp.log").open("wb")
            mcp_proc = subprocess.Popen(
                [str(BIN / "platpay"), "mcp", "--http", "--port", str(port)], env=env, stdout=log, stderr=log
            )
            wait_http(f"http://127.0.0.1:{port}/healthz", proc=mcp_proc)
            pids = {"api": target.proc.pid, "mcp": mcp_proc.pid, "client": 0}
            mcp_url = f"http://127.0.0.1:{port}/mcp"
            asyncio.run(run(base + BASE_PATH, token, mcp_url, pair, args.calls, args.rounds, pids))
        finally:
            if mcp_proc is not None:
                stop(mcp_proc)
            stop(target.proc)


if __name__ == "__main__":
    main()
