"""Helpers for money tests: customers with the information USD needs, accounts, funding, balances."""

from __future__ import annotations

from typing import Any

FULL_PERSON = {
    "customerType": "INDIVIDUAL",
    "fullName": "Jane Doe",
    "birthDate": "1990-04-12",
    "email": "jane@example.com",
    "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
}


async def customer(client, auth, **extra: Any) -> dict[str, Any]:
    response = await client.post("/customers", auth=auth, json={**FULL_PERSON, **extra})
    assert response.status_code == 201, response.text
    return response.json()


async def internal_account(client, auth, customer_id: str, currency: str = "USD") -> dict[str, Any]:
    accounts = (
        await client.get(
            "/customers/internal-accounts",
            auth=auth,
            params={"customerId": customer_id, "currency": currency},
        )
    ).json()
    return accounts["data"][0]


async def external_account(
    client, auth, customer_id: str | None, account_number: str = "123456789", **extra: Any
) -> dict[str, Any]:
    info = {
        "accountType": "USD_ACCOUNT",
        "accountNumber": account_number,
        "routingNumber": "011000015",
        "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
        **extra,
    }
    body: dict[str, Any] = {"currency": "USD", "accountInfo": info}
    path = "/customers/external-accounts" if customer_id else "/platform/external-accounts"
    if customer_id:
        body["customerId"] = customer_id
    response = await client.post(path, auth=auth, json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def fund(client, auth, account_id: str, amount: int) -> dict[str, Any]:
    response = await client.post(
        f"/sandbox/internal-accounts/{account_id}/fund", auth=auth, json={"amount": amount}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def balances(client, auth, customer_id: str, currency: str = "USD") -> tuple[int, int]:
    account = await internal_account(client, auth, customer_id, currency)
    return account["balance"]["amount"], account["totalBalance"]["amount"]
