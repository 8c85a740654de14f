"""Helpers for agents tests: a funded customer with a bank account, and an agent connected to it."""

from __future__ import annotations

from typing import Any

from tests.factories import (
    account_destination,
    account_source,
    customer,
    external_account,
    fund,
    internal_account,
)

PERMISSIONS = ["CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES", "MANAGE_EXTERNAL_ACCOUNTS"]


def policy(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "permissions": list(PERMISSIONS),
        "defaultExecutionMode": "AUTO",
        "spendingLimits": {
            "currency": "USD",
            "perTransactionLimit": 10_000,
            "dailyLimit": 50_000,
            "dailyTransactionLimit": 20,
            "monthlyLimit": 500_000,
        },
        "approvalThresholds": {"currency": "USD", "amount": 5_000},
    }
    base.update(changes)
    return base


async def funded_customer(client, auth, amount: int = 100_000, **extra: Any) -> dict[str, Any]:
    person = await customer(client, auth, **extra)
    account = await internal_account(client, auth, person["id"])
    if amount:
        await fund(client, auth, account["id"], amount)
    bank = await external_account(client, auth, person["id"])
    return {"customer": person, "account": account, "bank": bank}


async def create_agent(client, auth, customer_id: str, **policy_changes: Any) -> dict[str, Any]:
    response = await client.post(
        "/agents",
        auth=auth,
        json={"name": "Pay bot", "customerId": customer_id, "policy": policy(**policy_changes)},
    )
    assert response.status_code == 201, response.text
    return response.json()


async def connect(client, auth, customer_id: str, **policy_changes: Any) -> dict[str, Any]:
    """An agent with its token: {agent, token, headers}."""
    created = await create_agent(client, auth, customer_id, **policy_changes)
    redeemed = await client.post(f"/agents/device-codes/{created['deviceCode']['code']}/redeem")
    assert redeemed.status_code == 200, redeemed.text
    token = redeemed.json()["accessToken"]
    return {"agent": created["agent"], "token": token, "headers": {"Authorization": f"Bearer {token}"}}


async def transfer_out(client, headers, source: str, destination: str, amount: int, key: str | None = None):
    extra = {"Idempotency-Key": key} if key else {}
    return await client.post(
        "/agents/me/transfer-out",
        headers={**headers, **extra},
        json={"source": {"accountId": source}, "destination": {"accountId": destination}, "amount": amount},
    )


async def balance(client, auth, account_id: str) -> tuple[int, int]:
    response = await client.get("/customers/internal-accounts", auth=auth, params={"limit": 100})
    for account in response.json()["data"]:
        if account["id"] == account_id:
            return account["balance"]["amount"], account["totalBalance"]["amount"]
    raise AssertionError(f"no account {account_id}")


def quote_body(source: str, destination: str, amount: int) -> dict[str, Any]:
    """An agent's quote: `amount` sent from the internal account `source` to the account `destination`."""
    return {
        "source": account_source(source),
        "destination": account_destination(destination),
        "lockedCurrencySide": "SENDING",
        "lockedCurrencyAmount": amount,
    }
