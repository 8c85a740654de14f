"""The webhook POST's HTTP/1.1 client (events/sender.py) against scripted servers on 127.0.0.1: what it
sends, the answers it reads (length, chunked, until close), keep-alive reuse, and how it fails."""

from __future__ import annotations

import asyncio
import ipaddress
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from platpay.events.delivery import close_clients, send
from platpay.events.sender import Sender

Answerer = Callable[[bytes], Awaitable[bytes | None]]  # a request's bytes -> the answer's (None: close)


@dataclass
class Server:
    """Reads whole requests (headers and a Content-Length body) and writes what `answer` returns for each."""

    answer: Answerer
    requests: list[bytes] = field(default_factory=list)
    connections: int = 0
    port: int = 0
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":", 1)[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length:")
                )
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                reply = await self.answer(request)
                if reply is None:
                    break
                writer.write(reply)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hooks?x=1"


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[Answerer], Awaitable[Server]]]:
    servers: list[asyncio.Server] = []

    async def start(answer: Answerer) -> Server:
        server = Server(answer)
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
        server.port = listening.sockets[0].getsockname()[1]
        servers.append(listening)
        return server

    yield start
    await close_clients()
    for listening in servers:
        listening.close()


def ok(body: bytes = b'{"ok":true}', *, close: bool = False) -> bytes:
    connection = b"Connection: close\r\n" if close else b""
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), connection, body)


async def post(url: str, body: bytes = b'{"id":"Webhook:1"}', *, timeout: float = 2.0, max_chars: int = 100):
    return await send(
        url, body, {"Content-Type": "application/json", "X-Sig": "v1=abc"}, timeout=timeout,
        max_chars=max_chars, connect_timeout=1.0,
    )  # fmt: skip


