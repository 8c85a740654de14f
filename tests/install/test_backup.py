"""`platpay backup` of a SQLite database while a live server moves money, `platpay restore` into a new
directory: the copy verifies (`ledger verify`), and a copy taken once the load stopped has exactly the
live database's balances."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from tests.install.support import clean_env, fast_jobs, one_error_line, start_serve
from tests.support.api_checks import Credentials, api_client
from tests.support.money import TERMINAL, fund, open_holder, transfer_out_body
from tests.support.processes import PLATPAY, ProcessManager
from tests.support.server import wait_until

pytestmark = pytest.mark.e2e

PAYERS = 3
# The load stops when told (once the backup is done), or at this many: a bound for a test gone wrong, far
# above what a backup lets through. At 150 a CI machine that was loaded enough (a backup process starting slowly)
# let the load finish all 450 before the backup began, and the backup had no load to run under.
MAX_TRANSFERS_EACH = 600


def _sqlite_url(directory: Path) -> str:
    return f"sqlite+aiosqlite:///{directory / 'platpay.db'}"


def _rows(path: Path, sql: str) -> list[tuple]:
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


BALANCES = "SELECT id, available, held FROM ledger_accounts ORDER BY id"
TRANSACTIONS = "SELECT count(*) FROM transactions"


def _credentials(stdout: str) -> Credentials:
    fields = dict(
        line.split(None, 1)
        for line in stdout.splitlines()
        if line.strip().startswith(("clientId", "clientSecret"))
    )
    return fields["clientId"].strip(), fields["clientSecret"].strip()


class Load:
    """Payers paying out small amounts to their banks, one transfer after another, until stopped."""

    def __init__(self, base_url: str, sandbox: Credentials) -> None:
        self.base_url, self.sandbox = base_url, sandbox
        self.stop = threading.Event()
        self.sent = [0] * PAYERS
        self.errors: list[str] = []
        with api_client(base_url, sandbox) as client:
            self.holders = [open_holder(client, serial=n) for n in range(PAYERS)]
            for holder in self.holders:
                assert fund(client, holder.account_id, 1_000_000).status_code == 200
        self.threads = [threading.Thread(target=self._pay, args=(n,)) for n in range(PAYERS)]

    def _pay(self, payer: int) -> None:
        with api_client(self.base_url, self.sandbox) as client:
            while not self.stop.is_set() and self.sent[payer] < MAX_TRANSFERS_EACH:
                response = client.post(
                    "/transfer-out", json=transfer_out_body(self.holders[payer], 100 + payer)
                )
                if response.status_code != 201:
                    self.errors.append(response.text)
                    return
                self.sent[payer] += 1

    def __enter__(self) -> Load:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(timeout=120)


def test_a_backup_under_load_restores_into_a_new_directory_and_verifies(
    processes: ProcessManager, master_key: str, tmp_path: Path
) -> None:
    live, backups = tmp_path / "live", tmp_path / "backups"
    env = clean_env(
        **fast_jobs(
            PLATPAY_DATABASE_URL=_sqlite_url(live), PLATPAY_VAR_DIR=str(live), PLATPAY_MASTER_KEY=master_key
        )
    )
    server, base_url = start_serve(processes, PLATPAY, env, cwd=tmp_path)
    sandbox = _credentials(server.stdout())

    with Load(base_url, sandbox) as load:
        wait_until(lambda: sum(load.sent) >= 20, timeout=120, message=server.describe)
        during = processes.run([PLATPAY, "backup", str(backups / "during.db")], env=env, cwd=tmp_path)
        sent_by_then = sum(load.sent)
    assert not load.errors, load.errors[:3]
    assert "backed up" in during.stdout and "master key is not in it" in during.stdout, during.stdout

    # Quiet: every transfer settled, then a second copy.
    with api_client(base_url, sandbox) as client:
        wait_until(
            lambda: (
                all(
                    t["status"] in TERMINAL
                    for t in client.get("/transactions", params={"limit": 100}).json()["data"]
                )
                and _rows(
                    live / "platpay.db", "SELECT count(*) FROM jobs WHERE state IN ('QUEUED', 'RUNNING')"
                )[0][0]
                <= 1
            ),
            timeout=120,
            message=server.describe,
        )
    processes.run([PLATPAY, "backup", str(backups / "after.db")], env=env, cwd=tmp_path)
    live_balances = _rows(live / "platpay.db", BALANCES)
    live_transactions = _rows(live / "platpay.db", TRANSACTIONS)[0][0]

    for name, directory in (("during", tmp_path / "restored-during"), ("after", tmp_path / "restored-after")):
        restored_env = {
            **env,
            "PLATPAY_DATABASE_URL": _sqlite_url(directory),
            "PLATPAY_VAR_DIR": str(directory),
        }
        restored = processes.run(
            [PLATPAY, "restore", str(backups / f"{name}.db")], env=restored_env, cwd=tmp_path
        )
        assert "restored" in restored.stdout, restored.stdout
        verify = processes.run([PLATPAY, "ledger", "verify"], env=restored_env, cwd=tmp_path)
        assert "OK: every balance equals its postings" in verify.stdout, verify.stdout

    copied_during = _rows(tmp_path / "restored-during" / "platpay.db", TRANSACTIONS)[0][0]
    assert PAYERS < copied_during < live_transactions, (copied_during, sent_by_then, live_transactions)
    assert _rows(tmp_path / "restored-after" / "platpay.db", BALANCES) == live_balances
    assert _rows(tmp_path / "restored-after" / "platpay.db", TRANSACTIONS)[0][0] == live_transactions


def test_restore_never_overwrites_a_database_unless_told_and_backup_never_overwrites_a_file(
    processes: ProcessManager, master_key: str, tmp_path: Path
) -> None:
    env = clean_env(
        PLATPAY_DATABASE_URL=_sqlite_url(tmp_path),
        PLATPAY_VAR_DIR=str(tmp_path),
        PLATPAY_MASTER_KEY=master_key,
    )
    processes.run([PLATPAY, "migrate"], env=env, cwd=tmp_path)
    processes.run([PLATPAY, "backup", str(tmp_path / "copy.db")], env=env, cwd=tmp_path)

    again = processes.start("backup", [PLATPAY, "backup", str(tmp_path / "copy.db")], env=env, cwd=tmp_path)
    assert again.popen.wait(timeout=60) == 1
    assert "exists: give a new path" in one_error_line(again, again.stderr())

    over = processes.start("restore", [PLATPAY, "restore", str(tmp_path / "copy.db")], env=env, cwd=tmp_path)
    assert over.popen.wait(timeout=60) == 1
    assert "--replace" in one_error_line(over, over.stderr())

    replaced = processes.run(
        [PLATPAY, "restore", "--replace", str(tmp_path / "copy.db")], env=env, cwd=tmp_path
    )
    assert "restored" in replaced.stdout
    processes.run([PLATPAY, "ledger", "verify"], env=env, cwd=tmp_path)

    # A backup a newer platpay made is refused: this version cannot serve its schema.
    with sqlite3.connect(tmp_path / "copy.db") as copy:
        copy.execute("UPDATE alembic_version SET version_num = '9999_from_a_newer_platpay'")
    elsewhere = {**env, "PLATPAY_DATABASE_URL": _sqlite_url(tmp_path / "elsewhere")}
    newer = processes.start(
        "restore", [PLATPAY, "restore", str(tmp_path / "copy.db")], env=elsewhere, cwd=tmp_path
    )
    assert newer.popen.wait(timeout=60) == 1
    assert "9999_from_a_newer_platpay" in one_error_line(newer, newer.stderr())
    assert not (tmp_path / "elsewhere" / "platpay.db").exists()


def test_backup_of_a_postgresql_database_points_to_pg_dump(processes: ProcessManager, tmp_path: Path) -> None:
    env = clean_env(PLATPAY_DATABASE_URL="postgresql+asyncpg://platpay:hunter2@127.0.0.1:1/platpay")
    process = processes.start("backup", [PLATPAY, "backup", str(tmp_path / "x.db")], env=env, cwd=tmp_path)
    assert process.popen.wait(timeout=60) == 1
    line = one_error_line(process, process.stderr())
    assert "pg_dump" in line and "hunter2" not in line, line
