"""/openapi.json and /docs describe exactly what is served: every route, our error shape on every
operation (`Error<status>`, one per status as the reference splits it), HTTP Basic as the security scheme,
and no framework 422 left anywhere."""

from __future__ import annotations

import asyncio
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts

from platpay import BASE_PATH, package_version
from platpay.app import create_app
from platpay.config import get_settings

ERROR_REF = "#/components/schemas/Error{status}"  # the one error shape, per status
HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
# Served to read the document itself, not part of the API it documents.
DOCUMENTATION_ROUTES = {"/openapi.json", "/docs", "/docs/oauth2-redirect", "/docs/assets"}
# Pages for people, not API operations: the hosted verification page a KYC link opens, an invitation's
# page and the End User Terms' default page (HTML, docs/customers-and-accounts.md).
PAGE_ROUTES = {"/kyc/{token}", "/i/{invitationCode}", "/end-user-terms/{version}"}
CONSOLE = "/console"  # the console's pages (docs/console.md), every path under it


@dataclass(frozen=True)
class Served:
    app: Any
    document: dict[str, Any]
    openapi_response: httpx.Response
    docs_response: httpx.Response

    def operations(self) -> list[tuple[str, str, dict[str, Any]]]:
        return [
            (method.upper(), path, operation)
            for path, item in self.document["paths"].items()
            for method, operation in item.items()
            if method in HTTP_METHODS
        ]


@pytest.fixture(scope="module")
def served() -> Served:
    app = create_app(get_settings(), embedded_worker=False)  # serving the document needs no database

    async def fetch() -> tuple[httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get("/openapi.json"), await client.get("/docs")

    openapi_response, docs_response = asyncio.run(fetch())
    assert openapi_response.status_code == 200, openapi_response.text
    return Served(app, openapi_response.json(), openapi_response, docs_response)


def _error_schema_ref(response: dict[str, Any]) -> str | None:
    return response.get("content", {}).get("application/json", {}).get("schema", {}).get("$ref")


def test_openapi_json_is_the_apps_document(served):
    assert served.openapi_response.headers["content-type"].startswith("application/json")
    assert served.document == json.loads(json.dumps(served.app.openapi()))
    assert served.document["openapi"].startswith("3.")


SNAPSHOT = Path(__file__).parent / "data" / "openapi.json"


def test_the_document_is_the_reviewed_snapshot(served):
    """The API a client generates code from changes only on purpose: /openapi.json equals the reviewed copy
    in tests/data/openapi.json, key order included (restructuring the code must leave it identical). A change
    to the API updates the copy in the same commit: PLATPAY_UPDATE_OPENAPI_SNAPSHOT=1 pytest tests/test_openapi.py"""
    # platpay's own version (info.x-platpay-version) changes with every release, not with the API.
    assert served.document["info"]["x-platpay-version"] == package_version() != ""
    document = {
        **served.document,
        "info": {**served.document["info"], "x-platpay-version": "PACKAGE_VERSION"},
    }
    rendered = json.dumps(document, indent=1) + "\n"
    if os.environ.get("PLATPAY_UPDATE_OPENAPI_SNAPSHOT"):
        SNAPSHOT.write_text(rendered, encoding="utf-8")
    assert rendered == SNAPSHOT.read_text(encoding="utf-8"), (
        "the OpenAPI document differs from tests/data/openapi.json"
    )


def test_docs_answer_html_pointing_at_the_document(served):
    assert served.docs_response.status_code == 200
    assert served.docs_response.headers["content-type"].startswith("text/html")
    assert "/openapi.json" in served.docs_response.text


def test_docs_load_swagger_ui_from_the_service_itself(served):
    """Offline sandboxes still get their docs: every script and stylesheet /docs loads is served by us."""
    page = served.docs_response.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page)
    assert assets and all(asset.startswith("/docs/assets/") for asset in assets), assets

    async def fetch_all() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=served.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return [await client.get(asset) for asset in [*assets, "/docs/assets/no-such-file.js"]]

    *found, missing = asyncio.run(fetch_all())
    for asset, response in zip(assets, found, strict=True):
        assert response.status_code == 200, asset
        assert len(response.content) > 100, asset
    assert missing.status_code == 404
    assert missing.json()["code"] == "NOT_FOUND"


