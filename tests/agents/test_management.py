"""Agent management (platform credentials), device codes and the agent's bearer token."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

from platpay.kit import clock
from tests.factories import customer, internal_account
from tests.support.agents import connect, create_agent, policy


@pytest.fixture
async def person(client, auth):
    return await customer(client, auth)


class TestCreate:
    async def test_creates_the_agent_with_zero_usage_and_a_device_code(self, client, auth, person):
        created = await create_agent(client, auth, person["id"])
        agent, code = created["agent"], created["deviceCode"]
        assert agent["id"].startswith("Agent:") and agent["customerId"] == person["id"]
        assert agent["isPaused"] is False and agent["isConnected"] is False
        assert agent["policy"]["spendingLimits"]["dailyLimit"] == 50_000
        assert agent["usage"]["dailySpend"] == 0 and agent["usage"]["dailyTransactionCount"] == 0
        assert code["agentId"] == agent["id"] and code["redeemed"] is False
        assert code["code"].startswith("PLATPAY-AGENT-") and len(code["code"].split("-")) == 6
        fetched = await client.get(f"/agents/{agent['id']}", auth=auth)
        assert fetched.status_code == 200 and fetched.json()["name"] == "Pay bot"

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"permissions": ["SEND_MONEY"]}, "policy.permissions.0"),
            ({"defaultExecutionMode": "SOMETIMES"}, "policy.defaultExecutionMode"),
            ({"spendingLimits": {"currency": "USD"}}, "policy.spendingLimits.perTransactionLimit"),
            (
                {"spendingLimits": {"currency": "USD", "perTransactionLimit": -1}},
                "policy.spendingLimits.perTransactionLimit",
            ),
            (
                {"spendingLimits": {"currency": "QQQ", "perTransactionLimit": 1}},
                "policy.spendingLimits.currency",
            ),
            ({"approvalThresholds": {"amount": 5}}, "policy.approvalThresholds.currency"),
            (
                {"accountRestrictions": {"allowedAccountIds": ["InternalAccount:nope"]}},
                "policy.accountRestrictions.allowedAccountIds.0",
            ),
        ],
    )
    async def test_every_policy_field_is_validated_naming_it(self, client, auth, person, change, field):
        body = {"name": "x", "customerId": person["id"], "policy": policy(**change)}
        response = await client.post("/agents", auth=auth, json=body)
        assert response.status_code == 400, response.text
        fields = [f["field"] for f in response.json()["details"]["fields"]]
        assert field in fields, fields
        assert (await client.get("/agents", auth=auth)).json()["totalCount"] == 0

    async def test_another_customers_account_is_refused_in_restrictions(self, client, auth, person):
        other = await customer(client, auth)
        theirs = await internal_account(client, auth, other["id"])
        body = {
            "name": "x",
            "customerId": person["id"],
            "policy": policy(accountRestrictions={"allowedAccountIds": [theirs["id"]]}),
        }
        assert (await client.post("/agents", auth=auth, json=body)).status_code == 400

    async def test_unknown_customer_is_404(self, client, auth):
        body = {"name": "x", "customerId": "Customer:nope", "policy": policy()}
        assert (await client.post("/agents", auth=auth, json=body)).status_code == 404


class TestListAndUpdate:
    async def test_list_filters(self, client, auth, person):
        other = await customer(client, auth)
        first = await connect(client, auth, person["id"])
        await create_agent(client, auth, other["id"])
        listed = (await client.get("/agents", auth=auth, params={"customerId": person["id"]})).json()
        assert [a["id"] for a in listed["data"]] == [first["agent"]["id"]]
        connected = (await client.get("/agents", auth=auth, params={"isConnected": "true"})).json()
        assert [a["id"] for a in connected["data"]] == [first["agent"]["id"]]

    async def test_pause_and_rename(self, client, auth, person):
        agent = (await create_agent(client, auth, person["id"]))["agent"]
        response = await client.patch(
            f"/agents/{agent['id']}", auth=auth, json={"isPaused": True, "name": "Bot 2"}
        )
        assert response.status_code == 200 and response.json()["isPaused"] is True
        assert response.json()["name"] == "Bot 2"
        assert (await client.patch(f"/agents/{agent['id']}", auth=auth, json={})).status_code == 400

    async def test_policy_patch_is_partial(self, client, auth, person):
        agent = (await create_agent(client, auth, person["id"]))["agent"]
        response = await client.patch(
            f"/agents/{agent['id']}/policy",
            auth=auth,
            json={
                "permissions": ["CREATE_QUOTES"],
                "spendingLimits": {"dailyLimit": 70_000, "monthlyLimit": None},
            },
        )
        assert response.status_code == 200, response.text
        updated = response.json()["policy"]
        assert updated["permissions"] == ["CREATE_QUOTES"]
        assert updated["spendingLimits"] == {
            "currency": "USD",
            "perTransactionLimit": 10_000,
            "dailyLimit": 70_000,
            "dailyTransactionLimit": 20,
        }
        assert updated["approvalThresholds"] == {"currency": "USD", "amount": 5_000}
        assert updated["defaultExecutionMode"] == "AUTO"
        refused = await client.patch(
            f"/agents/{agent['id']}/policy", auth=auth, json={"spendingLimits": {"perTransactionLimit": None}}
        )
        assert refused.status_code == 400
        assert refused.json()["details"]["fields"][0]["field"] == "spendingLimits.perTransactionLimit"


class TestDeviceCodes:
    async def test_redeem_once_then_connected(self, client, auth, person):
        created = await create_agent(client, auth, person["id"])
        code = created["deviceCode"]["code"]
        status = await client.get(f"/agents/device-codes/{code}/status", auth=auth)
        assert status.json() == {"code": code, "redeemed": False}
        redeemed = await client.post(f"/agents/device-codes/{code}/redeem")
        assert redeemed.status_code == 200, redeemed.text
        body = redeemed.json()
        assert body["agentId"] == created["agent"]["id"] and body["agentName"] == "Pay bot"
        assert body["accessToken"].startswith("gat_") and len(body["accessToken"]) == 68
        assert body["policy"]["permissions"]
        assert (await client.post(f"/agents/device-codes/{code}/redeem")).status_code == 400
        assert (await client.get(f"/agents/device-codes/{code}/status", auth=auth)).json()["redeemed"] is True
        agent = (await client.get(f"/agents/{created['agent']['id']}", auth=auth)).json()
        assert agent["isConnected"] is True
        again = await client.post(f"/agents/{created['agent']['id']}/device-codes", auth=auth)
        assert again.status_code == 409

    async def test_unknown_expired_and_replaced_codes(self, client, auth, person, settings):
        assert (
            await client.post("/agents/device-codes/PLATPAY-AGENT-AAAA-BBBB-CCCC-DDDD/redeem")
        ).status_code == 404
        created = await create_agent(client, auth, person["id"])
        first = created["deviceCode"]["code"]
        second = (await client.post(f"/agents/{created['agent']['id']}/device-codes", auth=auth)).json()
        assert second["code"] != first
        assert (await client.post(f"/agents/device-codes/{first}/redeem")).status_code == 400
        clock.freeze()
        clock.advance(timedelta(seconds=settings.agent_device_code_ttl_seconds + 1))
        assert (await client.post(f"/agents/device-codes/{second['code']}/redeem")).status_code == 400

    async def test_concurrent_redeems_give_one_token(self, client, auth, person):
        code = (await create_agent(client, auth, person["id"]))["deviceCode"]["code"]
        answers = await asyncio.gather(
            *(client.post(f"/agents/device-codes/{code}/redeem") for _ in range(6))
        )
        assert sorted(a.status_code for a in answers) == [200] + [400] * 5


class TestBearer:
    async def test_the_token_works_until_the_agent_is_deleted(self, client, auth, person):
        agent = await connect(client, auth, person["id"])
        me = await client.get("/agents/me", headers=agent["headers"])
        assert me.status_code == 200 and me.json()["id"] == agent["agent"]["id"]
        assert (await client.delete(f"/agents/{agent['agent']['id']}", auth=auth)).status_code == 204
        gone = await client.get("/agents/me", headers=agent["headers"])
        assert gone.status_code == 401 and gone.json()["code"] == "UNAUTHORIZED"
        assert (await client.get(f"/agents/{agent['agent']['id']}", auth=auth)).status_code == 404

    async def test_credentials_cannot_cross(self, client, auth, person):
        agent = await connect(client, auth, person["id"])
        assert (await client.get("/agents/me", auth=auth)).status_code == 403
        for method, path in [
            ("GET", "/agents"),
            ("POST", "/agents"),
            ("GET", "/customers"),
            ("GET", "/agents/approvals"),
        ]:
            response = await client.request(
                method, path, headers=agent["headers"], json={} if method == "POST" else None
            )
            assert response.status_code == 403, (path, response.text)
        assert (await client.get("/agents/me")).status_code == 401
        bogus = {"Authorization": "Bearer gat_" + "0" * 64}
        assert (await client.get("/agents/me", headers=bogus)).status_code == 401


async def test_no_device_code_or_token_reaches_the_access_log(client, auth, person, capsys):
    created = await create_agent(client, auth, person["id"])
    code = created["deviceCode"]["code"]
    await client.get(f"/agents/device-codes/{code}/status", auth=auth)
    token = (await client.post(f"/agents/device-codes/{code}/redeem")).json()["accessToken"]
    await client.get("/agents/me", headers={"Authorization": f"Bearer {token}"})
    output = capsys.readouterr().out
    assert "device-codes/{code}/redeem" in output
    assert code not in output and token not in output and token[4:20] not in output
