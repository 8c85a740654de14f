"""`make image-test`: the container image `make image` built, run as its docs say: read-only root
filesystem, a data volume, the master key from a secret. It answers /readyz, moves one payment, passes its
HEALTHCHECK, runs as a non-root user, and drains on SIGTERM: every request it took is answered, every
transfer it answered is in the database, the ledger verifies, the exit code is 0.

Not in the default test run (building the image takes minutes): runs when PLATPAY_TEST_IMAGE is set, as
`make image-test` does. PODMAN overrides the container command (default: podman with runc and cgroupfs,
as these machines need; tools/image/containers.conf through CONTAINERS_CONF); containers use the host's
network here (docs/operations.md, "Container image")."""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from platpay import BASE_PATH
from tests.install.support import REPO_ROOT, pay_once
from tests.support.api_checks import Credentials, api_client
from tests.support.money import fund, open_holder, transfer_out_body
from tests.support.processes import free_port
from tests.support.server import wait_until

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(
        not os.environ.get("PLATPAY_TEST_IMAGE"), reason="the image test runs with `make image-test`"
    ),
]

PODMAN = shlex.split(os.environ.get("PODMAN", "podman --runtime runc --cgroup-manager cgroupfs"))
IMAGE = os.environ.get("PLATPAY_IMAGE", "localhost/platpay:latest")
DATA = "/var/lib/platpay"


def podman(*args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CONTAINERS_CONF": os.environ.get("CONTAINERS_CONF", str(REPO_ROOT / "tools/image/containers.conf")),
    }
    result = subprocess.run(
        [*PODMAN, *args], capture_output=True, text=True, timeout=timeout, env=env, check=False
    )
    if check:
        assert result.returncode == 0, (
            f"podman {' '.join(args)}: {result.stdout[-2000:]}\n{result.stderr[-2000:]}"
        )
    return result


@dataclass
class Running:
    name: str
    volume: str
    base_url: str
    run_options: list[str] = field(default_factory=list)

    def logs(self) -> str:
        result = podman("logs", self.name, check=False)
        return result.stdout + result.stderr

    def state(self) -> dict:
        return json.loads(podman("inspect", self.name).stdout)[0]["State"]

    def one_off(self, *command: str, entrypoint: str | None = None) -> subprocess.CompletedProcess[str]:
        """A command in a new container of the image on the same volume and settings (the server stopped)."""
        options = ["--entrypoint", entrypoint] if entrypoint else []
        return podman("run", "--rm", *self.run_options, *options, IMAGE, *command, check=False, timeout=300)


@pytest.fixture
def container(tmp_path: Path) -> Iterator[Running]:
    token = secrets.token_hex(4)
    name, volume, secret = f"platpay-test-{token}", f"platpay-test-data-{token}", f"platpay-test-key-{token}"
    key_file = tmp_path / "master_key"
    key_file.write_text(secrets.token_urlsafe(32))
    podman("secret", "create", secret, str(key_file))
    podman("volume", "create", volume)
    port = free_port()
    run_options = [
        "--network", "host",
        "--read-only",
        "-v", f"{volume}:{DATA}",
        "--secret", secret,
        "--tmpfs", "/run/secrets",  # podman with runc mounts a secret into a read-only root only so
        "-e", f"PLATPAY_MASTER_KEY_FILE=/run/secrets/{secret}",
        "-e", "PLATPAY_HOST=127.0.0.1",
        "-e", f"PLATPAY_PORT={port}",
        "-e", "PLATPAY_JOB_POLL_SECONDS=0.05",
        "-e", "PLATPAY_SANDBOX_SETTLEMENT_SECONDS=0.2",
    ]  # fmt: skip
    running = Running(name, volume, f"http://127.0.0.1:{port}", run_options)
    try:
        podman("run", "-d", "--name", name, *run_options, IMAGE)
        yield running
    finally:
        podman("rm", "--force", "--time", "5", name, check=False)
        podman("volume", "rm", "--force", volume, check=False)
        podman("secret", "rm", secret, check=False)


