"""The agents' audit trail: every event recorded in order with an unbroken hash chain, no secret in any
record, and tampering (an edited, a removed, a swapped record, a removed tail) caught by verify, on SQLite
and PostgreSQL; 50 concurrent money requests of one agent leave one chain (PostgreSQL); a token's first use is
recorded exactly once, however many first requests race."""

from __future__ import annotations

import asyncio
import json

import pytest
from sqlalchemy import text

from platpay.agents.audit import service as audit
from tests.support.agents import create_agent, funded_customer, transfer_out


async def _lifecycle(client, auth):
    world = await funded_customer(client, auth, 100_000)
    created = await create_agent(client, auth, world["customer"]["id"])
    agent_id, code = created["agent"]["id"], created["deviceCode"]["code"]
    token = (await client.post(f"/agents/device-codes/{code}/redeem")).json()["accessToken"]
    headers = {"Authorization": f"Bearer {token}"}
    source, bank = world["account"]["id"], world["bank"]["id"]
    assert (await transfer_out(client, headers, source, bank, 1_000)).json()["status"] == "APPROVED"
    assert (await transfer_out(client, headers, source, bank, 20_000)).status_code == 403  # per transaction
    held = (await transfer_out(client, headers, source, bank, 6_000)).json()
    assert (
        await client.post(f"/agents/{agent_id}/actions/{held['id']}/approve", auth=auth)
    ).status_code == 200
    held = (await transfer_out(client, headers, source, bank, 7_000)).json()
    rejected = await client.post(
        f"/agents/{agent_id}/actions/{held['id']}/reject", auth=auth, json={"reason": "no"}
    )
    assert rejected.status_code == 200, rejected.text
    patched = await client.patch(
        f"/agents/{agent_id}/policy", auth=auth, json={"permissions": ["CREATE_TRANSFERS"]}
    )
    assert patched.status_code == 200, patched.text
    assert (await client.patch(f"/agents/{agent_id}", auth=auth, json={"isPaused": True})).status_code == 200
    assert (await client.patch(f"/agents/{agent_id}", auth=auth, json={"isPaused": False})).status_code == 200
    assert (await client.delete(f"/agents/{agent_id}", auth=auth)).status_code in (200, 204)
    return agent_id, code, token


