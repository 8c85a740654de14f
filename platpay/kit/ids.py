"""Identifiers: `<Type>:<uuid7>`, time-ordered so that keyset pagination follows creation order."""

from __future__ import annotations

import os
import re
import threading
import time
import uuid
from datetime import datetime

_lock = threading.Lock()
_last_ms = 0
_counter = 0

UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def uuid7() -> uuid.UUID:
    """RFC 9562 UUIDv7 with a 12-bit counter in rand_a, monotonic within this process."""
    global _last_ms, _counter
    with _lock:
        ms = time.time_ns() // 1_000_000
        if ms <= _last_ms:
            _counter += 1
            if _counter > 0xFFF:  # counter exhausted within one millisecond: borrow the next one
                _last_ms += 1
                _counter = 0
            ms = _last_ms
        else:
            _last_ms = ms
            _counter = int.from_bytes(os.urandom(1), "big")  # random start leaves headroom
        rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
        value = (ms & ((1 << 48) - 1)) << 80
        value |= 0x7 << 76
        value |= (_counter & 0xFFF) << 64
        value |= 0b10 << 62
        value |= rand_b
        return uuid.UUID(int=value)


def new_id(prefix: str) -> str:
    return f"{prefix}:{uuid7()}"


def first_at(prefix: str, at: datetime) -> str:
    """The smallest id `new_id(prefix)` can return at `at` or later (its UUIDv7 with `at`'s millisecond
    and every other bit zero): ids of one prefix made before `at` compare lower as strings, so a primary key
    answers "made before `at`" (retention) without an index of its own. Ids are made on the wall clock of
    the process that made them, not on a tenant's or a test's clock."""
    ms = int(at.timestamp() * 1000) & ((1 << 48) - 1)
    return f"{prefix}:{uuid.UUID(int=(ms << 80) | (0x7 << 76))}"


def is_id(value: str, prefix: str) -> bool:
    return bool(re.fullmatch(rf"{re.escape(prefix)}:{UUID_RE}", value))
