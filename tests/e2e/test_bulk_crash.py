"""A bulk customer import survives a real crash: a `platpay worker` killed with SIGKILL in the middle of a
20,000-row import is replaced by a second worker, which resumes at the last committed chunk; the import
ends with exactly the file's valid customers, none of them twice, and its completion webhook."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.support.api_checks import api_client
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ProcessManager, process_env
from tests.support.receiver import WebhookReceiver
from tests.support.server import create_platform, credentials, start_server, wait_until

pytestmark = pytest.mark.e2e

ROWS = 20_000
INVALID_EVERY = 1000  # row 1000, 2000, …: a birthDate that is no date
CHUNK_ROWS = 500
HEADER = [
    "umaAddress",
    "platformCustomerId",
    "customerType",
    "fullName",
    "birthDate",
    "addressLine1",
    "city",
    "state",
    "postalCode",
    "country",
]


def write_csv(path: Path, domain: str) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(HEADER)
        for n in range(1, ROWS + 1):
            birth = "1990-02-30" if n % INVALID_EVERY == 0 else f"19{50 + n % 50}-0{1 + n % 9}-1{n % 10}"
            writer.writerow(
                [
                    f"$e2e{n}@{domain}",
                    f"e2e-{n}",
                    "INDIVIDUAL",
                    "Jane Doe",
                    birth,
                    f"{n} Main St",
                    "Springfield",
                    "IL",
                    "62701",
                    "US",
                ]
            )


def test_a_worker_killed_mid_import_is_replaced_and_nothing_is_created_twice(
    processes: ProcessManager,
    pg_database: str,
    pg_probe: PgProbe,
    master_key: str,
    tmp_path: Path,
    receiver: WebhookReceiver,
) -> None:
    env = process_env(
        PLATPAY_DATABASE_URL=pg_database,
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_JOB_POLL_SECONDS="0.05",
        PLATPAY_JOB_LEASE_SECONDS="2",  # the dead worker's job is free to take 2 s after the kill
        PLATPAY_BULK_IMPORT_CHUNK_ROWS=str(CHUNK_ROWS),
        PLATPAY_DB_POOL_SIZE="4",
    )
    sandbox = credentials(create_platform(processes, env), "sandbox")  # migrates the empty database too
    _server, base_url = start_server(processes, env, "--no-worker")
    expected_valid = ROWS - ROWS // INVALID_EVERY
    with api_client(base_url, sandbox) as client:
        config = client.patch("/config", json={"webhookEndpoint": receiver.url}).json()
        path = tmp_path / "customers.csv"
        write_csv(path, config["umaDomain"])
        with path.open("rb") as file:
            accepted = client.post("/customers/bulk/csv", files={"file": ("customers.csv", file, "text/csv")})
        assert accepted.status_code == 202, accepted.text
        job_id = accepted.json()["jobId"]

        def job() -> dict:
            response = client.get(f"/customers/bulk/jobs/{job_id}")
            assert response.status_code == 200, response.text
            return response.json()

        first = processes.start("worker-1", [PLATPAY, "worker"], env=env)
        first.wait_for_output("jobs.runner_started")
        wait_until(
            lambda: job()["progress"]["processed"] >= 4 * CHUNK_ROWS,
            timeout=120,
            message=lambda: f"worker 1 made no progress: {job()}\n{first.describe()}",
        )
        first.kill()  # SIGKILL: most likely in the middle of a chunk's transaction
        assert first.popen.returncode == -9
        at_kill = job()
        assert at_kill["status"] == "PROCESSING" and at_kill["progress"]["processed"] < ROWS, at_kill
        assert at_kill["progress"]["processed"] % CHUNK_ROWS == 0  # only whole chunks were ever committed

        second = processes.start("worker-2", [PLATPAY, "worker"], env=env)
        second.wait_for_output("jobs.runner_started")
        wait_until(
            lambda: job()["status"] in ("COMPLETED", "FAILED"),
            timeout=300,
            message=lambda: f"import not finished: {job()}\n{processes.describe_all()}",
        )
        state = job()
        assert state["status"] == "COMPLETED", state
        assert state["progress"] == {
            "total": ROWS,
            "processed": ROWS,
            "successful": expected_valid,
            "failed": ROWS // INVALID_EVERY,
        }
        assert [e["details"]["row"] for e in state["errors"]] == list(
            range(INVALID_EVERY, ROWS + 1, INVALID_EVERY)
        )
        assert client.get("/customers").json()["totalCount"] == expected_valid

    customers = pg_probe.fetchval("SELECT count(*) FROM customers")
    distinct = pg_probe.fetchval("SELECT count(DISTINCT platform_customer_id) FROM customers")
    accounts = pg_probe.fetchval("SELECT count(*) FROM internal_accounts WHERE customer_id IS NOT NULL")
    ledger = pg_probe.fetchval(
        "SELECT count(*) FROM ledger_accounts WHERE id IN (SELECT id FROM internal_accounts WHERE customer_id IS NOT NULL)"
    )
    error_rows = pg_probe.fetchval("SELECT count(DISTINCT row_number) FROM customer_import_errors")
    assert customers == distinct == expected_valid
    # USD, USDC, and in USDB the holding account and the wallet
    assert accounts == ledger == 4 * expected_valid
    assert error_rows == ROWS // INVALID_EVERY

    [completed] = receiver.wait_for(1, event_type="BULK_UPLOAD.COMPLETED", timeout=30)
    assert completed.json["data"] == state
    assert second.stop(), second.describe()
