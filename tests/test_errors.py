"""Every framework error reaches the client in our one shape, {status, code, message, details}, with the
right HTTP status; a refused request changes nothing. Runs on every backend."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator

import httpx
import pytest

from platpay import BASE_PATH
from tests.support.api_errors import assert_error, bad_fields
from tests.support.error_codes import REFERENCE_CODES, codes_in_source

VALID_TOKEN = {"name": "ci", "permissions": ["VIEW"]}


async def token_count(client: httpx.AsyncClient, auth: tuple[str, str]) -> int:
    response = await client.get("/tokens", auth=auth)
    assert response.status_code == 200
    return response.json()["totalCount"]


@pytest.fixture
async def unchanged(client: httpx.AsyncClient, auth: tuple[str, str]) -> AsyncIterator[None]:
    """The test's bad requests leave the tokens and the configuration as they were."""
    tokens_before = await token_count(client, auth)
    config_before = (await client.get("/config", auth=auth)).json()
    yield
    assert await token_count(client, auth) == tokens_before
    assert (await client.get("/config", auth=auth)).json() == config_before


class TestRouting:
    @pytest.mark.parametrize(
        "path", [f"{BASE_PATH}/nope", f"{BASE_PATH}/tokens/a/b", "/nope", "/2024-01-01/tokens"]
    )
    async def test_unknown_route_is_404_not_found(self, client, path):
        body = assert_error(await client.get(f"http://testserver{path}"), 404, "NOT_FOUND")
        assert path in body["message"]

    async def test_unknown_route_is_404_even_with_credentials(self, client, auth):
        assert_error(await client.post("/no-such-thing", auth=auth, json={}), 404, "NOT_FOUND")

    @pytest.mark.parametrize(
        ("method", "path", "allowed"),
        [
            ("PUT", "/tokens", {"GET", "POST"}),
            ("POST", "/config", {"GET", "PATCH"}),
            ("PATCH", "/tokens/x", {"GET", "DELETE"}),
        ],
    )
    async def test_wrong_method_is_405_in_json_with_allow(
        self, client, auth, unchanged, method, path, allowed
    ):
        response = await client.request(method, path, auth=auth, json=VALID_TOKEN)
        body = assert_error(response, 405, "METHOD_NOT_ALLOWED")
        assert method in body["message"]
        assert {m.strip() for m in response.headers["allow"].split(",")} >= allowed

    async def test_wrong_method_outside_base_path_is_405(self, client):
        assert_error(await client.post("http://testserver/healthz"), 405, "METHOD_NOT_ALLOWED")


class TestBody:
    @pytest.mark.parametrize("raw", [b"{bad", b'{"name": "x",}', b"\xff\xfe", b"[", b'{"name": "x"'])
    async def test_malformed_json_is_400_invalid_input(self, client, auth, unchanged, raw):
        response = await client.post(
            "/tokens", auth=auth, content=raw, headers={"Content-Type": "application/json"}
        )
        body = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(body) == {"body": "body"}

    async def test_each_bad_field_is_named(self, client, auth, unchanged):
        response = await client.post("/tokens", auth=auth, json={"name": "", "permissions": ["VIEW", "NOPE"]})
        body = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(body) == {"name": "body", "permissions.1": "body"}
        assert "name" in body["message"] and "permissions.1" in body["message"]

    async def test_missing_required_fields_are_named(self, client, auth, unchanged):
        body = assert_error(await client.post("/tokens", auth=auth, json={}), 400, "INVALID_INPUT")
        assert bad_fields(body) == {"name": "body", "permissions": "body"}

    async def test_wrong_types_are_named(self, client, auth, unchanged):
        response = await client.post("/tokens", auth=auth, json={"name": 5, "permissions": "VIEW"})
        body = assert_error(response, 400, "INVALID_INPUT")
        assert set(bad_fields(body)) == {"name", "permissions"}

    async def test_nested_field_is_named_by_its_path(self, client, auth, unchanged):
        currency = {
            "currencyCode": "USD",
            "minAmount": -1,
            "maxAmount": 10,
            "requiredCounterpartyFields": [],
            "enabledTransactionTypes": ["OUTGOING"],
        }
        response = await client.patch("/config", auth=auth, json={"supportedCurrencies": [currency]})
        body = assert_error(response, 400, "INVALID_INPUT")
        assert "supportedCurrencies.0.minAmount" in bad_fields(body)

    async def test_unknown_field_is_400_naming_it(self, client, auth, unchanged):
        response = await client.post("/tokens", auth=auth, json={**VALID_TOKEN, "secret": "x"})
        body = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(body) == {"secret": "body"}

    async def test_unknown_field_in_patch_is_400(self, client, auth, unchanged):
        body = assert_error(
            await client.patch("/config", auth=auth, json={"colour": "red"}), 400, "INVALID_INPUT"
        )
        assert bad_fields(body) == {"colour": "body"}

    @pytest.mark.parametrize("payload", [[VALID_TOKEN], "x", 1, None])
    async def test_body_that_is_not_an_object_is_400(self, client, auth, unchanged, payload):
        response = await client.post("/tokens", auth=auth, json=payload)
        body = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(body) == {"body": "body"}

    async def test_missing_body_is_400(self, client, auth, unchanged):
        body = assert_error(await client.post("/tokens", auth=auth), 400, "INVALID_INPUT")
        assert bad_fields(body) == {"body": "body"}


