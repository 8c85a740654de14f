"""Bulk customer import (POST /customers/bulk/csv): rows/s and the importing process's peak memory, on SQLite
and on PostgreSQL, for 10k and 100k rows; and POST /customers requests/s at 32 connections on PostgreSQL.

A benchmark, not a test: it prints figures and never fails on them. Targets (the issue): >= 2,000 rows/s on
PostgreSQL, and a peak memory of the importing process independent of the file's size (10k vs 100k rows).

What runs, for each database (a fresh SQLite file in a temporary directory; a fresh PostgreSQL database
platpay_bench_bulk_<random>, dropped afterwards), all on 127.0.0.1:
  server   `platpay serve` with PLATPAY_RUN_EMBEDDED_WORKER=false: takes the upload (streamed: checked, then
           stored in the database) and answers GET /customers/bulk/jobs/{jobId}
  worker   a fresh `platpay worker` process per file: the importing process. Its peak RSS is VmHWM from
           /proc/<pid>/status when the import has completed; its RSS once started (idle) is shown beside it.
For each file (valid rows, 1 in 10 a BUSINESS, generated into the temporary directory): start the worker,
upload, poll the job every 50 ms until COMPLETED. rows/s = rows / (upload start -> COMPLETED seen); the
job's own createdAt -> completedAt (the import after the upload) is shown too. The server's peak RSS while
taking an upload is VmHWM after the upload, reset before it (`echo 5 > /proc/<pid>/clear_refs`).

POST /customers: a fresh `platpay serve` (embedded job runner on, the default) on its own PostgreSQL database,
loaded by `wrk` with a Lua script that sends a full INDIVIDUAL body with a unique platformCustomerId per
request (umaAddress left out: generated), HTTP Basic credentials, 32 connections, after a short warm-up.

    .venv/bin/python bench/bulk_import.py                              # 10k + 100k rows, both databases
    .venv/bin/python bench/bulk_import.py --sizes 10000 --backends postgres --skip-post
    .venv/bin/python bench/bulk_import.py --nice -10 --wait-quiet 60   # as root, ahead of other load
    .venv/bin/python bench/bulk_import.py --backends ''                # POST /customers only
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
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
    machine_summary,
    pg_backend_pids,
    pg_cpu_delta,
    pg_cpu_snapshot,
    pg_database,
    pg_reachable,
    set_child_niceness,
    stop,
    system_busy_seconds,
    wait_until_quiet,
)
from http_config import basic, ensure_wrk, parse_wrk, run_wrk, start_platpay

BASE_PATH = "/2025-10-13"
TARGET_ROWS_PER_S = 2000
HEADER = [
    "umaAddress",
    "platformCustomerId",
    "customerType",
    "fullName",
    "birthDate",
    "email",
    "addressLine1",
    "addressLine2",
    "city",
    "state",
    "postalCode",
    "country",
    "businessLegalName",
    "businessTaxId",
]


# ---- files ------------------------------------------------------------------------------------------


def write_csv(path: Path, rows: int, *, tag: str, domain: str) -> None:
    """`rows` valid customers; ids and UMA addresses unique per `tag` (several files go to one tenant)."""
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(HEADER)
        for n in range(1, rows + 1):
            if n % 10 == 0:
                writer.writerow(
                    [
                        f"${tag}b{n}@{domain}",
                        f"{tag}-{n}",
                        "BUSINESS",
                        "",
                        "",
                        f"ops{n}@acme.example",
                        "500 Market St",
                        "Suite 5",
                        "San Francisco",
                        "CA",
                        "94105",
                        "US",
                        f"Acme {n} Inc.",
                        "12-3456789",
                    ]
                )
            else:
                writer.writerow(
                    [
                        f"${tag}i{n}@{domain}",
                        f"{tag}-{n}",
                        "INDIVIDUAL",
                        "Jane O'Doe",
                        f"19{50 + n % 50}-0{1 + n % 9}-1{n % 10}",
                        f"jane{n}@example.com",
                        f"{n} Main St",
                        "",
                        "Springfield",
                        "IL",
                        "62701",
                        "US",
                        "",
                        "",
                    ]
                )


# ---- processes --------------------------------------------------------------------------------------


def memory_kib(pid: int, field: str) -> int | None:
    """VmHWM (peak resident set) or VmRSS of a process, in KiB (Linux /proc)."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1])
    return None


