"""`platpay mcp` driven by the MCP SDK's own client, over stdio and over Streamable HTTP, against a live
`platpay serve` (SQLite): tools listed from the agent's permissions, get_me, a transfer under the approval
threshold (APPROVED with its transaction), one over it (PENDING_APPROVAL) that the platform approves through
the API while wait_for_action waits, a transfer past the daily limit refused with the rule named, a retry
with the same idempotency key paying once, a policy change reaching the client as tools/list_changed
without a restart (on both paths: the session notification of a handshake-era client, and
`subscriptions/listen` of a 2026-07-28 client), a deleted agent's token failing with a clear message; the
ledger verifies. And every tool on its success path through a hand-written JSON-RPC client (no MCP SDK)
over both transports, each result valid against the tool's advertised outputSchema."""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import Subscription, ToolsListChanged

from platpay import BASE_PATH
from tests.support.agents import policy as agent_policy
from tests.support.api_checks import api_client
from tests.support.mcp_scenario import exercise_and_check
from tests.support.money import fund, open_holder, verify_ledger
from tests.support.processes import PLATPAY, ProcessManager, free_port, process_env
from tests.support.server import create_platform, credentials, start_server

pytestmark = pytest.mark.e2e

THRESHOLD, DAILY = 5_000, 20_000
POLICY = {
    "permissions": ["CREATE_TRANSFERS"],
    "defaultExecutionMode": "AUTO",
    "spendingLimits": {"currency": "USD", "perTransactionLimit": 100_000, "dailyLimit": DAILY},
    "approvalThresholds": {"currency": "USD", "amount": THRESHOLD},
}


class ListChanged:
    """Counts tools/list_changed notifications the client received."""

    def __init__(self) -> None:
        self.count = 0
        self.event = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if getattr(getattr(message, "root", message), "method", None) == "notifications/tools/list_changed":
            self.count += 1
            self.event.set()

    async def wait(self) -> None:
        with anyio.fail_after(20):
            await self.event.wait()
        self.event = anyio.Event()


MODERN = "2026-07-28"  # the protocol era of subscriptions/listen: no initialize, no session


def stdio_params(env: dict[str, str]) -> StdioServerParameters:
    return StdioServerParameters(command=PLATPAY, args=["mcp", "--poll-seconds", "0.3"], env=env)


@asynccontextmanager
async def stdio_session(env: dict[str, str], changes: ListChanged) -> AsyncIterator[ClientSession]:
    async with (
        stdio_client(stdio_params(env)) as (read, write),
        ClientSession(read, write, message_handler=changes) as session,
    ):
        await session.initialize()
        yield session


@asynccontextmanager
async def listening(server: Any) -> AsyncIterator[tuple[Client, Subscription]]:
    """A 2026-07-28 client of `server` (a URL or stdio parameters: a server process of its own) subscribed to
    tools/list_changed over subscriptions/listen."""
    async with Client(server, mode=MODERN) as client, client.listen(tools_list_changed=True) as listened:
        assert client.protocol_version == MODERN
        assert listened.honored.tools_list_changed is True
        yield client, listened


async def next_change(listened: Subscription) -> None:
    with anyio.fail_after(20):
        assert isinstance(await anext(listened), ToolsListChanged)


def http_session_factory(processes: ProcessManager, env: dict[str, str]) -> tuple[Callable[..., Any], str]:
    """The legacy session opener and the URL of one `platpay mcp --http` server."""
    port = free_port()
    server = processes.start(
        "mcp", [PLATPAY, "mcp", "--http", "--port", str(port), "--poll-seconds", "0.3"], env=env
    )
    server.wait_http_ready(f"http://127.0.0.1:{port}/healthz", timeout=30)
    url = f"http://127.0.0.1:{port}/mcp"

    @asynccontextmanager
    async def session_for(_env: dict[str, str], changes: ListChanged) -> AsyncIterator[ClientSession]:
        async with (
            streamable_http_client(url) as (read, write),
            ClientSession(read, write, message_handler=changes) as session,
        ):
            await session.initialize()
            yield session

    return session_for, url


def error_of(result: Any) -> dict[str, Any]:
    assert result.is_error, result
    return json.loads(result.content[0].text)


