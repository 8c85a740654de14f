"""A transfer-out's writes as one statement (PostgreSQL's lean transactions, db/lean.py): the balance it
holds, its entry, its events with their deliveries and its Idempotency-Key commit together or not at all,
and what it decides on — the balance that pays it, the webhook endpoint its events go to, the key — is
checked by that statement, so a concurrent change sends it to the careful attempt instead of past the check.
The same outcomes on SQLite, where each statement runs as it comes."""

from __future__ import annotations

import asyncio
import secrets

from tests.factories import balances, customer, external_account, fund, internal_account
from tests.support.jobs import run_jobs_until
from tests.support.ledger import assert_ledger_verifies
from tests.support.receiver import WebhookReceiver


async def _funded(client, auth, amount: int) -> tuple[dict, dict, dict]:
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], amount)
    bank = await external_account(client, auth, person["id"])
    return person, account, bank


def _body(account: dict, bank: dict, amount: int) -> dict:
    return {
        "source": {"accountId": account["id"]},
        "destination": {"accountId": bank["id"]},
        "amount": amount,
    }


async def test_the_balance_event_carries_the_balance_after_each_hold(client, auth, runner, receiver, db):
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    person, account, bank = await _funded(client, auth, 10_000)
    for amount in (4_000, 1_500):
        response = await client.post("/transfer-out", auth=auth, json=_body(account, bank, amount))
        assert response.status_code == 201, response.text
    assert await balances(client, auth, person["id"]) == (4_500, 10_000)
    updated = "INTERNAL_ACCOUNT.BALANCE_UPDATED"
    await run_jobs_until(
        runner, lambda: len(receiver.of_type(updated)) >= 3
    )  # the funding's, then the holds'
    announced = sorted(
        (
            envelope.json["id"],
            envelope.json["data"]["balance"]["amount"],
            envelope.json["data"]["totalBalance"]["amount"],
        )
        for envelope in receiver.of_type(updated)
    )
    # The first three by id (time-ordered): the funding's and the two holds'. A slow run may also have
    # settled the transfers meanwhile (the sandbox settles a second after they start processing): their
    # balance events come after these.
    assert [(available, total) for _, available, total in announced[:3]] == [
        (10_000, 10_000),
        (6_000, 10_000),
        (4_500, 10_000),
    ]
    assert {envelope.json["data"]["id"] for envelope in receiver.of_type(updated)} == {account["id"]}
    await assert_ledger_verifies(db)


async def test_racing_holds_pay_exactly_what_the_balance_holds(client, auth, db):
    person, account, bank = await _funded(client, auth, 10_000)
    responses = await asyncio.gather(
        *(client.post("/transfer-out", auth=auth, json=_body(account, bank, 1_000)) for _ in range(16))
    )
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201] * 10 + [400] * 6, [response.text for response in responses]
    for response in responses:
        if response.status_code == 400:
            assert response.json()["code"] == "INSUFFICIENT_BALANCE"
    assert await balances(client, auth, person["id"]) == (0, 10_000)
    listed = await client.get(
        "/transactions", auth=auth, params={"customerId": person["id"], "type": "OUTGOING", "limit": 100}
    )
    assert listed.status_code == 200, listed.text
    assert len(listed.json()["data"]) == 10 and not listed.json()["hasMore"]
    await assert_ledger_verifies(db)


async def test_duplicates_racing_on_one_key_move_the_money_once(client, auth, db):
    person, account, bank = await _funded(client, auth, 10_000)
    key = f"race-{secrets.token_hex(4)}"
    responses = await asyncio.gather(
        *(
            client.post(
                "/transfer-out", auth=auth, json=_body(account, bank, 2_500), headers={"Idempotency-Key": key}
            )
            for _ in range(8)
        )
    )
    created = [response for response in responses if response.status_code == 201]
    assert created and len({response.content for response in created}) == 1, [r.text for r in responses]
    for response in responses:
        if response.status_code != 201:  # a duplicate still in flight: retry later
            assert response.status_code == 409 and response.json()["code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert await balances(client, auth, person["id"]) == (7_500, 10_000)
    replay = await client.post(
        "/transfer-out", auth=auth, json=_body(account, bank, 2_500), headers={"Idempotency-Key": key}
    )
    assert replay.status_code == 201 and replay.content == created[0].content
    assert replay.headers["Idempotent-Replayed"] == "true"
    await assert_ledger_verifies(db)


async def test_events_go_to_the_endpoint_configured_before_the_request(client, auth, runner, db):
    first, second = WebhookReceiver().start(), WebhookReceiver().start()
    try:
        _, account, bank = await _funded(client, auth, 10_000)
        for receiver in (first, second):
            await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
            response = await client.post("/transfer-out", auth=auth, json=_body(account, bank, 100))
            assert response.status_code == 201, response.text
            await run_jobs_until(runner, lambda r=receiver: len(r.of_type("OUTGOING_PAYMENT.PENDING")) == 1)
        assert (
            first.of_type("OUTGOING_PAYMENT.PENDING")[0].json["data"]["id"]
            != (second.of_type("OUTGOING_PAYMENT.PENDING")[0].json["data"]["id"])
        )
    finally:
        first.stop()
        second.stop()
    await assert_ledger_verifies(db)