def _wait_ready(running: Running, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{running.base_url}/readyz", trust_env=False, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        assert running.state()["Running"], running.logs()
        assert time.monotonic() < deadline, running.logs()
        time.sleep(0.2)


def _credentials(logs: str) -> Credentials:
    fields = dict(
        line.split(None, 1)
        for line in logs.splitlines()
        if line.strip().startswith(("clientId", "clientSecret"))
    )
    return fields["clientId"].strip(), fields["clientSecret"].strip()


class Traffic:
    """Transfers sent one after another by several clients, each on a new connection, until the server goes."""

    def __init__(self, base_url: str, sandbox: Credentials, clients: int = 4) -> None:
        self.base_url, self.sandbox = base_url, sandbox
        with api_client(base_url, sandbox) as client:
            self.holders = [open_holder(client, serial=100 + n) for n in range(clients)]
            for holder in self.holders:
                assert fund(client, holder.account_id, 1_000_000).status_code == 200
        self.answered: list[str] = []  # ids of transfers answered 201
        self.refused = 0  # never connected: the server had stopped listening
        self.cut: list[str] = []  # connected, then no complete answer
        self.other: list[str] = []
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=self._send, args=(n,)) for n in range(clients)]

    def _send(self, n: int) -> None:
        while not self.stop.is_set():
            try:
                with httpx.Client(
                    base_url=self.base_url + BASE_PATH, auth=self.sandbox, trust_env=False, timeout=30
                ) as client:
                    response = client.post("/transfer-out", json=transfer_out_body(self.holders[n], 100))
            except httpx.ConnectError:
                self.refused += 1
                return
            except httpx.TransportError as error:
                self.cut.append(repr(error))
                return
            if response.status_code == 201:
                self.answered.append(response.json()["id"])
            else:
                self.other.append(f"{response.status_code} {response.text[:200]}")
                return


def test_the_image_serves_pays_checks_its_health_and_drains_on_sigterm(container: Running) -> None:
    _wait_ready(container)
    sandbox = _credentials(container.logs())
    assert httpx.get(f"{container.base_url}/healthz", trust_env=False).json()["status"] == "ok"
    assert pay_once(container.base_url, sandbox)["status"] == "COMPLETED"

    assert podman("healthcheck", "run", container.name, check=False).returncode == 0, container.logs()
    assert podman("exec", container.name, "id", "-u").stdout.strip() != "0"
    read_only = podman("exec", container.name, "touch", "/opt/platpay/written", check=False)
    assert read_only.returncode != 0 and "Read-only file system" in read_only.stderr, read_only
    podman("exec", container.name, "touch", f"{DATA}/written")  # the data volume is writable

    traffic = Traffic(container.base_url, sandbox)
    for thread in traffic.threads:
        thread.start()
    wait_until(lambda: len(traffic.answered) >= 20, timeout=60, message=container.logs)
    podman("kill", "--signal", "TERM", container.name)
    exit_code = podman("wait", container.name, timeout=120).stdout.strip()
    traffic.stop.set()
    for thread in traffic.threads:
        thread.join(timeout=60)
    logs = container.logs()
    print(
        f"drain: {len(traffic.answered)} answered, {traffic.refused} refused once the listener closed, {len(traffic.cut)} cut"
    )
    assert exit_code == "0", logs
    assert "jobs.runner_stopped" in logs, logs  # the embedded job runner stopped on the way out
    assert not traffic.cut and not traffic.other, (traffic.cut, traffic.other)

    # Every transfer the server answered is in the database, and none it did not answer.
    script = (
        "import json, sqlite3; c = sqlite3.connect('/var/lib/platpay/platpay.db'); "
        "print(json.dumps([r[0] for r in c.execute(\"SELECT id FROM transactions WHERE kind = 'TRANSFER_OUT'\")]))"
    )
    stored = container.one_off("-c", script, entrypoint="python3")
    assert stored.returncode == 0, stored.stderr
    stored_ids = set(json.loads(stored.stdout))
    assert set(traffic.answered) <= stored_ids
    assert len(stored_ids) == len(traffic.answered) + 1  # and pay_once's transfer
    verified = container.one_off("ledger", "verify")
    assert verified.returncode == 0 and "OK: every balance equals its postings" in verified.stdout, verified
