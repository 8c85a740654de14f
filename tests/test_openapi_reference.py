"""/openapi.json speaks the reference's names, so that code generated from the reference document works
against platpay unchanged (docs/architecture.md, "OpenAPI conventions"): every served operation that the
reference has carries its operationId and tags, names its request and success bodies as the reference does
and takes the reference's header and query parameters, named, typed and required alike; every schema the
document holds is the reference's. What platpay serves beyond the reference is listed, each with its
reason, in tests/data/openapi_additions.json: an operation, schema or parameter of our own gets its line
there, and anything else fails here.

Data-driven: an operation added later is checked the moment it is served."""

from __future__ import annotations

import asyncio
import json
import os
import re
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate

from platpay import API_VERSION, BASE_PATH
from platpay.app import create_app
from platpay.config import get_settings
from tests.openapi_reference import (
    KEPT,
    _reference_document,
    additions,
    body_schema_name,
    have_reference,
    index,
    reference,
    reference_index_from_yaml,
)

CAMEL_CASE = re.compile(r"^[a-z][a-zA-Z0-9]*$")


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    app = create_app(get_settings(), embedded_worker=False)

    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get("/openapi.json")

    response = asyncio.run(fetch())
    assert response.status_code == 200, response.text
    return response.json()


@pytest.fixture(scope="module")
def served(document: dict[str, Any]) -> dict[str, Any]:
    return index(document)["operations"]


def reference_key(key: str) -> str:
    """`GET /2025-10-13/customers` -> `GET /customers`: the reference's server URL carries the version."""
    method, path = key.split(" ", 1)
    return f"{method} {path.removeprefix(BASE_PATH)}"


