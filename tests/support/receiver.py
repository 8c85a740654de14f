"""A real HTTP webhook receiver on 127.0.0.1 (a thread-backed http.server), scriptable per request."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    at: float = field(default_factory=time.monotonic)  # when it arrived

    @property
    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Reply:
    status: int = 200
    body: bytes = b'{"ok":true}'
    delay: float = 0.0


class WebhookReceiver:
    """Answers scripted replies in order (then `default`), and records every request it got.

    `hang()`: from then on it reads each request and never answers (a crashed app behind a live port), and
    records nothing, until `recover()`. `in_flight_peak`: the most requests it held unanswered at once."""

    def __init__(self, default: Reply | None = None) -> None:
        self.default = default or Reply()
        self.script: list[Reply] = []
        self.received: list[Received] = []
        self.hung = 0  # requests it read and never answered
        self.in_flight = 0
        self.in_flight_peak = 0
        self._released = threading.Event()
        self._released.set()
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length)
                if len(body) < length:  # its sender died mid-request (a killed worker): nothing was delivered
                    self.close_connection = True
                    return
                if not receiver._released.is_set():
                    with receiver._lock:
                        receiver.hung += 1
                    receiver._released.wait()
                    self.close_connection = True
                    return  # never answered; the sender gave up long ago
                self._answer(body)

            def _answer(self, body: bytes) -> None:
                with receiver._cond:
                    receiver.received.append(
                        Received(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                    )
                    reply = receiver.script.pop(0) if receiver.script else receiver.default
                    receiver.in_flight += 1
                    receiver.in_flight_peak = max(receiver.in_flight_peak, receiver.in_flight)
                    receiver._cond.notify_all()
                if reply.delay:
                    time.sleep(reply.delay)
                # Counted from arrival until just before answering: within the sender's own in-flight time
                # (after the answer, the sender may finish and send the next one before this thread resumes).
                with receiver._lock:
                    receiver.in_flight -= 1
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            request_queue_size = 128  # a burst of senders is never refused for a full accept queue

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hooks"

    def start(self) -> WebhookReceiver:
        self.thread.start()
        return self

    def stop(self) -> None:
        self._released.set()
        self.server.shutdown()
        self.server.server_close()

    def hang(self) -> None:
        self._released.clear()

    def recover(self) -> None:
        self._released.set()

    def replies(self, *replies: Reply | int) -> None:
        with self._lock:
            self.script.extend(r if isinstance(r, Reply) else Reply(status=r) for r in replies)

    def of_type(self, event_type: str) -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.json.get("type") == event_type]

    def wait_for(self, count: int, *, event_type: str | None = None, timeout: float = 10.0) -> list[Received]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                items = [r for r in self.received if event_type is None or r.json.get("type") == event_type]
                if len(items) >= count:
                    return items
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"expected {count} webhook(s) of type {event_type}, got {len(items)}")
                self._cond.wait(remaining)
