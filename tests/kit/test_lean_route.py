"""An operation whose inputs are plain (a JSON body, one-valued path and header parameters, dependencies
taking only the request and such headers: GET /config, POST /transfer-out, POST /tokens, DELETE
/tokens/{tokenId}) is answered without FastAPI's per-request machinery (kit/routing.py
`ApiRoute._lean_app`): every request gets the answer FastAPI's own app for the route gives."""

from __future__ import annotations

import base64
import json
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

    async def test_no_operation_with_query_parameters_or_a_route_class_of_its_own_is(self, app) -> None:
        lean = _lean_routes(app)
        assert {("POST", f"{BASE_PATH}/transfer-out"), ("POST", f"{BASE_PATH}/tokens")} <= {
            (method, route.path) for route in lean for method in route.methods
        }
        for route in lean:
            assert not route.dependant.query_params and not route.dependant.cookie_params
            assert type(route).get_route_handler is ApiRoute.get_route_handler
        customers = [
            route for route in app.router.routes if getattr(route, "path", "") == f"{BASE_PATH}/customers"
        ]
        assert customers and not [route for route in customers if route in lean]  # it names rule problems too

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


def _route(app: FastAPI, method: str, path: str) -> ApiRoute:
    return next(
        route
        for route in app.router.routes
        if isinstance(route, ApiRoute) and route.path == f"{BASE_PATH}{path}" and method in route.methods
    )


def _comparable(response: httpx.Response) -> tuple[int, Any]:
    """The status and the body, but for what differs from request to request (ids, times, secrets)."""
    try:
        body = response.json()
    except ValueError:
        return response.status_code, response.content
    if response.status_code < 300 and isinstance(body, dict):
        return response.status_code, sorted(body)
    return response.status_code, body


class TestLeanRoutesWithInputs:
    """POST /transfer-out, POST /tokens and DELETE /tokens/{tokenId}, each request sent to the lean app and
    to FastAPI's, the same in both but for its Idempotency-Key (a fresh one each time, so neither replays)."""

    async def _both(self, app: FastAPI, method: str, path: str, route_path: str, sends: list[Any]) -> None:
        route = _route(app, method, route_path)
        lean = route.app
        assert lean.__qualname__.startswith("ApiRoute._lean_app")
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
            for number, (headers, content) in enumerate(sends):
                answers = []
                for which in ("lean", "fastapi"):
                    route.app = lean if which == "lean" else request_response(route.get_route_handler())
                    try:
                        sent = dict(headers)
                        if sent.get("Idempotency-Key") == "fresh":
                            sent["Idempotency-Key"] = f"k-{which}-{number}"
                        answers.append(
                            _comparable(await client.request(method, path, headers=sent, content=content))
                        )
                    finally:
                        route.app = lean
                assert answers[0] == answers[1], (number, headers, content, answers)

    async def test_transfer_out(self, app, auth, client) -> None:
        from tests.factories import customer, external_account, fund, internal_account

        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 1_000_000)
        bank = await external_account(client, auth, person["id"])
        good = {"Authorization": _basic(f"{auth[0]}:{auth[1]}"), "Content-Type": "application/json"}
        keyed = {**good, "Idempotency-Key": "fresh"}
        valid = json.dumps(
            {"source": {"accountId": account["id"]}, "destination": {"accountId": bank["id"]}, "amount": 100}
        ).encode()
        await self._both(
            app,
            "POST",
            "/transfer-out",
            "/transfer-out",
            [
                (keyed, valid),
                (good, valid),  # no key
                ({**good, "Idempotency-Key": "x" * 300}, valid),  # a key too long
                ({**good, "Idempotency-Key": ""}, valid),
                (keyed, b""),
                (keyed, b"{}"),
                (keyed, b"[]"),
                (keyed, b'{"source": {}, "destination": {"accountId": 5}, "amount": "ten"}'),
                (keyed, valid.replace(b'"amount": 100', b'"amount": -1')),
                (keyed, valid.replace(b'"amount": 100', b'"amount": 100000000000')),  # more than the balance
                (keyed, valid.replace(account["id"].encode(), b"InternalAccount:nope")),
                (keyed, b"{nope"),
                ({**keyed, "Content-Type": "text/plain"}, valid),
                ({"Content-Type": "application/json", "Idempotency-Key": "fresh"}, valid),  # no credentials
                ({**keyed, "Authorization": _basic(f"{auth[0]}:wrong")}, b"{}"),
            ],
        )

    async def test_tokens(self, app, auth, client) -> None:
        good = {"Authorization": _basic(f"{auth[0]}:{auth[1]}"), "Content-Type": "application/json"}
        keyed = {**good, "Idempotency-Key": "fresh"}
        await self._both(
            app,
            "POST",
            "/tokens",
            "/tokens",
            [
                (keyed, b'{"name": "t", "permissions": ["VIEW"]}'),
                (keyed, b'{"name": "t", "permissions": ["FLY"]}'),
                (keyed, b'{"permissions": "VIEW"}'),
                (keyed, b'{"name": "t", "permissions": ["VIEW"], "name": "u"}'),
                ({**good, "Content-Type": "application/json; charset=latin-1"}, b'{"name": "t"}'),
            ],
        )
        await self._both(
            app,
            "DELETE",
            "/tokens/Token:nope",
            "/tokens/{tokenId}",
            [(good, None), ({}, None), ({**good, "Content-Type": "application/json"}, b'{"a": 1}')],
        )


pytestmark = pytest.mark.usefixtures("db")
