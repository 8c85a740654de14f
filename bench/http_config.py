"""Authenticated GET /config under load: platpay on SQLite and on PostgreSQL next to a bare Starlette app.

Requirement measured: one server process, 64 concurrent connections for 10 s; report requests/s and
p50/p99 latency, and the ratio to a bare Starlette app returning the same JSON in the same run. Target (issue
33): ratio >= 0.4 and p99 < 20 ms. This is a benchmark, not a test: it prints figures and never fails on them.

What runs (all on 127.0.0.1, free ports, a fresh temporary directory):
  bare      python bench/bare_app.py    -- Starlette + uvicorn, the /config JSON from the SQLite server
  sqlite    platpay serve               -- fresh SQLite file, embedded job runner on (the default)
  postgres  platpay serve               -- fresh database platpay_bench_<random>, dropped afterwards
Each server is started once; every round loads one target at a time (bare, sqlite, postgres) with a short
warm-up, so the other two sit idle. Load comes from `wrk` with a Lua script that sends HTTP Basic
credentials (the bare app ignores them, so every target gets byte-identical requests).

wrk runs with one thread by default: the machine has 2 cores shared by wrk, the server and PostgreSQL,
and one wrk thread drives ~30k req/s here, far above any target, while leaving more CPU to the server.

    .venv/bin/python bench/http_config.py                 # 1 round, 10 s per target, 64 connections
    .venv/bin/python bench/http_config.py --rounds 3      # median of 3 interleaved rounds
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import re
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
    BIN,
    DEFAULT_PG_ADMIN,
    ROOT,
    bench_env,
    child_setup,
    children_cpu_seconds,
    cpu_seconds,
    debian_tool,
    free_port,
    machine_summary,
    pg_backend_pids,
    pg_cpu_delta,
    pg_cpu_snapshot,
    pg_database,
    pg_reachable,
    set_child_niceness,
    stop,
    system_busy_seconds,
    wait_http,
    wait_until_quiet,
)

BASE_PATH = "/2025-10-13"
TARGET_RATIO = 0.4  # issue 33
TARGET_P99_MS = 20.0


# ---- wrk --------------------------------------------------------------------------------------------


def ensure_wrk() -> str:
    return debian_tool("wrk")


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def _ms(value: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s|m|h)", value.strip())
    if not match:
        raise ValueError(f"unparseable wrk latency {value!r}")
    return float(match.group(1)) * _UNITS[match.group(2)]


@dataclass
class WrkResult:
    rps: float
    p50_ms: float
    p75_ms: float
    p90_ms: float
    p99_ms: float
    requests: int
    seconds: float
    non_2xx: int = 0
    socket_errors: dict[str, int] = field(default_factory=dict)
    server_cpu_us_per_req: float | None = None
    pg_cpu_us_per_req: float | None = None
    other_cores: float | None = None  # CPU used by processes not part of this measurement, in cores
    quiet_wait_cores: float | None = None
    raw: str = ""


def parse_wrk(text: str) -> WrkResult:
    """Parse `wrk --latency` output (Latency Distribution block, totals, errors)."""
    percentiles = {int(p): _ms(v) for p, v in re.findall(r"^\s+(50|75|90|99)%\s+(\S+)\s*$", text, re.M)}
    total = re.search(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m)", text, re.M)
    rps = re.search(r"^Requests/sec:\s+([\d.]+)", text, re.M)
    if not (total and rps and len(percentiles) == 4):
        raise ValueError(f"unexpected wrk output:\n{text}")
    errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", text)
    non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return WrkResult(
        rps=float(rps.group(1)),
        p50_ms=percentiles[50],
        p75_ms=percentiles[75],
        p90_ms=percentiles[90],
        p99_ms=percentiles[99],
        requests=int(total.group(1)),
        seconds=_ms(total.group(2) + total.group(3)) / 1000,
        non_2xx=int(non_2xx.group(1)) if non_2xx else 0,
        socket_errors=(
            dict(zip(("connect", "read", "write", "timeout"), map(int, errors.groups()), strict=True))
            if errors
            else {}
        ),
        raw=text,
    )


def run_wrk(wrk: str, url: str, lua: Path, *, connections: int, threads: int, seconds: float) -> str:
    cmd = [
        wrk,
        f"-t{threads}",
        f"-c{connections}",
        f"-d{max(1, round(seconds))}s",
        "--timeout",
        "5s",
        "--latency",
        "-s",
        str(lua),
        url,
    ]
    result = subprocess.run(
        cmd, capture_output=True, text=True, timeout=seconds + 60, check=False, preexec_fn=child_setup
    )
    if result.returncode != 0:
        raise RuntimeError(f"wrk failed ({result.returncode}): {result.stderr or result.stdout}")
    return result.stdout


# ---- targets ----------------------------------------------------------------------------------------


@dataclass
class Target:
    name: str
    proc: subprocess.Popen[Any]
    port: int
    log: Path
    credentials: tuple[str, str] | None = None
    database_url: str = ""
    results: list[WrkResult] = field(default_factory=list)
    workers: int = 1

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{BASE_PATH}/config"


_BANNER = re.compile(r"^\s+(clientId|clientSecret)\s+(\S+)\s*$", re.M)


def start_platpay(
    name: str,
    database_url: str,
    workdir: Path,
    extra_env: dict[str, str],
    *,
    workers: int = 1,
    credentials: tuple[str, str] | None = None,
) -> Target:
    """`platpay serve` with `workers` processes; its credentials from the first-start banner, or the ones
    given (a restart on a database that was already bootstrapped prints none)."""
    port = free_port()
    home = workdir / name
    home.mkdir(parents=True, exist_ok=True)
    log = home / "server.log"
    env = bench_env(  # (extra_env may name another URL of the same database: over a Unix socket, say)
        **{
            "PLATPAY_DATABASE_URL": database_url,
            "PLATPAY_VAR_DIR": str(home / "var"),
            "PLATPAY_HOST": "127.0.0.1",
            "PLATPAY_PORT": str(port),
            **extra_env,
        }
    )
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                str(BIN / "platpay"),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *(["--workers", str(workers)] if workers > 1 else []),
            ],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=child_setup,
        )
    target = Target(name, proc, port, log, database_url=database_url, workers=workers)
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=180, proc=proc)
        if credentials is not None:
            target.credentials = credentials
            return target
        found = dict(_BANNER.findall(log.read_text("utf-8", errors="replace")))
        if "clientId" not in found or "clientSecret" not in found:
            raise RuntimeError(f"no credentials in the serve banner; see {log}")
        target.credentials = (found["clientId"], found["clientSecret"])
    except BaseException:
        stop(proc)
        raise
    return target


def start_bare(workdir: Path, document: Path) -> Target:
    port = free_port()
    log = workdir / "bare.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                str(Path(__file__).with_name("bare_app.py")),
                "--port",
                str(port),
                "--json",
                str(document),
            ],
            cwd=workdir,
            env=bench_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=child_setup,
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=30, proc=proc)
    except BaseException:
        stop(proc)
        raise
    return Target("bare", proc, port, log)


def basic(credentials: tuple[str, str]) -> str:
    return "Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode()).decode()


def fetch_config(target: Target) -> bytes:
    assert target.credentials is not None
    request = urllib.request.Request(target.url, headers={"Authorization": basic(target.credentials)})
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.status != 200:
            raise RuntimeError(f"{target.name}: GET /config answered {response.status}")
        return response.read()


def write_lua(path: Path, credentials: tuple[str, str]) -> None:
    path.write_text(
        "-- every request carries the platpay sandbox token (HTTP Basic); the bare app ignores it\n"
        'wrk.method = "GET"\n'
        f'wrk.headers["Authorization"] = "{basic(credentials)}"\n',
        "utf-8",
    )


def measure(
    target: Target, wrk: str, lua: Path, args: argparse.Namespace, running: list[Target]
) -> WrkResult:
    quiet = None
    if args.wait_quiet > 0:
        quiet = wait_until_quiet(
            args.wait_quiet, threshold_cores=args.quiet_threshold, ours=[t.proc.pid for t in running]
        )
    if args.warmup > 0:
        run_wrk(wrk, target.url, lua, connections=args.connections, threads=args.threads, seconds=args.warmup)
    is_pg = target.name == "postgres"
    # Only the backends serving our server's pool: other users of this PostgreSQL are "other load".
    backends = pg_backend_pids(args.pg_admin_url, target.database_url) if is_pg else None
    ours_before = sum(cpu_seconds(t.proc.pid) or 0.0 for t in running)
    server_before = cpu_seconds(target.proc.pid)
    pg_before = pg_cpu_snapshot(backends) if is_pg else None
    wrk_before = children_cpu_seconds()
    busy_before = system_busy_seconds()
    text = run_wrk(
        wrk, target.url, lua, connections=args.connections, threads=args.threads, seconds=args.duration
    )
    busy_after = system_busy_seconds()
    wrk_after = children_cpu_seconds()
    pg_after = pg_cpu_snapshot(backends) if is_pg else None
    server_after = cpu_seconds(target.proc.pid)
    ours_after = sum(cpu_seconds(t.proc.pid) or 0.0 for t in running)
    result = parse_wrk(text)
    result.quiet_wait_cores = quiet
    if result.requests:
        if server_before is not None and server_after is not None:
            result.server_cpu_us_per_req = (server_after - server_before) * 1e6 / result.requests
        if pg_before is not None and pg_after is not None:
            result.pg_cpu_us_per_req = pg_cpu_delta(pg_before, pg_after) * 1e6 / result.requests
    if busy_before is not None and busy_after is not None:
        ours = (ours_after - ours_before) + (wrk_after - wrk_before)
        if pg_before is not None and pg_after is not None:
            ours += pg_cpu_delta(pg_before, pg_after)
        elapsed = busy_after[1] - busy_before[1]
        result.other_cores = max(0.0, (busy_after[0] - busy_before[0]) - ours) / elapsed
    if target.proc.poll() is not None:
        raise RuntimeError(f"{target.name} exited during the run; see {target.log}")
    return result


# ---- report -----------------------------------------------------------------------------------------


def _median(results: list[WrkResult]) -> WrkResult:
    """The round with the median requests/s (its own latencies, not a mix of rounds)."""
    ordered = sorted(results, key=lambda r: r.rps)
    return ordered[(len(ordered) - 1) // 2]


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(targets: list[Target], args: argparse.Namespace) -> dict[str, Any]:
    bare = next((t for t in targets if t.name == "bare"), None)
    bare_rps = _median(bare.results).rps if bare and bare.results else None
    print()
    print(
        f"GET {BASE_PATH}/config  --  {args.connections} connections, {args.duration:g} s, wrk -t{args.threads}, "
        f"{len(targets[0].results)} round(s), median round shown"
    )
    header = (
        f"{'target':<10} {'req/s':>9} {'p50 ms':>8} {'p90 ms':>8} {'p99 ms':>8} {'vs bare':>8} "
        f"{'srv CPU µs/req':>15} {'pg CPU µs/req':>14} {'other load':>10} {'errors':>7}  "
        f"target (>= {TARGET_RATIO} of bare, p99 < {TARGET_P99_MS:g} ms)"
    )
    print(header)
    print("-" * len(header))
    summary: dict[str, Any] = {}
    for target in targets:
        if not target.results:
            continue
        r = _median(target.results)
        ratio = r.rps / bare_rps if bare_rps else None
        errors = r.non_2xx + sum(r.socket_errors.values())
        verdict = ""
        if target.name != "bare" and ratio is not None:
            ok = ratio >= TARGET_RATIO and r.p99_ms < TARGET_P99_MS and errors == 0
            verdict = "met" if ok else "MISSED"
        print(
            f"{target.name:<10} {r.rps:>9.0f} {r.p50_ms:>8.2f} {r.p90_ms:>8.2f} {r.p99_ms:>8.2f} "
            f"{_fmt(ratio, '.3f'):>8} {_fmt(r.server_cpu_us_per_req, '.0f'):>15} "
            f"{_fmt(r.pg_cpu_us_per_req, '.0f'):>14} {_fmt(r.other_cores, '.2f'):>10} {errors:>7}  {verdict}"
        )
        summary[target.name] = {
            "rps": round(r.rps, 1),
            "p50_ms": r.p50_ms,
            "p90_ms": r.p90_ms,
            "p99_ms": r.p99_ms,
            "ratio_vs_bare": round(ratio, 4) if ratio is not None else None,
            "server_cpu_us_per_request": round(r.server_cpu_us_per_req, 1)
            if r.server_cpu_us_per_req
            else None,
            "postgres_cpu_us_per_request": round(r.pg_cpu_us_per_req, 1) if r.pg_cpu_us_per_req else None,
            "other_load_cores": round(r.other_cores, 2) if r.other_cores is not None else None,
            "non_2xx": r.non_2xx,
            "socket_errors": r.socket_errors,
            "rounds_rps": [round(x.rps, 1) for x in target.results],
        }
    if len(targets[0].results) > 1:
        print(
            "\nper-round req/s: "
            + "; ".join(
                f"{t.name} " + ", ".join(f"{x.rps:.0f}" for x in t.results) for t in targets if t.results
            )
        )
    print(
        "\nsrv CPU = CPU time of the server process per request (all its threads); pg CPU = CPU time of the "
        "postgres backends serving it, per request. Both include idle-time housekeeping (the embedded job runner polls).\n"
        "other load = CPU (in cores) used during the run by processes that are not part of it (another user's "
        "tests on a shared machine); figures taken with other load well above 0 understate platpay and the bare "
        "app alike, and their ratio less."
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds of measured load per target")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of unmeasured load first")
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument(
        "--threads", type=int, default=1, help="wrk threads (2 cores are shared with the server)"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="interleaved rounds; the median round is reported"
    )
    parser.add_argument(
        "--targets", default="bare,sqlite,postgres", help="comma-separated subset of bare,sqlite,postgres"
    )
    parser.add_argument(
        "--pg-admin-url", default=DEFAULT_PG_ADMIN, help="PostgreSQL maintenance database URL"
    )
    parser.add_argument(
        "--server-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment for the platpay servers (e.g. PLATPAY_LOG_LEVEL=WARNING)",
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each run, wait up to this long for the machine to be idle apart from our processes",
    )
    parser.add_argument(
        "--quiet-threshold", type=float, default=0.15, help="cores of foreign load that count as idle"
    )
    parser.add_argument(
        "--nice",
        type=int,
        default=0,
        help="niceness delta for the servers and wrk, e.g. -10 on a machine shared with other work (root)",
    )
    parser.add_argument("--json-out", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (server logs)")
    parser.add_argument("--verbose", action="store_true", help="print every raw wrk output")
    args = parser.parse_args()

    wanted = [name.strip() for name in args.targets.split(",") if name.strip()]
    unknown = set(wanted) - {"bare", "sqlite", "postgres"}
    if unknown:
        sys.exit(f"unknown targets: {', '.join(sorted(unknown))}")
    extra_env = dict(item.split("=", 1) for item in args.server_env)
    set_child_niceness(args.nice)
    wrk = ensure_wrk()
    if "postgres" in wanted:
        problem = pg_reachable(args.pg_admin_url)
        if problem:
            print(f"PostgreSQL unreachable at {args.pg_admin_url} ({problem}): skipping the postgres target")
            wanted.remove("postgres")

    workdir = Path(tempfile.mkdtemp(prefix="platpay-bench-http-"))
    print(
        f"machine: {machine_summary()}; load average before: {Path('/proc/loadavg').read_text().split()[:3]}"
    )
    print(f"work dir: {workdir}")
    targets: list[Target] = []  # measured, in this order every round
    running: list[Target] = []  # started by us: stopped at the end whatever happens
    lua = workdir / "auth.lua"
    pg_cm = None
    try:
        # The SQLite server comes first: it provides the credentials for the Lua script and the JSON body
        # the bare app returns.
        sqlite = start_platpay(
            "sqlite", f"sqlite+aiosqlite:///{workdir / 'sqlite' / 'bench.db'}", workdir, extra_env
        )
        running.append(sqlite)
        assert sqlite.credentials is not None
        document = fetch_config(sqlite)
        (workdir / "config.json").write_bytes(document)
        write_lua(lua, sqlite.credentials)
        if "bare" in wanted:
            running.append(start_bare(workdir, workdir / "config.json"))
            targets.append(running[-1])
        if "sqlite" in wanted:
            targets.append(sqlite)
        else:
            stop(sqlite.proc)
        if "postgres" in wanted:
            pg_cm = pg_database(args.pg_admin_url)
            url = pg_cm.__enter__()
            postgres = start_platpay("postgres", url, workdir, extra_env)
            running.append(postgres)
            assert postgres.credentials is not None
            fetch_config(postgres)
            # The PostgreSQL server bootstrapped its own platform: same script, its own credentials.
            write_lua(workdir / "auth-postgres.lua", postgres.credentials)
            targets.append(postgres)
        print(
            f"body: {len(document)} bytes; servers: "
            + ", ".join(f"{t.name} pid {t.proc.pid}" for t in targets)
        )
        for round_no in range(1, args.rounds + 1):
            for target in targets:
                script = workdir / "auth-postgres.lua" if target.name == "postgres" else lua
                started = time.monotonic()
                result = measure(target, wrk, script, args, running)
                target.results.append(result)
                print(
                    f"round {round_no} {target.name:<8} {result.rps:>8.0f} req/s  p50 {result.p50_ms:.2f} ms  "
                    f"p99 {result.p99_ms:.2f} ms  non-2xx {result.non_2xx}  other load "
                    f"{_fmt(result.other_cores, '.2f')} cores  ({time.monotonic() - started:.0f} s)",
                    flush=True,
                )
                if args.verbose:
                    print(result.raw)
        summary = report(targets, args)
        if args.json_out:
            args.json_out.write_text(
                json.dumps(
                    {
                        "machine": machine_summary(),
                        "connections": args.connections,
                        "duration_s": args.duration,
                        "wrk_threads": args.threads,
                        "rounds": args.rounds,
                        "targets": summary,
                    },
                    indent=2,
                )
            )
    finally:
        for target in running:
            stop(target.proc)
        if pg_cm is not None:
            pg_cm.__exit__(None, None, None)
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
