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
from platpay.kit.routing import by_specificity, takes_requests_of

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


class TestByTheirRequests:
    def test_a_parameter_takes_the_requests_of_a_literal_where_they_first_differ(self) -> None:
        assert takes_requests_of("/customers/{customerId}", "/customers/internal-accounts")
        assert takes_requests_of("/agents/{agentId}/quotes/{quoteId}", "/agents/me/quotes/{quoteId}")
        assert not takes_requests_of("/customers/internal-accounts", "/customers/{customerId}")

    def test_paths_that_share_no_request_take_nothing(self) -> None:
        assert not takes_requests_of("/agents/{agentId}/policy", "/agents/me/quotes")
        assert not takes_requests_of("/a/{id}", "/b/c")
        assert not takes_requests_of("/a/{id}", "/a/{other}")

    def test_a_path_parameter_takes_the_rest_of_the_path(self) -> None:
        assert takes_requests_of("/docs/{rest:path}", "/docs/assets/app.js")
        assert not takes_requests_of("/docs/assets/app.js", "/docs/{rest:path}")

    def test_routes_keep_their_order_but_where_one_would_take_anothers_requests(self) -> None:
        paths = ["/a/{id}", "/c", "/a/b", "/a/{id}", "/a"]
        methods = ["GET", "GET", "POST", "DELETE", "GET"]
        routes = [
            APIRoute(p, endpoint=lambda: None, methods=[m]) for p, m in zip(paths, methods, strict=True)
        ]
        ordered = by_specificity(routes)
        assert [(r.path, next(iter(r.methods))) for r in ordered] == [
            ("/c", "GET"),
            ("/a/b", "POST"),
            ("/a/{id}", "GET"),
            ("/a/{id}", "DELETE"),
            ("/a", "GET"),
        ]