async def walk(
    open_session: Callable[..., Any],
    modern_server: Any,
    env: dict[str, str],
    platform: httpx.Client,
    agent_id: str,
    transfer: dict[str, Any],
    spent_before: int,
) -> None:
    changes = ListChanged()
    async with open_session(env, changes) as session, listening(modern_server) as (modern, listened):
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert {"get_me", "transfer_out", "transfer_in", "wait_for_action", "list_actions"} <= names
        assert not names & {"add_external_account", "create_quote", "execute_quote"}, names
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["transfer_out"].annotations.destructive_hint is True
        assert tools["get_me"].annotations.read_only_hint is True
        assert "idempotencyKey" in tools["transfer_out"].input_schema["properties"]
        assert tools["transfer_out"].output_schema is not None

        me = await session.call_tool("get_me", {})
        assert not me.is_error, me
        assert me.structured_content["id"] == agent_id
        assert me.structured_content["usage"]["dailySpend"] == spent_before

        small = await session.call_tool("transfer_out", {**transfer, "amount": 1_000})
        assert not small.is_error, small
        assert small.structured_content["status"] == "APPROVED"
        assert small.structured_content["transaction"]["id"]
        key = small.meta["idempotencyKey"]
        again = await session.call_tool("transfer_out", {**transfer, "amount": 1_000, "idempotencyKey": key})
        assert again.structured_content["id"] == small.structured_content["id"]  # paid once

        large = await session.call_tool("transfer_out", {**transfer, "amount": THRESHOLD + 1_000})
        assert not large.is_error, large
        action = large.structured_content
        assert action["status"] == "PENDING_APPROVAL"
        approved = platform.post(f"/agents/{agent_id}/actions/{action['id']}/approve")
        assert approved.status_code == 200, approved.text
        waited = await session.call_tool("wait_for_action", {"actionId": action["id"], "timeoutSeconds": 20})
        assert waited.structured_content["status"] == "APPROVED", waited

        check = await session.call_tool("check_policy", {"type": "TRANSFER_OUT", **transfer, "amount": DAILY})
        assert not check.is_error, check
        assert check.structured_content["decision"] == "DENY"
        refused = error_of(await session.call_tool("transfer_out", {**transfer, "amount": DAILY}))
        assert refused["details"]["rule"] == check.structured_content["rule"]
        assert refused["status"] == 403 and refused["details"]["rule"] == "spendingLimits.dailyLimit", refused

        # A platform grants a permission: both clients hear of it (the handshake-era one by its session's
        # notification, the 2026-07-28 one over its subscriptions/listen stream) and see the new tools, no
        # restart.
        external = {"add_external_account", "list_external_accounts", "remove_external_account"}
        assert not external & {tool.name for tool in (await modern.list_tools()).tools}
        patched = platform.patch(
            f"/agents/{agent_id}/policy",
            json={"permissions": ["CREATE_TRANSFERS", "MANAGE_EXTERNAL_ACCOUNTS"]},
        )
        assert patched.status_code == 200, patched.text
        await changes.wait()
        await next_change(listened)
        assert external <= {tool.name for tool in (await session.list_tools()).tools}
        assert external <= {tool.name for tool in (await modern.list_tools()).tools}
        patched = platform.patch(f"/agents/{agent_id}/policy", json={"permissions": ["CREATE_TRANSFERS"]})
        assert patched.status_code == 200, patched.text
        await changes.wait()
        await next_change(listened)
        assert "add_external_account" not in {tool.name for tool in (await session.list_tools()).tools}
        assert "add_external_account" not in {tool.name for tool in (await modern.list_tools()).tools}


