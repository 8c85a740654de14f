"""Helpers for card tests: an approved cardholder with funded accounts, cards issued and provisioned by the
real job runner, simulations, balances as the API shows them, events and holds as the database has them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from platpay.events.models import EventRow
from platpay.ledger.models import LedgerHoldRow
from tests.factories import card_ready_customer, fund, internal_account


async def approved_cardholder(client, auth, **extra: Any) -> dict[str, Any]:
    person = await card_ready_customer(client, auth, **extra)
    response = await client.post(
        f"/sandbox/customers/{person['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
    )
    assert response.status_code == 200, response.text
    return response.json()


async def funded_account(
    client, auth, customer_id: str, amount: int, currency: str = "USD"
) -> dict[str, Any]:
    account = await internal_account(client, auth, customer_id, currency)
    if amount:
        await fund(client, auth, account["id"], amount)
    return account


async def issue(
    client, auth, holder_id: str, sources: list[str], platform_card_id: str = "card-test-100", **extra
):
    body = {"cardholderId": holder_id, "form": "VIRTUAL", "fundingSources": sources, **extra}
    if platform_card_id is not None:
        body["platformCardId"] = platform_card_id
    return await client.post("/cards", auth=auth, json=body)


async def get_card(client, auth, card_id: str) -> dict[str, Any]:
    response = await client.get(f"/cards/{card_id}", auth=auth)
    assert response.status_code == 200, response.text
    return response.json()


async def active_card(client, auth, runner, holder_id: str, sources: list[str], **extra) -> dict[str, Any]:
    created = await issue(client, auth, holder_id, sources, **extra)
    assert created.status_code == 201, created.text
    assert created.json()["state"] == "PENDING_ISSUE"
    await runner.run_until_idle()  # the issuer provisions it
    card = await get_card(client, auth, created.json()["id"])
    assert card["state"] == "ACTIVE", card
    return card


async def authorize(
    client, auth, card_id: str, amount: int, descriptor: str = "BLUE BOTTLE SF", currency="USD"
):
    return await client.post(
        f"/sandbox/cards/{card_id}/simulate/authorization",
        auth=auth,
        json={"amount": amount, "currency": {"code": currency}, "merchant": {"descriptor": descriptor}},
    )


async def approved(client, auth, card_id: str, amount: int, **extra) -> dict[str, Any]:
    response = await authorize(client, auth, card_id, amount, **extra)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "AUTHORIZED", response.text
    return response.json()


async def clear(client, auth, card_id: str, transaction_id: str, amount: int):
    return await client.post(
        f"/sandbox/cards/{card_id}/simulate/clearing",
        auth=auth,
        json={"cardTransactionId": transaction_id, "amount": amount},
    )


async def give_back(client, auth, card_id: str, transaction_id: str, amount: int):
    return await client.post(
        f"/sandbox/cards/{card_id}/simulate/return",
        auth=auth,
        json={"cardTransactionId": transaction_id, "amount": amount},
    )


async def patch(client, auth, card_id: str, **body: Any):
    return await client.patch(f"/cards/{card_id}", auth=auth, json=body)


async def balance(client, auth, customer_id: str, currency: str = "USD") -> tuple[int, int]:
    """(available, total) of the customer's account in `currency`, as the API shows them."""
    account = await internal_account(client, auth, customer_id, currency)
    return account["balance"]["amount"], account["totalBalance"]["amount"]


async def events(db, prefix: str) -> list[tuple[str, dict[str, Any]]]:
    """(type, data) of every event whose type starts with `prefix`, oldest first."""
    async with db.read() as session:
        rows = await session.execute(
            select(EventRow.type, EventRow.data).where(EventRow.type.like(f"{prefix}%")).order_by(EventRow.id)
        )
        return [(row.type, row.data) for row in rows]


async def open_holds(db, account_id: str) -> int:
    """What the ledger's open holds reserve on an account (minor units)."""
    async with db.read() as session:
        rows = await session.scalars(
            select(LedgerHoldRow.remaining).where(
                LedgerHoldRow.account_id == account_id, LedgerHoldRow.status == "OPEN"
            )
        )
        return sum(rows)
