"""Every API endpoint and every dependency it resolves is a coroutine: FastAPI runs a plain function (or a
class used as `Depends()`) in a worker thread, a thread hop per request. `Idempotent = Depends()` did that on
every idempotent POST and cost POST /transfer-out about a tenth of its CPU (bench/README.md, the fast path)."""

from __future__ import annotations

import inspect
from typing import Any

from fastapi.routing import APIRoute

from platpay.app import create_app
from platpay.config import get_settings


def _is_coroutine(call: Any) -> bool:
    if inspect.iscoroutinefunction(call):
        return True
    # An instance with an async __call__ (TokenAuth); a class is called synchronously to build it.
    return not inspect.isclass(call) and inspect.iscoroutinefunction(type(call).__call__)


def _threaded(dependant: Any, path: list[str]) -> list[str]:
    found = []
    for sub in dependant.dependencies:
        name = getattr(sub.call, "__qualname__", repr(sub.call))
        if sub.call is not None and not _is_coroutine(sub.call):
            found.append(" -> ".join([*path, name]))
        found += _threaded(sub, [*path, name])
    return found


def test_no_endpoint_or_dependency_runs_in_a_worker_thread() -> None:
    app = create_app(get_settings(), embedded_worker=False)
    routes = [route for route in app.routes if isinstance(route, APIRoute)]
    assert len(routes) > 40  # the domains' routes were discovered
    threaded = [f"{route.path}: endpoint" for route in routes if not _is_coroutine(route.endpoint)]
    for route in routes:
        threaded += [f"{route.path}: {chain}" for chain in _threaded(route.dependant, [])]
    assert threaded == [], "run in a worker thread per request:\n" + "\n".join(sorted(threaded))


def test_the_check_sees_a_class_dependency() -> None:
    class Plain:
        def __init__(self, value: int = 0) -> None:
            self.value = value

    async def coroutine() -> None:
        return None

    assert not _is_coroutine(Plain)
    assert not _is_coroutine(lambda: None)
    assert _is_coroutine(coroutine)