def test_an_mcp_client_walks_the_agent_scenario_over_stdio_and_streamable_http(
    processes: ProcessManager, tmp_path: Path, master_key: str
) -> None:
    env = process_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}",
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_JOB_POLL_SECONDS="0.05",
        PLATPAY_SANDBOX_SETTLEMENT_SECONDS="0.2",
    )
    sandbox = credentials(create_platform(processes, env), "sandbox")
    _server, base_url = start_server(processes, env)
    with api_client(base_url, sandbox) as platform:
        holder = open_holder(platform)
        assert fund(platform, holder.account_id, 1_000_000).status_code == 200
        created = platform.post(
            "/agents", json={"name": "mcp", "customerId": holder.customer_id, "policy": POLICY}
        )
        assert created.status_code == 201, created.text
        agent_id = created.json()["agent"]["id"]
        code = created.json()["deviceCode"]["code"]
        token = httpx.post(
            f"{base_url}{BASE_PATH}/agents/device-codes/{code}/redeem", trust_env=False
        ).json()["accessToken"]
        mcp_env = process_env(PLATPAY_AGENT_TOKEN=token, PLATPAY_API_URL=base_url + BASE_PATH)
        bank = next(iter(holder.banks.values()))
        transfer = {"source": {"accountId": holder.account_id}, "destination": {"accountId": bank}}
        per_walk = 1_000 + THRESHOLD + 1_000

        anyio.run(walk, stdio_session, stdio_params(mcp_env), mcp_env, platform, agent_id, transfer, 0)
        http_session, url = http_session_factory(processes, mcp_env)
        anyio.run(walk, http_session, url, mcp_env, platform, agent_id, transfer, per_walk)

        # A deleted agent: every tool fails, saying why.
        assert platform.delete(f"/agents/{agent_id}").status_code in (200, 204)

        async def deleted() -> None:
            async with stdio_session(mcp_env, ListChanged()) as session:
                error = error_of(await session.call_tool("get_me", {}))
                assert error["status"] == 401 and "deleted" in error["message"], error

        anyio.run(deleted)
    verify_ledger(processes, env)

    # The audit trail: exported as JSON Lines, verified; an edit straight in the database is caught.
    exported = processes.run([PLATPAY, "agents", "audit", "export", "--agent", agent_id], env=env).stdout
    records = [json.loads(line) for line in exported.splitlines()]
    assert records[0]["kind"] == "AGENT_CREATED" and records[-1]["kind"] == "AGENT_DELETED"
    assert token not in exported and code not in exported
    assert "OK" in processes.run([PLATPAY, "agents", "audit", "verify"], env=env).stdout
    with sqlite3.connect(tmp_path / "platpay.db") as db:
        db.execute(
            "UPDATE agent_audit_records SET data = '{}' WHERE agent_id = ? AND sequence = 4", (agent_id,)
        )
    broken = subprocess.run(
        [PLATPAY, "agents", "audit", "verify"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert broken.returncode == 1 and f"BROKEN agent {agent_id} at sequence 4" in broken.stdout, broken.stdout


# --- every tool, over the wire, with a hand-written JSON-RPC client ------------------------------------

HANDSHAKE = "2025-11-25"
CLIENT_INFO = {"name": "hand-written-json-rpc", "version": "1"}


class StdioRpc:
    """JSON-RPC 2.0 over a `platpay mcp` process's stdin and stdout, one message a line; no MCP SDK."""

    def __init__(self, env: dict[str, str], log: Path) -> None:
        self.env, self.log, self.next_id = env, log, 0

    async def __aenter__(self) -> StdioRpc:
        self.stderr = self.log.open("wb")
        self.process = await asyncio.create_subprocess_exec(
            PLATPAY, "mcp", env=self.env, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=self.stderr, limit=16 * 1024 * 1024,
        )  # fmt: skip
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()  # end of input: the server exits
        try:
            await asyncio.wait_for(self.process.wait(), 20)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()
        self.stderr.close()

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        await self.process.stdin.drain()

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        while True:  # notifications (tools/list_changed, logging) may come first
            line = await asyncio.wait_for(self.process.stdout.readline(), 60)
            assert line, f"platpay mcp closed stdout: {self.log.read_text()[-2000:]}"
            message = json.loads(line)
            if message.get("id") == self.next_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]

    async def notify(self, method: str) -> None:
        await self.send({"jsonrpc": "2.0", "method": method})


class HttpRpc:
    """JSON-RPC 2.0 over Streamable HTTP: one POST per message, the session in Mcp-Session-Id; no MCP SDK."""

    def __init__(self, url: str) -> None:
        self.url, self.next_id, self.session_id = url, 0, None

    async def __aenter__(self) -> HttpRpc:
        self.http = httpx.AsyncClient(timeout=60, trust_env=False)
        return self

    async def __aexit__(self, *_: object) -> None:
        if self.session_id:
            await self.http.delete(self.url, headers=self._headers())
        await self.http.aclose()

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        if self.session_id:
            headers |= {"Mcp-Session-Id": self.session_id, "MCP-Protocol-Version": HANDSHAKE}
        return headers

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        response = await self.http.post(self.url, json=message, headers=self._headers())
        assert response.status_code == 200, response.text
        self.session_id = self.session_id or response.headers.get("mcp-session-id")
        if response.headers["content-type"].startswith("text/event-stream"):
            answers = [
                json.loads(line[5:]) for line in response.text.splitlines() if line.startswith("data:")
            ]
        else:
            answers = [response.json()]
        answer = next(a for a in answers if a.get("id") == self.next_id)
        assert "error" not in answer, answer
        return answer["result"]

    async def notify(self, method: str) -> None:
        response = await self.http.post(
            self.url, json={"jsonrpc": "2.0", "method": method}, headers=self._headers()
        )
        assert response.status_code == 202, response.text


async def every_tool_over(rpc: StdioRpc | HttpRpc, accounts: dict[str, str], run: int) -> None:
    async with rpc:
        initialized = await rpc.request(
            "initialize", {"protocolVersion": HANDSHAKE, "capabilities": {}, "clientInfo": CLIENT_INFO}
        )
        assert initialized["serverInfo"]["name"] == "platpay"
        assert initialized["serverInfo"]["version"] == importlib.metadata.version("platpay") != ""
        await rpc.notify("notifications/initialized")
        tools = (await rpc.request("tools/list", {}))["tools"]

        async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return await rpc.request("tools/call", {"name": name, "arguments": arguments})

        await exercise_and_check(call, tools, **accounts, run=run)

        # Bad arguments: platpay's error shape, each field named, not the SDK's pydantic text.
        bad = await call("transfer_out", {"destination": {"accountId": accounts["bank_id"]}, "amount": "-5"})
        error = json.loads(bad["content"][0]["text"])
        assert bad["isError"] is True and bad["_meta"]["error"] == error, bad
        assert (error["status"], error["code"]) == (400, "INVALID_INPUT"), error
        assert {"source", "amount"} <= {field["field"] for field in error["details"]["fields"]}, error


def test_every_tool_answers_what_its_schema_promises_over_stdio_and_streamable_http(
    processes: ProcessManager, tmp_path: Path, master_key: str
) -> None:
    """A regression: get_transaction advertised `{result: transaction}` and answered the transaction, so every
    call failed. Every tool `tools/list` names is called on its success path with real data (a funded
    customer, quotes, transfers both ways, external accounts added and removed) by a client that is not the
    MCP SDK, and each structuredContent is checked against the tool's outputSchema with `jsonschema`."""
    env = process_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}",
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_JOB_POLL_SECONDS="0.05",
        PLATPAY_SANDBOX_SETTLEMENT_SECONDS="0.2",
    )
    sandbox = credentials(create_platform(processes, env), "sandbox")
    _server, base_url = start_server(processes, env)
    with api_client(base_url, sandbox) as platform:
        holder = open_holder(platform)
        assert fund(platform, holder.account_id, 100_000).status_code == 200
        created = platform.post(
            "/agents", json={"name": "schemas", "customerId": holder.customer_id, "policy": agent_policy()}
        )
        assert created.status_code == 201, created.text
        code = created.json()["deviceCode"]["code"]
        token = httpx.post(
            f"{base_url}{BASE_PATH}/agents/device-codes/{code}/redeem", trust_env=False
        ).json()["accessToken"]
    mcp_env = process_env(PLATPAY_AGENT_TOKEN=token, PLATPAY_API_URL=base_url + BASE_PATH)
    accounts = {"account_id": holder.account_id, "bank_id": next(iter(holder.banks.values()))}

    anyio.run(every_tool_over, StdioRpc(mcp_env, tmp_path / "mcp-stdio.log"), accounts, 0)
    _, url = http_session_factory(processes, mcp_env)
    anyio.run(every_tool_over, HttpRpc(url), accounts, 1)
    verify_ledger(processes, env)
