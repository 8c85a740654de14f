"""A body over the limit gets its 413 read by the client, on a real `platpay serve` (uvicorn), through a raw
socket that sends the whole body before reading (so it reads the 413, not a connection reset): the server drains the rest of a refused
body (bounded) before answering, so closing the connection does not reset it under the unread 413."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from platpay import BASE_PATH
from tests.support.processes import ProcessManager, process_env
from tests.support.server import start_server

pytestmark = pytest.mark.e2e

LIMIT = 1_048_576  # the default PLATPAY_MAX_BODY_BYTES
REPEATS = 6


@pytest.fixture
def server(processes: ProcessManager, tmp_path: Path) -> tuple[str, int]:
    env = process_env(
        PLATPAY_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'platpay.db'}",
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_RUN_EMBEDDED_WORKER="false",
    )
    _, base_url = start_server(processes, env, cwd=tmp_path)
    host, port = base_url.removeprefix("http://").split(":")
    return host, int(port)


def _request(headers: dict[str, str]) -> bytes:
    lines = [
        f"POST {BASE_PATH}/tokens HTTP/1.1",
        "Host: platpay.test",
        *(f"{k}: {v}" for k, v in headers.items()),
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _chunked(body: bytes, size: int = 65_536) -> bytes:
    parts = [
        b"%x\r\n%s\r\n" % (len(body[i : i + size]), body[i : i + size]) for i in range(0, len(body), size)
    ]
    return b"".join(parts) + b"0\r\n\r\n"


def _send_all_then_read(address: tuple[str, int], data: bytes) -> bytes:
    """Send everything (as a naive client does), then read the answer to the end. A reset anywhere fails."""
    with socket.create_connection(address, timeout=20) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65_536):
            received += chunk
    return received


def _assert_413(answer: bytes) -> None:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 413 "), answer[:200]
    lengths = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    assert lengths, head
    expected = int(lengths[0].split(b":")[1])
    error = json.loads(body[:expected])
    assert error["status"] == 413 and error["code"] == "PAYLOAD_TOO_LARGE", error
    assert error["details"]["limitBytes"] == LIMIT


OVER_LIMIT = b'{"name": "' + b"x" * (3 * LIMIT) + b'", "permissions": ["VIEW"]}'


class TestOversizedBody:
    def test_a_declared_length_over_the_limit_is_answered_413_every_time(self, server):
        headers = {"Content-Type": "application/json", "Content-Length": str(len(OVER_LIMIT))}
        for _ in range(REPEATS):
            _assert_413(_send_all_then_read(server, _request(headers) + OVER_LIMIT))

    def test_a_chunked_body_over_the_limit_is_answered_413_every_time(self, server):
        headers = {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}
        for _ in range(REPEATS):
            _assert_413(_send_all_then_read(server, _request(headers) + _chunked(OVER_LIMIT)))

    def test_a_client_waiting_for_100_continue_gets_the_413_without_sending_the_body(self, server):
        headers = {
            "Content-Type": "application/json",
            "Content-Length": str(len(OVER_LIMIT)),
            "Expect": "100-continue",
        }
        for _ in range(REPEATS):
            with socket.create_connection(server, timeout=20) as sock:
                sock.sendall(_request(headers))
                received = b""
                while chunk := sock.recv(65_536):  # the server answers and closes: no body was sent
                    received += chunk
            assert b"100 Continue" not in received
            _assert_413(received)
