"""Helpers shared by the benchmarks: free ports, child processes, throwaway PostgreSQL databases, CPU time.

Everything here talks to 127.0.0.1 only and ends only the processes it started (by their pid).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
DEFAULT_PG_ADMIN = os.environ.get(
    "PLATPAY_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


_NICENESS = 0


def set_child_niceness(delta: int) -> None:
    """Children started after this (servers, wrk, receivers) run at this niceness delta (negative: root)."""
    global _NICENESS
    _NICENESS = delta


def child_setup() -> None:
    """preexec_fn for our children."""
    if _NICENESS:
        os.nice(_NICENESS)


def debian_tool(command: str, package: str | None = None) -> str:
    """The path of `command`; when it is missing and this runs as root with apt-get, its Debian package
    (`package`, by default the command's name) is installed first; otherwise exits saying how."""
    path = shutil.which(command)
    if path:
        return path
    package = package or command
    if hasattr(os, "geteuid") and os.geteuid() == 0 and shutil.which("apt-get"):
        print(
            f"{command} not found: installing the Debian package (apt-get install -y {package})", flush=True
        )
        if subprocess.run(["apt-get", "install", "-y", package], check=False).returncode != 0:
            subprocess.run(["apt-get", "update"], check=False)
            subprocess.run(["apt-get", "install", "-y", package], check=False)
        path = shutil.which(command)
        if path:
            return path
    sys.exit(
        f"{command} is required: install it with `sudo apt-get install -y {package}` (Debian/Ubuntu package)"
    )


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_http(url: str, *, timeout: float = 30.0, proc: subprocess.Popen[Any] | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process {proc.pid} exited with {proc.returncode} before {url} answered")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status < 500:
                    return
        except urllib.error.HTTPError as error:
            if error.code < 500:
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not answer within {timeout}s")


def stop(proc: subprocess.Popen[Any], *, timeout: float = 10.0) -> None:
    """SIGTERM the child we started (by pid), then SIGKILL if it lingers."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def cpu_seconds(pid: int, *, reaped: bool = False) -> float | None:
    """User + system CPU seconds of a process (Linux /proc), or None where unavailable; `reaped`: plus those
    of its children that have exited and been waited for (a postmaster's: backends that disconnected)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    used = int(fields[11]) + int(fields[12])
    if reaped:
        used += int(fields[13]) + int(fields[14])
    return used / ticks


def tree_cpu_seconds(pid: int) -> float | None:
    """CPU seconds of a process and all its descendants alive now (a `serve --workers N` parent and its
    worker processes), or None where unavailable."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    family, frontier = {pid}, [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier and child not in family]
        family.update(children)
        frontier = children
    values = [cpu_seconds(member) for member in family]
    known = [value for value in values if value is not None]
    return sum(known) if known else None


def pg_cpu_snapshot(pids: set[int] | None = None, *, reaped: bool = False) -> dict[int, float]:
    """CPU seconds of the `postgres` processes on this machine (or only `pids`), by pid; `reaped`: each
    with its exited children's (see `cpu_seconds`)."""
    snapshot: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or (pids is not None and int(entry.name) not in pids):
            continue
        try:
            if (entry / "comm").read_text().strip() != "postgres":
                continue
        except OSError:
            continue
        value = cpu_seconds(int(entry.name), reaped=reaped)
        if value is not None:
            snapshot[int(entry.name)] = value
    return snapshot


def pg_cpu_seconds() -> float | None:
    """CPU seconds of every `postgres` process on this machine, those that exited meanwhile included (a
    client that connects per run, as pgbench does, is served by backends gone before the run is measured),
    or None where unavailable."""
    snapshot = pg_cpu_snapshot(reaped=True)
    return sum(snapshot.values()) if snapshot else None


def pg_cpu_delta(before: dict[int, float], after: dict[int, float]) -> float:
    """CPU used between two snapshots by postgres processes alive at the second (never negative; backends
    that exited in between are not counted)."""
    return sum(max(0.0, value - before.get(pid, 0.0)) for pid, value in after.items())


def system_busy_seconds() -> tuple[float, float] | None:
    """(busy CPU seconds summed over all cores, wall-clock reference) from /proc/stat, or None."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    ticks = [int(x) for x in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    steal = ticks[7] if len(ticks) > 7 else 0
    busy = sum(ticks[:8]) - idle - steal
    return busy / os.sysconf("SC_CLK_TCK"), time.monotonic()


def children_cpu_seconds() -> float:
    """CPU seconds of our finished, waited-for children (the load generator runs)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wait_until_quiet(limit_seconds: float, *, threshold_cores: float, ours: list[int]) -> float | None:
    """Wait (at most `limit_seconds`) for a 1 s window in which processes other than `ours` use less than
    `threshold_cores` (other people's tests on a shared machine); returns that window's load in cores."""
    deadline = time.monotonic() + limit_seconds
    while True:
        before = system_busy_seconds()
        own_before = sum(cpu_seconds(pid) or 0.0 for pid in ours)
        time.sleep(1.0)
        after = system_busy_seconds()
        own_after = sum(cpu_seconds(pid) or 0.0 for pid in ours)
        if before is None or after is None:
            return None
        foreign = max(0.0, (after[0] - before[0]) - (own_after - own_before)) / (after[1] - before[1])
        if foreign < threshold_cores or time.monotonic() >= deadline:
            return foreign


# ---- PostgreSQL throwaway databases ----------------------------------------------------------------


def _asyncpg_dsn(url: str) -> str:
    return url.replace("postgresql+asyncpg://", "postgresql://")


def _with_database(admin_url: str, name: str) -> str:
    base, _, _ = _asyncpg_dsn(admin_url).rpartition("/")
    return f"{base}/{name}"


async def _pg_admin(admin_url: str, statements: list[tuple[str, tuple[Any, ...]]]) -> None:
    import asyncpg

    conn = await asyncpg.connect(_asyncpg_dsn(admin_url), timeout=10)
    try:
        for sql, args in statements:
            await conn.execute(sql, *args)
    finally:
        await conn.close()


def pg_backend_pids(admin_url: str, database_url: str) -> set[int]:
    """The server processes serving connections to the database of `database_url`."""
    import asyncpg

    name = database_url.rsplit("/", 1)[1].split("?", 1)[0]

    async def query() -> set[int]:
        conn = await asyncpg.connect(_asyncpg_dsn(admin_url), timeout=10)
        try:
            rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE datname = $1", name)
        finally:
            await conn.close()
        return {int(row["pid"]) for row in rows}

    return asyncio.run(query())


def pg_reachable(admin_url: str = DEFAULT_PG_ADMIN) -> str | None:
    """None when PostgreSQL answers, else the reason it does not."""
    try:
        asyncio.run(_pg_admin(admin_url, [("SELECT 1", ())]))
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


@contextlib.contextmanager
def pg_database(admin_url: str = DEFAULT_PG_ADMIN, prefix: str = "platpay_bench") -> Iterator[str]:
    """A fresh database `platpay_bench_<random>`, dropped afterwards; yields its SQLAlchemy asyncpg URL."""
    name = f"{prefix}_{secrets.token_hex(4)}"
    assert not name.startswith("platpay_test")
    asyncio.run(_pg_admin(admin_url, [(f'CREATE DATABASE "{name}"', ())]))
    try:
        yield _with_database(admin_url, name).replace("postgresql://", "postgresql+asyncpg://", 1)
    finally:
        asyncio.run(
            _pg_admin(
                admin_url,
                [
                    (
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = $1 AND pid <> pg_backend_pid()",
                        (name,),
                    ),
                    (f'DROP DATABASE IF EXISTS "{name}"', ()),
                ],
            )
        )


@contextlib.contextmanager
def database_url(backend: str, workdir: Path, admin_url: str = DEFAULT_PG_ADMIN) -> Iterator[str]:
    """`sqlite`: a file in `workdir`; `postgres`: a throwaway database (`pg_database`). Its SQLAlchemy URL."""
    if backend == "sqlite":
        yield f"sqlite+aiosqlite:///{workdir / 'platpay.db'}"
    else:
        with pg_database(admin_url) as url:
            yield url


def inprocess_backends(
    backends: str, admin_url: str, prefix: str
) -> Iterator[tuple[str, str, tuple[str, str]]]:
    """For each of `backends` (comma-separated; PostgreSQL skipped, said so, when unreachable), a migrated
    throwaway database with a platform: (backend, its URL, the platform's sandbox credentials), with
    PLATPAY_VAR_DIR set for the app the in-process benchmarks build; everything removed after each."""
    for backend in backends.split(","):
        unreachable = pg_reachable(admin_url) if backend == "postgres" else None
        if unreachable is not None:
            print(f"postgres: skipped ({unreachable})")
            continue
        with (
            tempfile.TemporaryDirectory(prefix=prefix) as tmp,
            database_url(backend, Path(tmp), admin_url) as url,
        ):
            var = str(Path(tmp) / "var")
            credentials = platform_credentials(
                bench_env(PLATPAY_DATABASE_URL=url, PLATPAY_VAR_DIR=var), cwd=Path(tmp), migrate=True
            )
            os.environ["PLATPAY_VAR_DIR"] = var
            yield backend, url, credentials


@contextlib.contextmanager
def stdout_to(sink: Any) -> Iterator[None]:
    """`sys.stdout` replaced by `sink` while inside (an in-process app's access log, rendered as a server
    renders it, kept off the benchmark's report)."""
    stdout, sys.stdout = sys.stdout, sink
    try:
        yield
    finally:
        sys.stdout = stdout


@contextlib.asynccontextmanager
async def asgi_lifespan(app: Any) -> AsyncIterator[None]:
    """The ASGI app's lifespan around the block, as a server runs it (startup must complete)."""
    into: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
    await into.put({"type": "lifespan.startup"})
    task = asyncio.create_task(
        app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}, into.get, out.put)
    )
    started = await out.get()
    assert started["type"] == "lifespan.startup.complete", started
    try:
        yield
    finally:
        await into.put({"type": "lifespan.shutdown"})
        await task


def http_scope(method: str, path: str, headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """An ASGI HTTP scope as uvicorn builds one for a request from wrk on 127.0.0.1 (`host` and `user-agent`
    first, then `headers`)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8000"), (b"user-agent", b"wrk"), *headers],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


def use_uvloop() -> None:
    """Run asyncio on uvloop, as `platpay serve` does (when it is installed)."""
    with contextlib.suppress(ImportError):
        import uvloop

        asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())


def bench_env(**extra: str) -> dict[str, str]:
    """The environment for a platpay child: no inherited PLATPAY_* settings except what we pass."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLATPAY_")}
    env.update(extra)
    return env


def machine_summary() -> str:
    cpus = os.cpu_count()
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{cpus} CPU(s) {model}".strip() + f", Python {sys.version.split()[0]}"


def platform_credentials(
    env: dict[str, str], *, cwd: Path | None = None, name: str = "Bench", migrate: bool = False
) -> tuple[str, str]:
    """A new platform through the CLI (`platpay migrate` first when asked) on the database `env` names: its
    sandbox (client id, client secret)."""
    if migrate:
        subprocess.run([str(BIN / "platpay"), "migrate"], env=env, cwd=cwd, check=True, capture_output=True)
    created = subprocess.run(
        [str(BIN / "platpay"), "platform", "create", "--name", name, "--json"],
        env=env,
        cwd=cwd,
        check=True,
        capture_output=True,
    )
    sandbox = json.loads(created.stdout)["sandbox"]
    return sandbox["clientId"], sandbox["clientSecret"]
