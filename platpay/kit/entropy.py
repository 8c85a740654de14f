"""Random bytes for values that must be unpredictable and unique but are not keys: the random bits of ids
(kit/ids.py) and AES-GCM nonces (kit/crypto/sealing.py).

The operating system's random bytes (`os.urandom`, one `getrandom` system call per call), taken 4 KiB at a
time and handed out in order, each byte once: a transfer takes ~10 such values, whose system calls were
half of the transfer's (bench/README.md, "System calls per request"; the CPU saved is within the noise of
the machine it was measured on). The bytes are the same
cryptographically secure ones; what changes is only that they were read a little earlier. A forked child
drops the parent's unread bytes, so no two processes ever hand out the same bytes. Secrets (keys, tokens,
passwords) keep taking theirs straight from `secrets`."""

from __future__ import annotations

import os
import threading

BLOCK = 4096


class _Unread:
    lock = threading.Lock()
    block = b""
    at = 0


def random_bytes(n: int) -> bytes:
    """`n` random bytes (os.urandom's), never handed out before in this process or another."""
    with _Unread.lock:
        start = _Unread.at
        end = start + n
        if end > len(_Unread.block):
            _Unread.block = os.urandom(max(BLOCK, n))
            start, end = 0, n
        _Unread.at = end
        return _Unread.block[start:end]


def _forget_after_fork() -> None:
    _Unread.lock = threading.Lock()  # (held by another thread of the parent at the fork, it would never open)
    _Unread.block = b""
    _Unread.at = 0


os.register_at_fork(after_in_child=_forget_after_fork)