class TestQuery:
    @pytest.mark.parametrize("value", ["0", "101", "abc", "-1", "1.5", ""])
    async def test_bad_limit_is_400_naming_limit(self, client, auth, value):
        response = await client.get(f"/tokens?limit={value}", auth=auth)
        body = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(body) == {"limit": "query"}

    @pytest.mark.parametrize("limit", ["1", "100"])
    async def test_limit_bounds_are_accepted(self, client, auth, limit):
        assert (await client.get(f"/tokens?limit={limit}", auth=auth)).status_code == 200

    @pytest.mark.parametrize("cursor", ["%%%", "abc", "eyJ4IjoxfQ", "x" * 600])
    async def test_bad_cursor_is_400_naming_cursor(self, client, auth, cursor):
        response = await client.get("/tokens", params={"cursor": cursor}, auth=auth)
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"cursor": "query"}

    @pytest.mark.parametrize(
        "value", ["0.5", "1700000000", "yesterday", "2025-13-01T00:00:00Z", "2025-10-13"]
    )
    async def test_bad_timestamp_filter_is_400(self, client, auth, value):
        response = await client.get("/tokens", params={"createdAfter": value}, auth=auth)
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"createdAfter": "query"}

    @pytest.mark.parametrize(
        "value", ["2025-10-13T12:00:00Z", "2025-10-13T12:00:00+02:00", "2025-10-13T12:00:00"]
    )
    async def test_iso_timestamp_filter_is_accepted(self, client, auth, value):
        assert (await client.get("/tokens", params={"createdBefore": value}, auth=auth)).status_code == 200

    async def test_several_bad_parameters_are_all_named(self, client, auth):
        response = await client.get("/webhooks/deliveries?limit=0&status=NOPE&createdAfter=x", auth=auth)
        body = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(body) == {"limit": "query", "status": "query", "createdAfter": "query"}


