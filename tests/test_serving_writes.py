"""`platpay serve` sends a response's head and body in one write (platpay/serving.py `OneSendPerTurn`): the
writes a connection makes within one turn of the event loop leave together, in order; a stream's chunks
written in later turns still go out as they come; a close sends what was written first."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route

from platpay.serving import OneSendPerTurn, OneSendPerTurnProtocol
from tests.support.processes import free_port


class _Counting:
    """A real transport, its writes counted (what the wrapper hands it)."""

    def __init__(self, transport: asyncio.Transport) -> None:
        self.transport = transport
        self.writes: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self.transport.write(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.transport, name)


@contextlib.asynccontextmanager
async def _connection() -> AsyncIterator[tuple[OneSendPerTurn, _Counting, asyncio.StreamReader]]:
    """A loopback TCP connection: the client side's transport wrapped, the server side's reader."""
    accepted: asyncio.Queue[asyncio.StreamReader] = asyncio.Queue()

    async def on_client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accepted.put(reader)

    server = await asyncio.start_server(on_client, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    loop = asyncio.get_running_loop()
    transport, _ = await loop.create_connection(asyncio.Protocol, "127.0.0.1", port)
    counting = _Counting(transport)  # type: ignore[arg-type]
    try:
        yield OneSendPerTurn(counting, loop), counting, await accepted.get()  # type: ignore[arg-type]
    finally:
        transport.abort()
        server.close()
        await server.wait_closed()


async def test_writes_of_one_turn_leave_as_one_in_order() -> None:
    async with _connection() as (joined, counting, reader):
        joined.write(b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n")
        joined.write(b"hello")
        assert counting.writes == []  # held until the turn ends
        assert joined.get_write_buffer_size() == 43
        await asyncio.sleep(0)
        assert counting.writes == [b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"]
        assert await reader.readexactly(43) == b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello"


async def test_writes_of_later_turns_go_out_as_they_come() -> None:
    async with _connection() as (joined, counting, reader):
        joined.write(b"first")
        await asyncio.sleep(0)
        assert await reader.readexactly(5) == b"first"  # not held for what comes later
        joined.writelines([b"sec", b"ond"])
        await asyncio.sleep(0)
        assert counting.writes == [b"first", b"second"]
        assert await reader.readexactly(6) == b"second"


async def test_a_close_sends_what_was_written_first_and_an_abort_drops_it() -> None:
    async with _connection() as (joined, counting, reader):
        joined.write(b"last words")
        joined.close()
        assert await reader.read() == b"last words"  # then the end of the stream
    async with _connection() as (joined, counting, reader):
        joined.write(b"never sent")
        joined.abort()
        await asyncio.sleep(0)
        assert counting.writes == []
        assert await reader.read() == b""


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, asyncio.Event]]:
    """uvicorn with platpay's protocol, serving a JSON answer and a stream that waits for its client."""
    received_first = asyncio.Event()

    async def answer(request: Request) -> JSONResponse:
        return JSONResponse({"ok": True, "echo": request.query_params.get("n")})

    async def stream(request: Request) -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            yield b"chunk-1\n"
            await asyncio.wait_for(received_first.wait(), 10)  # sent before the rest exists
            yield b"chunk-2\n"

        return StreamingResponse(chunks(), media_type="text/plain")

    app = Starlette(routes=[Route("/answer", answer), Route("/stream", stream)])
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            app,
            host="127.0.0.1",
            port=port,
            http=OneSendPerTurnProtocol,
            log_level="warning",
            log_config=None,
            lifespan="off",
        )
    )
    task = asyncio.create_task(server.serve())
    for _ in range(200):
        if server.started:
            break
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}", received_first
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 10)


async def test_uvicorn_answers_whole_responses_and_streams_through_it(
    served: tuple[str, asyncio.Event],
) -> None:
    base, received_first = served
    async with httpx.AsyncClient(base_url=base, trust_env=False) as client:
        answers = [
            await client.get("/answer", params={"n": n}) for n in range(3)
        ]  # one kept-alive connection
        assert [a.json() for a in answers] == [{"ok": True, "echo": str(n)} for n in range(3)]
        async with client.stream("GET", "/stream") as streamed:
            lines = streamed.aiter_lines()
            assert await anext(lines) == "chunk-1"
            received_first.set()
            assert await anext(lines) == "chunk-2"
    reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
    writer.write(b"GET /answer HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")  # not kept alive
    received = await asyncio.wait_for(reader.read(), 10)  # all of it, then the server's close
    writer.close()
    assert received.startswith(b"HTTP/1.1 200 OK\r\n") and received.endswith(b'{"ok":true,"echo":null}')
    reader, writer = await asyncio.open_connection("127.0.0.1", int(base.rsplit(":", 1)[1]))
    writer.write(b"GET /answer?n=9 HTTP/1.1\r\nHost: x\r\n\r\n")
    writer.write_eof()  # half-closed: the server's transport closes once it reads the end
    received = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    assert received.startswith(b"HTTP/1.1 200 OK\r\n") and received.endswith(b'{"ok":true,"echo":"9"}')
