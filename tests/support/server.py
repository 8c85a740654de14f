"""Real `platpay serve` processes for end-to-end tests: start one (or one with two server processes) on a
free port, read the credentials it bootstrapped or create a platform with the CLI, wait for a condition."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.support.processes import (
    PLATPAY,
    ManagedProcess,
    ProcessFailed,
    ProcessManager,
    free_port,
    process_env,
)

Credentials = tuple[str, str]  # (clientId, clientSecret)

BANNER = r"clientId\s+(\S+)\s+clientSecret\s+(\S+)"


def start_server(
    processes: ProcessManager, env: dict[str, str], *options: str, cwd: Path | None = None
) -> tuple[ManagedProcess, str]:
    """`platpay serve` on a free port, ready and migrated; tried again if another process took the port
    between our probe and its bind."""
    for attempt in range(3):
        port = free_port()
        server = processes.start("serve", [PLATPAY, "serve", "--port", str(port), *options], env=env, cwd=cwd)
        base_url = f"http://127.0.0.1:{port}"
        try:
            server.wait_http_ready(f"{base_url}/healthz", timeout=40)
        except ProcessFailed:
            port_taken = "address already in use" in (server.stdout() + server.stderr()).lower()
            if server.alive() or not port_taken or attempt == 2:
                raise
            continue
        response = httpx.get(f"{base_url}/readyz", trust_env=False, timeout=10)
        assert response.status_code == 200, response.text
        return server, base_url
    raise AssertionError("unreachable")


def bootstrap_credentials(processes: ProcessManager) -> Credentials:
    """The sandbox credentials `serve` printed when it bootstrapped the empty database (printed before it
    binds, so possibly by an attempt that lost its port)."""
    printed = "".join(process.stdout() for process in processes.processes if process.name == "serve")
    match = re.search(BANNER, printed)
    assert match, processes.describe_all()
    return match[1], match[2]


def create_platform(processes: ProcessManager, env: dict[str, str], *, cwd: Path | None = None) -> dict:
    result = processes.run(
        [PLATPAY, "platform", "create", "--name", "E2E Platform", "--json"], env=env, cwd=cwd
    )
    return json.loads(result.stdout)


def credentials(created: dict, environment: str) -> Credentials:
    return created[environment]["clientId"], created[environment]["clientSecret"]


def pg_env(pg_database: str, master_key: str, tmp_path: Path) -> dict[str, str]:
    return process_env(
        PLATPAY_DATABASE_URL=pg_database,
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_WEBHOOK_RETRY_BASE_SECONDS="0.1",
        PLATPAY_JOB_POLL_SECONDS="0.05",
        PLATPAY_DB_POOL_SIZE="4",
    )


def start_two_server_processes(processes: ProcessManager, env: dict[str, str]) -> tuple[ManagedProcess, str]:
    server, base_url = start_server(processes, env, "--workers", "2", "--no-worker")
    deadline = time.monotonic() + 30
    while len(serving_processes(server)) < 2:
        assert time.monotonic() < deadline, f"uvicorn did not start 2 server processes\n{server.describe()}"
        time.sleep(0.1)
    return server, base_url


def serving_processes(server: ManagedProcess) -> list:
    """uvicorn's server processes (spawned children of its supervisor, each running the app)."""
    return [child for child in server.children() if "spawn_main" in " ".join(child.cmdline())]


def requests_by_process(metrics_dir: Path, route_suffix: str) -> dict[int, float]:
    """HTTP requests each process has counted for routes ending in `route_suffix`, read from that
    process's own metrics file (counter_<pid>.db, prometheus_client's multiprocess mode), which it
    updates every 0.5 s."""
    from prometheus_client.mmap_dict import MmapedDict

    counts: dict[int, float] = {}
    for path in metrics_dir.glob("counter_*.db"):
        total = 0.0
        for key, value, _timestamp, _position in MmapedDict.read_all_values_from_file(str(path)):
            _name, sample, labels, _help = json.loads(key)
            if sample == "platpay_http_requests_total" and labels.get("route", "").endswith(route_suffix):
                total += value
        counts[int(path.stem.rsplit("_", 1)[1])] = total
    return counts


def wait_until(condition: Callable[[], bool], *, timeout: float, message: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, message()
        time.sleep(0.05)
