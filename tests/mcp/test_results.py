"""What `platpay mcp`'s tools answer, against the real app in-process (both backends): every tool's
structuredContent valid against the outputSchema it advertises (checked with `jsonschema`, independently of
the MCP SDK, and by the SDK's own client too), schemas that follow the API's models and accept fields a
later API adds, a typed result for the one tool whose API answers 204, every error in the one shape
`{status, code, message, details}` (text and `_meta.error`): bad arguments, unknown and unpermitted tools,
an unreachable API; and the package's version in serverInfo. The same success-path check over stdio and
Streamable HTTP is in tests/e2e/test_mcp_agent.py."""

from __future__ import annotations

import importlib.metadata
import json
from typing import Any

import httpx
import pytest
from mcp import Client
from pydantic import BaseModel

from platpay import BASE_PATH
from platpay.mcp import api
from platpay.mcp.server import PlatpayMCP
from platpay.mcp.tools import SPECS
from platpay.payments.schemas import IncomingTransaction, OutgoingTransaction
from tests.support.agents import balance, connect, funded_customer
from tests.support.field_errors import assert_field_errors_match
from tests.support.mcp_scenario import exercise, exercise_and_check, validators
from tests.support.processes import free_port


def server_for(app: Any, token: str) -> PlatpayMCP:
    return PlatpayMCP(
        api_url=f"http://testserver{BASE_PATH}", token=token, transport=httpx.ASGITransport(app=app)
    )


def wire(model: BaseModel) -> dict[str, Any]:
    """A result or tool as it travels in JSON-RPC."""
    return json.loads(model.model_dump_json(by_alias=True, exclude_none=True))


async def listed(server: PlatpayMCP) -> list[dict[str, Any]]:
    await server.refresh()
    return [wire(tool) for tool in await server.list_tools()]


def caller(server: PlatpayMCP):
    async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return wire(await server.call_tool(name, arguments))

    return call


@pytest.fixture
async def world(client, auth) -> dict[str, Any]:
    world = await funded_customer(client, auth, 100_000)
    agent = await connect(client, auth, world["customer"]["id"])  # every permission
    return {
        **world,
        **agent,
        "accounts": {"account_id": world["account"]["id"], "bank_id": world["bank"]["id"]},
    }


def error_of(result: dict[str, Any]) -> dict[str, Any]:
    """The error of a failed call, after checking it is the one shape, the same in the text and _meta."""
    assert result.get("isError") is True, result
    assert "structuredContent" not in result, result
    error = json.loads(result["content"][0]["text"])
    assert error == result["_meta"]["error"], result
    assert set(error) == {"status", "code", "message", "details"}, error
    assert isinstance(error["status"], int) and error["code"] and error["message"], error
    assert isinstance(error["details"], dict), error
    return error


async def test_every_tool_answers_what_its_output_schema_promises(app, world):
    """get_transaction used to answer the transaction while advertising {result: transaction}: the SDK's
    server-side check then failed every call with `Error executing tool get_transaction`."""
    server = server_for(app, world["token"])
    await exercise_and_check(caller(server), await listed(server), **world["accounts"])


async def test_the_python_sdk_client_accepts_every_result(app, world):
    """The official Python SDK's client validates structuredContent against outputSchema on every call
    (raising on a mismatch), in both protocol eras."""
    server = server_for(app, world["token"])
    await server.refresh()
    for mode in ("legacy", "2026-07-28"):
        async with Client(server, mode=mode) as sdk:
            await sdk.list_tools()

            async def call(name: str, arguments: dict[str, Any], sdk: Client = sdk) -> dict[str, Any]:
                return wire(await sdk.call_tool(name, arguments))

            if mode == "legacy":
                results = await exercise(call, **world["accounts"])
                assert set(results) == {spec.name for spec in SPECS}
            else:  # the accounts already added and removed: the reads again
                for name in ("get_me", "list_transactions", "list_actions", "list_external_accounts"):
                    assert not (await call(name, {})).get("isError")


