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


# The reference's enums (reference-openapi.yaml: OutgoingTransactionFailureReason,
# IncomingTransactionFailureReason), written out here so a drift in platpay cannot move them too.
OUTGOING_FAILURE_REASONS = frozenset({
    "QUOTE_EXPIRED", "QUOTE_EXECUTION_FAILED", "LIGHTNING_PAYMENT_FAILED", "FUNDING_AMOUNT_MISMATCH",
    "COUNTERPARTY_POST_TX_FAILED",
})  # fmt: skip
INCOMING_FAILURE_REASONS = frozenset({
    "LNURLP_FAILED", "PAY_REQUEST_FAILED", "PAYMENT_APPROVAL_WEBHOOK_ERROR", "PAYMENT_APPROVAL_TIMED_OUT",
    "OFFRAMP_FAILED", "MISSING_MANDATORY_PAYEE_DATA", "QUOTE_EXPIRED", "QUOTE_EXECUTION_FAILED",
})  # fmt: skip


def assert_reference_transaction(tx: dict[str, Any]) -> dict[str, Any]:
    """`tx` has the reference's shape where the audit found it wrong: `fees` an int64 of minor units >= 0
    (not a CurrencyAmount) and `failureReason` from the enum of its direction."""
    if "fees" in tx:
        assert type(tx["fees"]) is int and 0 <= tx["fees"] < 2**63, tx["fees"]
    if "failureReason" in tx:
        allowed = OUTGOING_FAILURE_REASONS if tx["type"] == "OUTGOING" else INCOMING_FAILURE_REASONS
        assert tx["failureReason"] in allowed, (tx["type"], tx["failureReason"])
    return tx


def transaction_webhooks(receiver, transaction_id: str) -> list[dict[str, Any]]:
    """Every OUTGOING_PAYMENT.* / INCOMING_PAYMENT.* webhook received about one transaction."""
    return [
        r.json
        for r in receiver.received
        if r.json["type"].split(".")[0] in ("OUTGOING_PAYMENT", "INCOMING_PAYMENT")
        and r.json["data"]["id"] == transaction_id
    ]
