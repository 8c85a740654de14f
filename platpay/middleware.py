"""One pure-ASGI layer at the edge: request id, body size limit, metrics and the access log.

A single layer (not BaseHTTPMiddleware) keeps per-request overhead low; it never reads bodies or headers
into the log, so no secret can reach a log line from here.

A request refused before its body was read (413 for a body over the limit) has the rest of its body read
and discarded first, up to DRAIN_MAX_BYTES and DRAIN_MAX_SECONDS: closing a connection with unread data
in it resets it (TCP RST), and a client still sending its body would then lose the 413 it had not read
yet. A body too large (or too slow) to drain gets its answer on a connection closed right after it.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
import time
from typing import Any
from urllib.parse import parse_qsl

import structlog

from platpay import BASE_PATH
from platpay.db import replica
from platpay.errors import ApiError, InvalidInput, PayloadTooLarge
from platpay.kit import clock
from platpay.logging import log_request
from platpay.metrics import record_request
from platpay.tenants import context as tenant_context

REQUEST_ID_HEADER = b"x-request-id"
_VALID_REQUEST_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
_QUIET_PATHS = {"/healthz", "/readyz", "/metrics"}
DRAIN_MAX_BYTES = 8 * 1024 * 1024
DRAIN_MAX_SECONDS = 2.0


class _RequestIds:
    """Request ids: 32 hex characters, a random prefix per process and a counter. Unique (the prefix is
    64 random bits, drawn again in a forked child) without a getrandom system call per request, which
    uuid4 makes (~2% of a small request's CPU). Not secrets: they are echoed in headers and logs."""

    prefix = os.urandom(8).hex()
    counter = itertools.count()

    @classmethod
    def renew(cls) -> None:
        cls.prefix = os.urandom(8).hex()
        cls.counter = itertools.count()


os.register_at_fork(after_in_child=_RequestIds.renew)


def _new_request_id() -> str:
    return f"{_RequestIds.prefix}{next(_RequestIds.counter):016x}"


class EdgeMiddleware:
    def __init__(self, app: Any, *, max_body_bytes: int, body_limits: dict[str, int]) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes
        # A key ending in `/*` sets the limit of every path below it (`/documents/*`: PUT /documents/{id}).
        self.body_limits = {path: limit for path, limit in body_limits.items() if not path.endswith("/*")}
        self.prefix_limits = tuple(
            (path[:-1], limit) for path, limit in body_limits.items() if path.endswith("/*")
        )

    def _prefix_limit(self, path: str) -> int:
        for prefix, limit in self.prefix_limits:
            if path.startswith(prefix):
                return limit
        return self.max_body_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request_id = None
        content_length = None
        expects_continue = False
        for name, value in scope["headers"]:
            if name == REQUEST_ID_HEADER:
                candidate = value.decode("latin-1")
                request_id = candidate if _VALID_REQUEST_ID.match(candidate) else None
            elif name == b"content-length":
                content_length = value
            elif name == b"expect":
                expects_continue = value.lower() == b"100-continue"
        request_id = request_id or _new_request_id()
        scope.setdefault("state", {})["request_id"] = request_id
        structlog.contextvars.clear_contextvars()
        structlog.contextvars.bind_contextvars(request_id=request_id)
        limit = self.body_limits.get(scope["path"])
        if limit is None:
            limit = self._prefix_limit(scope["path"])
        status_holder = [500]
        encoded_id = request_id.encode()
        body_left_unread = [False]  # a refused body not drained: the answer closes the connection

        async def send_with_id(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status_holder[0] = message["status"]
                headers = [*message.get("headers", []), (REQUEST_ID_HEADER, encoded_id)]
                if body_left_unread[0]:
                    headers.append((b"connection", b"close"))
                message["headers"] = headers
            await send(message)

        received = 0

        async def limited_receive() -> dict[str, Any]:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    ended = not message.get("more_body", False) or await _drain(receive)
                    body_left_unread[0] = not ended
                    raise PayloadTooLarge(
                        f"request body exceeds the {limit}-byte limit", details={"limitBytes": limit}
                    )
            return message

        try:
            declared = int(content_length) if content_length is not None else None
        except ValueError:
            declared = None
        nul_fields = _nul_fields(scope)
        try:
            error: ApiError
            if nul_fields:
                error = InvalidInput(
                    "invalid input: the URL must not contain NUL characters", details={"fields": nul_fields}
                )
                await _refuse_unread(
                    send_with_id, error, receive, declared=declared, waiting=expects_continue
                )
            elif declared is not None and declared > limit:
                error = PayloadTooLarge(
                    f"request body of {declared} bytes exceeds the {limit}-byte limit",
                    details={"limitBytes": limit},
                )
                await _refuse_unread(
                    send_with_id, error, receive, declared=declared, waiting=expects_continue
                )
            else:
                clock_token = clock.use(None)  # authentication sets the tenant's clock for this request
                writer_token = replica.acting_for(None)  # and the tenant its writes are recorded for
                tenant_token = tenant_context.act_for(None)  # and the tenant as it read it
                try:
                    await self.app(scope, limited_receive, send_with_id)
                finally:
                    tenant_context.restore(tenant_token)
                    replica.restore(writer_token)
                    clock.restore(clock_token)
        finally:
            elapsed = time.perf_counter() - started
            route = scope.get("route")
            template = getattr(route, "path_format", None) or getattr(route, "path", None) or "unmatched"
            template = template.removeprefix(BASE_PATH) or template  # routes are named without the version
            method = scope["method"]
            status = status_holder[0]
            record_request(method, template, status, elapsed)
            if scope["path"] not in _QUIET_PATHS:
                log_request(
                    request_id,
                    method=method,
                    # a path holding a secret (a KYC link's token, an agent's device code) is logged as its route
                    path=template if "{token}" in template or "{code}" in template else scope["path"],
                    route=template,
                    status=status,
                    duration_ms=round(elapsed * 1000, 2),
                    client=(scope.get("client") or ("-",))[0],
                )


def _nul_fields(scope: dict[str, Any]) -> list[dict[str, str]]:
    """Path and query parameters holding a NUL character: no identifier or filter can, and PostgreSQL
    refuses to compare text with one, so they are refused here before any route sees them."""
    fields = []
    message = "must not contain NUL characters"
    if "\x00" in scope["path"]:
        fields.append({"field": "path", "location": "path", "message": message})
    query = scope.get("query_string", b"")
    if b"%00" in query or b"\x00" in query:
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if "\x00" in name or "\x00" in value:
                field = name.replace("\x00", "\\x00")
                fields.append({"field": field, "location": "query", "message": message})
    return fields


async def _drain(receive: Any) -> bool:
    """Read and discard the rest of a request body, up to DRAIN_MAX_BYTES and DRAIN_MAX_SECONDS; whether it
    ended (False: too much, too slow, or the client went away)."""
    drained = 0
    try:
        async with asyncio.timeout(DRAIN_MAX_SECONDS):
            while drained <= DRAIN_MAX_BYTES:
                message = await receive()
                if message["type"] != "http.request":
                    return False
                if not message.get("more_body", False):
                    return True
                drained += len(message.get("body", b""))
    except TimeoutError:
        return False
    return False


async def _refuse_unread(
    send: Any, error: ApiError, receive: Any, *, declared: int | None, waiting: bool
) -> None:
    """Answer `error` to a request whose body was not read: drained first when that is bounded, so the
    client reads the answer; not when the client waits for `100 Continue` (it sends nothing until then,
    and never will: the connection closes after the answer)."""
    drainable = not waiting and (declared is None or declared <= DRAIN_MAX_BYTES)
    ended = declared == 0 or (drainable and await _drain(receive))
    payload = json.dumps(error.body(), separators=(",", ":")).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    if not ended:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