class TestWhatItSends:
    async def test_one_post_with_host_length_headers_and_body(self, serve):
        server = await serve(lambda _request: asyncio.sleep(0, ok()))
        result = await post(server.url, b'{"id":"Webhook:1"}')
        assert (result.status, result.body, result.error) == (200, '{"ok":true}', None)
        [request] = server.requests
        head, body = request.split(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        assert lines[0] == b"POST /hooks?x=1 HTTP/1.1"
        assert {line.split(b": ", 1)[0].lower(): line.split(b": ", 1)[1] for line in lines[1:]} == {
            b"host": f"127.0.0.1:{server.port}".encode(),
            b"content-type": b"application/json",
            b"x-sig": b"v1=abc",
            b"content-length": b"18",
        }
        assert body == b'{"id":"Webhook:1"}'

    async def test_keeps_the_connection_alive_between_posts(self, serve):
        server = await serve(lambda _request: asyncio.sleep(0, ok()))
        for _ in range(5):
            assert (await post(server.url)).status == 200
        assert server.connections == 1 and len(server.requests) == 5

    async def test_posts_at_once_take_a_connection_each_then_reuse_them(self, serve):
        async def slowly(_request: bytes) -> bytes:
            await asyncio.sleep(0.05)
            return ok()

        server = await serve(slowly)
        for _ in range(2):
            results = await asyncio.gather(*(post(server.url) for _ in range(3)))
            assert [result.status for result in results] == [200] * 3
        assert server.connections == 3 and len(server.requests) == 6


class TestAnswers:
    async def test_a_redirect_is_the_answer_not_followed(self, serve):
        server = await serve(
            lambda _request: asyncio.sleep(
                0, b"HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:1/\r\nContent-Length: 0\r\n\r\n"
            )
        )
        result = await post(server.url)
        assert (result.status, result.body) == (302, "")
        assert len(server.requests) == 1

    async def test_a_chunked_answer_is_read_and_its_connection_reused(self, serve):
        chunked = b"HTTP/1.1 409 Conflict\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"
        server = await serve(lambda _request: asyncio.sleep(0, chunked))
        for _ in range(2):
            result = await post(server.url)
            assert (result.status, result.body) == (409, "hello world")
        assert server.connections == 1

    async def test_an_answer_delimited_by_the_connections_end(self, serve):
        async def until_close(_request: bytes) -> bytes | None:
            server.writers[-1].write(b"HTTP/1.0 200 OK\r\n\r\nall of it")
            return None  # then closes

        server = await serve(until_close)
        result = await post(server.url)
        assert (result.status, result.body) == (200, "all of it")
        assert (await post(server.url)).status == 200  # on a new connection
        assert server.connections == 2

    async def test_a_body_past_the_limit_is_cut_and_the_rest_not_waited_for(self, serve):
        async def endless(_request: bytes) -> bytes:
            server.writers[-1].write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000000\r\n\r\n" + b"x" * 10_000)
            await asyncio.sleep(5)  # the other 99.99 MB never come
            return b""

        server = await serve(endless)
        result = await post(server.url, max_chars=100)
        assert (result.status, result.body, result.error) == (200, "x" * 100, None)
        assert server.connections == 1

    async def test_an_answer_cut_short_by_the_connections_end_is_a_failed_attempt(self, serve):
        async def short(_request: bytes) -> bytes | None:
            server.writers[-1].write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this")
            return None

        server = await serve(short)
        result = await post(server.url)
        assert result.status is None
        assert result.error == "InvalidAnswer: the connection closed in the middle of the answer"

    async def test_an_interim_1xx_is_skipped_for_the_answer_after_it(self, serve):
        server = await serve(
            lambda _request: asyncio.sleep(0, b"HTTP/1.1 100 Continue\r\n\r\n" + ok(b"done"))
        )
        result = await post(server.url)
        assert (result.status, result.body) == (200, "done")

    async def test_connection_close_is_honoured(self, serve):
        server = await serve(lambda _request: asyncio.sleep(0, ok(close=True)))
        for _ in range(2):
            assert (await post(server.url)).status == 200
        assert server.connections == 2


class TestFailures:
    async def test_an_idle_connection_the_endpoint_closed_is_not_a_failed_attempt(self, serve):
        server = await serve(lambda _request: asyncio.sleep(0, ok()))
        assert (await post(server.url)).status == 200
        server.writers[-1].close()  # the endpoint's idle timeout
        await asyncio.sleep(0.05)
        assert (await post(server.url)).status == 200
        assert server.connections == 2 and len(server.requests) == 2

    async def test_a_reused_connection_closed_as_the_post_went_out_is_sent_once_more_anew(self, serve):
        answers = iter([ok(), None, ok()])  # the second request: read, then the connection closed

        async def answer(_request: bytes) -> bytes | None:
            return next(answers)

        server = await serve(answer)
        assert (await post(server.url)).status == 200
        assert (await post(server.url)).status == 200
        assert server.connections == 2 and len(server.requests) == 3  # at least once: the same body twice
        assert server.requests[1] == server.requests[2]

    async def test_a_new_connection_closed_without_an_answer_is_a_failed_attempt(self, serve):
        server = await serve(lambda _request: asyncio.sleep(0, None))
        result = await post(server.url)
        assert result.status is None
        assert result.error == "ClosedBeforeAnswer: the endpoint closed the connection"
        assert len(server.requests) == 1  # not sent again

    async def test_something_that_is_not_http_is_a_failed_attempt(self, serve):
        server = await serve(lambda _request: asyncio.sleep(0, b"SSH-2.0-OpenSSH_9.6\r\n"))
        result = await post(server.url)
        assert result.status is None and result.error.startswith("InvalidAnswer: not an HTTP answer")

    async def test_no_answer_in_time_is_a_timeout_and_the_connection_is_not_reused(self, serve):
        replies = iter([asyncio.sleep(5, ok()), asyncio.sleep(0, ok())])
        server = await serve(lambda _request: next(replies))
        result = await post(server.url, timeout=0.3)
        assert (result.status, result.error) == (None, "timed out after 0.3s")
        assert (await post(server.url)).status == 200
        assert server.connections == 2

    async def test_nothing_listening_is_a_connection_error(self):
        result = await post("http://127.0.0.1:9/hooks")
        assert result.status is None and result.error.startswith("ConnectionRefusedError")

    async def test_not_an_http_url_is_a_failed_attempt(self):
        result = await post("ftp://127.0.0.1/hooks")
        assert (
            result.status is None
            and result.error == "ValueError: not an http(s) URL: 'ftp://127.0.0.1/hooks'"
        )


async def test_closing_the_sender_closes_its_idle_connections(serve):
    server = await serve(lambda _request: asyncio.sleep(0, ok()))
    sender = Sender()
    answer = await sender.post(server.url, b"{}", {}, connect_timeout=1.0, body_limit=100)
    assert answer.status == 200
    await sender.close()
    await asyncio.sleep(0.05)
    assert server.writers[-1].is_closing()


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key: (cert, key) PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=1))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


class TestHttps:
    @pytest.fixture
    async def tls_server(self, tmp_path: Path) -> AsyncIterator[tuple[Server, Path]]:
        cert, key = _self_signed(tmp_path)
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.load_cert_chain(cert, key)
        server = Server(lambda _request: asyncio.sleep(0, ok()))
        listening = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=context)
        server.port = listening.sockets[0].getsockname()[1]
        yield server, cert
        await close_clients()
        listening.close()

    async def test_a_certificate_no_trusted_authority_signed_is_refused(self, tls_server):
        server, _ = tls_server
        result = await post(f"https://127.0.0.1:{server.port}/hooks")
        assert result.status is None and result.error.startswith("SSLCertVerificationError"), result.error
        assert server.requests == []

    async def test_a_trusted_certificate_for_the_host_is_accepted_and_the_connection_kept(
        self, tls_server, monkeypatch
    ):
        server, cert = tls_server
        import certifi

        monkeypatch.setattr(certifi, "where", lambda: str(cert))  # trusted, as if a CA had signed it
        for _ in range(2):
            assert (await post(f"https://127.0.0.1:{server.port}/hooks")).status == 200
        assert server.connections == 1 and len(server.requests) == 2
