"""`running_loop()`: `asyncio.get_running_loop()` without a system call on every call.

On Python 3.11 each `asyncio.get_running_loop()` calls `getpid()` (to tell a loop inherited across a fork
from this process's own), a system call; a request asked for its loop ~4 times (its pools, the access
log's and the metrics' flushes), and a transfer's system calls were mostly such calls and `getrandom`'s
(kit/entropy.py). The loop is kept in the running task's context after its first lookup, with the process
and thread that looked it up: a later call in that task (and in the tasks and callbacks it starts, which
copy its context) uses it while the same process and thread run it, and looks it up again otherwise (a
thread that copied the context, a forked child, a loop no longer running)."""

from __future__ import annotations

import asyncio
import os
import threading
from contextvars import ContextVar

_KNOWN: ContextVar[tuple[int, int, asyncio.AbstractEventLoop] | None] = ContextVar(
    "platpay_running_loop", default=None
)


class _Process:
    pid = os.getpid()


def _forked() -> None:
    _Process.pid = os.getpid()


os.register_at_fork(after_in_child=_forked)


def running_loop() -> asyncio.AbstractEventLoop:
    """The running event loop, as `asyncio.get_running_loop()` (RuntimeError outside one)."""
    known = _KNOWN.get()
    if known is not None:
        pid, thread, loop = known
        if pid == _Process.pid and thread == threading.get_ident() and loop.is_running():
            return loop
    loop = asyncio.get_running_loop()
    _KNOWN.set((_Process.pid, threading.get_ident(), loop))
    return loop
