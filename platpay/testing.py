"""pytest plugin (entry point `pytest11`: platpay): a real platpay for your test suite, one fixture each.

    platpay_server   a real `platpay serve` in a subprocess on a free port of 127.0.0.1, with its own SQLite
                     file (or PLATPAY_TEST_DATABASE_URL), and a sandbox platform; one per test session
    platpay_client   an httpx.Client with the sandbox credentials and the base URL; the sandbox is reset
                     (POST /sandbox/reset) before each test, so tests are isolated without restarting
    webhook_inbox    a real receiver on 127.0.0.1 set as the sandbox's webhookEndpoint; it verifies every
                     signature (X-Svc-Signature) and `wait_for(type, predicate, timeout)` waits for an event
    platpay_clock    the sandbox's clock: `advance(seconds=..., minutes=..., hours=..., days=..., to=...)`,
                     `freeze()`, `unfreeze()`, `reset()`, `now()`

The clock is not rewound between tests (time never moves backwards for a tenant): a test that needs it
running on real time calls `platpay_clock.reset()` (409 while it is ahead).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest

from platpay import BASE_PATH
from platpay.kit.crypto.webhook_signing import HEADER as SIGNATURE_HEADER
from platpay.kit.crypto.webhook_signing import verify_header

STARTUP_SECONDS = 60.0


@dataclass
class PlatpayServer:
    url: str  # http://127.0.0.1:PORT
    platform_id: str
    client_id: str
    client_secret: str
    database_url: str
    log_path: Path
    process: subprocess.Popen[bytes] = field(repr=False)

    @property
    def base_url(self) -> str:
        return self.url + BASE_PATH

    def client(self) -> httpx.Client:
        """A new client with the sandbox credentials (close it, or use it in a `with`)."""
        return httpx.Client(base_url=self.base_url, auth=(self.client_id, self.client_secret), timeout=60)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "platpay.cli", *args]


def start_server(directory: Path, *, database_url: str | None = None) -> PlatpayServer:
    """Migrate, create a platform and serve, in `directory`; returns once /healthz answers."""
    directory.mkdir(parents=True, exist_ok=True)
    database_url = database_url or f"sqlite+aiosqlite:///{directory / 'platpay.db'}"
    port = _free_port()
    env = {
        **os.environ,
        "PLATPAY_DATABASE_URL": database_url,
        "PLATPAY_VAR_DIR": str(directory / "var"),
        "PLATPAY_METRICS_DIR": str(directory / "metrics"),
        "PLATPAY_HOST": "127.0.0.1",
        "PLATPAY_PORT": str(port),
        "PLATPAY_LOG_LEVEL": os.environ.get("PLATPAY_LOG_LEVEL", "WARNING"),
    }
    env.setdefault("PLATPAY_MASTER_KEY", base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode())
    created = subprocess.run(  # noqa: S603 (our own CLI, by sys.executable)
        _command("platform", "create", "--name", "pytest", "--json"),
        env=env,
        capture_output=True,
        check=False,
        timeout=STARTUP_SECONDS,
    )
    if created.returncode != 0:
        raise RuntimeError(f"platpay platform create failed: {created.stderr.decode(errors='replace')}")
    platform = json.loads(created.stdout.decode().strip().splitlines()[-1])
    log_path = directory / "platpay.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(  # noqa: S603 (our own CLI, by sys.executable)
            _command("serve", "--host", "127.0.0.1", "--port", str(port)),
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    server = PlatpayServer(
        url=f"http://127.0.0.1:{port}",
        platform_id=platform["platformId"],
        client_id=platform["sandbox"]["clientId"],
        client_secret=platform["sandbox"]["clientSecret"],
        database_url=database_url,
        log_path=log_path,
        process=process,
    )
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"platpay serve exited with {process.returncode}: {log_path.read_text()[-2000:]}"
            )
        try:
            if httpx.get(server.url + "/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    stop_server(server)
    raise RuntimeError(
        f"platpay serve did not answer within {STARTUP_SECONDS}s: {log_path.read_text()[-2000:]}"
    )


def stop_server(server: PlatpayServer) -> None:
    server.process.terminate()
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait()


@pytest.fixture(scope="session")
def platpay_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PlatpayServer]:
    """A real platpay for the session (see the module)."""
    server = start_server(
        tmp_path_factory.mktemp("platpay"), database_url=os.environ.get("PLATPAY_TEST_DATABASE_URL")
    )
    try:
        yield server
    finally:
        stop_server(server)


@pytest.fixture
def platpay_client(platpay_server: PlatpayServer) -> Iterator[httpx.Client]:
    """An httpx.Client on the sandbox (credentials, base URL), the sandbox reset first."""
    with platpay_server.client() as client:
        reset = client.post("/sandbox/reset")
        if reset.status_code != 200:
            raise RuntimeError(f"POST /sandbox/reset answered {reset.status_code}: {reset.text}")
        yield client


@dataclass
class WebhookEvent:
    type: str
    body: dict[str, Any]
    headers: dict[str, str]

    @property
    def data(self) -> dict[str, Any]:
        return self.body.get("data") or {}


class WebhookInbox:
    """A webhook receiver on 127.0.0.1 that verifies every delivery's signature with the tenant's key
    (a delivery with a bad one is answered 401 and recorded in `invalid`)."""

    def __init__(self, public_key_pem: str) -> None:
        self.public_key_pem = public_key_pem
        self.events: list[WebhookEvent] = []
        self.invalid: list[bytes] = []
        self._cond = threading.Condition()
        inbox = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                signature = self.headers.get(SIGNATURE_HEADER) or ""
                ok = verify_header(inbox.public_key_pem, signature, body)
                with inbox._cond:
                    if ok:
                        parsed = json.loads(body)
                        headers = {k.lower(): v for k, v in self.headers.items()}
                        inbox.events.append(WebhookEvent(parsed.get("type", ""), parsed, headers))
                    else:
                        inbox.invalid.append(body)
                    inbox._cond.notify_all()
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/webhooks"

    def of_type(self, event_type: str) -> list[WebhookEvent]:
        with self._cond:
            return [event for event in self.events if event.type == event_type]

    def wait_for(
        self,
        event_type: str,
        predicate: Callable[[WebhookEvent], bool] | None = None,
        timeout: float = 10.0,
    ) -> WebhookEvent:
        """The first event of `event_type` (received already, or within `timeout` seconds) for which
        `predicate` holds; AssertionError if none arrives."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.events:
                    if event.type == event_type and (predicate is None or predicate(event)):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    seen = sorted({event.type for event in self.events})
                    raise AssertionError(f"no {event_type} webhook within {timeout}s (received: {seen})")
                self._cond.wait(left)

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def webhook_inbox(platpay_client: httpx.Client) -> Iterator[WebhookInbox]:
    """A real receiver set as the sandbox's webhookEndpoint (see WebhookInbox); fails the test if a
    delivery's signature did not verify."""
    config = platpay_client.get("/config")
    config.raise_for_status()
    inbox = WebhookInbox(config.json()["webhookPublicKey"])
    try:
        platpay_client.patch("/config", json={"webhookEndpoint": inbox.url}).raise_for_status()
        yield inbox
        platpay_client.patch("/config", json={"webhookEndpoint": None})
    finally:
        inbox.close()
    assert not inbox.invalid, f"{len(inbox.invalid)} webhook deliveries with a signature that did not verify"


