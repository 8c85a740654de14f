"""What the OpenAPI tests know of the reference document (REFERENCE_DOCUMENT): per operation its
operationId, tags, parameters and the schema names of its bodies; and the names of its schemas.

Kept in tests/data/reference_openapi.json so that the tests run where the reference is not (a clean clone
in CI); where it is, tests/test_openapi_reference.py checks that the kept copy is current. Refresh it:
PLATPAY_UPDATE_REFERENCE_OPENAPI=1 pytest tests/test_openapi_reference.py
"""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
REFERENCE_DIR = Path(os.environ.get("PLATPAY_REFERENCE_DIR", ROOT.parent / "shared" / "reference"))
# The reference as it publishes itself today (DRIFT-2026-08.md: what moved since the June document, each
# change with its ruling); the June document, reference-openapi.yaml, is no longer what platpay follows.
REFERENCE_DOCUMENT = "reference-openapi-2026-08-21.yaml"
REFERENCE_YAML = REFERENCE_DIR / REFERENCE_DOCUMENT
KEPT = ROOT / "tests" / "data" / "reference_openapi.json"
ADDITIONS = ROOT / "tests" / "data" / "openapi_additions.json"
HTTP_METHODS = ("get", "put", "post", "patch", "delete")
# SPEC §0 names two headers differently from the reference: ours are what platpay serves.
HEADER_NAMES = {"Grid-Wallet-Signature": "Svc-Wallet-Signature", "X-Grid-Signature": "X-Svc-Signature"}


def have_reference() -> bool:
    return REFERENCE_YAML.is_file()


@cache
def _reference_document() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(REFERENCE_YAML.read_text(encoding="utf-8"), Loader=loader)


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        *_, section, name = node["$ref"].split("/")
        node = document["components"][section][name]
    return node


def type_of(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """A parameter's type as the tests compare it: `type`, the item type of an array, and the enum (sorted)."""
    schema = _resolve(document, schema)
    found: dict[str, Any] = {"type": schema.get("type")}
    if schema.get("type") == "array":
        found["items"] = type_of(document, schema.get("items", {}))["type"]
    if "enum" in schema:
        found["enum"] = sorted(str(value) for value in schema["enum"])
    return found


def body_schema_name(document: dict[str, Any], container: dict[str, Any] | None) -> str | None:
    """The component a request body or response names (its first media type), or None if it is inline."""
    if not container:
        return None
    container = _resolve(document, container) if "$ref" in container else container
    for media in container.get("content", {}).values():
        ref = media.get("schema", {}).get("$ref")
        return ref.rsplit("/", 1)[-1] if ref else None
    return None


def index(document: dict[str, Any]) -> dict[str, Any]:
    """Operations keyed `METHOD /path` (the path as the document has it) and the schema names."""
    operations: dict[str, Any] = {}
    for path, item in document.get("paths", {}).items():
        for method in HTTP_METHODS:
            operation = item.get(method)
            if operation is None:
                continue
            parameters = [
                _resolve(document, p) for p in [*item.get("parameters", []), *operation.get("parameters", [])]
            ]
            responses = operation.get("responses", {})
            success = next((status for status in sorted(responses) if str(status).startswith("2")), None)
            operations[f"{method.upper()} {path}"] = {
                "operationId": operation.get("operationId"),
                "tags": operation.get("tags", []),
                "parameters": {
                    f"{p['in']} {HEADER_NAMES.get(p['name'], p['name'])}": {
                        "required": bool(p.get("required")),
                        **type_of(document, p.get("schema", {})),
                    }
                    for p in parameters
                    if p["in"] in ("query", "header", "path")
                },
                "requestBody": body_schema_name(document, operation.get("requestBody")),
                "response": body_schema_name(document, responses.get(success)) if success else None,
                "successStatus": str(success) if success else None,
            }
    return {
        "info.version": document.get("info", {}).get("version"),
        "servers": [server.get("url") for server in document.get("servers", [])],
        "operations": operations,
        "schemas": sorted(document.get("components", {}).get("schemas", {})),
    }


def reference_index_from_yaml() -> dict[str, Any]:
    return index(_reference_document())


@cache
def reference() -> dict[str, Any]:
    return json.loads(KEPT.read_text(encoding="utf-8"))


@cache
def additions() -> dict[str, Any]:
    return json.loads(ADDITIONS.read_text(encoding="utf-8"))
