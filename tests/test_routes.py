"""No route redirects: a path with a trailing slash is an unknown route, answered 404 in
the error shape, never a 307 to the path without it (behind a proxy that redirect named another host, and
the client following it dropped its Authorization header). Runs on every backend."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi.routing import APIRoute

from tests.support.agents import connect, funded_customer
from tests.support.api_errors import assert_error

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def assert_not_found_without_redirect(response: httpx.Response) -> None:
    assert "location" not in response.headers, response.headers
    body = assert_error(response, 404, "NOT_FOUND")
    assert response.request.url.path in body["message"]


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


class TestTrailingSlash:
    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            ("GET", "/cards/", None),
            ("GET", "/customers/", None),
            ("GET", "/transactions/", None),
            ("POST", "/transfer-out/", {"source": {"accountId": "a"}, "destination": {"accountId": "b"}}),
            ("POST", "/quotes/", {}),
            ("POST", "/customers/", {"customerType": "INDIVIDUAL"}),
            ("PATCH", "/config/", {}),
            ("PATCH", "/cards/Card:x/", {"state": "FROZEN"}),
            ("DELETE", "/tokens/Token:x/", None),
            ("DELETE", "/agents/Agent:x/", None),
        ],
    )
    @pytest.mark.parametrize("credentials", ["none", "platform"])
    async def test_is_404_in_the_error_shape_with_no_location(
        self, client, auth, method, path, body, credentials
    ):
        response = await client.request(
            method, path, json=body, auth=auth if credentials == "platform" else None
        )
        assert_not_found_without_redirect(response)

    async def test_is_404_for_an_agent_token_too(self, client, auth):
        funded = await funded_customer(client, auth)
        agent = await connect(client, auth, funded["customer"]["id"])
        for method, path in [("GET", "/agents/me/"), ("POST", "/agents/me/transfer-out/")]:
            response = await client.request(method, path, headers=agent["headers"], json={})
            assert_not_found_without_redirect(response)

    @pytest.mark.parametrize(
        "path",
        ["/healthz/", "/readyz/", "/metrics/", "/openapi.json/", "/docs/", "/docs/assets", "/docs/assets/"],
    )
    async def test_operations_and_docs_paths_do_not_redirect_either(self, client, path):
        assert_not_found_without_redirect(await client.get(f"http://testserver{path}"))

    async def test_no_route_of_the_app_redirects_with_a_trailing_slash(self, app, client, auth):
        """Every route the app serves, each of its methods, with a slash added: 404, never a 3xx."""
        tried = 0
        for route in app.router.routes:
            if not isinstance(route, APIRoute):
                continue
            path = _concrete(route.path) + "/"
            for method in sorted(route.methods & set(METHODS)):
                response = await client.request(method, f"http://testserver{path}", auth=auth)
                assert not 300 <= response.status_code < 400, (method, path, response.status_code)
                assert_not_found_without_redirect(response)
                tried += 1
        assert tried > 100  # every operation of the API, not a handful

    async def test_the_path_without_the_slash_still_answers(self, client, auth):
        response = await client.get("/cards", auth=auth)
        assert response.status_code == 200, response.text
