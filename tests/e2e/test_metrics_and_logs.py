"""What operators read from real processes: every log line of `serve` and `worker` is JSON and carries no
secret, and /metrics adds up what every platpay process on the machine did."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from tests.e2e.api_checks import api_client, wait_delivered
from tests.e2e.test_server import bootstrap_credentials, start_server
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager, process_env
from tests.support.receiver import Reply, WebhookReceiver

pytestmark = pytest.mark.e2e

SECRET = "topsecret-in-the-query"


def banner_lines(server: ManagedProcess) -> set[str]:
    """The lines `serve` prints for a person on start (the once-shown credentials): not log lines."""
    output = server.stdout()
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