class TestSizeAndMediaType:
    async def test_oversized_body_with_content_length_is_413(self, client, auth, unchanged, settings):
        raw = b'{"name": "' + b"x" * (settings.max_body_bytes + 1) + b'", "permissions": ["VIEW"]}'
        response = await client.post(
            "/tokens", auth=auth, content=raw, headers={"Content-Type": "application/json"}
        )
        body = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
        assert body["details"]["limitBytes"] == settings.max_body_bytes

    async def test_oversized_chunked_body_is_413(self, client, auth, unchanged, settings):
        chunk = b" " * 65536

        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"name": "x", "permissions": ["VIEW"]'
            for _ in range(settings.max_body_bytes // len(chunk) + 1):
                yield chunk
            yield b"}"

        response = await client.post(
            "/tokens", auth=auth, content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert "content-length" not in response.request.headers
        body = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
        assert body["details"]["limitBytes"] == settings.max_body_bytes

    async def test_chunked_body_within_the_limit_is_accepted(self, client, auth):
        async def chunks() -> AsyncIterator[bytes]:
            yield b'{"name": "chunked", '
            yield b'"permissions": ["VIEW"]}'

        response = await client.post(
            "/tokens", auth=auth, content=chunks(), headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 201, response.text

    async def test_oversized_body_to_an_operation_without_body_is_413(self, client, auth, settings):
        response = await client.post(
            "/sandbox/webhooks/test", auth=auth, content=b"x" * (settings.max_body_bytes + 1)
        )
        assert_error(response, 413, "PAYLOAD_TOO_LARGE")

    @pytest.mark.parametrize(
        "content_type",
        ["application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x", None],
    )
    async def test_wrong_content_type_is_415(self, client, auth, unchanged, content_type):
        headers = {"Content-Type": content_type} if content_type else {}
        response = await client.post(
            "/tokens", auth=auth, content=b'{"name": "x", "permissions": ["VIEW"]}', headers=headers
        )
        body = assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
        assert body["details"]["expected"] == "application/json"

    async def test_wrong_content_type_on_patch_is_415(self, client, auth, unchanged):
        response = await client.patch(
            "/config", auth=auth, content=b"{}", headers={"Content-Type": "text/plain"}
        )
        assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")

    @pytest.mark.parametrize(
        "content_type", ["application/json; charset=utf-8", "application/merge-patch+json"]
    )
    async def test_json_content_types_are_accepted(self, client, auth, content_type):
        response = await client.patch(
            "/config", auth=auth, content=b"{}", headers={"Content-Type": content_type}
        )
        assert response.status_code == 200, response.text


def _basic(raw: bytes) -> str:
    return "Basic " + base64.b64encode(raw).decode()


class TestAuthentication:
    async def test_missing_credentials_is_401_with_challenge(self, client, unchanged):
        response = await client.get("/tokens")
        assert_error(response, 401, "UNAUTHORIZED")
        assert response.headers["www-authenticate"].startswith("Basic")

    @pytest.mark.parametrize(
        "header",
        [
            "Basic !!!",
            "Basic",
            "Basic ",
            _basic(b"no-colon"),
            _basic(b"\xff\xfe:x"),
            "Bearer abc",
            "Digest x",
            "garbage",
        ],
    )
    async def test_malformed_authorization_header_is_401(self, client, unchanged, header):
        response = await client.post("/tokens", json=VALID_TOKEN, headers={"Authorization": header})
        assert_error(response, 401, "UNAUTHORIZED")
        assert response.headers["www-authenticate"].startswith("Basic")

    @pytest.mark.parametrize("which", ["secret", "client", "both", "long client"])
    async def test_wrong_credentials_are_401(self, client, auth, unchanged, which):
        client_id, secret = auth
        wrong = {
            "secret": (client_id, "0" * len(secret)),
            "client": ("0" * len(client_id), secret),
            "both": ("x", "y"),
            "long client": ("x" * 10_000, secret),
        }[which]
        response = await client.post("/tokens", json=VALID_TOKEN, auth=wrong)
        assert_error(response, 401, "UNAUTHORIZED")
        assert response.headers["www-authenticate"].startswith("Basic")

    async def test_credentials_are_checked_before_the_body(self, client, unchanged):
        response = await client.post("/tokens", json={"unknown": 1})
        assert_error(response, 401, "UNAUTHORIZED")


class TestNulCharacters:
    """PostgreSQL cannot hold NUL in text; every backend refuses it the same way, never with a 500."""

    @pytest.mark.parametrize(
        ("path", "fields"),
        [
            ("/tokens/a%00b", {"path": "path"}),
            ("/webhooks/deliveries/%00", {"path": "path"}),
            ("/tokens?name=a%00b", {"name": "query"}),
            ("/webhooks/deliveries?type=%00&limit=5", {"type": "query"}),
        ],
    )
    async def test_nul_in_the_url_is_400(self, client, auth, path, fields):
        body = assert_error(await client.get(path, auth=auth), 400, "INVALID_INPUT")
        assert bad_fields(body) == fields

    async def test_nul_in_a_body_field_is_400_naming_it(self, client, auth, unchanged):
        response = await client.patch("/config", auth=auth, json={"webhookEndpoint": "https://x.test/\u0000"})
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"webhookEndpoint": "body"}

    async def test_nul_in_the_client_id_is_401(self, client, auth, unchanged):
        response = await client.get(
            "/tokens", headers={"Authorization": _basic(b"a\x00b:" + auth[1].encode())}
        )
        assert_error(response, 401, "UNAUTHORIZED")

    async def test_database_refusing_text_is_400_not_500(self, app, client, backend):
        """The safety net behind the checks above, for text that reaches PostgreSQL some other way (here a
        plain dict body, which no ApiRequest model checks)."""
        if backend != "postgresql":
            pytest.skip("only PostgreSQL refuses NUL in text")
        from fastapi import Body
        from sqlalchemy import text

        async def probe(payload: dict[str, str] = Body()) -> dict[str, str]:
            async with app.state.db.read() as session:
                await session.execute(text("SELECT CAST(:v AS TEXT)"), {"v": payload["value"]})
            return payload

        app.add_api_route("/_probe", probe, methods=["POST"])
        assert (await client.post("http://testserver/_probe", json={"value": "fine"})).status_code == 200
        response = await client.post("http://testserver/_probe", json={"value": "a\u0000b"})
        assert_error(response, 400, "INVALID_INPUT")


def test_every_error_code_is_the_reference_s_or_on_the_documented_allow_list() -> None:
    """A code platpay can answer with is either one of the reference API's or listed (with its status and
    meaning) in docs/errors.md's table of codes beyond the reference; the table lists no code platpay lacks."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    answered = codes_in_source()
    errors_doc = (root / "docs" / "errors.md").read_text()
    allowed = set(re.findall(r"^\s*\| \d{3} \| `([A-Z_]+)` \|", errors_doc, re.MULTILINE))
    assert "SERVICE_UNAVAILABLE" in answered and "NOT_FOUND" in allowed
    assert answered - REFERENCE_CODES - allowed == set(), "codes missing from docs/errors.md's table"
    assert allowed - answered == set(), "docs/errors.md lists codes platpay never answers"
    assert allowed & REFERENCE_CODES == set(), "docs/errors.md lists reference codes as beyond the reference"
