"""Helpers for card tests: an approved cardholder with funded accounts, cards issued and provisioned by the
real job runner, simulations, balances as the API shows them, events and holds as the database has them.

A simulation answers 202 {issuerTransactionToken} and the card transaction follows on the job runner: the
helpers here send it, check the 202, run the jobs it queued (`deliver`) and answer with the card
transaction as GET /card-transactions/{id} then shows it (a 4xx answer comes back as it is)."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy import select

from platpay import metrics
from platpay.events.models import EventRow
from platpay.jobs.runner import JobRunner
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


async def run_jobs(client, *, name: str = "cards-support") -> int:
    """Run every due job (the simulations' among them) on a job runner of the client's app, until idle,
    recording to the app's metrics (as its embedded worker does)."""
    app = client._transport.app
    token = metrics.bind(app.state.metrics)
    try:
        return await JobRunner(app.state.db, app.state.settings, name=name, listen=False).run_until_idle()
    finally:
        metrics.unbind(token)


async def simulate(client, auth, card_id: str, what: str, body: dict[str, Any]) -> httpx.Response:
    """POST /sandbox/cards/{id}/simulate/<what>, as it answers (202, or the 4xx that refused it)."""
    return await client.post(f"/sandbox/cards/{card_id}/simulate/{what}", auth=auth, json=body)


async def deliver(client, auth, card_id: str, accepted: httpx.Response, transaction_id: str | None = None):
    """After a simulation's 202: its job run, the card transaction it opened (found by its token) or acted on
    (`transaction_id`) as GET /card-transactions/{id} answers. A refusal comes back as it is."""
    if accepted.status_code != 202:
        return accepted
    token = accepted.json()["issuerTransactionToken"]
    assert set(accepted.json()) == {"issuerTransactionToken"}, accepted.text
    await run_jobs(client)
    if transaction_id is None:
        listed = await client.get(f"/cards/{card_id}/transactions", auth=auth, params={"limit": 100})
        [transaction_id] = [t["id"] for t in listed.json()["data"] if t["issuerTransactionToken"] == token]
    found = await client.get(f"/card-transactions/{transaction_id}", auth=auth)
    assert found.json()["issuerTransactionToken"] == token, found.text
    return found


def opening_body(amount: int, descriptor: str = "BLUE BOTTLE SF", currency: str = "USD") -> dict[str, Any]:
    return {"amount": amount, "currency": {"code": currency}, "merchant": {"descriptor": descriptor}}


async def authorize(
    client,
    auth,
    card_id: str,
    amount: int,
    descriptor: str = "BLUE BOTTLE SF",
    currency="USD",
    *,
    what="authorization",
):
    """An authorization (or another message that opens a card transaction: `what`), delivered."""
    body = opening_body(amount, descriptor, currency)
    return await deliver(client, auth, card_id, await simulate(client, auth, card_id, what, body))


async def approved(client, auth, card_id: str, amount: int, **extra) -> dict[str, Any]:
    response = await authorize(client, auth, card_id, amount, **extra)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "AUTHORIZED", response.text
    return response.json()


async def on_transaction(client, auth, card_id: str, what: str, transaction_id: str, **body: Any):
    """A message on an existing card transaction (clearing, return, authorization_advice,
    return_reversal), delivered."""
    accepted = await simulate(client, auth, card_id, what, {"cardTransactionId": transaction_id, **body})
    return await deliver(client, auth, card_id, accepted, transaction_id)


async def clear(client, auth, card_id: str, transaction_id: str, amount: int):
    return await on_transaction(client, auth, card_id, "clearing", transaction_id, amount=amount)


async def give_back(client, auth, card_id: str, transaction_id: str, amount: int):
    return await on_transaction(client, auth, card_id, "return", transaction_id, amount=amount)


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
