"""Structured JSON logs. Secrets never reach a log line: nothing logs headers or bodies, a processor masks
any key that looks secret, and another strips the query string and user info from every URL, as second
lines of defence (a webhook endpoint's query string may hold the receiver's API key).

Every line is one JSON object: our structlog loggers render directly, and the standard-library loggers of
the libraries we run (uvicorn, httpx, alembic, asyncio) go through one handler that renders their records
with the same processors. httpx and httpcore log every request URL at INFO and DEBUG, so they are held at
WARNING whatever the configured level.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

import structlog

from platpay.loops import running_loop

_SECRET_MARKERS = ("secret", "password", "authorization", "token", "key", "signature", "otp")
_ALLOWED = {"token_id", "idempotency_key_present", "job_id", "request_id"}

# Loggers that name a URL with its query string below WARNING.
QUIET_LIBRARY_LOGGERS = ("httpx", "httpcore", "hpack")

_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^\s/?#@'\"<>]*@")
_URL_QUERY = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?#'\"<>]*)[?#][^\s'\"<>]*")


@functools.lru_cache(maxsize=4096)
def _is_secret(name: str) -> bool:
    lowered = name.lower()
    return lowered not in _ALLOWED and any(marker in lowered for marker in _SECRET_MARKERS)


def _redact(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    # Runs on every log line (one per request): the verdict per key name is memoized.
    for name in event:
        if _is_secret(name):
            event[name] = "[redacted]"
    return event


def scrub_urls(text: str) -> str:
    """`text` with every URL's user info and query string (and fragment) replaced by a marker."""
    if "://" not in text:
        return text
    text = _URL_USERINFO.sub(r"\1[redacted]@", text)
    return _URL_QUERY.sub(r"\1?[redacted]", text)


def _scrub_urls(_logger: Any, _method: str, event: dict[str, Any]) -> dict[str, Any]:
    for name, value in event.items():
        if isinstance(value, str) and "://" in value:
            event[name] = scrub_urls(value)
    return event


def level_number(level: str) -> int:
    """The numeric level for a name such as "info" (INFO when the name is unknown)."""
    number = logging.getLevelName(level.upper())
    return number if isinstance(number, int) else logging.INFO


def _renderer(json_output: bool) -> Any:
    return structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer()


def _shared_processors() -> list[Any]:
    return [structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso", utc=True)]


def _final_processors() -> list[Any]:
    return [structlog.processors.format_exc_info, _redact, _scrub_urls]


class StdoutHandler(logging.StreamHandler):
    """Writes to whatever sys.stdout is at the time of each record (test runners swap it)."""

    def __init__(self) -> None:
        super().__init__(sys.stdout)

    @property
    def stream(self) -> Any:
        return sys.stdout

    @stream.setter
    def stream(self, _value: Any) -> None:
        pass


def json_formatter(json_output: bool = True) -> logging.Formatter:
    """Renders a standard-library record as one line with our processors (also used by uvicorn)."""
    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_logger_name, *_shared_processors()],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            *_final_processors(),
            _renderer(json_output),
        ],
    )


def uvicorn_log_config(level: str = "INFO", *, json_output: bool = True) -> dict[str, Any]:
    """uvicorn's `log_config`: its loggers through our formatter. A plain dict, so the server processes
    uvicorn spawns apply it before they write their first line."""
    numeric = level_number(level)
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "platpay.logging.json_formatter", "json_output": json_output}},
        "handlers": {"stdout": {"()": "platpay.logging.StdoutHandler", "formatter": "json"}},
        "loggers": {
            "uvicorn": {"handlers": ["stdout"], "level": numeric, "propagate": False},
            "uvicorn.error": {"level": numeric},
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
        },
    }


class _AccessLog:
    """What configure() chose, for the access log's fast path."""

    json_output = True
    enabled = True
    flush_pending: tuple[Any, asyncio.AbstractEventLoop] | None = None  # a flush scheduled: stream, loop


def log_request(request_id: str, **fields: Any) -> None:
    """The access log line of one request: {**fields, event: "request", request_id, level, timestamp}.

    One line per request makes this logging's hot path, so with JSON output it is rendered directly: the
    same keys and values structlog's chain would produce (the fields are the middleware's own, none named
    like a secret; URL user info and query strings are scrubbed all the same), without that chain's
    per-call logger binding and processor calls (~4x the cost)."""
    if not _AccessLog.enabled:
        return
    if not _AccessLog.json_output:
        structlog.get_logger("platpay.access").info("request", **fields)
        return
    for name, value in fields.items():
        if isinstance(value, str) and "://" in value:
            fields[name] = scrub_urls(value)
    fields["event"] = "request"
    fields["request_id"] = request_id
    fields["level"] = "info"
    # Wall-clock time, as structlog's TimeStamper in the other log lines: not the business clock, which
    # tests and sandboxes may freeze.
    fields["timestamp"] = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    stream = sys.stdout  # the current stdout, as structlog's PrintLogger
    stream.write(json.dumps(fields) + "\n")
    _flush_soon(stream)


def _flush_soon(stream: Any) -> None:
    """Flush `stream` once the event loop has run what is ready now: the lines of every request finishing
    in one loop iteration go out in one write (one system call per line was ~4% of a request's CPU under
    load), and none waits longer than that iteration. Outside an event loop: at once."""
    try:
        loop = running_loop()
    except RuntimeError:
        stream.flush()
        return
    pending = _AccessLog.flush_pending
    if pending is None or pending[0] is not stream or pending[1] is not loop:  # another loop's may never run
        _AccessLog.flush_pending = (stream, loop)
        loop.call_soon(_flush, stream)


def _flush(stream: Any) -> None:
    _AccessLog.flush_pending = None
    with contextlib.suppress(ValueError, OSError):  # closed meanwhile (a test's captured stdout)
        stream.flush()


def configure(level: str = "INFO", *, json_output: bool = True) -> None:
    """Idempotent: our one root handler is replaced, any other handler (a test runner's) is kept."""
    numeric = level_number(level)
    _AccessLog.json_output = json_output
    _AccessLog.enabled = numeric <= logging.INFO
    root = logging.getLogger()
    for handler in [h for h in root.handlers if isinstance(h, StdoutHandler)]:
        root.removeHandler(handler)
    handler = StdoutHandler()
    handler.setFormatter(json_formatter(json_output))
    root.addHandler(handler)
    root.setLevel(numeric)
    for name in QUIET_LIBRARY_LOGGERS:
        logging.getLogger(name).setLevel(max(numeric, logging.WARNING))
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *_shared_processors(),
            *_final_processors(),
            _renderer(json_output),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        logger_factory=structlog.PrintLoggerFactory(),  # the current sys.stdout at each line
        cache_logger_on_first_use=False,
    )
