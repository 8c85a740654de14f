"""Every policy refusal of an agent's money request is in its audit trail exactly once, with or without an
Idempotency-Key (a regression: with a key, the idempotency layer stored the 403 as the key's answer and the
refusal never reached the trail; `platpay mcp` sends a key on every money call): an unkeyed refusal, a keyed
one, a keyed replay (adds nothing), a paused agent's refusals on each money endpoint, through `platpay mcp`'s
own tool calls; the record and the key's stored answer commit together or not at all; refusals that are not
the policy's (an unknown account, a reused key) record nothing. SQLite and PostgreSQL."""

from __future__ import annotations

import json

import httpx
import pytest
from sqlalchemy import text

from platpay import BASE_PATH
from platpay.agents.audit import service as audit
from platpay.mcp.server import PlatpayMCP
from tests.factories import mxn_account
from tests.support.agents import connect, funded_customer, quote_body, transfer_out

OVER_LIMIT = 20_000  # past the support policy's perTransactionLimit (10,000)


@pytest.fixture
async def world(client, auth):
    mine = await funded_customer(client, auth, 100_000)
    agent = await connect(client, auth, mine["customer"]["id"])
    return {**mine, "agent": agent, "agent_id": agent["agent"]["id"], "headers": agent["headers"]}


async def refused_records(client, auth, agent_id: str) -> list[dict]:
    response = await client.get(
        f"/agents/{agent_id}/audit",
        auth=auth,
        params={"limit": 100, "sortOrder": "asc", "kind": "MONEY_REFUSED"},
    )
    assert response.status_code == 200, response.text
    return response.json()["data"]


async def chains_verify(db) -> None:
    async with db.read() as session:
        assert await audit.verify(session) == []


async def keys_stored(db, key: str) -> int:
    async with db.read() as session:
        return (
            await session.execute(
                text("SELECT count(*) FROM idempotency_keys WHERE key = :key"), {"key": key}
            )
        ).scalar_one()


async def pause(client, auth, agent_id: str) -> None:
    response = await client.patch(f"/agents/{agent_id}", auth=auth, json={"isPaused": True})
    assert response.status_code == 200, response.text


class TestPolicyRefusals:
    async def test_an_unkeyed_refusal_is_recorded_once(self, client, auth, db, world):
        source, bank = world["account"]["id"], world["bank"]["id"]
        refused = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT)
        assert refused.status_code == 403, refused.text
        [record] = await refused_records(client, auth, world["agent_id"])
        assert record["data"]["type"] == "TRANSFER_OUT"
        assert record["data"]["request"]["amount"] == OVER_LIMIT
        assert record["data"]["decision"] == refused.json()["details"]
        assert record["actor"] == f"AGENT_TOKEN:{world['agent_id']}"
        # The same request again, without a key, is another request refused: another record.
        assert (await transfer_out(client, world["headers"], source, bank, OVER_LIMIT)).status_code == 403
        assert len(await refused_records(client, auth, world["agent_id"])) == 2
        await chains_verify(db)

    async def test_a_keyed_refusal_is_recorded_once_and_its_replay_adds_nothing(
        self, client, auth, db, world
    ):
        source, bank = world["account"]["id"], world["bank"]["id"]
        refused = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT, key="refused-1")
        assert refused.status_code == 403, refused.text
        assert refused.json()["details"]["rule"] == "spendingLimits.perTransactionLimit"
        [record] = await refused_records(client, auth, world["agent_id"])
        assert record["data"]["decision"] == refused.json()["details"]
        assert record["data"]["request"] == {
            "source": {"accountId": source},
            "destination": {"accountId": bank},
            "amount": OVER_LIMIT,
        }
        for _ in range(3):
            replayed = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT, key="refused-1")
            assert replayed.status_code == 403 and replayed.headers.get("Idempotent-Replayed") == "true"
            assert replayed.content == refused.content
        assert await refused_records(client, auth, world["agent_id"]) == [record]
        # A key reused for another request is a 400 of the key, not a refusal of the policy: nothing recorded.
        reused = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT + 1, key="refused-1")
        assert reused.status_code == 400, reused.text
        assert await refused_records(client, auth, world["agent_id"]) == [record]
        await chains_verify(db)

    async def test_each_key_is_one_refusal(self, client, auth, db, world):
        """11 refusals under 11 keys (the issue's run left 1 record): 11 records, in order, one chain."""
        source, bank = world["account"]["id"], world["bank"]["id"]
        for n in range(11):
            answer = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT + n, key=f"k-{n}")
            assert answer.status_code == 403, answer.text
        records = await refused_records(client, auth, world["agent_id"])
        assert [r["data"]["request"]["amount"] for r in records] == [OVER_LIMIT + n for n in range(11)]
        await chains_verify(db)

    async def test_other_refusals_record_nothing(self, client, auth, db, world):
        """The trail records the policy's refusals (403), not a request refused before the policy judged it."""
        unknown = await transfer_out(
            client, world["headers"], "InternalAccount:nope", world["bank"]["id"], 100, key="unknown-account"
        )
        assert unknown.status_code == 404, unknown.text
        assert await refused_records(client, auth, world["agent_id"]) == []


