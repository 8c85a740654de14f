"""How `platpay mcp` reaches platpay's HTTP API: one small interface, two ways to speak it.

A tool call is one API request, so the client's own cost is on the MCP layer's critical path. httpx costs
~0.5-1 ms of CPU per request (cookies, auth and redirect layers, httpcore's pool and its async-library
sniffing); the MCP layer's whole budget is 2 ms. So plain `http://` URLs (the default, platpay on
loopback) go through `KeepAliveApi`: HTTP/1.1 over asyncio streams, a few persistent connections, a
Content-Length or chunked body — all a JSON API needs. `https://` URLs and the tests' in-process ASGI
transport go through `HttpxApi`. Both raise `ApiUnreachable` for anything below HTTP."""

from __future__ import annotations

import asyncio
import json as jsonlib
import time
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlencode, urlsplit

import httpx

USER_AGENT = "platpay-mcp"
IDLE_SECONDS = 4.0  # reuse a kept-alive connection only this long (uvicorn closes idle ones after 5 s)
MAX_IDLE_CONNECTIONS = 8
MAX_HEADER_BYTES = 64 * 1024
MAX_BODY_BYTES = 16 * 1024 * 1024


class ApiUnreachable(Exception):
    """No HTTP answer: connection refused or reset, timeout, or a malformed response."""


@dataclass(frozen=True)
class ApiResponse:
    status_code: int
    content: bytes

    def json(self) -> Any:
        return jsonlib.loads(self.content)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class Api(Protocol):
    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse: ...

    async def aclose(self) -> None: ...


def connect(
    api_url: str, *, token: str, timeout: float = 30.0, transport: httpx.AsyncBaseTransport | None = None
) -> Api:
    """The client for `api_url` (base URL including the version path), sending the agent's token."""
    if transport is None and urlsplit(api_url).scheme == "http":
        return KeepAliveApi(api_url, token=token, timeout=timeout)
    return HttpxApi(api_url, token=token, timeout=timeout, transport=transport)


class HttpxApi:
    def __init__(
        self, api_url: str, *, token: str, timeout: float, transport: httpx.AsyncBaseTransport | None
    ) -> None:
        self._client = httpx.AsyncClient(
            base_url=api_url.rstrip("/"),
            headers={"Authorization": f"Bearer {token}", "User-Agent": USER_AGENT},
            timeout=httpx.Timeout(timeout),
            trust_env=False,
            transport=transport,
        )

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        try:
            response = await self._client.request(method, path, json=json, params=params, headers=headers)
        except httpx.HTTPError as error:
            raise ApiUnreachable(type(error).__name__) from None
        return ApiResponse(response.status_code, response.content)

    async def aclose(self) -> None:
        await self._client.aclose()


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float = 0.0

    def close(self) -> None:
        self.writer.close()


