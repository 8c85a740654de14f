"""A process started while PostgreSQL is down waits for it instead of dying: `platpay serve`, `worker` and
`migrate` started against a stopped cluster log one `database.unavailable`, come up once it starts, and
do their work (the server migrates, bootstraps and moves money; the worker settles a queued transfer;
migrate reaches head). Past PLATPAY_DB_STARTUP_TIMEOUT_SECONDS a command exits 1 with one line and no
traceback; a wrong password, a missing database or a failing migration fail at once, without waiting.

The cluster is this module's own (`PrivateCluster`): the tests stop and start it.
"""

from __future__ import annotations

import json
import secrets
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from alembic import command

from platpay.db import migrate
from tests.e2e.pg_cluster import PrivateCluster, running_cluster
from tests.support.api_checks import api_client
from tests.support.money import fund, money_env, open_holder, transfer_out_body, verify_ledger
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager, free_port
from tests.support.server import bootstrap_credentials, create_platform, credentials, start_server, wait_until

pytestmark = pytest.mark.e2e

DOWN_A_WHILE_SECONDS = 1.5  # after the first failed attempt: several more fail before the database starts
NEVER_SECONDS = "600"  # a deadline no test waits out: a command that waited for it would time the run out


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    with running_cluster() as private:
        yield private


@pytest.fixture
def database(cluster: PrivateCluster, processes: ProcessManager) -> Iterator[str]:
    """A fresh database on the private cluster (running); its URL. The cluster runs again after the test."""
    if not cluster.running():
        cluster.start()
    name = f"startup_{secrets.token_hex(4)}"
    cluster.create_database(name)
    yield cluster.url(name)
    processes.stop_all()
    if not cluster.running():
        cluster.start()


def events(process: ManagedProcess, name: str) -> list[dict]:
    """The process's JSON log lines (stdout and stderr) whose event is `name`."""
    found = []
    for line in (process.stdout() + process.stderr()).splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("event") == name:
                found.append(record)
    return found


def wait_down_a_while(process: ManagedProcess) -> None:
    """Until the process has met the stopped database, and a little longer; it must still be waiting."""
    process.wait_for_output(r'"event": "database\.unavailable"', timeout=60)
    time.sleep(DOWN_A_WHILE_SECONDS)
    assert process.alive(), process.describe()


def assert_one_outage_logged(process: ManagedProcess) -> None:
    unavailable = events(process, "database.unavailable")
    assert len(unavailable) == 1, process.describe()
    assert unavailable[0]["reason"] == "the database refused the connection"
    assert len(events(process, "database.recovered")) == 1, process.describe()
    assert "Traceback" not in process.stdout() + process.stderr()


def send_transfer(base_url: str, auth: tuple[str, str]) -> dict:
    """A funded customer's transfer out to its bank: the created transaction."""
    with api_client(base_url, auth) as client:
        holder = open_holder(client)
        assert fund(client, holder.account_id, 50_000).status_code == 200
        sent = client.post("/transfer-out", json=transfer_out_body(holder, 1_250))
    assert sent.status_code == 201, sent.text
    return sent.json()


def transaction_status(base_url: str, auth: tuple[str, str], transaction_id: str) -> str | None:
    with api_client(base_url, auth) as client:
        try:
            response = client.get(f"/transactions/{transaction_id}")
        except httpx.TransportError:
            return None
    return response.json()["status"] if response.status_code == 200 else None


def wait_completed(
    base_url: str, auth: tuple[str, str], transaction_id: str, process: ManagedProcess
) -> None:
    wait_until(
        lambda: transaction_status(base_url, auth, transaction_id) == "COMPLETED",
        timeout=30,
        message=process.describe,
    )


def assert_failed_with_one_line(result_code: int | None, stderr: str, command_name: str) -> str:
    """Exit 1 and a last stderr line `platpay <command>: ...`; no traceback. Returns that line."""
    assert result_code == 1, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"platpay {command_name}: "), stderr
    return last


