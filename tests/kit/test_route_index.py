"""The app's dispatch by path segments (kit/routing.py `RouteIndex`) picks, for every request, the route the
full walk of every route in order picks: the first full match, else the first partial one (405), else none;
and it serves the requests through the app as before (a late route, a 405 naming every method, a 404)."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from starlette.routing import BaseRoute, Match, Route

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.config import get_settings
from platpay.kit.routing import RouteIndex

METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


@pytest.fixture(scope="module")
def served() -> FastAPI:
    return create_app(get_settings(), embedded_worker=False)  # routing needs no database


def _walk(routes: list[BaseRoute], path: str, method: str) -> tuple[Match, BaseRoute | None, Any]:
    scope = {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}
    partial: tuple[Match, BaseRoute | None, Any] = (Match.NONE, None, None)
    for route in routes:
        match, child = route.matches(scope)
        if match is Match.FULL:
            return match, route, child.get("path_params")
        if match is Match.PARTIAL and partial[1] is None:
            partial = (match, route, child.get("path_params"))
    return partial


def _paths(app: FastAPI) -> list[str]:
    """Every route's path with its parameters filled in (with "x", and with each literal segment of the app,
    so that a parameter meets the literals of the routes beside it), and paths no route serves."""
    literals = {s for r in app.router.routes for s in getattr(r, "path", "").split("/") if "{" not in s}
    paths = {
        "/",
        "//",
        "/x",
        BASE_PATH,
        f"{BASE_PATH}/",
        f"{BASE_PATH}//config",
        "/healthz/",
        "/docs/assets/",
    }
    for route in app.router.routes:
        path = getattr(route, "path_format", None) or getattr(route, "path", "")
        plain = re.sub(r"\{[^}]+\}", "x", path)
        paths |= {plain, plain + "/", plain + "/x", plain.rsplit("/", 1)[0] + "/nope"}
        for literal in sorted(literals)[:: max(1, len(literals) // 12)]:
            paths.add(re.sub(r"\{[^}]+\}", literal or "x", path))
    paths.add("/docs/assets/swagger-ui.css")
    return sorted(paths)


def test_every_request_gets_the_route_the_full_walk_gives(served: FastAPI) -> None:
    index = served.router.middleware_stack
    assert isinstance(index, RouteIndex)
    routes = list(served.router.routes)
    checked = 0
    for path in _paths(served):
        candidates = index.candidates(path)
        assert len(candidates) <= len(routes)
        for method in METHODS:
            assert _walk(candidates, path, method) == _walk(routes, path, method), (method, path)
            checked += 1
    assert checked > 1000


def test_a_request_is_matched_against_a_few_routes_only(served: FastAPI) -> None:
    index = served.router.middleware_stack
    assert isinstance(index, RouteIndex)
    total = len(served.router.routes)
    assert total > 150
    for path in (f"{BASE_PATH}/config", f"{BASE_PATH}/transfer-out", "/healthz", f"{BASE_PATH}/cards/Card:x"):
        assert len(index.candidates(path)) < 20, path


def test_a_route_added_later_is_served() -> None:
    async def late(_request: Any) -> Any:  # pragma: no cover - only matched
        raise AssertionError

    app = create_app(get_settings(), embedded_worker=False)
    app.router.routes.append(Route("/late/{x}", late))
    fresh = app.router.middleware_stack
    assert isinstance(fresh, RouteIndex)
    assert "/late/{x}" in [getattr(r, "path", None) for r in fresh.candidates("/late/1")]


async def test_the_app_answers_through_the_index(app: Any, auth: Any) -> None:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver", auth=auth) as client:
        assert (await client.get("/healthz")).status_code == 200  # one of the last routes
        config = await client.get(f"{BASE_PATH}/config")
        assert config.status_code == 200, config.text
        refused = await client.delete(f"{BASE_PATH}/config")
        assert refused.status_code == 405
        assert refused.headers["allow"] == "GET, PATCH"
        assert refused.json()["code"] == "METHOD_NOT_ALLOWED"
        missing = await client.get(f"{BASE_PATH}/no-such-thing")
        assert missing.status_code == 404
        assert missing.json()["message"] == f"no such endpoint: GET {BASE_PATH}/no-such-thing"