async def test_the_transaction_schema_follows_the_model_and_accepts_fields_added_later(app, client, world):
    server = server_for(app, world["token"])
    tools = {tool["name"]: tool for tool in await listed(server)}
    for name, tool in tools.items():
        assert '"additionalProperties": false' not in json.dumps(tool["outputSchema"]), name
    schema = tools["get_transaction"]["outputSchema"]
    # Derived from the response models: every field of every transaction model is in the schema.
    for model in (IncomingTransaction, OutgoingTransaction):
        fields = {info.alias or name for name, info in model.model_fields.items()}
        assert fields <= set(schema["$defs"][model.__name__]["properties"]), model.__name__

    call = caller(server)
    sent = await call(
        "transfer_out",
        {"source": {"accountId": world["account"]["id"]}, "destination": {"accountId": world["bank"]["id"]},
         "amount": 1_000},
    )  # fmt: skip
    transaction_id = sent["structuredContent"]["transaction"]["id"]
    got = await call("get_transaction", {"transactionId": transaction_id})
    compiled = validators(list(tools.values()))
    later = {**got["structuredContent"], "settlementNetwork": {"name": "FedNow", "trace": "x"}, "fees": 3}
    assert compiled["get_transaction"].is_valid(later)
    action = sent["structuredContent"]
    action_later = {**action, "transaction": later, "riskScore": 0.2}
    assert compiled["transfer_out"].is_valid(action_later)
    listing = await call("list_transactions", {})
    listing_later = {**listing["structuredContent"], "data": [later], "nextPageToken": "t"}
    assert compiled["list_transactions"].is_valid(listing_later)
    # ...and still refuses what is wrong: a transaction without its type, an amount as text.
    assert not compiled["get_transaction"].is_valid({k: v for k, v in later.items() if k != "type"})
    broken = {**later, "sentAmount": {**later["sentAmount"], "amount": "1000"}}
    assert not compiled["get_transaction"].is_valid(broken)


async def test_remove_external_account_is_typed_and_its_errors_in_the_shape(app, world):
    server = server_for(app, world["token"])
    tools = {tool["name"]: tool for tool in await listed(server)}
    assert tools["remove_external_account"]["outputSchema"]["required"] == ["externalAccountId", "removed"]
    call = caller(server)
    bank = world["bank"]["id"]
    removed = await call("remove_external_account", {"externalAccountId": bank})
    assert removed["structuredContent"] == {"externalAccountId": bank, "removed": True}
    assert json.loads(removed["content"][0]["text"]) == removed["structuredContent"]
    again = error_of(await call("remove_external_account", {"externalAccountId": bank}))
    assert again["status"] == 404 and again["details"], again


@pytest.mark.parametrize(
    ("tool", "arguments", "fields"),
    [
        ("transfer_out", {"destination": {"accountId": "x"}, "amount": -5}, {"source", "amount"}),
        ("transfer_out", {"source": {}, "destination": {"accountId": "x"}, "amount": "lots"},
         {"source.accountId", "amount"}),
        ("transfer_in", {"source": {"accountId": "a"}, "destination": {"accountId": "b"}, "amount": 0,
                         "idempotencyKey": ""}, {"amount", "idempotencyKey"}),
        ("get_transaction", {}, {"transactionId"}),
        ("get_transaction", {"transactionId": ""}, {"transactionId"}),
        ("list_transactions", {"limit": 1000, "startDate": "yesterday"}, {"limit", "startDate"}),
        ("wait_for_action", {"actionId": "a", "timeoutSeconds": 3600}, {"timeoutSeconds"}),
        ("check_policy", {"type": "SPEND_IT_ALL"}, {"type"}),
    ],
)  # fmt: skip
async def test_bad_arguments_are_400_invalid_input_naming_each_field(app, client, auth, world, tool, arguments,
                                                                     fields):  # fmt: skip
    server = server_for(app, world["token"])
    await server.refresh()
    before = await balance(client, auth, world["account"]["id"])
    error = error_of(await caller(server)(tool, arguments))
    assert (error["status"], error["code"]) == (400, "INVALID_INPUT"), error
    named = {item["field"] for item in error["details"]["fields"]}
    assert fields <= named, error
    assert all(item["location"] == "arguments" and item["message"] for item in error["details"]["fields"])
    assert_field_errors_match(error)  # details.errors beside details.fields, as the API answers
    assert error["message"].startswith("invalid input: ") and "pydantic" not in json.dumps(error), error
    assert await balance(client, auth, world["account"]["id"]) == before  # nothing moved
    actions = await client.get("/agents/me/actions", headers=world["headers"])
    assert actions.json()["data"] == []  # nothing was asked of the API