class TestAPausedAgent:
    async def test_its_keyed_refusals_are_each_recorded_once(self, client, auth, db, world):
        """The issue's run: a paused agent's 6 refusals left no record."""
        await pause(client, auth, world["agent_id"])
        source, bank = world["account"]["id"], world["bank"]["id"]
        for n in range(6):
            answer = await transfer_out(client, world["headers"], source, bank, 100 + n, key=f"paused-{n}")
            assert answer.status_code == 403 and answer.json()["details"]["rule"] == "isPaused", answer.text
        for n in range(6):  # retries of each: replays
            again = await transfer_out(client, world["headers"], source, bank, 100 + n, key=f"paused-{n}")
            assert again.headers.get("Idempotent-Replayed") == "true"
        records = await refused_records(client, auth, world["agent_id"])
        assert [(r["data"]["type"], r["data"]["decision"]["rule"]) for r in records] == [
            ("TRANSFER_OUT", "isPaused")
        ] * 6
        await chains_verify(db)

    @pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "unkeyed"])
    async def test_every_money_endpoint_records_its_refusal(self, client, auth, db, world, keyed):
        payee = await mxn_account(client, auth, world["customer"]["id"])
        quote = await client.post(
            "/agents/me/quotes",
            headers=world["headers"],
            json=quote_body(world["account"]["id"], payee["id"], 1_000),
        )
        assert quote.status_code == 201, quote.text
        await pause(client, auth, world["agent_id"])
        source, bank = world["account"]["id"], world["bank"]["id"]
        calls = {
            "TRANSFER_OUT": ("/agents/me/transfer-out", {"source": {"accountId": source},
                                                          "destination": {"accountId": bank}, "amount": 100}),
            "TRANSFER_IN": ("/agents/me/transfer-in", {"source": {"accountId": bank},
                                                        "destination": {"accountId": source}, "amount": 100}),
            "CREATE_QUOTE": ("/agents/me/quotes", quote_body(source, payee["id"], 500)),
            "EXECUTE_QUOTE": (f"/agents/me/quotes/{quote.json()['id']}/execute", None),
        }  # fmt: skip
        for operation, (path, body) in calls.items():
            headers = {**world["headers"], **({"Idempotency-Key": f"paused-{operation}"} if keyed else {})}
            answer = await client.post(path, headers=headers, json=body)
            assert answer.status_code == 403 and answer.json()["details"]["rule"] == "isPaused", answer.text
            if keyed:
                again = await client.post(path, headers=headers, json=body)
                assert again.headers.get("Idempotent-Replayed") == "true" and again.content == answer.content
        records = await refused_records(client, auth, world["agent_id"])
        assert [r["data"]["type"] for r in records] == list(calls)
        assert records[-1]["data"]["request"] == {"quoteId": quote.json()["id"]}
        assert records[2]["data"]["request"]["lockedCurrencyAmount"] == 500
        await chains_verify(db)


