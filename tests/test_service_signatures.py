"""Services are callable from anywhere (docs/architecture.md): outside the HTTP layer no function takes a
request body model (an `ApiRequest`) or a Starlette `Request`, so jobs and tests call them exactly as the
endpoints do, with plain values or domain types."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import typing
from typing import Any

from starlette.requests import Request

import platpay
from platpay.kit.api_model import ApiRequest

# The HTTP layer: routes and what they are made of, which do take requests and bodies.
HTTP_MODULES = {
    "platpay.app",
    "platpay.middleware",
    "platpay.kit.routing",
    "platpay.kit.pagination",
    "platpay.kit.idempotency",
    "platpay.auth.principals",
    "platpay.mcp.server",  # the MCP server's own Starlette app (its /healthz route)
}


def _is_http_module(name: str) -> bool:
    leaf = name.rsplit(".", 1)[-1]
    # The console's pages are the HTTP layer of people's browsers, as endpoints are of the API's clients.
    console = name == "platpay.console" or name.startswith("platpay.console.")
    return name in HTTP_MODULES or console or leaf.endswith(("endpoints", "schemas"))


def _offending(annotation: Any) -> list[str]:
    """The request types an annotation names (inside unions, lists, ...; a `type[...]` is a class, not a body)."""
    if typing.get_origin(annotation) is type:
        return []
    if inspect.isclass(annotation) and issubclass(annotation, ApiRequest | Request):
        return [annotation.__name__]
    return [name for arg in typing.get_args(annotation) for name in _offending(arg)]


def _functions(module: Any) -> list[tuple[str, Any]]:
    found = []
    for name, value in vars(module).items():
        if getattr(value, "__module__", None) != module.__name__:
            continue
        if inspect.isfunction(value):
            found.append((name, value))
        elif inspect.isclass(value) and not issubclass(value, ApiRequest):
            found += [(f"{name}.{n}", f) for n, f in vars(value).items() if inspect.isfunction(f)]
    return found


def test_no_service_takes_a_request_body_or_a_request():
    wrong = []
    for info in pkgutil.walk_packages(platpay.__path__, prefix="platpay."):
        if _is_http_module(info.name):
            continue
        module = importlib.import_module(info.name)
        for name, function in _functions(module):
            try:
                hints = typing.get_type_hints(function)
            except NameError:  # an annotation only a type checker resolves: not a request type
                continue
            for parameter, annotation in hints.items():
                if parameter != "return" and (types := _offending(annotation)):
                    wrong.append(f"{info.name}.{name}({parameter}: {', '.join(types)})")
    assert not wrong, "services take plain values or domain types, not HTTP requests:\n" + "\n".join(wrong)
