"""An agent's daily limit under real concurrency on PostgreSQL: 50 simultaneous agent transfer-outs of about
1/10 of the daily limit each, against two real `platpay serve` processes. Executed plus pending never
exceeds the limit; approving every pending action never exceeds it either; the ledger verifies."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from platpay import BASE_PATH
from tests.support.api_checks import api_client
from tests.support.money import api_balance, fund, money_env, open_holder, transfer_out_body, verify_ledger
from tests.support.processes import ProcessManager
from tests.support.server import create_platform, credentials, start_two_server_processes

pytestmark = pytest.mark.e2e

DAILY = 10_000
AUTO, HELD = 999, 1_000  # at or below the threshold (999) executes at once; above it waits for approval


def fire_at_once(base_url: str, token: str, bodies: list[dict]) -> list[httpx.Response]:
    """Each request on its own connection and thread, released together by one barrier."""
    start = threading.Barrier(len(bodies))
    headers = {"Authorization": f"Bearer {token}"}

    def send(body: dict) -> httpx.Response:
        with httpx.Client(
            base_url=base_url + BASE_PATH, timeout=30.0, trust_env=False, headers=headers
        ) as client:
            assert client.get("/agents/me").status_code == 200
            start.wait(timeout=60)
            return client.post(
                "/agents/me/transfer-out", json=body, headers={"Idempotency-Key": f"burst-{uuid.uuid4()}"}
            )

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(send, bodies))


def test_fifty_agent_transfers_at_once_never_exceed_the_daily_limit(
    processes: ProcessManager, pg_database: str, master_key: str, tmp_path: Path
) -> None:
    # One agent's 50 requests serialize on its usage row: on a loaded machine the last ones wait seconds for
    # a pooled connection, which must not end them with a 503 (the limit, not the latency, is measured here).
    env = money_env(
        pg_database, master_key, tmp_path, PLATPAY_DB_POOL_SIZE="8", PLATPAY_DB_TIMEOUT_SECONDS="60"
    )
    sandbox = credentials(create_platform(processes, env), "sandbox")
    _server, base_url = start_two_server_processes(processes, env)
    with api_client(base_url, sandbox) as client:
        holder = open_holder(client)
        assert fund(client, holder.account_id, 1_000_000).status_code == 200
        policy = {
            "permissions": ["CREATE_TRANSFERS"],
            "defaultExecutionMode": "AUTO",
            "spendingLimits": {"currency": "USD", "perTransactionLimit": DAILY, "dailyLimit": DAILY},
            "approvalThresholds": {"currency": "USD", "amount": AUTO},
        }
        created = client.post(
            "/agents", json={"name": "burst", "customerId": holder.customer_id, "policy": policy}
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["agent"]["id"]
        redeemed = httpx.post(
            f"{base_url}{BASE_PATH}/agents/device-codes/{created.json()['deviceCode']['code']}/redeem",
            trust_env=False,
        )
        token = redeemed.json()["accessToken"]

    bodies = [transfer_out_body(holder, AUTO if n % 2 else HELD) for n in range(50)]
    answers = fire_at_once(base_url, token, bodies)
    statuses = Counter(r.status_code for r in answers)
    assert set(statuses) <= {201, 403}, [r.text for r in answers if r.status_code not in (201, 403)]
    accepted = [r.json() for r in answers if r.status_code == 201]
    for refused in (r for r in answers if r.status_code == 403):
        assert refused.json()["details"]["rule"] == "spendingLimits.dailyLimit", refused.text
    committed = sum(a["transferDetails"]["amount"] for a in accepted)
    assert committed <= DAILY and len(accepted) == 10, Counter(a["status"] for a in accepted)
    pending = [a for a in accepted if a["status"] == "PENDING_APPROVAL"]
    assert pending and len(pending) < len(accepted)

    with api_client(base_url, sandbox) as client:
        agent = client.get(f"/agents/{agent_id}").json()
        assert agent["usage"]["dailySpend"] == committed
        # funds reserved for the pending ones, held for the executed ones: nothing has left yet
        assert api_balance(client, holder) == (1_000_000 - committed, 1_000_000)
        approved = [client.post(f"/agents/{agent_id}/actions/{a['id']}/approve") for a in pending]
        assert {r.json()["status"] for r in approved} == {"APPROVED"}, [r.text for r in approved]
        agent = client.get(f"/agents/{agent_id}").json()
        assert agent["usage"]["dailySpend"] == committed <= DAILY
        assert api_balance(client, holder) == (1_000_000 - committed, 1_000_000)
    verify_ledger(processes, env)
