"""What operators read from real processes: every log line of `serve` and `worker` is JSON and carries no
secret, and /metrics adds up what every platpay process on the machine did."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import httpx
import pytest

from tests.support.api_checks import api_client, wait_delivered
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager, process_env
from tests.support.receiver import Reply, WebhookReceiver
from tests.support.server import (
    bootstrap_credentials,
    create_platform,
    credentials,
    pg_env,
    serving_processes,
    start_server,
    start_two_server_processes,
)

pytestmark = pytest.mark.e2e

SECRET = "topsecret-in-the-query"


def banner_lines(server: ManagedProcess) -> set[str]:
    """The lines `serve` prints for a person on start (where it serves, the once-shown credentials of a
    bootstrapped sandbox): not log lines."""
    output = server.stdout()
    if "platpay: sandbox platform bootstrapped" not in output:
        return {line for line in output.splitlines() if line.startswith(("platpay serving", "  (platform"))}
    start = output.index("platpay: sandbox platform bootstrapped")
    end = output.index("\n\n", start)
    return {line for line in output[start:end].splitlines() if line.strip()}


def assert_json_lines_only(output: str, *, except_lines: set[str] = frozenset()) -> list[dict]:
    records = []
    for line in output.splitlines():
        if not line.strip() or line in except_lines:
            continue
        try:
            records.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"not a JSON log line: {line!r}\n--- output ---\n{output}") from None
    return records


def send_garbage(base_url: str) -> None:
    """A request uvicorn itself refuses (and logs a warning about)."""
    host, port = base_url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(b"NOT HTTP AT ALL\x01\r\n\r\n")
        sock.recv(1000)


class TestLogs:
    def test_serve_and_worker_write_only_json_lines_and_never_a_webhook_url_query(
        self, processes: ProcessManager, tmp_path: Path, receiver: WebhookReceiver
    ) -> None:
        env = process_env(
            PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}",
            PLATPAY_VAR_DIR=str(tmp_path / "var"),
            PLATPAY_WEBHOOK_RETRY_BASE_SECONDS="0.1",
            PLATPAY_JOB_POLL_SECONDS="0.05",
        )
        server, base_url = start_server(processes, env, "--no-worker", cwd=tmp_path)
        worker = processes.start("worker", [PLATPAY, "worker"], env=env, cwd=tmp_path)
        worker.wait_for_output("jobs.runner_started")
        sandbox = bootstrap_credentials(processes)
        endpoint = f"{receiver.url}?apikey={SECRET}"

        with api_client(base_url, sandbox) as client:
            assert client.patch("/config", json={"webhookEndpoint": endpoint}).status_code == 200
            wait_delivered(client, event_type="TEST")  # sent by the worker process
            assert client.post("/sandbox/webhooks/test").status_code == 200  # sent by the server process
            receiver.replies(Reply(status=500))
            assert client.post("/sandbox/webhooks/test").status_code == 400
        assert {r.path for r in receiver.received} == {f"/hooks?apikey={SECRET}"}
        send_garbage(base_url)
        server.wait_for_output("Invalid HTTP request received", timeout=10)

        processes.stop_all()
        server_records = assert_json_lines_only(server.stdout(), except_lines=banner_lines(server))
        assert_json_lines_only(server.stderr())
        worker_records = assert_json_lines_only(worker.stdout())
        assert_json_lines_only(worker.stderr())
        events = {record["event"] for record in server_records}
        assert "request" in events
        assert "Invalid HTTP request received." in events  # uvicorn's own warning, as JSON
        assert any(event.startswith("Uvicorn running on") for event in events)
        assert "jobs.runner_stopped" in {record["event"] for record in worker_records}
        for process in (server, worker):
            assert SECRET not in process.stdout() + process.stderr(), process.describe()
            assert "HTTP Request:" not in process.stdout() + process.stderr()


def scrape(base_url: str) -> dict[tuple[str, frozenset], float]:
    """One /metrics answer on a new connection (so any server process may answer it)."""
    from prometheus_client.parser import text_string_to_metric_families

    response = httpx.get(f"{base_url}/metrics", trust_env=False, timeout=10, headers={"Connection": "close"})
    assert response.status_code == 200, response.text
    found = {}
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in found, f"{key} appears twice: every series must be merged into one"
            found[key] = sample.value
    return found


def config_requests(found: dict) -> float:
    return sum(
        value
        for (name, labels), value in found.items()
        if name == "platpay_http_requests_total" and dict(labels)["route"].endswith("/config")
    )


def sample(found: dict, name: str, **labels: str) -> float:
    return found.get((name, frozenset(labels.items())), 0.0)


def counter_files(metrics_dir: Path) -> set[int]:
    return {int(path.stem.rsplit("_", 1)[1]) for path in metrics_dir.glob("counter_*.db")}


class TestMetricsAcrossProcesses:
    def test_two_server_processes_and_a_worker_add_up_into_one_consistent_count(
        self,
        processes: ProcessManager,
        pg_database: str,
        master_key: str,
        tmp_path: Path,
        receiver: WebhookReceiver,
    ) -> None:
        env = pg_env(pg_database, master_key, tmp_path)
        metrics_dir = tmp_path / "var" / "metrics"
        sandbox = credentials(create_platform(processes, env), "sandbox")
        worker = processes.start("worker", [PLATPAY, "worker"], env=env)
        server, base_url = start_two_server_processes(processes, env)
        worker.wait_for_output("jobs.runner_started")
        server_pids = {child.pid for child in serving_processes(server)}
        assert len(server_pids) == 2

        # Requests on new connections until both server processes have counted some (a process adds its
        # requests to its metric files up to half a second after serving them).
        sent = 0
        deadline = time.monotonic() + 30
        with httpx.Client(base_url=base_url, auth=sandbox, trust_env=False, timeout=10) as client:
            while not server_pids <= counter_files(metrics_dir) or sent < 20:
                assert time.monotonic() < deadline, (
                    f"one server process took every connection: {counter_files(metrics_dir)}"
                )
                response = client.get("/2025-10-13/config", headers={"Connection": "close"})
                assert response.status_code == 200
                sent += 1
                time.sleep(0.02)

        # The worker delivers the TEST event: its attempt shows in the servers' /metrics.
        with api_client(base_url, sandbox) as client:
            assert client.patch("/config", json={"webhookEndpoint": receiver.url}).status_code == 200
            wait_delivered(client, event_type="TEST")
        assert worker.pid in counter_files(metrics_dir)

        # Every answer, whichever process gives it, is the same deployment-wide count.
        deadline = time.monotonic() + 10
        # (The job run is counted when the delivery's transaction has committed, after its attempt.)
        while sample(scrape(base_url), "platpay_job_runs_total", kind="webhook.deliver", outcome="done") < 1:
            assert time.monotonic() < deadline, "the worker's webhook delivery never showed in /metrics"
            time.sleep(0.1)
        # (A request is counted once its response has gone out, so the last one may still be on its way.)
        while config_requests(scrape(base_url)) < sent + 1:
            assert time.monotonic() < deadline, "the requests never all showed in /metrics"
            time.sleep(0.1)
        scrapes = [scrape(base_url) for _ in range(12)]
        for found in scrapes:
            assert config_requests(found) == sent + 1  # and the PATCH
            assert sample(found, "platpay_webhook_attempts_total", outcome="delivered") == 1
            assert sample(found, "platpay_job_runs_total", kind="webhook.deliver", outcome="done") == 1
            assert sample(found, "platpay_processes", role="server") == 2
            assert sample(found, "platpay_processes", role="worker") == 1
            # Read from the database once per scrape, not summed over processes.
            assert sample(found, "platpay_webhook_deliveries", status="DELIVERED") == 1

        # A worker killed outright stops counting as live; what it did stays counted.
        worker.kill()
        found = scrape(base_url)
        assert sample(found, "platpay_processes", role="worker") == 0
        assert sample(found, "platpay_webhook_attempts_total", outcome="delivered") == 1

        processes.stop_all()
        assert_json_lines_only(server.stdout(), except_lines=banner_lines(server))
        assert_json_lines_only(server.stderr())
