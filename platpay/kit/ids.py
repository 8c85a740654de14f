"""Identifiers: `<Type>:<uuid7>`, time-ordered so that keyset pagination follows creation order."""

from __future__ import annotations

import re
import threading
import time
import uuid
from datetime import datetime

from platpay.kit.entropy import random_bytes

_lock = threading.Lock()
_last_ms = 0
_counter = 0

UUID_RE = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _uuid7_value() -> int:
    """RFC 9562 UUIDv7 as an int, with a 12-bit counter in rand_a, monotonic within this process (its random
    bits from kit/entropy.py)."""
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
            _counter = random_bytes(1)[0]  # random start leaves headroom
        rand_b = int.from_bytes(random_bytes(8), "big") & ((1 << 62) - 1)
        return (
            ((ms & ((1 << 48) - 1)) << 80) | (0x7 << 76) | ((_counter & 0xFFF) << 64) | (0b10 << 62) | rand_b
        )


def uuid7() -> uuid.UUID:
    """RFC 9562 UUIDv7 with a 12-bit counter in rand_a, monotonic within this process."""
    return uuid.UUID(int=_uuid7_value())


def new_id(prefix: str) -> str:
    """`<prefix>:<uuid7>`, the UUID in its canonical text (formatted here: `str(uuid.UUID(...))` costs
    more than the UUID itself, and every row and event takes one)."""
    h = f"{_uuid7_value():032x}"
    return f"{prefix}:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def first_at(prefix: str, at: datetime) -> str:
    """The smallest id `new_id(prefix)` can return at `at` or later (its UUIDv7 with `at`'s millisecond
    and every other bit zero): ids of one prefix made before `at` compare lower as strings, so a primary key
    answers "made before `at`" (retention) without an index of its own. Ids are made on the wall clock of
    the process that made them, not on a tenant's or a test's clock."""
    ms = int(at.timestamp() * 1000) & ((1 << 48) - 1)
    return f"{prefix}:{uuid.UUID(int=(ms << 80) | (0x7 << 76))}"


def is_id(value: str, prefix: str) -> bool:
    return bool(re.fullmatch(rf"{re.escape(prefix)}:{UUID_RE}", value))
