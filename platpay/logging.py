"""Structured JSON logs. Secrets never reach a log line: nothing logs headers or bodies, and a processor
masks any key that looks secret as a second line of defence."""

from __future__ import annotations

import functools
import logging
import sys
from typing import Any

import structlog

_SECRET_MARKERS = ("secret", "password", "authorization", "token", "key", "signature", "otp")
_ALLOWED = {"token_id", "idempotency_key_present", "job_id", "request_id"}


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


def configure(level: str = "INFO", *, json_output: bool = True) -> None:
    logging.basicConfig(
        format="%(message)s", stream=sys.stdout, level=getattr(logging, level.upper(), logging.INFO)
    )
    renderer = structlog.processors.JSONRenderer() if json_output else structlog.dev.ConsoleRenderer()
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            _redact,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(getattr(logging, level.upper(), logging.INFO)),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stdout),
        cache_logger_on_first_use=False,
    )