async def _records(client, auth, agent_id, **params):
    response = await client.get(
        f"/agents/{agent_id}/audit", auth=auth, params={"limit": 100, "sortOrder": "asc", **params}
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def test_every_event_is_recorded_in_one_chain_without_secrets(client, auth, db):
    agent_id, code, token = await _lifecycle(client, auth)
    records = await _records(client, auth, agent_id)
    assert [r["kind"] for r in records] == [
        "AGENT_CREATED",
        "DEVICE_CODE_ISSUED",
        "DEVICE_CODE_REDEEMED",
        "TOKEN_FIRST_USED",
        "MONEY_REQUESTED",
        "MONEY_REFUSED",
        "MONEY_REQUESTED",
        "ACTION_APPROVED",
        "MONEY_REQUESTED",
        "ACTION_REJECTED",
        "POLICY_CHANGED",
        "AGENT_PAUSED",
        "AGENT_UNPAUSED",
        "AGENT_DELETED",
    ]
    assert [r["sequence"] for r in records] == list(range(1, len(records) + 1))
    previous = audit.GENESIS
    for record in records:
        assert record["previousHash"] == previous
        previous = record["hash"]
    first_use = records[3]
    assert first_use["actor"] == f"AGENT_TOKEN:{agent_id}"
    assert first_use["data"] == {"tokenPrefix": token[:8]}
    refused = records[5]["data"]
    assert (
        refused["decision"]["rule"] == "spendingLimits.perTransactionLimit"
        and refused["request"]["amount"] == 20_000
    )
    requested = records[6]
    assert requested["data"]["status"] == "PENDING_APPROVAL"
    assert requested["data"]["decision"]["rule"] == "approvalThresholds.amount"
    assert records[7]["data"]["decidedBy"] and records[7]["actor"].startswith("PLATFORM_TOKEN:")
    assert records[4]["actor"] == f"AGENT_TOKEN:{agent_id}"
    changed = records[10]["data"]
    assert "MANAGE_EXTERNAL_ACCOUNTS" in changed["before"]["permissions"]
    assert changed["after"]["permissions"] == ["CREATE_TRANSFERS"]
    # The trail outlives the agent; filters work.
    assert [r["kind"] for r in await _records(client, auth, agent_id, kind="MONEY_REQUESTED")] == [
        "MONEY_REQUESTED"
    ] * 3
    async with db.read() as session:
        exported = await audit.export(session, agent_id=agent_id)
        assert await audit.verify(session) == []
    # No secret anywhere: not the token, not the device code (a prefix of each at most).
    dump = json.dumps(exported)
    assert token not in dump and code not in dump and token[8:] not in dump and code[-9:] not in dump


async def _tamper(db, statement: str, **params) -> list[audit.Problem]:
    async with db.transaction() as session:
        await session.execute(text(statement), params)
    async with db.read() as session:
        return await audit.verify(session)


@pytest.mark.parametrize("how", ["edited", "removed", "swapped", "tail removed"])
async def test_tampering_is_caught(client, auth, db, how):
    agent_id, _, _ = await _lifecycle(client, auth)
    async with db.read() as session:
        assert await audit.verify(session) == []
    where = "agent_id = :agent AND sequence = :seq"
    if how == "edited":
        problems = await _tamper(
            db, f"UPDATE agent_audit_records SET kind = 'AGENT_RENAMED' WHERE {where}", agent=agent_id, seq=5
        )
        expected = 5
    elif how == "removed":
        problems = await _tamper(db, f"DELETE FROM agent_audit_records WHERE {where}", agent=agent_id, seq=4)
        expected = 4
    elif how == "swapped":
        await _tamper(
            db, f"UPDATE agent_audit_records SET sequence = 1000 WHERE {where}", agent=agent_id, seq=6
        )
        await _tamper(db, f"UPDATE agent_audit_records SET sequence = 6 WHERE {where}", agent=agent_id, seq=7)
        problems = await _tamper(
            db, f"UPDATE agent_audit_records SET sequence = 7 WHERE {where}", agent=agent_id, seq=1000
        )
        expected = 6
    else:
        problems = await _tamper(db, f"DELETE FROM agent_audit_records WHERE {where}", agent=agent_id, seq=14)
        expected = 14
    assert [(p.agent_id, p.sequence) for p in problems] == [(agent_id, expected)], problems


async def test_fifty_concurrent_money_requests_leave_one_chain(client, auth, db, backend):
    if backend != "postgresql":
        pytest.skip("real concurrency needs PostgreSQL (SQLite serializes every write)")
    world = await funded_customer(client, auth, 1_000_000)
    created = await create_agent(
        client,
        auth,
        world["customer"]["id"],
        spendingLimits={"currency": "USD", "perTransactionLimit": 10_000, "dailyLimit": 20_000,
                        "dailyTransactionLimit": 1_000},
    )  # fmt: skip
    code = created["deviceCode"]["code"]
    token = (await client.post(f"/agents/device-codes/{code}/redeem")).json()["accessToken"]
    headers = {"Authorization": f"Bearer {token}"}
    answers = await asyncio.gather(
        *(
            transfer_out(
                client, headers, world["account"]["id"], world["bank"]["id"], 1_000 + n, key=f"burst-{n}"
            )
            for n in range(50)
        )
    )
    assert {r.status_code for r in answers} <= {201, 403}
    records = await _records(client, auth, created["agent"]["id"])
    accepted = sum(r.status_code == 201 for r in answers)
    assert 0 < accepted < 50
    # no usage update lost between racing requests (read without a lock where the lean path allows, their
    # writes conditional on it): the usage is what was accepted, within the daily limit
    spent = sum(1_000 + n for n, r in enumerate(answers) if r.status_code == 201)
    usage = (await client.get(f"/agents/{created['agent']['id']}", auth=auth)).json()["usage"]
    assert usage["dailySpend"] == spent <= 20_000 and usage["dailyTransactionCount"] == accepted, usage
    # created, code issued and redeemed, the token's first use; then one record per request: each accepted
    # one requested, each refused (the chain is keyed) refused.
    assert len(records) == 4 + 50
    kinds = [r["kind"] for r in records]
    assert kinds.count("MONEY_REQUESTED") == accepted and kinds.count("MONEY_REFUSED") == 50 - accepted
    assert kinds.count("TOKEN_FIRST_USED") == 1
    async with db.read() as session:
        assert await audit.verify(session) == []


async def _connected(client, auth):
    world = await funded_customer(client, auth, 0)
    created = await create_agent(client, auth, world["customer"]["id"])
    code = created["deviceCode"]["code"]
    token = (await client.post(f"/agents/device-codes/{code}/redeem")).json()["accessToken"]
    return created["agent"]["id"], token


async def test_a_tokens_first_use_is_recorded_once(client, auth, db):
    agent_id, token = await _connected(client, auth)
    headers = {"Authorization": f"Bearer {token}"}
    assert [r["kind"] for r in await _records(client, auth, agent_id)][-1] == "DEVICE_CODE_REDEEMED"
    # The first request is refused (an unknown transaction): the token was used all the same.
    assert (await client.get("/agents/me/transactions/Transaction:none", headers=headers)).status_code == 404
    records = await _records(client, auth, agent_id)
    assert [r["kind"] for r in records][-1] == "TOKEN_FIRST_USED"
    assert records[-1]["actor"] == f"AGENT_TOKEN:{agent_id}"
    assert records[-1]["data"] == {"tokenPrefix": token[:8]}
    for _ in range(3):
        assert (await client.get("/agents/me", headers=headers)).status_code == 200
    assert await _records(client, auth, agent_id) == records  # later requests write nothing
    async with db.read() as session:
        assert await audit.verify(session) == []


async def test_an_unknown_token_records_nothing(client, auth, db):
    agent_id, token = await _connected(client, auth)
    wrong = token[:-4] + ("0000" if not token.endswith("0000") else "1111")
    response = await client.get("/agents/me", headers={"Authorization": f"Bearer {wrong}"})
    assert response.status_code == 401, response.text
    assert "TOKEN_FIRST_USED" not in [r["kind"] for r in await _records(client, auth, agent_id)]


async def test_concurrent_first_requests_record_the_first_use_once(client, auth, db, backend):
    """20 first requests at once (PostgreSQL: on 20 connections): one TOKEN_FIRST_USED, one unbroken chain."""
    agent_id, token = await _connected(client, auth)
    headers = {"Authorization": f"Bearer {token}"}
    answers = await asyncio.gather(*(client.get("/agents/me", headers=headers) for _ in range(20)))
    assert [r.status_code for r in answers] == [200] * 20, [r.text for r in answers if r.status_code != 200]
    kinds = [r["kind"] for r in await _records(client, auth, agent_id)]
    assert kinds == ["AGENT_CREATED", "DEVICE_CODE_ISSUED", "DEVICE_CODE_REDEEMED", "TOKEN_FIRST_USED"]
    async with db.read() as session:
        assert await audit.verify(session) == []
