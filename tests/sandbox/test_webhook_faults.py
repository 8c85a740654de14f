"""The sandbox's webhook delivery faults (PUT /sandbox/webhooks/faults): every delivery twice, held back,
or reordered, so a platform can test its receiver's deduplication."""

from __future__ import annotations

from datetime import timedelta

from platpay.kit import clock
from tests.factories import customer, fund, internal_account

OFF = {"duplicate": False, "delayMs": 0, "reorderMs": 0}


def _balance_events(receiver) -> list[dict]:
    return [r.json for r in receiver.received if r.json["type"] == "INTERNAL_ACCOUNT.BALANCE_UPDATED"]


async def test_duplicated_and_delayed(client, auth, runner, receiver):
    clock.freeze()
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    await runner.run_until_idle()
    assert (await client.get("/sandbox/webhooks/faults", auth=auth)).json() == OFF
    put = await client.put("/sandbox/webhooks/faults", auth=auth, json={"duplicate": True, "delayMs": 1000})
    assert put.status_code == 200 and put.json() == {**OFF, "duplicate": True, "delayMs": 1000}
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 100)
    await runner.run_until_idle()
    assert _balance_events(receiver) == []  # held back a second
    clock.advance(timedelta(seconds=2))
    await runner.run_until_idle()
    events = _balance_events(receiver)
    assert events and len(events) == 2 * len({event["id"] for event in events})  # each one twice
    deliveries = (await client.get("/webhooks/deliveries", auth=auth)).json()["data"]
    assert all(delivery["status"] == "DELIVERED" for delivery in deliveries)
    assert (await client.put("/sandbox/webhooks/faults", auth=auth, json={})).json() == OFF


async def test_reordered_deliveries_all_arrive(client, auth, runner, receiver):
    clock.freeze()
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    await client.put("/sandbox/webhooks/faults", auth=auth, json={"reorderMs": 5000})
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    for _ in range(5):
        await fund(client, auth, usd["id"], 100)
    clock.advance(timedelta(seconds=6))
    await runner.run_until_idle()
    assert len(_balance_events(receiver)) >= 5


async def test_sandbox_only_and_reset_clears_it(client, auth, platform):
    production = platform["production"]
    assert (await client.put("/sandbox/webhooks/faults", auth=production, json={})).status_code == 403
    await client.put("/sandbox/webhooks/faults", auth=auth, json={"duplicate": True})
    assert (await client.post("/sandbox/reset", auth=auth)).status_code == 200
    assert (await client.get("/sandbox/webhooks/faults", auth=auth)).json() == OFF
    bad = await client.put("/sandbox/webhooks/faults", auth=auth, json={"delayMs": -1})
    assert bad.status_code == 400
