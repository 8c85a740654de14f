"""platpay/mcp/api.py's keep-alive HTTP client against a real socket server whose behaviour each test sets:
reuse, a connection the server closed while idle, chunked bodies, and failures that must not resend."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from jsonschema.validators import validator_for

from platpay.mcp import api
from platpay.mcp.server import any_of_discriminated


@dataclass
class Server:
    port: int = 0
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)


def _answer(body: dict, *, close: bool = False) -> bytes:
    data = json.dumps(body).encode()
    head = f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
    if close:
        head += "Connection: close\r\n"
    return head.encode() + b"\r\n" + data


async def _serve(server: Server, behaviour: str) -> asyncio.Server:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.decode().split("\r\n"):
                    if line.lower().startswith("content-length:"):
                        length = int(line.split(":", 1)[1])
                body = await reader.readexactly(length) if length else b""
                server.requests.append(head + body)
                if behaviour == "mid-answer":
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")
                    await writer.drain()
                    break
                if behaviour == "until-close":  # HTTP/1.0 style: no length, the body ends with the connection
                    writer.write(
                        b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
                        + b'{"big": "'
                        + b"x" * 200_000
                        + b'"}'
                    )
                    await writer.drain()
                    break
                if behaviour == "chunked":
                    writer.write(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                    writer.write(b'4\r\n{"a"\r\n3\r\n: 1\r\n1\r\n}\r\n0\r\n\r\n')
                else:
                    writer.write(_answer({"n": len(server.requests), "head": head.decode()}))
                await writer.drain()
                if behaviour == "close-after-each":  # closes without saying so: the next reuse finds EOF
                    break
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    server.port = listener.sockets[0].getsockname()[1]
    return listener


@pytest.fixture
async def started(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Server, api.Api]]:
    server = Server()
    listener = await _serve(server, request.param)
    client = api.connect(f"http://127.0.0.1:{server.port}/2025-10-13", token="tok_secret", timeout=5)
    assert isinstance(client, api.KeepAliveApi)
    try:
        yield server, client
    finally:
        await client.aclose()
        listener.close()


@pytest.mark.parametrize("started", ["keep-alive"], indirect=True)
async def test_requests_reuse_one_connection_and_carry_the_token(started: tuple[Server, api.Api]) -> None:
    server, client = started
    for n in range(1, 4):
        response = await client.request(
            "POST", "/agents/me/transfer-out", json={"amount": n}, params={"x": True},
            headers={"Idempotency-Key": "k1"},
        )  # fmt: skip
        assert response.status_code == 200 and response.json()["n"] == n
    assert server.connections == 1
    first = server.requests[0].decode()
    assert first.startswith("POST /2025-10-13/agents/me/transfer-out?x=true HTTP/1.1\r\n")
    assert "Authorization: Bearer tok_secret\r\n" in first and "Idempotency-Key: k1\r\n" in first
    assert first.endswith('{"amount":1}')


@pytest.mark.parametrize("started", ["close-after-each"], indirect=True)
async def test_a_connection_closed_while_idle_is_replaced_and_the_request_sent_once(
    started: tuple[Server, api.Api],
) -> None:
    server, client = started
    for n in range(1, 4):
        assert (await client.request("GET", "/agents/me")).json()["n"] == n
        await asyncio.sleep(0.05)  # the server's close reaches the client's socket
    assert server.connections == 3 and len(server.requests) == 3  # nothing sent twice


@pytest.mark.parametrize("started", ["chunked"], indirect=True)
async def test_a_chunked_answer_is_read_whole(started: tuple[Server, api.Api]) -> None:
    _, client = started
    assert (await client.request("GET", "/x")).json() == {"a": 1}
    assert (await client.request("GET", "/x")).json() == {"a": 1}  # and the connection stays usable


@pytest.mark.parametrize("started", ["until-close"], indirect=True)
async def test_a_body_without_length_is_read_to_the_connections_end(started: tuple[Server, api.Api]) -> None:
    server, client = started
    for _ in range(2):  # the second on a new connection
        response = await client.request("GET", "/x")
        assert len(response.content) == 200_011, (len(response.content), response.content[-20:])
        assert len(response.json()["big"]) == 200_000
    assert server.connections == 2


@pytest.mark.parametrize("started", ["mid-answer"], indirect=True)
async def test_an_answer_cut_short_is_an_error_and_never_resent(started: tuple[Server, api.Api]) -> None:
    server, client = started
    with pytest.raises(api.ApiUnreachable, match="mid-answer"):
        await client.request("POST", "/agents/me/transfer-out", json={"amount": 1})
    assert len(server.requests) == 1


async def test_nothing_listening_is_unreachable() -> None:
    listener = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    listener.close()
    await listener.wait_closed()
    client = api.connect(f"http://127.0.0.1:{port}", token="t", timeout=2)
    with pytest.raises(api.ApiUnreachable):
        await client.request("GET", "/agents/me")


def test_https_and_in_process_transports_use_httpx() -> None:
    assert isinstance(api.connect("https://platpay.example/2025-10-13", token="t"), api.HttpxApi)


async def test_a_header_with_a_line_break_is_refused_before_sending() -> None:
    client = api.connect("http://127.0.0.1:9/", token="t")
    with pytest.raises(ValueError, match="line break"):
        await client.request("GET", "/x", headers={"Idempotency-Key": "a\r\nX-Evil: 1"})


def test_discriminated_unions_validate_alike_as_any_of() -> None:
    """The output schemas' oneOf → anyOf rewrite accepts and refuses exactly what the original does."""
    schema = {
        "type": "object",
        "properties": {
            "transaction": {
                "oneOf": [
                    {"type": "object", "properties": {"type": {"const": "INCOMING"}, "a": {"type": "integer"}},
                     "required": ["type", "a"]},
                    {"type": "object", "properties": {"type": {"const": "OUTGOING"}, "b": {"type": "string"}},
                     "required": ["type", "b"]},
                ],
                "discriminator": {"propertyName": "type"},
            }
        },
    }  # fmt: skip
    rewritten = any_of_discriminated(schema)
    assert "anyOf" in rewritten["properties"]["transaction"]
    original, fast = validator_for(schema)(schema), validator_for(rewritten)(rewritten)
    for instance in (
        {"transaction": {"type": "INCOMING", "a": 1}},
        {"transaction": {"type": "OUTGOING", "b": "x"}},
        {"transaction": {"type": "OUTGOING", "a": 1}},
        {"transaction": {"type": "OTHER"}},
        {"transaction": 3},
    ):
        assert original.is_valid(instance) == fast.is_valid(instance), instance