class PlatpayClock:
    """The sandbox tenant's clock, through /sandbox/clock (every call returns the clock as it answers)."""

    def __init__(self, client: httpx.Client) -> None:
        self._client = client

    def _post(self, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        response = self._client.post(f"/sandbox/clock{path}", json=body)
        if response.status_code != 200:
            raise AssertionError(
                f"POST /sandbox/clock{path} answered {response.status_code}: {response.text}"
            )
        return dict(response.json())

    def state(self) -> dict[str, Any]:
        response = self._client.get("/sandbox/clock")
        response.raise_for_status()
        return dict(response.json())

    def now(self) -> datetime:
        return datetime.fromisoformat(self.state()["now"].replace("Z", "+00:00"))

    def advance(
        self,
        seconds: float = 0,
        *,
        minutes: float = 0,
        hours: float = 0,
        days: float = 0,
        to: datetime | None = None,
    ) -> dict[str, Any]:
        """Move forward (everything that became due has run when it returns)."""
        if to is not None:
            return self._post("/advance", {"to": to.isoformat()})
        total = timedelta(seconds=seconds, minutes=minutes, hours=hours, days=days).total_seconds()
        return self._post("/advance", {"seconds": total})

    def freeze(self) -> dict[str, Any]:
        return self._post("/freeze")

    def unfreeze(self) -> dict[str, Any]:
        return self._post("/unfreeze")

    def reset(self) -> dict[str, Any]:
        return self._post("/reset")


@pytest.fixture
def platpay_clock(platpay_client: httpx.Client) -> PlatpayClock:
    """The sandbox's clock (see PlatpayClock)."""
    return PlatpayClock(platpay_client)
