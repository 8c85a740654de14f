"""platpay as a user runs it: a clean environment (no PLATPAY_ setting, nothing of the checkout on the path),
a server started in a directory of its own, one payment driven end to end, SQL on either database."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.engine import make_url

from tests.support.api_checks import Credentials, api_client
from tests.support.money import TERMINAL, api_balance, fund, open_holder, transfer_out_body
from tests.support.pg import PgProbe
from tests.support.processes import ManagedProcess, ProcessFailed, ProcessManager, free_port
from tests.support.server import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]


def clean_env(**settings: str) -> dict[str, str]:
    """The test's environment without any PLATPAY_ setting and without PYTHONPATH (nothing of the checkout
    can be imported from it), plus `settings`."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PLATPAY_") and name not in {"PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"}
    }
    env["PYTHONUNBUFFERED"] = "1"
    env.update(settings)
    return env


def fast_jobs(**settings: str) -> dict[str, str]:
    """Settings that settle a sandbox transfer within a second."""
    return {"PLATPAY_JOB_POLL_SECONDS": "0.05", "PLATPAY_SANDBOX_SETTLEMENT_SECONDS": "0.2", **settings}


def start_serve(
    processes: ProcessManager, platpay: str, env: dict[str, str], *, cwd: Path, timeout: float = 60
) -> tuple[ManagedProcess, str]:
    """`platpay serve` on a free port with `cwd` as its directory, once /readyz answers 200; tried again if
    another process took the port between our probe and its bind."""
    for attempt in range(3):
        port = free_port()
        server = processes.start("serve", [platpay, "serve", "--port", str(port)], env=env, cwd=cwd)
        base_url = f"http://127.0.0.1:{port}"
        try:
            server.wait_http_ready(f"{base_url}/readyz", timeout=timeout)
        except ProcessFailed:
            port_taken = "address already in use" in (server.stdout() + server.stderr()).lower()
            if server.alive() or not port_taken or attempt == 2:
                raise
            continue
        return server, base_url
    raise AssertionError("unreachable")


def transaction_status(client: httpx.Client, transaction_id: str) -> str:
    response = client.get(f"/transactions/{transaction_id}")
    assert response.status_code == 200, response.text
    return response.json()["status"]


def pay_once(base_url: str, sandbox: Credentials) -> dict[str, Any]:
    """One payment end to end: a customer with a USD account and a bank account, funded, pays 25.00 out to
    its bank; returns the settled transaction. Its balances are checked before and after."""
    with api_client(base_url, sandbox) as client:
        holder = open_holder(client)
        assert fund(client, holder.account_id, 10_000, key="install-fund").status_code == 200
        sent = client.post("/transfer-out", json=transfer_out_body(holder, 2_500))
        assert sent.status_code == 201, sent.text
        transaction = sent.json()
        wait_until(
            lambda: transaction_status(client, transaction["id"]) in TERMINAL,
            timeout=30,
            message=lambda: f"transaction {transaction['id']} never settled",
        )
        settled = client.get(f"/transactions/{transaction['id']}").json()
        assert settled["status"] == "COMPLETED", settled
        assert api_balance(client, holder) == (7_500, 7_500)  # (available, total): paid out, nothing held
    return settled


class Sql:
    """Plain SQL on the database a URL names (SQLite file or PostgreSQL), outside platpay."""

    def __init__(self, url: str) -> None:
        parsed = make_url(url)
        self.sqlite = parsed.drivername.startswith("sqlite")
        if self.sqlite:
            self.path = Path(parsed.database or "")
        else:
            self.probe = PgProbe(parsed.set(drivername="postgresql").render_as_string(hide_password=False))

    def fetch(self, sql: str) -> list[tuple[Any, ...]]:
        if self.sqlite:
            with sqlite3.connect(self.path, timeout=10) as connection:
                return connection.execute(sql).fetchall()
        return [tuple(row.values()) for row in self.probe.fetch(sql)]

    def execute(self, sql: str) -> None:
        if self.sqlite:
            connection = sqlite3.connect(self.path, timeout=10)
            try:
                with connection:
                    connection.execute(sql)
            finally:
                connection.close()
        else:
            self.probe.execute(sql)

    def close(self) -> None:
        if not self.sqlite:
            self.probe.close()


def one_error_line(process: ManagedProcess | None, stderr: str, stdout: str = "") -> str:
    """stderr's only line (a command that failed says why in one line, never with a traceback)."""
    assert "Traceback" not in stderr + stdout, stderr + stdout
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, process.describe() if process else stderr
    return lines[0]


def wait_exit(process: ManagedProcess, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while process.alive():
        assert time.monotonic() < deadline, process.describe()
        time.sleep(0.05)
    return process.popen.returncode
