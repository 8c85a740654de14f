"""`platpay mcp`'s tools against the real app (in-process): least privilege from the agent's permissions,
re-read without a restart and announced to listening clients of both protocol eras; arguments and output
schemas from the API's models; API errors as tool errors; a paused agent's money tools and a deleted
agent's every tool fail with the API's answer."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.subscriptions import ToolsListChanged

from platpay import BASE_PATH
from platpay.mcp.server import PlatpayMCP
from tests.support.agents import connect, funded_customer

ALWAYS = {
    "get_me",
    "list_internal_accounts",
    "list_transactions",
    "get_transaction",
    "list_actions",
    "get_action",
    "wait_for_action",
    "check_policy",
}
TRANSFERS = {"transfer_in", "transfer_out"}
EXTERNAL = {"list_external_accounts", "add_external_account", "remove_external_account"}
QUOTES = {"create_quote", "get_quote"}


def server_for(app: Any, token: str, **options: Any) -> PlatpayMCP:
    return PlatpayMCP(
        api_url=f"http://testserver{BASE_PATH}",
        token=token,
        transport=httpx.ASGITransport(app=app),
        **options,
    )


async def names(server: PlatpayMCP) -> set[str]:
    await server.refresh()
    return {tool.name for tool in await server.list_tools()}


@pytest.mark.parametrize(
    ("permissions", "extra"),
    [
        ([], set()),
        (["CREATE_TRANSFERS"], TRANSFERS),
        (["MANAGE_EXTERNAL_ACCOUNTS"], EXTERNAL),
        (["CREATE_QUOTES"], QUOTES),
        (["EXECUTE_QUOTES"], {"execute_quote"}),
        (["CREATE_TRANSFERS", "CREATE_QUOTES", "EXECUTE_QUOTES", "MANAGE_EXTERNAL_ACCOUNTS"],
         TRANSFERS | EXTERNAL | QUOTES | {"execute_quote"}),
    ],
)  # fmt: skip
async def test_the_tool_list_follows_the_permissions(app, client, auth, permissions, extra):
    world = await funded_customer(client, auth, 0)
    agent = await connect(client, auth, world["customer"]["id"], permissions=permissions)
    assert await names(server_for(app, agent["token"])) == ALWAYS | extra


async def test_a_policy_change_changes_the_list_without_a_restart(app, client, auth):
    world = await funded_customer(client, auth, 0)
    agent = await connect(client, auth, world["customer"]["id"], permissions=["CREATE_TRANSFERS"])
    server = server_for(app, agent["token"])
    assert await names(server) == ALWAYS | TRANSFERS
    agent_id = agent["agent"]["id"]
    patched = await client.patch(
        f"/agents/{agent_id}/policy", auth=auth, json={"permissions": ["CREATE_QUOTES"]}
    )
    assert patched.status_code == 200, patched.text
    assert await server.refresh() is True  # changed: list_changed goes out
    assert {tool.name for tool in await server.list_tools()} == ALWAYS | QUOTES
    assert await server.refresh() is False


async def test_a_policy_change_reaches_listening_clients_of_both_eras(app, client, auth):
    """The server's own poll notices a platform's PATCH of the policy: a 2026-07-28 client hears it over
    subscriptions/listen, a handshake-era client by the notification on its session; both then list the new
    tools. The server is not restarted."""
    world = await funded_customer(client, auth, 0)
    agent = await connect(client, auth, world["customer"]["id"], permissions=["CREATE_TRANSFERS"])
    server = server_for(app, agent["token"], poll_seconds=0.05)
    await server.refresh()
    heard = anyio.Event()

    async def legacy_messages(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/tools/list_changed":
            heard.set()

    async with (
        anyio.create_task_group() as tasks,
        Client(server, mode="legacy", message_handler=legacy_messages) as legacy,
        Client(server, mode="2026-07-28") as modern,
        modern.listen(tools_list_changed=True) as listened,
    ):
        tasks.start_soon(server.poll)
        assert legacy.server_capabilities.tools.list_changed is True
        for era in (legacy, modern):
            assert {tool.name for tool in (await era.list_tools()).tools} == ALWAYS | TRANSFERS
        patched = await client.patch(
            f"/agents/{agent['agent']['id']}/policy", auth=auth, json={"permissions": ["CREATE_QUOTES"]}
        )
        assert patched.status_code == 200, patched.text
        with anyio.fail_after(5):
            assert isinstance(await anext(listened), ToolsListChanged)
            await heard.wait()
        for era in (legacy, modern):
            assert {tool.name for tool in (await era.list_tools()).tools} == ALWAYS | QUOTES
        tasks.cancel_scope.cancel()


async def test_schemas_come_from_the_api_models(app, client, auth):
    world = await funded_customer(client, auth, 0)
    agent = await connect(client, auth, world["customer"]["id"])
    server = server_for(app, agent["token"])
    await server.refresh()
    tools = {tool.name: tool for tool in await server.list_tools()}
    out = tools["transfer_out"]
    assert set(out.input_schema["properties"]) == {
        "source",
        "destination",
        "amount",
        "description",
        "remittanceInformation",
        "purposeOfPayment",
        "idempotencyKey",
    }
    assert out.input_schema["required"] == ["source", "destination"]
    assert out.annotations.destructive_hint and not out.annotations.read_only_hint
    assert {"status", "transferDetails"} <= set(json.dumps(out.output_schema).replace('"', " ").split())
    assert "customerId" not in tools["add_external_account"].input_schema["properties"]
    assert tools["get_me"].annotations.read_only_hint and tools["get_me"].annotations.idempotent_hint
    assert set(tools["check_policy"].input_schema["properties"]) >= {
        "type",
        "source",
        "destination",
        "quoteId",
    }


async def test_paused_and_deleted_agents(app, client, auth):
    world = await funded_customer(client, auth, 10_000)
    agent = await connect(client, auth, world["customer"]["id"])
    server = server_for(app, agent["token"])
    await server.refresh()
    agent_id = agent["agent"]["id"]
    assert (await client.patch(f"/agents/{agent_id}", auth=auth, json={"isPaused": True})).status_code == 200
    transfer = {
        "source": {"accountId": world["account"]["id"]},
        "destination": {"accountId": world["bank"]["id"]},
    }
    paused = await server.call_tool("transfer_out", {**transfer, "amount": 100})
    assert paused.is_error
    error = json.loads(paused.content[0].text)
    assert (error["status"], error["details"]["rule"]) == (403, "isPaused")
    assert error == paused.meta["error"]
    me = await server.call_tool("get_me", {})  # reads continue
    assert not me.is_error and me.structured_content["isPaused"] is True

    assert (await client.delete(f"/agents/{agent_id}", auth=auth)).status_code in (200, 204)
    for name, arguments in (("get_me", {}), ("transfer_out", {**transfer, "amount": 100})):
        result = await server.call_tool(name, arguments)
        error = json.loads(result.content[0].text)
        assert result.is_error and error["status"] == 401 and "deleted" in error["message"], error
