"""uvicorn next to granian: authenticated GET /config on platpay (SQLite) and the bare Starlette app, each
under both servers, one process each, in one run.

Issue 33's lever "compare uvicorn with granian side by side on the same app". This is a benchmark: it prints
figures and never fails on them. Targets (all on 127.0.0.1, free ports, one fresh temporary directory):
  bare/uvicorn     python bench/bare_app.py                    (what bench/http_config.py compares with)
  bare/granian     python bench/bare_app.py --server granian   (granian 1 worker, its Rust HTTP/1)
  platpay/uvicorn  platpay serve                               (one process)
  platpay/granian  granian --interface asgi --factory platpay.app:factory --workers 1
All four use asyncio's event loop (platpay's choice on SQLite; `--loop uvloop` for all four instead).
The SQLite database is created first (`platpay migrate`, `platpay platform create`) and shared by the two
platpay servers, which run in turn, never together; every round loads one target at a time, after a
warm-up, with wrk (one thread, 64 connections). Server CPU counts the server's whole process tree
(granian's worker is a child of its supervisor).

    .venv/bin/python bench/http_servers.py --rounds 3 --wait-quiet 60
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import http_config
from _support import (
    BIN,
    ROOT,
    bench_env,
    child_setup,
    free_port,
    machine_summary,
    platform_credentials,
    stop,
    tree_cpu_seconds,
    wait_http,
)

NAMES = ("bare/uvicorn", "bare/granian", "platpay/uvicorn", "platpay/granian")


def _start(
    name: str, command: list[str], env: dict[str, str], workdir: Path, port: int
) -> http_config.Target:
    log = workdir / f"{name.replace('/', '-')}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, cwd=workdir, env=env, stdout=out, stderr=subprocess.STDOUT, preexec_fn=child_setup
        )
    try:
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=120, proc=proc)
    except BaseException:
        stop(proc)
        raise
    return http_config.Target(name, proc, port, log)


def start(name: str, workdir: Path, database_url: str, document: Path, loop: str) -> http_config.Target:
    port = free_port()
    if name.startswith("bare/"):
        server = name.split("/", 1)[1]
        command = [sys.executable, str(Path(__file__).with_name("bare_app.py")), "--port", str(port)]
        command += ["--json", str(document), "--server", server, "--loop", loop]
        return _start(name, command, bench_env(), workdir, port)
    env = bench_env(
        PLATPAY_DATABASE_URL=database_url,
        PLATPAY_VAR_DIR=str(workdir / "var"),
        PLATPAY_HOST="127.0.0.1",
        PLATPAY_PORT=str(port),
        PLATPAY_EVENT_LOOP=loop if loop != "auto" else "asyncio",
    )
    if name == "platpay/uvicorn":
        command = [str(BIN / "platpay"), "serve", "--host", "127.0.0.1", "--port", str(port)]
    else:
        command = [str(BIN / "granian"), "--interface", "asgi", "--factory", "--workers", "1"]
        command += [
            "--loop",
            loop if loop != "auto" else "asyncio",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
        ]
        command += ["--log-level", "warning", "platpay.app:factory"]
    return _start(name, command, env, workdir, port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--targets", default=",".join(NAMES))
    parser.add_argument("--wait-quiet", type=float, default=0.0, metavar="SECONDS")
    parser.add_argument("--quiet-threshold", type=float, default=0.15)
    args = parser.parse_args()
    wanted = [name for name in args.targets.split(",") if name]
    if shutil.which("granian", path=str(BIN)) is None:
        sys.exit("granian is not installed in this environment (`make setup` installs it)")
    # measure() reads the server's CPU with this: granian's worker is a child of its supervisor.
    http_config.cpu_seconds = tree_cpu_seconds  # type: ignore[assignment]
    args.pg_admin_url = ""
    wrk = http_config.ensure_wrk()
    workdir = Path(tempfile.mkdtemp(prefix="platpay-bench-servers-"))
    print(
        f"machine: {machine_summary()}; load average before: {Path('/proc/loadavg').read_text().split()[:3]}"
    )
    database_url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
    running: list[http_config.Target] = []
    try:
        env = bench_env(PLATPAY_DATABASE_URL=database_url, PLATPAY_VAR_DIR=str(workdir / "var"))
        credentials = platform_credentials(env, cwd=workdir, migrate=True)
        lua = workdir / "auth.lua"
        http_config.write_lua(lua, credentials)
        # The bare app's document: what platpay answers (fetched once from platpay under uvicorn).
        first = start("platpay/uvicorn", workdir, database_url, workdir / "config.json", args.loop)
        first.credentials = credentials
        document = workdir / "config.json"
        document.write_bytes(http_config.fetch_config(first))
        stop(first.proc)
        results: dict[str, list[http_config.WrkResult]] = {name: [] for name in wanted}
        for round_no in range(1, args.rounds + 1):
            for name in wanted:
                target = start(name, workdir, database_url, document, args.loop)
                running.append(target)
                target.credentials = credentials
                http_config.fetch_config(target)
                try:
                    result = http_config.measure(target, wrk, lua, args, running)
                finally:
                    stop(target.proc, timeout=30)
                    running.remove(target)
                results[name].append(result)
                print(
                    f"round {round_no} {name:<16} {result.rps:>8.0f} req/s  p50 {result.p50_ms:.2f} ms  "
                    f"p99 {result.p99_ms:.2f} ms  srv CPU {http_config._fmt(result.server_cpu_us_per_req, '.0f')}"
                    f" us/req  non-2xx {result.non_2xx}  other load "
                    f"{http_config._fmt(result.other_cores, '.2f')} cores",
                    flush=True,
                )
        print(
            f"\nGET /config, {args.connections} connections, {args.duration:g} s, loop {args.loop}, "
            f"{args.rounds} round(s), median round"
        )
        print(
            f"{'target':<16} {'req/s':>8} {'p50 ms':>7} {'p99 ms':>7} {'srv µs/req':>10} {'vs bare/uvicorn':>15}"
        )
        base = http_config._median(results["bare/uvicorn"]).rps if results.get("bare/uvicorn") else None
        for name in wanted:
            r = http_config._median(results[name])
            ratio = f"{r.rps / base:.3f}" if base else "-"
            cpu = http_config._fmt(r.server_cpu_us_per_req, ".0f")
            print(f"{name:<16} {r.rps:>8.0f} {r.p50_ms:>7.2f} {r.p99_ms:>7.2f} {cpu:>10} {ratio:>15}")
        print(
            "per-round req/s: "
            + "; ".join(f"{n} " + ", ".join(f"{x.rps:.0f}" for x in results[n]) for n in wanted)
        )
    finally:
        for target in running:
            stop(target.proc)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
