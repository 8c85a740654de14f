"""The app tries its routes by specificity (kit/routing.py `by_specificity`), not in an order the domains
coordinate: every route takes its own requests, and every request reaches the endpoint it reached when the
order was hand-kept (the order /openapi.json still lists, kit/openapi.py `documented_order`)."""

from __future__ import annotations

import re

import pytest
from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match

from platpay.app import create_app
from platpay.config import get_settings
from platpay.kit.openapi import documented_order
from platpay.kit.routing import by_specificity, specificity

PARAMETER = re.compile(r"^\{[^}]+\}$")


@pytest.fixture(scope="module")
def served() -> FastAPI:
    return create_app(get_settings(), embedded_worker=False)  # routing needs no database


def _first(routes: list[BaseRoute], path: str, method: str) -> BaseRoute | None:
    scope = {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}
    return next((route for route in routes if route.matches(scope)[0] is Match.FULL), None)


def _samples(route: APIRoute, literals: dict[int, set[str]]) -> list[str]:
    """Concrete paths of the route: every parameter "x", then one parameter at a time each literal another
    route has at its place (an agent id "me", a customer id "internal-accounts")."""
    segments = route.path.split("/")
    plain = ["x" if PARAMETER.match(s) else s for s in segments]
    samples = ["/".join(plain)]
    for index, segment in enumerate(segments):
        if PARAMETER.match(segment):
            samples += [
                "/".join([*plain[:index], literal, *plain[index + 1 :]]) for literal in literals[index]
            ]
    return samples


def _api_routes(app: FastAPI) -> list[APIRoute]:
    return [route for route in app.router.routes if isinstance(route, APIRoute)]


def test_every_route_takes_its_own_requests(served) -> None:
    routes = list(served.router.routes)
    for route in _api_routes(served):
        path = "/".join("x" if PARAMETER.match(s) else s for s in route.path.split("/"))
        for method in route.methods:
            assert _first(routes, path, method) is route, (method, route.path)


def test_every_request_reaches_the_endpoint_the_hand_kept_order_chose(served) -> None:
    routes, hand_kept = list(served.router.routes), documented_order(served.router.routes)
    literals: dict[int, set[str]] = {}
    for route in _api_routes(served):
        for index, segment in enumerate(route.path.split("/")):
            if not PARAMETER.match(segment):
                literals.setdefault(index, set()).add(segment)
    tried = 0
    for route in _api_routes(served):
        for path in _samples(route, literals):
            for method in route.methods:
                now, before = _first(routes, path, method), _first(hand_kept, path, method)
                assert now is before, (
                    method,
                    path,
                    getattr(now, "path", None),
                    getattr(before, "path", None),
                )
                tried += 1
    assert tried > 1_000


class TestSpecificity:
    def test_a_literal_goes_before_a_parameter_where_they_first_differ(self) -> None:
        assert specificity("/customers/internal-accounts") < specificity("/customers/{customerId}")
        assert specificity("/agents/me/quotes/{quoteId}") < specificity("/agents/{agentId}/policy")

    def test_a_path_parameter_goes_after_every_segment_parameter(self) -> None:
        assert specificity("/docs/{name}") < specificity("/docs/{rest:path}")

    def test_routes_of_one_path_keep_their_order(self) -> None:
        paths = ["/a/{id}", "/a/b", "/a/{id}", "/a"]
        routes = [
            APIRoute(path, endpoint=lambda: None, methods=[m])
            for path, m in zip(paths, ["GET", "POST", "DELETE", "GET"], strict=True)
        ]
        ordered = by_specificity(routes)
        assert [r.path for r in ordered] == ["/a", "/a/b", "/a/{id}", "/a/{id}"]
        assert [next(iter(r.methods)) for r in ordered[2:]] == ["GET", "DELETE"]