class TestStartedWhileTheDatabaseIsDown:
    def test_serve_waits_then_migrates_bootstraps_serves_and_moves_money(
        self,
        processes: ProcessManager,
        cluster: PrivateCluster,
        database: str,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(database, master_key, tmp_path, PLATPAY_DB_STARTUP_TIMEOUT_SECONDS="60")
        cluster.stop()
        port = free_port()
        server = processes.start("serve", [PLATPAY, "serve", "--port", str(port)], env=env)
        wait_down_a_while(server)
        cluster.start()

        base_url = f"http://127.0.0.1:{port}"
        server.wait_http_ready(f"{base_url}/healthz", timeout=60)
        ready = httpx.get(f"{base_url}/readyz", trust_env=False, timeout=10)
        assert ready.status_code == 200 and ready.json()["migration"] == migrate.head_revision(), ready.text
        sandbox = bootstrap_credentials(processes)
        wait_completed(base_url, sandbox, send_transfer(base_url, sandbox)["id"], server)
        assert_one_outage_logged(server)
        verify_ledger(processes, env)

    def test_worker_waits_then_settles_the_transfer_queued_before(
        self,
        processes: ProcessManager,
        cluster: PrivateCluster,
        database: str,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(database, master_key, tmp_path, PLATPAY_DB_STARTUP_TIMEOUT_SECONDS="60")
        sandbox = credentials(create_platform(processes, env), "sandbox")
        _, base_url = start_server(processes, env, "--no-worker")
        sent = send_transfer(base_url, sandbox)
        assert sent["status"] != "COMPLETED"  # no worker yet: its settlement job waits

        cluster.stop()
        worker = processes.start("worker", [PLATPAY, "worker"], env=env)
        wait_down_a_while(worker)
        assert "jobs.runner_started" not in worker.stdout()
        cluster.start()

        worker.wait_for_output("jobs.runner_started", timeout=60)
        wait_completed(base_url, sandbox, sent["id"], worker)
        assert_one_outage_logged(worker)
        verify_ledger(processes, env)

    def test_migrate_waits_then_brings_the_schema_to_head(
        self,
        processes: ProcessManager,
        cluster: PrivateCluster,
        database: str,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(database, master_key, tmp_path, PLATPAY_DB_STARTUP_TIMEOUT_SECONDS="60")
        cluster.stop()
        migrating = processes.start("migrate", [PLATPAY, "migrate"], env=env)
        wait_down_a_while(migrating)
        cluster.start()

        assert migrating.popen.wait(timeout=120) == 0, migrating.describe()
        assert f"database at {migrate.head_revision()}" in migrating.stdout()
        assert_one_outage_logged(migrating)
        probe = PgProbe(cluster.dsn(database.rsplit("/", 1)[1]))
        try:
            assert probe.fetchval("SELECT version_num FROM alembic_version") == migrate.head_revision()
        finally:
            probe.close()


COMMANDS = {
    "migrate": ["migrate"],
    "serve": ["serve", "--port", "0"],  # the port is chosen below
    "worker": ["worker"],
    "platform create": ["platform", "create", "--name", "Late", "--json"],
}


def run_command(
    name: str, env: dict[str, str], processes: ProcessManager, *, timeout: float = 90
) -> tuple[int | None, str, str]:
    args = [PLATPAY, *COMMANDS[name]]
    if name == "serve":
        args[-1] = str(free_port())
    process = processes.start(name.replace(" ", "-"), args, env=env)
    process.popen.wait(timeout=timeout)  # a command still waiting at `timeout` fails the test here
    return process.popen.returncode, process.stdout(), process.stderr()


class TestGivingUp:
    @pytest.mark.parametrize("name", list(COMMANDS))
    def test_past_the_deadline_the_command_exits_1_with_one_line_and_no_traceback(
        self,
        name: str,
        processes: ProcessManager,
        cluster: PrivateCluster,
        database: str,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(database, master_key, tmp_path, PLATPAY_DB_STARTUP_TIMEOUT_SECONDS="1")
        cluster.stop()
        code, stdout, stderr = run_command(name, env, processes)
        last = assert_failed_with_one_line(code, stderr, name)
        assert "still unavailable after 1s (PLATPAY_DB_STARTUP_TIMEOUT_SECONDS)" in last, last
        assert "the database refused the connection" in last
        assert "startup-test-password" not in stdout + stderr  # the URL is shown without its password
        logged = [
            line for line in (stdout + stderr).splitlines() if '"event": "database.unavailable"' in line
        ]
        assert len(logged) == 1, stdout + stderr
        if name != "platform create":
            assert stderr.strip().count("\n") == 0, stderr  # the one line is all of stderr
        else:
            assert stdout == "", stdout  # its stdout is its JSON result: the log lines went to stderr

    # Each command, each mistake, and both first steps: migrating (migrate, serve) and connecting (worker).
    @pytest.mark.parametrize(
        ("name", "mistake"),
        [
            ("migrate", "wrong password"),
            ("worker", "wrong password"),
            ("serve", "missing database"),
            ("worker", "missing database"),
        ],
    )
    def test_a_configuration_mistake_fails_at_once_with_one_line(
        self,
        name: str,
        mistake: str,
        processes: ProcessManager,
        cluster: PrivateCluster,
        database: str,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        url = (
            cluster.url(database.rsplit("/", 1)[1], password="not-the-password")
            if mistake == "wrong password"
            else cluster.url("no_such_database")
        )
        env = money_env(url, master_key, tmp_path, PLATPAY_DB_STARTUP_TIMEOUT_SECONDS=NEVER_SECONDS)
        code, stdout, stderr = run_command(name, env, processes, timeout=60)
        last = assert_failed_with_one_line(code, stderr, name)
        expected = {
            "wrong password": 'password authentication failed for user "postgres" (check the user and password',
            "missing database": '"no_such_database" does not exist (create the database or fix its name in',
        }[mistake]
        assert expected in last, last
        assert "not-the-password" not in stdout + stderr
        assert "database.unavailable" not in stdout + stderr  # not taken for an outage: no waiting
        assert stderr.strip().count("\n") == 0, stderr


class TestAFailingMigration:
    def test_fails_at_once_naming_the_error_and_keeps_nothing_of_the_run(
        self,
        processes: ProcessManager,
        cluster: PrivateCluster,
        database: str,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        probe = PgProbe(cluster.dsn(database.rsplit("/", 1)[1]))
        try:
            probe.execute("CREATE TABLE platforms (squatter integer)")  # the first migration creates it
            env = money_env(database, master_key, tmp_path, PLATPAY_DB_STARTUP_TIMEOUT_SECONDS=NEVER_SECONDS)
            code, stdout, stderr = run_command("migrate", env, processes, timeout=60)
            last = assert_failed_with_one_line(code, stderr, "migrate")
            # The migration's own error, not one from cleaning up after it.
            assert (
                'migrating the database failed: DuplicateTableError: relation "platforms" already exists'
                in (last)
            ), last
            assert "database.unavailable" not in stdout
            tables = probe.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            assert [row["tablename"] for row in tables] == [
                "platforms"
            ]  # every earlier statement rolled back
        finally:
            probe.close()

    def test_a_migration_failing_halfway_leaves_the_schema_at_the_previous_revision(
        self, cluster: PrivateCluster, database: str, tmp_path: Path
    ) -> None:
        migrate.upgrade(database)
        head = migrate.head_revision()
        scripts = tmp_path / "migrations"
        shutil.copytree(migrate.MIGRATIONS_DIR, scripts, ignore=shutil.ignore_patterns("__pycache__"))
        (scripts / "versions" / "9999_halfway.py").write_text(
            f'"""Creates a table, then fails."""\n\n'
            "import sqlalchemy as sa\nfrom alembic import op\n\n"
            f'revision = "9999_halfway"\ndown_revision = "{head}"\n'
            "branch_labels = None\ndepends_on = None\n\n\n"
            "def upgrade() -> None:\n"
            '    op.create_table("halfway", sa.Column("id", sa.Integer, primary_key=True))\n'
            '    raise RuntimeError("the second half of this migration fails")\n\n\n'
            "def downgrade() -> None:\n    pass\n"
        )
        config = migrate.alembic_config(database)
        config.set_main_option("script_location", str(scripts))
        with pytest.raises(RuntimeError, match="second half"):
            command.upgrade(config, "head")

        probe = PgProbe(cluster.dsn(database.rsplit("/", 1)[1]))
        try:
            assert probe.fetchval("SELECT to_regclass('public.halfway')") is None
            assert probe.fetchval("SELECT version_num FROM alembic_version") == head
            assert probe.fetchval("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'") == 0
        finally:
            probe.close()
