"""Money over real HTTP, for end-to-end tests: customers ready to move USD, their accounts, funding,
balances read two ways (the API and the ledger rows), and `platpay ledger verify` run as a process."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.factories import FULL_PERSON
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ProcessManager, process_env

TERMINAL = frozenset({"COMPLETED", "FAILED", "REJECTED", "REFUNDED", "EXPIRED"})
# Sandbox rail outcomes by the last three digits of the external account number (INTERFACE-FACTS §7).
SETTLES, BANK_REJECTS, SLOW_FAILURE, FAILS_AT_ONCE = "000", "004", "005", "002"


def money_env(pg_database: str, master_key: str, tmp_path: Path, **settings: str) -> dict[str, str]:
    """Settings for every process of a money test: one database, one master key, fast jobs."""
    return process_env(
        PLATPAY_DATABASE_URL=pg_database,
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_JOB_POLL_SECONDS="0.05",
        PLATPAY_SANDBOX_SETTLEMENT_SECONDS="0.2",
        PLATPAY_SANDBOX_SLOW_FAILURE_SECONDS="1",
        **settings,
    )


@dataclass(frozen=True)
class Holder:
    """A customer with a USD internal account and external bank accounts keyed by magic suffix."""

    customer_id: str
    account_id: str  # the internal USD account (its ledger account has the same id)
    banks: dict[str, str]  # suffix -> external account id


def open_holder(client: httpx.Client, *, suffixes: tuple[str, ...] = (SETTLES,), serial: int = 0) -> Holder:
    response = client.post("/customers", json={**FULL_PERSON, "platformCustomerId": f"holder-{serial}"})
    assert response.status_code == 201, response.text
    customer_id = response.json()["id"]
    accounts = client.get(
        "/customers/internal-accounts", params={"customerId": customer_id, "currency": "USD"}
    ).json()
    banks = {}
    for suffix in suffixes:
        body = {
            "customerId": customer_id,
            "currency": "USD",
            "accountInfo": {
                "accountType": "USD_ACCOUNT",
                "accountNumber": f"{70_000 + serial:05d}{suffix}",
                "routingNumber": "011000015",
                "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
            },
        }
        created = client.post("/customers/external-accounts", json=body)
        assert created.status_code == 201, created.text
        banks[suffix] = created.json()["id"]
    return Holder(customer_id, accounts["data"][0]["id"], banks)


def fund(client: httpx.Client, account_id: str, amount: int, *, key: str | None = None) -> httpx.Response:
    headers = {"Idempotency-Key": key} if key else {}
    return client.post(
        f"/sandbox/internal-accounts/{account_id}/fund", json={"amount": amount}, headers=headers
    )


def transfer_out_body(holder: Holder, amount: int, suffix: str = SETTLES) -> dict[str, Any]:
    return {
        "source": {"accountId": holder.account_id},
        "destination": {"accountId": holder.banks[suffix]},
        "amount": amount,
    }


def transfer_in_body(holder: Holder, amount: int, suffix: str = SETTLES) -> dict[str, Any]:
    return {
        "source": {"accountId": holder.banks[suffix]},
        "destination": {"accountId": holder.account_id},
        "amount": amount,
    }


def api_balance(client: httpx.Client, holder: Holder) -> tuple[int, int]:
    """(balance, totalBalance) as the API reports them."""
    page = client.get(
        "/customers/internal-accounts", params={"customerId": holder.customer_id, "currency": "USD"}
    ).json()
    account = page["data"][0]
    return account["balance"]["amount"], account["totalBalance"]["amount"]


def ledger_buckets(probe: PgProbe, account_id: str) -> tuple[int, int]:
    """(available, held) straight from the ledger row."""
    [row] = probe.fetch("SELECT available, held FROM ledger_accounts WHERE id = $1", account_id)
    return row["available"], row["held"]


def sandbox_tenant(probe: PgProbe) -> str:
    return probe.fetchval("SELECT id FROM tenants WHERE environment = 'sandbox' ORDER BY id LIMIT 1")


def verify_ledger(processes: ProcessManager, env: dict[str, str]) -> str:
    """`platpay ledger verify` against the test's database: fails the test unless it exits 0."""
    result = processes.run([PLATPAY, "ledger", "verify"], env=env, timeout=120)
    assert "OK: every balance equals its postings" in result.stdout, result.stdout
    return result.stdout


def due_jobs(probe: PgProbe) -> int:
    """Jobs running or due now (a quote's expiry job waits for its expiresAt, minutes away)."""
    return probe.fetchval(
        "SELECT count(*) FROM jobs WHERE state = 'RUNNING' OR (state = 'QUEUED' AND run_at <= now())"
    )


def transaction_statuses(probe: PgProbe) -> dict[str, str]:
    return {row["id"]: row["status"] for row in probe.fetch("SELECT id, status FROM transactions")}