class KeepAliveApi:
    """HTTP/1.1 keep-alive client for a plain-HTTP platpay. Concurrent requests each take their own
    connection; up to MAX_IDLE_CONNECTIONS wait for reuse. A request that fails on a reused connection
    before a single byte of answer arrived (the server had closed it while idle, so it never read the
    request) is sent once more on a new connection; any later failure is ApiUnreachable, never a resend."""

    def __init__(self, api_url: str, *, token: str, timeout: float) -> None:
        parts = urlsplit(api_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"KeepAliveApi needs an http:// URL, not {api_url!r}")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._base_path = parts.path.rstrip("/")
        host_header = parts.netloc.rsplit("@", 1)[-1]
        self._fixed = (
            f"Host: {host_header}\r\nAuthorization: Bearer {token}\r\nUser-Agent: {USER_AGENT}\r\n"
            "Accept: application/json\r\n"
        ).encode("latin-1")
        self._timeout = timeout
        self._idle: list[_Connection] = []

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> ApiResponse:
        target = self._base_path + path
        if params:
            pairs = [
                (name, _query_value(item))
                for name, value in params.items()
                for item in (value if isinstance(value, list | tuple) else [value])
            ]
            target += "?" + urlencode(pairs)
        body = b"" if json is None else jsonlib.dumps(json, separators=(",", ":")).encode()
        head = [f"{method} {target} HTTP/1.1\r\n".encode("latin-1"), self._fixed]
        for name, value in (headers or {}).items():
            _check_header(name, value)
            head.append(f"{name}: {value}\r\n".encode("latin-1"))
        if json is not None:
            head.append(b"Content-Type: application/json\r\n")
        if json is not None or method in ("POST", "PUT", "PATCH"):
            head.append(f"Content-Length: {len(body)}\r\n".encode("latin-1"))
        message = b"".join(head) + b"\r\n" + body
        try:
            async with asyncio.timeout(self._timeout):
                return await self._exchange(message)
        except TimeoutError:
            raise ApiUnreachable("timeout") from None

    async def _exchange(self, message: bytes) -> ApiResponse:
        connection = self._take()
        if connection is not None:
            try:
                return await self._send(connection, message)
            except _NothingReceived:
                pass  # closed by the server while idle: it never read this request
        try:
            reader, writer = await asyncio.open_connection(self._host, self._port)
        except OSError as error:
            raise ApiUnreachable(type(error).__name__) from None
        try:
            return await self._send(_Connection(reader, writer), message)
        except _NothingReceived:
            raise ApiUnreachable("connection closed without an answer") from None

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if now - connection.idle_since < IDLE_SECONDS and not connection.reader.at_eof():
                return connection
            connection.close()
        return None

    async def _send(self, connection: _Connection, message: bytes) -> ApiResponse:
        reader, writer = connection.reader, connection.writer
        received = False
        try:
            writer.write(message)
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            received = True
            status, length, chunked, close = _parse_head(head)
            if chunked:
                content = await _read_chunked(reader)
            elif length is not None:
                if length > MAX_BODY_BYTES:
                    raise ApiUnreachable(f"response body of {length} bytes")
                content = await reader.readexactly(length) if length else b""
            elif status in (204, 304) or 100 <= status < 200:
                content = b""
            else:
                content = await _read_to_end(reader)  # delimited by the connection's end
                close = True
        except asyncio.IncompleteReadError as error:
            connection.close()
            if not received and not error.partial:
                raise _NothingReceived from None
            raise ApiUnreachable("connection closed mid-answer") from None
        except (OSError, asyncio.LimitOverrunError) as error:
            connection.close()
            if not received and isinstance(error, ConnectionError):
                raise _NothingReceived from None
            raise ApiUnreachable(type(error).__name__) from None
        except BaseException:
            connection.close()  # cancelled or timed out mid-exchange: the stream's state is unknown
            raise
        if close or len(self._idle) >= MAX_IDLE_CONNECTIONS:
            connection.close()
        else:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        return ApiResponse(status, content)

    async def aclose(self) -> None:
        while self._idle:
            self._idle.pop().close()


class _NothingReceived(Exception):
    pass


def _parse_head(head: bytes) -> tuple[int, int | None, bool, bool]:
    """(status, content length, chunked, connection closes) of a response head, or ApiUnreachable."""
    if len(head) > MAX_HEADER_BYTES:
        raise ApiUnreachable("response head too large")
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
        raise ApiUnreachable("not an HTTP/1.x response")
    status = int(parts[1])
    length: int | None = None
    chunked = False
    close = parts[0] == "HTTP/1.0"
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        value = value.strip()
        if name == "content-length":
            if not value.isdigit():
                raise ApiUnreachable("bad Content-Length")
            length = int(value)
        elif name == "transfer-encoding":
            chunked = "chunked" in value.lower()
        elif name == "connection":
            close = value.lower() == "close" or (close and value.lower() != "keep-alive")
    return status, length, chunked, close


async def _read_to_end(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while chunk := await reader.read(64 * 1024):
        total += len(chunk)
        if total > MAX_BODY_BYTES:
            raise ApiUnreachable("response body too large")
        chunks.append(chunk)
    return b"".join(chunks)


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    total = 0
    while True:
        size_line = await reader.readuntil(b"\r\n")
        try:
            size = int(size_line.split(b";", 1)[0].strip(), 16)
        except ValueError:
            raise ApiUnreachable("bad chunk size") from None
        if size == 0:
            while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                pass
            return b"".join(chunks)
        total += size
        if total > MAX_BODY_BYTES:
            raise ApiUnreachable("response body too large")
        chunks.append(await reader.readexactly(size))
        await reader.readexactly(2)


def _query_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _check_header(name: str, value: str) -> None:
    if any(c in name or c in value for c in "\r\n"):
        raise ValueError(f"header {name!r} holds a line break")