def reset_peak(pid: int) -> bool:
    """Reset VmHWM to the current RSS (Linux >= 4.0: clear_refs 5); False where not permitted."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def backend_cpu(admin_url: str, database_url: str) -> dict[int, float]:
    """CPU seconds so far of each PostgreSQL backend serving the benchmark's database, by pid: what our
    processes cost the database, whatever else runs on the machine."""
    return pg_cpu_snapshot(pg_backend_pids(admin_url, database_url))


def other_load(
    busy_before: tuple[float, float] | None,
    busy_after: tuple[float, float] | None,
    *,
    ours: list[tuple[float | None, float | None]],
) -> float | None:
    """CPU (in cores) used between two /proc/stat readings by processes not part of the measurement (other
    people's work on a shared machine): figures taken with this well above 0 understate platpay."""
    if busy_before is None or busy_after is None or busy_after[1] <= busy_before[1]:
        return None
    own = sum(after - before for before, after in ours if before is not None and after is not None)
    return max(0.0, (busy_after[0] - busy_before[0]) - own) / (busy_after[1] - busy_before[1])


def start_worker(env: dict[str, str], home: Path, log: Path) -> subprocess.Popen[Any]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(BIN / "platpay"), "worker"],
            cwd=home,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=child_setup,
        )
    deadline = time.monotonic() + 60
    while b"jobs.runner_started" not in log.read_bytes():
        if proc.poll() is not None or time.monotonic() > deadline:
            stop(proc)
            raise RuntimeError(f"the worker did not start; see {log}")
        time.sleep(0.05)
    return proc


def api(
    method: str,
    url: str,
    credentials: tuple[str, str],
    *,
    body: bytes | None = None,
    content_type: str | None = None,
) -> tuple[int, Any]:
    headers = {"Authorization": basic(credentials)}
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def upload(url: str, credentials: tuple[str, str], path: Path) -> dict[str, Any]:
    """POST the file as multipart/form-data (built in memory here: the client is not what is measured)."""
    boundary = secrets.token_hex(16)
    body = b"".join(
        [
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="{path.name}"\r\n'.encode(),
            b"Content-Type: text/csv\r\n\r\n",
            path.read_bytes(),
            f"\r\n--{boundary}--\r\n".encode(),
        ]
    )
    status, answer = api(
        "POST", url, credentials, body=body, content_type=f"multipart/form-data; boundary={boundary}"
    )
    if status != 202:
        raise RuntimeError(f"upload answered {status}: {answer}")
    return answer


def _seconds_between(start: str, end: str) -> float:
    from datetime import datetime

    return (
        datetime.fromisoformat(end.replace("Z", "+00:00"))
        - datetime.fromisoformat(start.replace("Z", "+00:00"))
    ).total_seconds()


# ---- the import measurement -------------------------------------------------------------------------


@dataclass
class ImportResult:
    backend: str
    rows: int
    file_mib: float
    upload_s: float
    import_s: float  # the job's createdAt -> completedAt
    total_s: float  # upload start -> COMPLETED observed
    rows_per_s: float
    worker_peak_mib: float | None
    worker_idle_mib: float | None
    server_upload_peak_mib: float | None
    successful: int
    failed: int
    worker_cpu_s: float | None  # CPU time of the importing worker, all of the import
    pg_cpu_s: float | None  # CPU time of the PostgreSQL backends serving the benchmark's database
    other_cores: float | None  # CPU used meanwhile by processes not part of the measurement, in cores


