"""`platpay serve --workers 2` spreads keep-alive connections evenly: the parent hands each connection to
the process holding the fewest (platpay/serving.py), so 8 connections opened at once split 4/4 and each
process serves an equal share of their requests (issue 33: within ±15 %; uvicorn's shared socket split
them 8/0, 7/1 or 6/2 as often as 4/4)."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx
import pytest

from tests.support.processes import ProcessManager, process_env
from tests.support.server import (
    bootstrap_credentials,
    requests_by_process,
    serving_processes,
    start_server,
    wait_until,
)

pytestmark = pytest.mark.e2e

CONNECTIONS = 8
REQUESTS_PER_CONNECTION = 25
TOLERANCE = 0.15


def test_two_server_processes_serve_an_equal_share_of_eight_keep_alive_connections(
    processes: ProcessManager, tmp_path: Path
) -> None:
    env = process_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}",
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
    )
    server, base_url = start_server(processes, env, "--workers", "2", "--no-worker", cwd=tmp_path)
    # Both processes have started their application: the parent hands connections only to such a one
    # (until then the other takes them all), and tells it is ready just after this line.
    wait_until(
        lambda: server.stdout().count("Application startup complete") == 2,
        timeout=60,
        message=lambda: f"not 2 server processes started\n{server.describe()}",
    )
    pids = {child.pid for child in serving_processes(server)}
    auth = bootstrap_credentials(processes)
    metrics_dir = tmp_path / "var" / "metrics"
    # The readiness probes' connections have closed and each process has reported it (and that it is
    # ready) to the parent.
    time.sleep(0.5)

    clients = [
        httpx.Client(
            base_url=f"{base_url}/2025-10-13",
            auth=auth,
            trust_env=False,
            timeout=30,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        for _ in range(CONNECTIONS)
    ]
    statuses: list[int] = []
    opened = threading.Barrier(CONNECTIONS)

    def one_connection(client: httpx.Client) -> None:
        statuses.append(client.get("/config").status_code)  # every connection is open before any ...
        opened.wait(timeout=60)  # ... sends the rest: none closes while the others are handed out
        statuses.extend(client.get("/config").status_code for _ in range(REQUESTS_PER_CONNECTION - 1))

    threads = [threading.Thread(target=one_connection, args=(client,)) for client in clients]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for client in clients:
        client.close()
    total = CONNECTIONS * REQUESTS_PER_CONNECTION
    assert statuses == [200] * total

    wait_until(
        lambda: sum(requests_by_process(metrics_dir, "/config").values()) >= total,
        timeout=15,
        message=lambda: f"requests never all counted: {requests_by_process(metrics_dir, '/config')}",
    )
    served = requests_by_process(metrics_dir, "/config")
    print(f"GET /config requests per server process: {served}")
    assert set(served) == pids, served
    equal = total / len(pids)
    for pid, count in served.items():
        assert abs(count - equal) <= TOLERANCE * equal, f"process {pid} served {count} of {total}: {served}"

    assert server.stop(), server.describe()
    assert server.popen.returncode in (0, -signal.SIGTERM), server.describe()