class TestTheRecordAndTheStoredAnswerCommitTogether:
    """Faults injected in the database (a trigger), nothing of platpay's replaced."""

    async def _trigger(self, db, backend, table: str, when: str) -> None:
        async with db.transaction() as session:
            if backend == "sqlite":
                await session.execute(
                    text(
                        f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} WHEN {when} "
                        "BEGIN SELECT RAISE(ABORT, 'injected fault'); END"
                    )
                )
            else:
                await session.execute(
                    text(
                        f"CREATE FUNCTION refuse_{table}() RETURNS trigger AS $$ BEGIN "
                        f"IF {when} THEN RAISE EXCEPTION 'injected fault' "
                        "USING ERRCODE = 'check_violation'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql"
                    )
                )
                await session.execute(
                    text(
                        f"CREATE TRIGGER refuse_{table} BEFORE INSERT ON {table} "
                        f"FOR EACH ROW EXECUTE FUNCTION refuse_{table}()"
                    )
                )

    async def _drop(self, db, backend, table: str) -> None:
        async with db.transaction() as session:
            await session.execute(
                text(f"DROP TRIGGER refuse_{table}" + ("" if backend == "sqlite" else f" ON {table}"))
            )
            if backend == "postgresql":
                await session.execute(text(f"DROP FUNCTION refuse_{table}()"))

    @pytest.mark.parametrize("failing", ["agent_audit_records", "idempotency_keys"])
    async def test_neither_exists_without_the_other(self, client, auth, db, backend, world, failing):
        source, bank = world["account"]["id"], world["bank"]["id"]
        when = (
            "NEW.kind = 'MONEY_REFUSED'" if failing == "agent_audit_records" else "NEW.response_status = 403"
        )
        await self._trigger(db, backend, failing, when)
        try:
            failed = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT, key="atomic")
            assert failed.status_code >= 409, failed.text  # not the refusal: it could not be stored
        finally:
            await self._drop(db, backend, failing)
        assert await refused_records(client, auth, world["agent_id"]) == []
        assert await keys_stored(db, "atomic") == 0
        # The retry under the same key runs afresh: one refusal, one record, one stored answer.
        refused = await transfer_out(client, world["headers"], source, bank, OVER_LIMIT, key="atomic")
        assert refused.status_code == 403 and "Idempotent-Replayed" not in refused.headers, refused.text
        assert len(await refused_records(client, auth, world["agent_id"])) == 1
        assert await keys_stored(db, "atomic") == 1
        await chains_verify(db)


class TestThroughPlatpayMcp:
    """`platpay mcp`'s own tool calls (an idempotency key on every money call) against the app over HTTP
    (in-process ASGI): refusals and a paused agent's refusals each reach the trail once; a retry with the
    tool's idempotencyKey adds nothing."""

    async def test_every_refused_tool_call_is_one_record(self, app, client, auth, db, world):
        server = PlatpayMCP(
            api_url=f"http://testserver{BASE_PATH}",
            token=world["agent"]["token"],
            transport=httpx.ASGITransport(app=app),
        )
        await server.refresh()  # the tool list, from the agent's permissions
        transfer = {
            "source": {"accountId": world["account"]["id"]},
            "destination": {"accountId": world["bank"]["id"]},
        }
        for n in range(11):
            result = await server.call_tool("transfer_out", {**transfer, "amount": OVER_LIMIT + n})
            assert result.is_error and json.loads(result.content[0].text)["status"] == 403, result
        retried = await server.call_tool(
            "transfer_out", {**transfer, "amount": OVER_LIMIT, "idempotencyKey": "mcp-retry"}
        )
        again = await server.call_tool(
            "transfer_out", {**transfer, "amount": OVER_LIMIT, "idempotencyKey": "mcp-retry"}
        )
        assert retried.is_error and again.is_error
        assert json.loads(again.content[0].text) == json.loads(retried.content[0].text)
        assert len(await refused_records(client, auth, world["agent_id"])) == 12
        await pause(client, auth, world["agent_id"])
        for n in range(6):
            result = await server.call_tool("transfer_out", {**transfer, "amount": 100 + n})
            error = json.loads(result.content[0].text)
            assert result.is_error and error["details"]["rule"] == "isPaused", error
        records = await refused_records(client, auth, world["agent_id"])
        assert [r["data"]["decision"]["rule"] for r in records[12:]] == ["isPaused"] * 6
        assert len(records) == 18
        await chains_verify(db)