def measure_backend(
    backend: str, database_url: str, workdir: Path, sizes: list[int], args: argparse.Namespace
) -> list[ImportResult]:
    extra = {"PLATPAY_RUN_EMBEDDED_WORKER": "false", "PLATPAY_LOG_LEVEL": "WARNING"}
    if args.chunk_rows:
        extra["PLATPAY_BULK_IMPORT_CHUNK_ROWS"] = str(args.chunk_rows)
    server = start_platpay(backend, database_url, workdir, extra)
    results = []
    try:
        assert server.credentials is not None
        base = f"http://127.0.0.1:{server.port}{BASE_PATH}"
        status, config = api("GET", f"{base}/config", server.credentials)
        assert status == 200, config
        home = workdir / backend
        worker_env = bench_env(
            PLATPAY_DATABASE_URL=database_url,
            PLATPAY_VAR_DIR=str(home / "var"),
            PLATPAY_JOB_POLL_SECONDS="0.05",
            **{**extra, "PLATPAY_LOG_LEVEL": "INFO"},  # start-up is seen in its log: jobs.runner_started
        )
        for index, rows in enumerate(sizes):
            path = workdir / f"customers-{rows}.csv"
            write_csv(path, rows, tag=f"{backend[:2]}{index}", domain=config["umaDomain"])
            worker = start_worker(worker_env, home, home / f"worker-{rows}.log")
            try:
                idle = memory_kib(worker.pid, "VmRSS")
                if args.wait_quiet > 0:
                    wait_until_quiet(
                        args.wait_quiet,
                        threshold_cores=args.quiet_threshold,
                        ours=[server.proc.pid, worker.pid],
                    )
                worker_cpu_before = cpu_seconds(worker.pid)  # start-up and idle polling left out
                can_reset = reset_peak(server.proc.pid)
                server_cpu_before = cpu_seconds(server.proc.pid)
                busy_before = system_busy_seconds()
                pg_before = backend_cpu(args.pg_admin_url, database_url) if backend == "postgres" else None
                started = time.perf_counter()
                accepted = upload(f"{base}/customers/bulk/csv", server.credentials, path)
                uploaded = time.perf_counter()
                server_peak = memory_kib(server.proc.pid, "VmHWM") if can_reset else None
                job_url = f"{base}/customers/bulk/jobs/{accepted['jobId']}"
                while True:
                    status, job = api("GET", job_url, server.credentials)
                    if status == 200 and job["status"] in ("COMPLETED", "FAILED"):
                        break
                    if worker.poll() is not None:
                        raise RuntimeError(f"the worker exited with {worker.returncode}; see {home}")
                    time.sleep(0.05)
                finished = time.perf_counter()
                peak = memory_kib(worker.pid, "VmHWM")
                worker_cpu_after = cpu_seconds(worker.pid)
                server_cpu_after = cpu_seconds(server.proc.pid)
                busy_after = system_busy_seconds()
                pg_after = backend_cpu(args.pg_admin_url, database_url) if pg_before is not None else None
            finally:
                stop(worker)
            if job["status"] != "COMPLETED":
                raise RuntimeError(f"import {job['id']} ended {job['status']}: {job.get('failureReason')}")
            result = ImportResult(
                backend=backend,
                rows=rows,
                file_mib=path.stat().st_size / 2**20,
                upload_s=uploaded - started,
                import_s=_seconds_between(job["createdAt"], job["completedAt"]),
                total_s=finished - started,
                rows_per_s=rows / (finished - started),
                worker_peak_mib=peak / 1024 if peak else None,
                worker_idle_mib=idle / 1024 if idle else None,
                server_upload_peak_mib=server_peak / 1024 if server_peak else None,
                successful=job["progress"]["successful"],
                failed=job["progress"]["failed"],
                worker_cpu_s=worker_cpu_after - worker_cpu_before
                if worker_cpu_before is not None and worker_cpu_after is not None
                else None,
                other_cores=other_load(
                    busy_before,
                    busy_after,
                    ours=[
                        (worker_cpu_before, worker_cpu_after),
                        (server_cpu_before, server_cpu_after),
                        (
                            0.0,
                            pg_cpu_delta(pg_before, pg_after)
                            if pg_before is not None and pg_after is not None
                            else 0.0,
                        ),
                    ],
                ),
                pg_cpu_s=pg_cpu_delta(pg_before, pg_after)
                if pg_before is not None and pg_after is not None
                else None,
            )
            results.append(result)
            print(
                f"{backend:<9} {rows:>7} rows  {result.rows_per_s:>6.0f} rows/s  upload {result.upload_s:.1f} s  import {result.import_s:.1f} s  "
                f"worker peak {_fmt(result.worker_peak_mib, '.0f')} MiB (idle {_fmt(result.worker_idle_mib, '.0f')})  "
                f"failed {result.failed}  other load {_fmt(result.other_cores, '.2f')} cores",
                flush=True,
            )
            path.unlink()
    finally:
        stop(server.proc)
    return results


# ---- POST /customers under wrk ----------------------------------------------------------------------

_LUA = """-- POST /customers: a full INDIVIDUAL, a unique platformCustomerId per request (umaAddress generated)
local counter = 0
local prefix = "%(prefix)s"
local threads = {}
function setup(thread)
  thread:set("tid", #threads + 1)
  table.insert(threads, thread)
end
wrk.method = "POST"
wrk.headers["Authorization"] = "%(authorization)s"
wrk.headers["Content-Type"] = "application/json"
request = function()
  counter = counter + 1
  local body = string.format('{"customerType":"INDIVIDUAL","platformCustomerId":"%%s-%%d-%%d","fullName":"Jane Doe",'
    .. '"birthDate":"1990-04-12","email":"jane@example.com","address":{"line1":"1 Main St","city":"Springfield",'
    .. '"state":"IL","postalCode":"62701","country":"US"}}', prefix, tid or 0, counter)
  return wrk.format(nil, nil, nil, body)
end
"""


