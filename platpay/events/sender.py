"""The webhook POST: a small HTTP/1.1 client over asyncio (httptools parses the answer), keeping connections
alive per endpoint.

Why not httpx: a delivery does one thing, a POST of a few hundred bytes to one URL, and httpx's general
machinery (its request and response models, anyio's streams, the connection pool's bookkeeping) cost most of
a worker's CPU per delivery (bench/README.md, `webhook_throughput.py`: ~2.7 ms of a `--lanes webhooks`
worker's CPU per delivery, most of it in httpx). Here a request is one write of preformatted bytes and the
answer is parsed in C as it arrives.

What it does: `http` and `https` (certifi's CA bundle, as httpx; the URL's host checked against the certificate), one
request at a time per connection, idle connections kept per (scheme, host, port) and reused, never a proxy,
never a redirect (a 3xx is the answer), the answer's body read up to a limit. A connection the endpoint closed
while idle is not reused; a request sent on a reused connection that the endpoint closed before answering
anything is sent again once on a new connection (the envelope id makes a duplicate harmless: at least once).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from dataclasses import dataclass, field
from typing import cast
from urllib.parse import quote, urlsplit

import certifi
import httptools

_URL_SAFE = "!#$%&'()*+,/:;=?@[]~"
# Idle connections kept per endpoint (scheme, host, port): as many as may be in flight to it at once.
MAX_IDLE_PER_ENDPOINT = 100


class ClosedBeforeAnswer(ConnectionError):
    """The endpoint closed the connection before answering anything."""


class InvalidAnswer(Exception):
    """The endpoint answered something that is not HTTP/1.x."""


class ConnectTimeout(Exception):
    """No connection to the endpoint within the connect timeout."""


@dataclass
class Answer:
    status: int
    body: bytes


@dataclass(eq=False)
class _Connection(asyncio.Protocol):
    """One connection: one request at a time, the answer parsed as it arrives."""

    body_limit: int
    transport: asyncio.Transport | None = None
    closed: bool = False
    _parser: httptools.HttpResponseParser | None = None
    _answer: asyncio.Future[Answer] | None = None
    _status: int = 0
    _chunks: list[bytes] = field(default_factory=list)
    _size: int = 0
    _received_any: bool = False
    _headers_done: bool = False
    _framed: bool = False  # the answer says where its body ends (Content-Length, chunked)
    _keep_alive: bool = True

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # (uvloop's is not an asyncio.Transport subclass)

    def data_received(self, data: bytes) -> None:
        if self._parser is None or self._answer is None or self._answer.done():
            self._close()  # bytes nobody asked for: the connection is not in a known state
            return
        self._received_any = True
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as error:
            self._fail(InvalidAnswer(f"not an HTTP answer: {error}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        if self._answer is None or self._answer.done():
            return
        if self._headers_done and not self._framed:  # an answer delimited by the connection's end
            self._answer.set_result(Answer(self._status, b"".join(self._chunks)))
        elif not self._received_any:
            self._answer.set_exception(ClosedBeforeAnswer("the endpoint closed the connection"))
        else:
            self._answer.set_exception(InvalidAnswer("the connection closed in the middle of the answer"))

    # httptools callbacks
    def on_header(self, name: bytes, _value: bytes) -> None:
        if name.lower() in (b"content-length", b"transfer-encoding"):
            self._framed = True

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        self._status = self._parser.get_status_code()
        self._keep_alive = self._parser.should_keep_alive()
        self._headers_done = self._status >= 200  # (a 1xx is followed by the answer itself)

    def on_body(self, body: bytes) -> None:
        if self._answer is None or self._answer.done():
            return
        kept = body[: self.body_limit - self._size]
        self._chunks.append(kept)
        self._size += len(kept)
        if len(kept) < len(body):  # more than is kept: the answer as read so far, the rest not waited for
            self._answer.set_result(Answer(self._status, b"".join(self._chunks)))
            self._close()

    def on_message_complete(self) -> None:
        if not self._headers_done:  # the end of a 1xx: the answer comes next
            self._chunks, self._size, self._framed = [], 0, False
            return
        if self._answer is not None and not self._answer.done():
            self._answer.set_result(Answer(self._status, b"".join(self._chunks)))
        if not self._keep_alive:
            self._close()

    def _fail(self, error: Exception) -> None:
        if self._answer is not None and not self._answer.done():
            self._answer.set_exception(error)
        self._close()

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    @property
    def reusable(self) -> bool:
        return (
            not self.closed
            and self._keep_alive
            and self.transport is not None
            and not self.transport.is_closing()
        )

    async def request(self, data: bytes) -> Answer:
        """Send one request (its bytes, whole) and wait for its answer (the caller bounds the wait)."""
        assert self.transport is not None
        self._parser = httptools.HttpResponseParser(self)
        self._answer = asyncio.get_running_loop().create_future()
        self._status, self._chunks, self._size = 0, [], 0
        self._received_any = self._headers_done = False
        self.transport.write(data)
        try:
            return await self._answer
        except BaseException:
            self._close()  # a timeout or a failure: the connection's state is unknown
            raise


@dataclass(frozen=True)
class _Target:
    scheme: str
    host: str
    port: int
    target: bytes  # the request target: path and query
    host_header: bytes

    @classmethod
    def of(cls, url: str) -> _Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        default_port = 443 if parts.scheme == "https" else 80
        port = parts.port or default_port
        host = parts.hostname if parts.hostname.isascii() else parts.hostname.encode("idna").decode("ascii")
        shown = f"[{host}]" if ":" in host else host
        host_header = shown if port == default_port else f"{shown}:{port}"
        # what is not ASCII (or a space) in the path and query, percent-encoded as a browser would
        target = quote((parts.path or "/") + (f"?{parts.query}" if parts.query else ""), safe=_URL_SAFE)
        return cls(parts.scheme, host, port, target.encode("ascii"), host_header.encode("ascii"))


class Sender:
    """POSTs with connections kept alive per endpoint; one per event loop (`delivery._sender()`)."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._tls: ssl.SSLContext | None = None

    async def post(
        self,
        url: str,
        body: bytes,
        headers: dict[str, str],
        *,
        connect_timeout: float,
        body_limit: int,
    ) -> Answer:
        """POST `body` to `url` and read the answer (its body up to `body_limit` bytes). The caller bounds
        the whole exchange (asyncio.timeout); connecting alone is bounded by `connect_timeout` (ConnectTimeout)."""
        target = _Target.of(url)
        head = [b"POST ", target.target, b" HTTP/1.1\r\nHost: ", target.host_header, b"\r\n"]
        for name, value in headers.items():
            head += [name.encode("latin-1"), b": ", value.encode("latin-1"), b"\r\n"]
        head += [b"Content-Length: ", str(len(body)).encode(), b"\r\n\r\n", body]
        data = b"".join(head)
        connection = self._idle_connection(target)
        if connection is not None:
            try:
                answer = await connection.request(data)
            except ClosedBeforeAnswer:  # closed by the endpoint while idle, as we sent: once more, anew
                connection = None
            else:
                self._release(target, connection)
                return answer
        connection = await self.connect(target, timeout=connect_timeout, body_limit=body_limit)
        answer = await connection.request(data)
        self._release(target, connection)
        return answer

    def _idle_connection(self, target: _Target) -> _Connection | None:
        idle = self._idle.get((target.scheme, target.host, target.port))
        while idle:
            connection = idle.pop()
            if connection.reusable:
                return connection
        return None

    def _release(self, target: _Target, connection: _Connection) -> None:
        if not connection.reusable:
            connection._close()
            return
        idle = self._idle.setdefault((target.scheme, target.host, target.port), [])
        if len(idle) >= MAX_IDLE_PER_ENDPOINT:
            connection._close()
            return
        idle.append(connection)

    async def connect(self, target: _Target, *, timeout: float, body_limit: int) -> _Connection:
        loop = asyncio.get_running_loop()
        tls = None
        if target.scheme == "https":
            if self._tls is None:  # the CA bundle httpx (platpay's other HTTP client) trusts: certifi's
                self._tls = ssl.create_default_context(cafile=certifi.where())
            tls = self._tls
        try:
            async with asyncio.timeout(
                timeout
            ):  # (the caller's own, longer, bound ends it as a cancellation)
                _, connection = await loop.create_connection(
                    lambda: _Connection(body_limit=body_limit),
                    target.host,
                    target.port,
                    ssl=tls,
                    server_hostname=target.host if tls is not None else None,
                )
        except TimeoutError:
            raise ConnectTimeout(f"could not connect within {timeout:g}s") from None
        return connection

    async def close(self) -> None:
        for idle in self._idle.values():
            for connection in idle:
                connection._close()
        self._idle.clear()
        with contextlib.suppress(Exception):
            await asyncio.sleep(0)  # let the transports close