def test_every_served_route_is_documented_and_nothing_else(served):
    served_operations = {
        (method, context.path_format)
        for context in iter_route_contexts(served.app.routes)
        if context.path_format not in DOCUMENTATION_ROUTES | PAGE_ROUTES
        and not (context.path_format == CONSOLE or context.path_format.startswith(f"{CONSOLE}/"))
        for method in context.methods or ()
        if method != "HEAD"
    }
    documented = {(method, path) for method, path, _ in served.operations()}
    assert any(path.startswith(f"{BASE_PATH}/") for _, path in served_operations)
    assert served_operations == documented


def test_every_operation_under_the_base_path_documents_its_errors(served):
    for method, path, operation in served.operations():
        if not path.startswith(f"{BASE_PATH}/"):
            continue
        responses = operation["responses"]
        expected = {"401", "403", "413", "500"}
        if operation.get("parameters") or "requestBody" in operation:
            expected.add("400")
        if "{" in path:
            expected.add("404")
        if "requestBody" in operation:
            expected.add("415")
        missing = expected - set(responses)
        assert not missing, f"{method} {path} does not document {sorted(missing)}"
        if "requestBody" not in operation:
            assert "415" not in responses, f"{method} {path} takes no body yet documents 415"
        assert "405" not in responses, f"{method} {path} is this method: it never answers 405"


def test_every_documented_error_is_the_error_body(served):
    for method, path, operation in served.operations():
        errors = {status: r for status, r in operation["responses"].items() if status[0] in "45"}
        assert errors, f"{method} {path} documents no error response"
        for status, response in errors.items():
            expected = ERROR_REF.format(status=status)
            assert _error_schema_ref(response) == expected, f"{method} {path} {status}: {response}"


def test_401_documents_the_challenge_header(served):
    for method, path, operation in served.operations():
        if "401" in operation["responses"]:
            assert "WWW-Authenticate" in operation["responses"]["401"].get("headers", {}), f"{method} {path}"


def test_error_body_schema(served):
    errors = {
        name: s for name, s in served.document["components"]["schemas"].items() if name.startswith("Error")
    }
    assert {"Error400", "Error401", "Error404", "Error500"} <= set(errors)
    for name, schema in errors.items():
        assert set(schema["required"]) == {"status", "code", "message"}
        assert schema["properties"]["status"]["type"] == "integer"
        assert schema["properties"]["status"]["enum"] == [int(name.removeprefix("Error"))]
        assert schema["properties"]["code"]["type"] == "string"
        assert schema["properties"]["message"]["type"] == "string"
        assert schema["properties"]["details"]["type"] == "object"


def test_no_framework_422_is_left(served):
    for method, path, operation in served.operations():
        assert "422" not in operation["responses"], f"{method} {path}"
    schemas = served.document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    assert "HTTPValidationError" not in json.dumps(served.document)


def test_http_basic_security_scheme_guards_every_api_operation(served):
    schemes = served.document["components"]["securitySchemes"]
    basic = [name for name, s in schemes.items() if s["type"] == "http" and s["scheme"].lower() == "basic"]
    assert len(basic) == 1, schemes
    bearer = [name for name, s in schemes.items() if s["type"] == "http" and s["scheme"].lower() == "bearer"]
    assert bearer == ["AgentAuth"], schemes
    for method, path, operation in served.operations():
        requirement = [name for entry in operation.get("security", []) for name in entry]
        if path.startswith(f"{BASE_PATH}/agents/me"):
            assert requirement == bearer, f"{method} {path}: agent operations take the agent's token"
        elif path == f"{BASE_PATH}/agents/device-codes/{{code}}/redeem":
            assert not requirement, f"{method} {path}: the device code is the proof"
        elif path.startswith(f"{BASE_PATH}/"):
            assert requirement == basic, f"{method} {path}: {operation.get('security')}"
        else:
            assert not requirement, f"{method} {path} is public yet documents {requirement}"


def test_operation_ids_are_unique(served):
    ids = [operation["operationId"] for _, _, operation in served.operations()]
    assert len(ids) == len(set(ids))


def test_every_operation_documents_a_success_response(served):
    for method, path, operation in served.operations():
        assert any(status.startswith("2") for status in operation["responses"]), f"{method} {path}"