def measure_post_customers(database_url: str, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    wrk = ensure_wrk()
    server = start_platpay("post-customers", database_url, workdir, {"PLATPAY_LOG_LEVEL": "WARNING"})
    try:
        assert server.credentials is not None
        url = f"http://127.0.0.1:{server.port}{BASE_PATH}/customers"
        results = {}
        for phase, seconds in (("warmup", args.warmup), ("measured", args.duration)):
            if seconds <= 0:
                continue
            lua = workdir / f"post-{phase}.lua"
            lua.write_text(
                _LUA
                % {
                    "prefix": f"wrk-{phase}-{secrets.token_hex(3)}",
                    "authorization": basic(server.credentials),
                }
            )
            if phase == "measured" and args.wait_quiet > 0:
                wait_until_quiet(
                    args.wait_quiet, threshold_cores=args.quiet_threshold, ours=[server.proc.pid]
                )
            server_before = cpu_seconds(server.proc.pid)
            pg_before = backend_cpu(args.pg_admin_url, database_url)
            wrk_before, busy_before = children_cpu_seconds(), system_busy_seconds()
            results[phase] = parse_wrk(
                run_wrk(wrk, url, lua, connections=args.connections, threads=args.threads, seconds=seconds)
            )
            wrk_after, busy_after = children_cpu_seconds(), system_busy_seconds()
            server_after = cpu_seconds(server.proc.pid)
            pg_after = backend_cpu(args.pg_admin_url, database_url)
        result = results["measured"]
        status, listed = api("GET", f"{url}?limit=1", server.credentials)
        created = listed.get("totalCount") if status == 200 else None
        if server.proc.poll() is not None:
            raise RuntimeError(f"the server exited during the run; see {server.log}")
    finally:
        stop(server.proc)
    return {
        "connections": args.connections,
        "seconds": result.seconds,
        "rps": result.rps,
        "p50_ms": result.p50_ms,
        "p90_ms": result.p90_ms,
        "p99_ms": result.p99_ms,
        "requests": result.requests,
        "non_2xx": result.non_2xx,
        "socket_errors": result.socket_errors,
        "customers_in_database": created,
        "server_cpu_ms_per_request": (server_after - server_before) * 1000 / result.requests
        if result.requests and server_before is not None and server_after is not None
        else None,
        "pg_cpu_ms_per_request": pg_cpu_delta(pg_before, pg_after) * 1000 / result.requests
        if result.requests
        else None,
        "other_load_cores": other_load(
            busy_before,
            busy_after,
            ours=[
                (server_before, server_after),
                (wrk_before, wrk_after),
                (0.0, pg_cpu_delta(pg_before, pg_after)),
            ],
        ),
    }


# ---- report -----------------------------------------------------------------------------------------


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def report(results: list[ImportResult], post: dict[str, Any] | None, args: argparse.Namespace) -> None:
    print()
    print(
        f"bulk import, upload start -> COMPLETED (chunk {args.chunk_rows or 'default'} rows; "
        f"target >= {TARGET_ROWS_PER_S} rows/s on PostgreSQL)"
    )
    header = (
        f"{'backend':<9} {'rows':>7} {'file MiB':>8} {'upload s':>8} {'import s':>8} {'total s':>8} {'rows/s':>7} "
        f"{'worker peak MiB':>15} {'worker idle MiB':>15} {'server upload peak MiB':>22} "
        f"{'worker CPU ms/1k rows':>21} {'pg CPU ms/1k rows':>17} {'other load':>10}"
    )
    print(header)
    print("-" * len(header))
    for r in results:
        per_k = 1000 / r.rows
        print(
            f"{r.backend:<9} {r.rows:>7} {r.file_mib:>8.1f} {r.upload_s:>8.2f} {r.import_s:>8.2f} {r.total_s:>8.2f} "
            f"{r.rows_per_s:>7.0f} {_fmt(r.worker_peak_mib, '.1f'):>15} {_fmt(r.worker_idle_mib, '.1f'):>15} "
            f"{_fmt(r.server_upload_peak_mib, '.1f'):>22} "
            f"{_fmt(r.worker_cpu_s * 1000 * per_k if r.worker_cpu_s is not None else None, '.0f'):>21} "
            f"{_fmt(r.pg_cpu_s * 1000 * per_k if r.pg_cpu_s is not None else None, '.0f'):>17} "
            f"{_fmt(r.other_cores, '.2f'):>10}"
        )
    by_backend: dict[str, dict[int, ImportResult]] = {}
    for r in results:
        by_backend.setdefault(r.backend, {})[r.rows] = r
    sizes = sorted({r.rows for r in results})
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(f"\npeak RSS of the importing worker, {small} vs {large} rows (MiB):")
        for backend, rows in by_backend.items():
            if small in rows and large in rows:
                a, b = rows[small].worker_peak_mib, rows[large].worker_peak_mib
                ratio = f"x{b / a:.2f}" if a and b else "-"
                print(
                    f"  {backend:<9} {_fmt(a, '.1f'):>7} vs {_fmt(b, '.1f'):>7}  "
                    f"({ratio}; the file is {large // small}x larger)"
                )
    print(
        "\nworker CPU = CPU time of the importing `platpay worker`; pg CPU = CPU time of the PostgreSQL backends "
        "connected to the benchmark's database (the worker's and the server's); other load = CPU (in cores) used "
        "meanwhile by processes not part of the measurement (other people's work on a shared machine): figures "
        "taken with other load well above 0 understate platpay."
    )
    if post is not None:
        print(
            f"\nPOST /customers on PostgreSQL, {post['connections']} connections, {post['seconds']:.0f} s: "
            f"{post['rps']:.0f} req/s, p50 {post['p50_ms']:.1f} ms, p90 {post['p90_ms']:.1f} ms, "
            f"p99 {post['p99_ms']:.1f} ms, non-2xx {post['non_2xx']}, "
            f"socket errors {sum(post['socket_errors'].values())}; "
            f"server CPU {_fmt(post['server_cpu_ms_per_request'], '.1f')} ms/request, "
            f"postgres CPU {_fmt(post['pg_cpu_ms_per_request'], '.1f')} ms/request; "
            f"other load {_fmt(post['other_load_cores'], '.2f')} cores"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated row counts")
    parser.add_argument(
        "--backends", default="sqlite,postgres", help="comma-separated subset of sqlite,postgres"
    )
    parser.add_argument(
        "--chunk-rows", type=int, default=0, help="PLATPAY_BULK_IMPORT_CHUNK_ROWS (0: the default)"
    )
    parser.add_argument("--skip-post", action="store_true", help="skip the POST /customers load")
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument(
        "--threads", type=int, default=1, help="wrk threads (2 cores are shared with the server)"
    )
    parser.add_argument(
        "--duration", type=float, default=10.0, help="seconds of measured POST /customers load"
    )
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--pg-admin-url", default=DEFAULT_PG_ADMIN)
    parser.add_argument(
        "--nice", type=int, default=0, help="niceness delta for our children (negative: root only)"
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each measurement, wait up to this long for the machine to be idle apart from our processes",
    )
    parser.add_argument(
        "--quiet-threshold", type=float, default=0.3, help="cores of foreign load that count as idle"
    )
    parser.add_argument("--json-out", type=Path)
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = parser.parse_args()
    set_child_niceness(args.nice)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if "postgres" in backends or not args.skip_post:
        problem = pg_reachable(args.pg_admin_url)
        if problem:
            print(f"PostgreSQL unreachable at {args.pg_admin_url} ({problem}): PostgreSQL figures skipped")
            backends = [b for b in backends if b != "postgres"]
            args.skip_post = True

    workdir = Path(tempfile.mkdtemp(prefix="platpay-bench-bulk-"))
    print(
        f"machine: {machine_summary()}; load average before: {Path('/proc/loadavg').read_text().split()[:3]}"
    )
    print(f"work dir: {workdir}")
    results: list[ImportResult] = []
    post = None
    try:
        for backend in backends:
            if backend == "sqlite":
                results += measure_backend(
                    backend, f"sqlite+aiosqlite:///{workdir / 'sqlite' / 'bench.db'}", workdir, sizes, args
                )
            elif backend == "postgres":
                with pg_database(args.pg_admin_url, prefix="platpay_bench_bulk") as url:
                    results += measure_backend(backend, url, workdir, sizes, args)
            else:
                sys.exit(f"unknown backend {backend!r}")
        if not args.skip_post:
            with pg_database(args.pg_admin_url, prefix="platpay_bench_bulk") as url:
                post = measure_post_customers(url, workdir, args)
        print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
        report(results, post, args)
        if args.json_out:
            args.json_out.write_text(
                json.dumps(
                    {
                        "machine": machine_summary(),
                        "imports": [asdict(r) for r in results],
                        "post_customers": post,
                    },
                    indent=2,
                )
            )
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
