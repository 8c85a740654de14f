"""The real `platpay serve` process: embedded SQLite (what `make run` starts), and PostgreSQL with two
server processes plus a separate worker."""

from __future__ import annotations

import signal
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.support.api_checks import (
    Credentials,
    api_client,
    assert_error,
    check_public_edges,
    check_tokens,
    check_webhooks,
)
from tests.support.processes import (
    PLATPAY,
    ProcessManager,
    process_env,
)
from tests.support.receiver import WebhookReceiver
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


class TestSqliteServe:
    def test_a_fresh_sandbox_serves_the_api_and_delivers_signed_webhooks(
        self, processes: ProcessManager, tmp_path: Path, receiver: WebhookReceiver
    ) -> None:
        var_dir = tmp_path / "var"
        # No PLATPAY_MASTER_KEY: serve generates one under the var dir, as `make run` does.
        env = process_env(
            PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}",
            PLATPAY_VAR_DIR=str(var_dir),
            PLATPAY_WEBHOOK_RETRY_BASE_SECONDS="0.1",
            PLATPAY_JOB_POLL_SECONDS="0.05",
        )
        server, base_url = start_server(processes, env, cwd=tmp_path)
        sandbox = bootstrap_credentials(processes)
        assert (var_dir / "master.key").exists()
        production = credentials(create_platform(processes, env, cwd=tmp_path), "production")

        check_public_edges(base_url, sandbox)
        check_tokens(base_url, sandbox)
        check_webhooks(base_url, sandbox, production, receiver)

        assert server.stop(), server.describe()
        # uvicorn re-raises the SIGTERM it handled once shut down; the runner stopped on the way out.
        assert server.popen.returncode in (0, -signal.SIGTERM), server.describe()
        assert "jobs.runner_stopped" in server.stdout()


def fresh_connection_statuses(base_url: str, auth: Credentials, count: int) -> list[int]:
    """`count` requests, each on a new connection, so either server process may take each one."""
    statuses = []
    for _ in range(count):
        with api_client(base_url, auth) as client:
            statuses.append(client.get("/config").status_code)
    return statuses


class TestPostgresCluster:
    def test_two_server_processes_and_a_worker_serve_the_api_and_deliver_signed_webhooks(
        self,
        processes: ProcessManager,
        pg_database: str,
        master_key: str,
        tmp_path: Path,
        receiver: WebhookReceiver,
    ) -> None:
        env = pg_env(pg_database, master_key, tmp_path)
        # Credentials may be kept as long as any step here takes: a revocation seen is a notification's doing.
        env["PLATPAY_CREDENTIAL_CACHE_SECONDS"] = "600"
        created = create_platform(processes, env)  # migrates the empty database too
        sandbox, production = credentials(created, "sandbox"), credentials(created, "production")
        worker = processes.start("worker", [PLATPAY, "worker"], env=env)
        server, base_url = start_two_server_processes(processes, env)
        assert "already bootstrapped" in server.stdout()
        worker.wait_for_output("jobs.runner_started")

        check_public_edges(base_url, sandbox)
        check_tokens(base_url, sandbox)
        # The server processes run no job runner: the worker process delivers the TEST event.
        check_webhooks(base_url, sandbox, production, receiver)

        # Revocation reaches every server process: each keeps the credential it read (both have answered with
        # it), and drops it when PostgreSQL's notification of the delete arrives, milliseconds after it.
        with api_client(base_url, sandbox) as client:
            token = client.post("/tokens", json={"name": "short-lived", "permissions": ["VIEW"]}).json()
            short_lived = (token["clientId"], token["clientSecret"])
            assert fresh_connection_statuses(base_url, short_lived, 10) == [200] * 10
            assert client.delete(f"/tokens/{token['id']}").status_code == 204
        deadline = time.monotonic() + 5
        while fresh_connection_statuses(base_url, short_lived, 4) != [401] * 4:
            assert time.monotonic() < deadline, "a server process still takes the deleted token"
        assert fresh_connection_statuses(base_url, short_lived, 10) == [401] * 10

        assert len(serving_processes(server)) == 2
        processes.stop_all()
        assert server.popen.returncode in (0, -signal.SIGTERM), server.describe()
        assert worker.popen.returncode == 0, worker.describe()
        assert "jobs.runner_stopped" in worker.stdout()

    def test_simultaneous_duplicates_create_one_token_and_agree_on_the_answer(
        self, processes: ProcessManager, pg_database: str, master_key: str, tmp_path: Path
    ) -> None:
        server, base_url = start_two_server_processes(processes, pg_env(pg_database, master_key, tmp_path))
        sandbox = bootstrap_credentials(processes)  # an empty database: serve bootstrapped a sandbox platform
        parallel = 20
        key = f"e2e-{uuid.uuid4()}"
        name = f"concurrent {key}"
        request = {"name": name, "permissions": ["VIEW"]}
        with api_client(base_url, sandbox) as client:
            before = client.get("/tokens").json()["totalCount"]
        start = threading.Barrier(parallel)

        def post_duplicate(_: int) -> httpx.Response:
            with api_client(base_url, sandbox) as client:
                assert client.get("/config").status_code == 200  # connected and authenticated beforehand
                start.wait(timeout=30)
                return client.post("/tokens", json=request, headers={"Idempotency-Key": key})

        with ThreadPoolExecutor(parallel) as pool:
            responses = list(pool.map(post_duplicate, range(parallel)))

        created = [r for r in responses if r.is_success]
        refused = [r for r in responses if not r.is_success]
        assert created, [r.text for r in responses]
        assert {r.status_code for r in created} == {201}
        assert len({r.content for r in created}) == 1
        for response in refused:
            assert_error(response, 409, "IDEMPOTENCY_KEY_IN_USE")
            assert response.headers["retry-after"] == "1"

        with api_client(base_url, sandbox) as client:
            assert client.get("/tokens").json()["totalCount"] == before + 1
            named = client.get("/tokens", params={"name": name}).json()
            assert [item["id"] for item in named["data"]] == [created[0].json()["id"]]

            replay = client.post("/tokens", json=request, headers={"Idempotency-Key": key})
            assert replay.status_code == 201
            assert replay.content == created[0].content

            other = client.post(
                "/tokens",
                json={**request, "permissions": ["VIEW", "TRANSACT"]},
                headers={"Idempotency-Key": key},
            )
            assert assert_error(other, 400, "INVALID_INPUT")["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"
            assert client.get("/tokens").json()["totalCount"] == before + 1
        assert len(serving_processes(server)) == 2