def matching(served: dict[str, Any]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(served key, served operation, reference operation) for every served operation the reference has."""
    operations = reference()["operations"]
    return [
        (key, operation, operations[reference_key(key)])
        for key, operation in served.items()
        if reference_key(key) in operations
    ]


def test_the_kept_copy_is_the_reference() -> None:
    if not have_reference():
        pytest.skip("the reference document is not next to the checkout; tests use the kept copy")
    current = reference_index_from_yaml()
    if os.environ.get("PLATPAY_UPDATE_REFERENCE_OPENAPI"):
        KEPT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert reference() == current, (
        "tests/data/reference_openapi.json is stale: see tests/openapi_reference.py"
    )


def test_the_document_is_valid_openapi_3_1_of_the_api_version(document: dict[str, Any]) -> None:
    validate(document)  # raises, naming the offending part, on any violation of the OpenAPI 3.1 schema
    assert document["openapi"].startswith("3.1.")
    assert document["info"]["version"] == API_VERSION == reference()["info.version"]
    assert any(url.endswith(BASE_PATH) for url in reference()["servers"])


def test_every_operation_is_the_references_or_a_listed_addition(served: dict[str, Any]) -> None:
    listed = additions()["operations"]
    unknown = [
        key for key in served if reference_key(key) not in reference()["operations"] and key not in listed
    ]
    assert not unknown, (
        f"operations neither in the reference nor in tests/data/openapi_additions.json: {unknown} "
        "(a path the reference has under another template, or an addition to list with its reason)"
    )
    stale = [key for key in listed if key not in served]
    assert not stale, f"tests/data/openapi_additions.json lists operations no longer served: {stale}"
    for key, entry in listed.items():
        assert entry.get("reason"), f"{key}: an addition says why it exists"


def test_operation_ids_and_tags_are_the_references(served: dict[str, Any]) -> None:
    wrong = [
        f"{key}: operationId {ours['operationId']!r} tags {ours['tags']} -- the reference's "
        f"{theirs['operationId']!r} {theirs['tags']}"
        for key, ours, theirs in matching(served)
        if (ours["operationId"], ours["tags"]) != (theirs["operationId"], theirs["tags"])
    ]
    assert not wrong, "operations named unlike the reference (set operation_id= and tags=):\n" + "\n".join(
        wrong
    )


def test_our_own_operations_have_camel_case_ids_as_listed(served: dict[str, Any]) -> None:
    ids = [operation["operationId"] for operation in served.values()]
    assert len(ids) == len(set(ids)), "operationIds repeat"
    reference_ids = {operation["operationId"] for operation in reference()["operations"].values()}
    for key, entry in additions()["operations"].items():
        ours = served[key]
        assert CAMEL_CASE.match(ours["operationId"]), f"{key}: {ours['operationId']!r} is not camelCase"
        assert ours["operationId"] == entry["operationId"], f"{key}: listed as {entry['operationId']!r}"
        assert ours["operationId"] not in reference_ids, f"{key}: {ours['operationId']!r} is a reference id"
        assert ours["tags"] == entry["tags"], f"{key}: tags {ours['tags']}, listed {entry['tags']}"


ASPECTS = ("requestBody", "successStatus", "response")


def _deliberate(key: str, aspect: str, ours: Any, theirs: Any) -> bool:
    """Listed in openapi_additions.json's `differences`: where SPEC differs from the reference."""
    listed = additions()["differences"].get(key, {}).get(aspect)
    return listed == {"ours": ours, "reference": theirs}


def test_bodies_carry_the_references_schema_names(served: dict[str, Any]) -> None:
    """A generated client names its models after these: the request body a caller builds and the success
    response it reads are the reference's classes, answered with the reference's status (except where
    SPEC says otherwise: a listed difference)."""
    wrong = []
    for key, ours, theirs in matching(served):
        for aspect in ASPECTS:
            if aspect != "successStatus" and not theirs[aspect]:
                continue  # the reference names no schema there
            if ours[aspect] != theirs[aspect] and not _deliberate(key, aspect, ours[aspect], theirs[aspect]):
                wrong.append(f"{key}: {aspect} {ours[aspect]}, the reference's {theirs[aspect]}")
    assert not wrong, "\n".join(wrong)


def test_listed_differences_are_still_differences_and_say_why(served: dict[str, Any]) -> None:
    operations = reference()["operations"]
    for key, entry in additions()["differences"].items():
        assert entry.get("reason"), f"{key}: a deliberate difference says why (the SPEC section)"
        assert key in served and reference_key(key) in operations, f"{key}: not an operation of both"
        for aspect, values in entry.items():
            if aspect == "reason":
                continue
            assert aspect in ASPECTS, f"{key}: {aspect!r} is not one of {ASPECTS}"
            actual = {"ours": served[key][aspect], "reference": operations[reference_key(key)][aspect]}
            assert values == actual, f"{key}: {aspect} is listed as {values}, it is now {actual}"
            assert values["ours"] != values["reference"], f"{key}: {aspect} no longer differs: unlist it"


def test_every_schema_is_the_references_or_a_listed_addition(document: dict[str, Any]) -> None:
    ours = set(document["components"]["schemas"])
    listed = additions()["schemas"]
    unknown = sorted(ours - set(reference()["schemas"]) - set(listed))
    assert not unknown, (
        f"schemas the reference does not have: {unknown}; name them as the reference does, or list them "
        "with their reason in tests/data/openapi_additions.json"
    )
    stale = sorted(set(listed) - ours)
    assert not stale, f"tests/data/openapi_additions.json lists schemas no longer served: {stale}"
    assert all(listed.values()), "every listed schema says why it exists"


def _property_names(schemas: dict[str, Any], name: str) -> set[str]:
    """A schema's properties, those of its allOf parts included (a `$ref` part followed)."""
    schema = schemas[name]
    names = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        ref = part.get("$ref", "")
        names |= _property_names(schemas, ref.rsplit("/", 1)[-1]) if ref else set(part.get("properties", {}))
    return names


def test_listed_fields_are_served_say_why_and_are_not_the_references(document: dict[str, Any]) -> None:
    """`fields`: properties of our own on the reference's schemas (PlatformConfig.endUserTermsRequired)."""
    for key, reason in additions().get("fields", {}).items():
        schema, prop = key.split(".", 1)
        assert reason, f"{key}: say why"
        assert prop in _property_names(document["components"]["schemas"], schema), f"{key} is not served"
        if have_reference():
            theirs = _reference_document()["components"]["schemas"]
            assert prop not in _property_names(theirs, schema), f"{key} is the reference's: unlist it"


def test_every_error_response_is_the_error_schema_of_its_status(document: dict[str, Any]) -> None:
    for key, operation in index_operations(document):
        for status, response in operation["responses"].items():
            if status[0] in "45":
                name = body_schema_name(document, response)
                assert name == f"Error{status}", f"{key} {status}: {name}"


def index_operations(document: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (f"{method.upper()} {path}", operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if isinstance(operation, dict) and "responses" in operation
    ]


def _parameter_allowed(key: str, operation_id: str, name: str, section: str) -> bool:
    """Listed: for these operationIds, or for every operation ("*") of the listed `methods`."""
    method = key.split(" ", 1)[0]
    return any(
        entry["parameter"] == name
        and (operation_id in entry["operations"] or entry["operations"] == "*")
        and method in entry.get("methods", [method])
        for entry in additions()[section]
    )


def test_parameters_are_named_typed_and_required_as_the_reference_has_them(served: dict[str, Any]) -> None:
    """Header and query parameters (the path's are the template's, compared with the path itself).
    Ours beyond the reference's and the reference's we do not take yet are listed, with their reason."""
    wrong = []
    for key, ours, theirs in matching(served):
        mine = {name: p for name, p in ours["parameters"].items() if not name.startswith("path ")}
        expected = {name: p for name, p in theirs["parameters"].items() if not name.startswith("path ")}
        for name in sorted(set(mine) | set(expected)):
            if name not in expected:
                if not _parameter_allowed(key, ours["operationId"], name, "parameters"):
                    wrong.append(f"{key}: {name} is not the reference's (list it in openapi_additions.json)")
            elif name not in mine:
                if not _parameter_allowed(key, ours["operationId"], name, "missingParameters"):
                    wrong.append(f"{key}: the reference's {name} {expected[name]} is missing")
            elif mine[name] != expected[name]:
                wrong.append(f"{key}: {name} is {mine[name]}, the reference's {expected[name]}")
    by_id = {operation["operationId"]: operation for operation in served.values()}
    for entry in additions()["missingParameters"]:
        operation_ids = by_id if entry["operations"] == "*" else entry["operations"]
        wrong.extend(
            f"{operation_id}: {entry['parameter']} is served now: unlist it from missingParameters"
            for operation_id in operation_ids
            if operation_id in by_id and entry["parameter"] in by_id[operation_id]["parameters"]
        )
    assert not wrong, "\n".join(wrong)


def test_listed_parameter_entries_say_why() -> None:
    for section in ("parameters", "missingParameters"):
        for entry in additions()[section]:
            assert entry.get("reason") and entry.get("parameter") and entry.get("operations"), entry
