"""Factories for tests, in one place: platforms (through the service), and through the API customers,
accounts, funding, external accounts (USD, MXN with a chosen sandbox suffix) and quotes."""

from __future__ import annotations

from typing import Any

from platpay.accounts.validators import checksums
from platpay.config import Settings
from platpay.db.database import Database
from platpay.platforms import service as platforms_service


async def create_platform(db: Database, settings: Settings, **kwargs: Any) -> dict[str, Any]:
    async with db.transaction() as session:
        created = await platforms_service.create_platform(
            session,
            name=kwargs.get("name", "Test Platform"),
            is_regulated=kwargs.get("is_regulated", False),
            currency_codes=kwargs.get("currencies"),
            uma_domain=kwargs.get("uma_domain"),
            settings=settings,
        )
    return {
        "platform_id": created.platform_id,
        "sandbox": created.credentials["sandbox"],
        "production": created.credentials["production"],
    }


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


# INTERFACE-FACTS §7: the sandbox card issuer refuses a funding source whose account id ends `002` or `003`.
# Account ids are random, so about one customer in 2,000 has such an account by chance.
CARD_INELIGIBLE_SUFFIXES = ("002", "003")


async def card_ready_customer(client, auth, **extra: Any) -> dict[str, Any]:
    """A customer none of whose internal accounts the sandbox issuer would refuse as a card's funding source
    (a card test must not fail on the one-in-2,000 random id that is a magic value)."""
    for _ in range(20):
        person = await customer(client, auth, **extra)
        accounts = (
            await client.get("/customers/internal-accounts", auth=auth, params={"customerId": person["id"]})
        ).json()["data"]
        if not any(account["id"].endswith(CARD_INELIGIBLE_SUFFIXES) for account in accounts):
            return person
    raise AssertionError("20 customers in a row had an account id the card issuer refuses")


async def internal_account(
    client, auth, customer_id: str, currency: str = "USD", account_type: str | None = None
) -> dict[str, Any]:
    """The customer's account in `currency` of `account_type`; by default the platform-managed holding
    account (INTERNAL_FIAT / INTERNAL_CRYPTO): a USDB customer also has an EMBEDDED_WALLET (`wallet_account`)."""
    accounts = (
        await client.get(
            "/customers/internal-accounts",
            auth=auth,
            params={"customerId": customer_id, "currency": currency},
        )
    ).json()["data"]
    [account] = [
        a
        for a in accounts
        if a["type"] == account_type or (account_type is None and a["type"] != "EMBEDDED_WALLET")
    ]
    return account


async def wallet_account(client, auth, customer_id: str) -> dict[str, Any]:
    """The customer's embedded wallet (its USDB EMBEDDED_WALLET account)."""
    return await internal_account(client, auth, customer_id, "USDB", "EMBEDDED_WALLET")


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


async def balances(
    client, auth, customer_id: str, currency: str = "USD", account_type: str | None = None
) -> tuple[int, int]:
    account = await internal_account(client, auth, customer_id, currency, account_type)
    return account["balance"]["amount"], account["totalBalance"]["amount"]


PERSON = {"beneficiaryType": "INDIVIDUAL", "fullName": "Juan Pérez"}


def clabe_ending(suffix: str) -> str:
    """A valid CLABE (control digit included) whose last three digits are `suffix`."""
    for n in range(100_000):
        clabe = checksums.make_clabe(f"002010{n:09d}{suffix[:2]}")
        if clabe.endswith(suffix):
            return clabe
    raise AssertionError(f"no CLABE ends in {suffix}")


async def mxn_account(
    client, auth, customer_id: str | None, suffix: str = "011", **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "currency": "MXN",
        "accountInfo": {
            "accountType": "MXN_ACCOUNT",
            "clabeNumber": clabe_ending(suffix),
            "beneficiary": PERSON,
        },
        **extra,
    }
    path = "/customers/external-accounts" if customer_id else "/platform/external-accounts"
    if customer_id:
        body["customerId"] = customer_id
    response = await client.post(path, auth=auth, json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def quote(client, auth, *, source: dict, destination: dict, locked: str = "SENDING", amount: int = 10_000,
                key: str | None = None, **extra: Any):  # fmt: skip
    body = {
        "source": source,
        "destination": destination,
        "lockedCurrencySide": locked,
        "lockedCurrencyAmount": amount,
        **extra,
    }
    headers = {"Idempotency-Key": key} if key else {}
    return await client.post("/quotes", auth=auth, json=body, headers=headers)


def account_source(account_id: str) -> dict[str, str]:
    return {"sourceType": "ACCOUNT", "accountId": account_id}


def account_destination(account_id: str, **extra: Any) -> dict[str, Any]:
    return {"destinationType": "ACCOUNT", "accountId": account_id, **extra}
