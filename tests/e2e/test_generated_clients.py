"""Clients generated from the live /openapi.json work: a Python client (openapi-python-client) and a
TypeScript one (openapi-typescript types + openapi-fetch, pinned in tests/clients/ts/package-lock.json and
type-checked with `tsc --noEmit`), each generated without a single generator warning (a warning is an
operation or a response the client left out) and each running the same scenario against one real server:
customers created and paged, internal accounts, sandbox funding, an external account, a transfer-out
replayed by its Idempotency-Key, a quote executed, the transactions listed, and a 404 the client parses as
its Error404."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.factories import clabe_ending
from tests.support.processes import PLATPAY, REPO_ROOT, ProcessManager, process_env
from tests.support.server import start_server

pytestmark = pytest.mark.e2e

CLIENTS = REPO_ROOT / "tests" / "clients"
TS_DIR = CLIENTS / "ts"
TIMEOUT = 120.0


@dataclass(frozen=True)
class LiveApi:
    base_url: str
    client_id: str
    client_secret: str
    document: Path  # /openapi.json as the server answered it
    work_dir: Path


@pytest.fixture(scope="module")
def live_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApi]:
    """One `platpay serve` (embedded SQLite) for both clients, with a sandbox platform sending USD and MXN."""
    work_dir = tmp_path_factory.mktemp("clients")
    processes = ProcessManager(work_dir / "logs")
    env = process_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{work_dir / 'platpay.db'}",
        PLATPAY_VAR_DIR=str(work_dir / "var"),
        PLATPAY_MASTER_KEY=os.environ["PLATPAY_MASTER_KEY"],
        PLATPAY_LOG_LEVEL="WARNING",
    )
    try:
        _, base_url = start_server(processes, env, cwd=work_dir)
        created = json.loads(
            processes.run(
                [PLATPAY, "platform", "create", "--name", "Clients", "--currencies", "USD,MXN", "--json"],
                env=env,
                cwd=work_dir,
            ).stdout
        )
        document = work_dir / "openapi.json"
        response = httpx.get(f"{base_url}/openapi.json", trust_env=False, timeout=10)
        assert response.status_code == 200, response.text
        document.write_bytes(response.content)
        yield LiveApi(
            base_url,
            created["sandbox"]["clientId"],
            created["sandbox"]["clientSecret"],
            document,
            work_dir,
        )
    finally:
        processes.stop_all()


def _run(args: list[str], *, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run to completion; fails with the output on a non-zero exit. Returns stdout and stderr together."""
    result = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{' '.join(args)} exited with {result.returncode}:\n{output[-4000:]}"
    return output


def _no_warnings(tool: str, output: str) -> None:
    warnings = [line for line in output.splitlines() if "warn" in line.lower()]
    assert not warnings, (
        f"{tool} warned (an operation or a response left out of the client):\n{output[-4000:]}"
    )


def test_a_generated_python_client_runs_the_scenario(live_api: LiveApi) -> None:
    package = live_api.work_dir / "python" / "platpay_client"
    config = live_api.work_dir / "openapi-python-client.yml"
    # A document's download answers its own type (PDF, JPEG, PNG): read as bytes, as docs/onboarding.md tells users.
    binary = "".join(
        f"  {kind}: application/octet-stream\n" for kind in ("application/pdf", "image/jpeg", "image/png")
    )
    config.write_text(
        f"package_name_override: platpay_client\npost_hooks: []\ncontent_type_overrides:\n{binary}",
        encoding="utf-8",
    )
    generator = Path(sys.executable).parent / "openapi-python-client"
    output = _run(
        [str(generator), "generate", "--path", str(live_api.document), "--output-path", str(package),
         "--meta", "none", "--config", str(config), "--fail-on-warning"],
        cwd=live_api.work_dir,
    )  # fmt: skip
    _no_warnings("openapi-python-client", output)

    env = {**os.environ, "PYTHONPATH": str(package.parent)}
    printed = _run(
        [sys.executable, str(CLIENTS / "python" / "scenario.py"), live_api.base_url, live_api.client_id,
         live_api.client_secret, clabe_ending("011")],
        cwd=live_api.work_dir,
        env=env,
    )  # fmt: skip
    assert '"scenario": "ok"' in printed, printed


def _node_modules() -> Path:
    """tests/clients/ts/node_modules as package-lock.json pins it: `npm ci` when the lock changed since the
    last install (the first run needs the npm registry; later runs touch no network)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        if os.environ.get("PLATPAY_TEST_REQUIRE_NODE"):
            pytest.fail("PLATPAY_TEST_REQUIRE_NODE is set but node or npm is not installed")
        pytest.skip(
            "node and npm are not installed here, so the TypeScript client is not checked (CI has them)"
        )
    stamp = TS_DIR / "node_modules" / ".platpay-lock-sha256"
    digest = hashlib.sha256((TS_DIR / "package-lock.json").read_bytes()).hexdigest()
    if not stamp.exists() or stamp.read_text() != digest:
        _run(["npm", "ci", "--prefer-offline", "--no-audit", "--no-fund"], cwd=TS_DIR)
        stamp.write_text(digest)
    return TS_DIR / "node_modules"


def test_a_generated_typescript_client_type_checks_and_runs_the_scenario(live_api: LiveApi) -> None:
    bin_dir = _node_modules() / ".bin"
    schema = TS_DIR / "generated" / "schema.d.ts"
    output = _run(
        [str(bin_dir / "openapi-typescript"), str(live_api.document), "-o", str(schema)], cwd=TS_DIR
    )
    _no_warnings("openapi-typescript", output)
    _run([str(bin_dir / "tsc"), "--noEmit", "-p", "tsconfig.json"], cwd=TS_DIR)
    _run(["node", "transpile.mjs"], cwd=TS_DIR)  # the checked file, types stripped, for node to run

    env = {**os.environ, "PLATPAY_SCENARIO_CLABE": clabe_ending("021")}
    printed = _run(
        ["node", str(TS_DIR / "build" / "scenario.js"), live_api.base_url, live_api.client_id,
         live_api.client_secret],
        cwd=TS_DIR,
        env=env,
    )  # fmt: skip
    assert '"scenario":"ok"' in printed, printed
