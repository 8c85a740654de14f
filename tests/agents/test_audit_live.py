"""Refusals reach the audit trail through the agents' real HTTP path: `platpay serve` as a process, called the
way `platpay mcp` calls it (its own client against the live URL, an Idempotency-Key on every money call): a
policy's refusals and a paused agent's refusals are each one MONEY_REFUSED, a retry with the same key adds
nothing; then `platpay agents audit export` and `verify` as processes, and the export verified offline
(`verify --file`), before and after an edit re-hashed without the key (what the keyed chain catches)."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import pytest

from platpay import BASE_PATH
from platpay.mcp.server import PlatpayMCP
from tests.support.api_checks import api_client
from tests.support.money import fund, open_holder
from tests.support.processes import PLATPAY, ProcessManager, process_env
from tests.support.server import create_platform, credentials, start_server

pytestmark = pytest.mark.e2e

POLICY = {
    "permissions": ["CREATE_TRANSFERS"],
    "defaultExecutionMode": "AUTO",
    "spendingLimits": {"currency": "USD", "perTransactionLimit": 10_000, "dailyLimit": 50_000},
    "approvalThresholds": {"currency": "USD", "amount": 5_000},
}


@pytest.fixture
def processes(tmp_path: Path) -> Iterator[ProcessManager]:
    manager = ProcessManager(tmp_path / "logs")
    try:
        yield manager
    finally:
        manager.stop_all()


async def _refuse_through_the_mcp_client(
    base_url: str, token: str, transfer: dict, platform: httpx.Client, agent_id: str
) -> None:
    server = PlatpayMCP(
        api_url=base_url + BASE_PATH, token=token
    )  # plain http: the client `platpay mcp` uses
    await server.refresh()
    for n in range(11):
        result = await server.call_tool("transfer_out", {**transfer, "amount": 20_000 + n})
        assert result.is_error and json.loads(result.content[0].text)["status"] == 403, result
    for _ in range(2):  # the same call retried with its key: a replay
        result = await server.call_tool(
            "transfer_out", {**transfer, "amount": 20_000, "idempotencyKey": "live-retry"}
        )
        assert result.is_error
    assert platform.patch(f"/agents/{agent_id}", json={"isPaused": True}).status_code == 200
    for n in range(6):
        result = await server.call_tool("transfer_out", {**transfer, "amount": 100 + n})
        error = json.loads(result.content[0].text)
        assert result.is_error and error["details"]["rule"] == "isPaused", error


def test_refusals_over_http_are_each_recorded_once_and_verify_offline(processes, tmp_path: Path) -> None:
    master_key = base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode()
    database = tmp_path / "platpay.db"
    env = process_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{database}",
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_JOB_POLL_SECONDS="0.05",
    )
    sandbox = credentials(create_platform(processes, env), "sandbox")
    _server, base_url = start_server(processes, env)
    with api_client(base_url, sandbox) as platform:
        holder = open_holder(platform)
        assert fund(platform, holder.account_id, 100_000).status_code == 200
        created = platform.post(
            "/agents", json={"name": "live", "customerId": holder.customer_id, "policy": POLICY}
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["agent"]["id"]
        token = httpx.post(
            f"{base_url}{BASE_PATH}/agents/device-codes/{created.json()['deviceCode']['code']}/redeem",
            trust_env=False,
        ).json()["accessToken"]
        transfer = {
            "source": {"accountId": holder.account_id},
            "destination": {"accountId": next(iter(holder.banks.values()))},
        }
        anyio.run(_refuse_through_the_mcp_client, base_url, token, transfer, platform, agent_id)
        page = platform.get(
            f"/agents/{agent_id}/audit", params={"kind": "MONEY_REFUSED", "limit": 100}
        ).json()
        rules = [record["data"]["decision"]["rule"] for record in page["data"]]
        assert sorted(rules) == ["isPaused"] * 6 + ["spendingLimits.perTransactionLimit"] * 12, rules

    exported = processes.run([PLATPAY, "agents", "audit", "export", "--agent", agent_id], env=env).stdout
    records = [json.loads(line) for line in exported.splitlines()]
    assert [r["kind"] for r in records].count("MONEY_REFUSED") == 18
    assert {r["hashAlgorithm"] for r in records} == {"HMAC-SHA-256"}
    assert "OK" in processes.run([PLATPAY, "agents", "audit", "verify"], env=env).stdout
    export = tmp_path / "audit.jsonl"
    export.write_text(exported)
    offline = processes.run([PLATPAY, "agents", "audit", "verify", "--file", str(export)], env=env).stdout
    assert f"ends at sequence {len(records)} with hash {records[-1]['hash']}" in offline and "OK" in offline

    # An edit straight in the database, every later record re-hashed with plain SHA-256 and the head moved:
    # what passed before the chain was keyed. Caught in the database and in a new export verified offline.
    with sqlite3.connect(database) as db:
        previous = records[3]["hash"]
        for number, row in enumerate(records[4:], start=5):
            if number == 5:
                row["data"] = {}
            canonical = json.dumps(
                {k: row[k] for k in ("id", "tenantId", "agentId", "sequence", "kind", "actor", "occurredAt", "data")},
                sort_keys=True, separators=(",", ":"), ensure_ascii=False,
            )  # fmt: skip
            digest = hashlib.sha256((previous + canonical).encode()).hexdigest()
            db.execute(
                "UPDATE agent_audit_records SET data = ?, previous_hash = ?, hash = ? WHERE id = ?",
                (json.dumps(row["data"]), previous, digest, row["id"]),
            )
            previous = digest
        db.execute("UPDATE agent_audit_heads SET hash = ? WHERE agent_id = ?", (previous, agent_id))
    for command in (["verify"], ["verify", "--file", "-"]):
        stdin = (
            processes.run([PLATPAY, "agents", "audit", "export"], env=env).stdout if "-" in command else None
        )
        broken = subprocess.run(
            [PLATPAY, "agents", "audit", *command],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert broken.returncode == 1, broken.stdout + broken.stderr
        assert f"BROKEN agent {agent_id} at sequence 5" in broken.stdout and "keyed hash" in broken.stdout
