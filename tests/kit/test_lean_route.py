"""An operation with no parameters, no body and only its authentication as a dependency (GET /config) is
answered without FastAPI's per-request machinery (kit/routing.py `ApiRoute._lean_app`): every request gets
the answer FastAPI's own app for the route gives."""

from __future__ import annotations

import base64
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.routing import request_response

from platpay import BASE_PATH
from platpay.kit.routing import ApiRoute


def _basic(text: str) -> str:
    return "Basic " + base64.b64encode(text.encode()).decode()


def _config_route(app: FastAPI) -> ApiRoute:
    return next(
        route
        for route in app.router.routes
        if isinstance(route, ApiRoute) and route.path == f"{BASE_PATH}/config" and "GET" in route.methods
    )


def _lean_routes(app: FastAPI) -> list[ApiRoute]:
    return [
        route
        for route in app.router.routes
        if isinstance(route, ApiRoute) and route.app.__qualname__.startswith("ApiRoute._lean_app")
    ]


def _answer(response: httpx.Response) -> tuple[int, bytes, list[tuple[str, str]]]:
    headers = sorted((k, v) for k, v in response.headers.items() if k != "x-request-id")
    return response.status_code, response.content, headers


def _requests(auth: tuple[str, str]) -> list[tuple[str, dict[str, str], bytes | None]]:
    client_id, secret = auth
    good = {"Authorization": _basic(f"{client_id}:{secret}")}
    return [
        ("GET", good, None),
        ("HEAD", good, None),
        ("GET", {}, None),
        ("GET", {"Authorization": _basic(f"{client_id}:wrong")}, None),
        ("GET", {"Authorization": _basic(f"nobody:{secret}")}, None),
        ("GET", {"Authorization": _basic("no-colon")}, None),
        ("GET", {"Authorization": "Basic !!not base64"}, None),
        ("GET", {"Authorization": "Basic " + base64.b64encode(b"\xff:\xfe").decode()}, None),
        ("GET", {"Authorization": "Basic"}, None),
        ("GET", {"Authorization": "basic " + _basic(f"{client_id}:{secret}").split(" ")[1]}, None),
        ("GET", {"Authorization": "Bearer abc"}, None),
        ("GET", {"Authorization": "Digest abc"}, None),
        ("GET", {**good, "Content-Type": "application/json"}, b'{"a": 1}'),
        ("GET", {**good, "Content-Type": "application/json"}, b"{}"),
        ("GET", {**good, "Content-Type": "text/plain"}, b"hello"),
    ]


async def _send_all(app: FastAPI, auth: tuple[str, str]) -> list[Any]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
        answers = []
        for method, headers, body in _requests(auth):
            answers.append(_answer(await client.request(method, "/config", headers=headers, content=body)))
        return answers


class TestLeanRoutes:
    async def test_get_config_is_one_of_them(self, app) -> None:
        assert _config_route(app) in _lean_routes(app)

    async def test_no_operation_with_parameters_a_body_or_a_model_response_is(self, app) -> None:
        for route in _lean_routes(app):
            assert route.body_field is None and not route.dependant.query_params
            assert not route.dependant.path_params and len(route.dependant.dependencies) == 1

    async def test_every_request_gets_the_answer_fastapis_app_gives(self, app, auth) -> None:
        route = _config_route(app)
        lean = route.app
        leans = await _send_all(app, auth)
        route.app = request_response(route.get_route_handler())  # what FastAPI builds for the route
        try:
            fastapis = await _send_all(app, auth)
        finally:
            route.app = lean
        assert [leans[0][0], leans[2][0]] == [200, 401]
        for request, (mine, theirs) in zip(_requests(auth), zip(leans, fastapis, strict=True), strict=True):
            assert mine == theirs, request


pytestmark = pytest.mark.usefixtures("db")