async def test_a_bad_argument_carries_its_constraint_as_the_api_does(app, client, auth, world):
    server = server_for(app, world["token"])
    await server.refresh()
    error = error_of(await caller(server)("check_policy", {"type": "SPEND_IT_ALL"}))
    [entry] = [item for item in error["details"]["errors"] if item["field"] == "type"]
    assert entry["constraint"] == {"enum": ["EXECUTE_QUOTE", "TRANSFER_OUT", "TRANSFER_IN"]}, error


async def test_an_unknown_argument_is_refused_not_dropped(app, client, auth, world):
    """Dropped, a misspelt `amount` would have made transfer_out send the whole available balance."""
    server = server_for(app, world["token"])
    tools = {tool["name"]: tool for tool in await listed(server)}
    assert all(tool["inputSchema"]["additionalProperties"] is False for tool in tools.values())
    before = await balance(client, auth, world["account"]["id"])
    transfer = {
        "source": {"accountId": world["account"]["id"]},
        "destination": {"accountId": world["bank"]["id"]},
    }
    error = error_of(await caller(server)("transfer_out", {**transfer, "ammount": 100, "memo": "x"}))
    assert (error["status"], error["code"]) == (400, "INVALID_INPUT"), error
    assert [item["field"] for item in error["details"]["fields"]] == ["ammount", "memo"], error
    assert [item["field"] for item in error["details"]["errors"]] == ["ammount", "memo"], error
    assert "amount" in error["details"]["fields"][0]["message"], error  # says what the tool takes
    assert await balance(client, auth, world["account"]["id"]) == before
    assert (await client.get("/agents/me/actions", headers=world["headers"])).json()["data"] == []


async def test_an_explicit_null_amount_is_refused_not_taken_for_an_omission(app, client, auth, world):
    """Omitted, `amount` sends the whole available balance; a null `amount` (a client serialising None) is
    refused, naming it, as the API refuses it (the tool's parameters come from the API's model, which
    refuses that null): the tool must not turn the one into the other."""
    server = server_for(app, world["token"])
    await server.refresh()
    before = await balance(client, auth, world["account"]["id"])
    transfer = {
        "source": {"accountId": world["account"]["id"]},
        "destination": {"accountId": world["bank"]["id"]},
    }
    error = error_of(await caller(server)("transfer_out", {**transfer, "amount": None}))
    assert (error["status"], error["code"]) == (400, "INVALID_INPUT"), error
    assert [item["field"] for item in error["details"]["fields"]] == ["amount"], error
    assert await balance(client, auth, world["account"]["id"]) == before


async def test_unknown_and_unpermitted_tools_answer_in_the_shape(app, client, auth):
    world = await funded_customer(client, auth, 0)
    agent = await connect(client, auth, world["customer"]["id"], permissions=[])
    server = server_for(app, agent["token"])
    await server.refresh()
    call = caller(server)
    unknown = error_of(await call("pay_everyone", {}))
    assert (unknown["status"], unknown["code"], unknown["details"]) == (
        404,
        "NOT_FOUND",
        {"tool": "pay_everyone"},
    )
    refused = error_of(await call("transfer_out", {"amount": 1}))
    assert (refused["status"], refused["code"]) == (403, "FORBIDDEN"), refused
    assert refused["details"] == {"tool": "transfer_out", "permission": "CREATE_TRANSFERS"}


async def test_an_unreachable_api_answers_in_the_shape(app, world):
    server = server_for(app, world["token"])
    await server.refresh()
    gone = f"http://127.0.0.1:{free_port()}{BASE_PATH}"
    server.http = api.connect(gone, token=world["token"], timeout=5)
    for name, arguments in (("get_me", {}), ("wait_for_action", {"actionId": "x", "timeoutSeconds": 1})):
        error = error_of(await caller(server)(name, arguments))
        assert (error["status"], error["code"]) == (503, "API_UNREACHABLE"), error
    await server.http.aclose()


async def test_an_api_error_keeps_its_shape(app, world):
    server = server_for(app, world["token"])
    await server.refresh()
    error = error_of(await caller(server)("get_transaction", {"transactionId": "Transaction:nope"}))
    assert (error["status"], error["code"]) == (404, "TRANSACTION_NOT_FOUND"), error


async def test_server_info_carries_the_package_version(app, world):
    server = server_for(app, world["token"])
    await server.refresh()
    async with Client(server, mode="legacy") as sdk:
        assert sdk.server_info.name == "platpay"
        assert sdk.server_info.version == importlib.metadata.version("platpay") != ""
