"""Assertions on platpay's error answers ({status, code, message, details}), shared by the tests of errors,
bad input, field errors and routes."""

from __future__ import annotations

from typing import Any

import httpx


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].split(";")[0] == "application/json"
    body = response.json()
    assert set(body) == {"status", "code", "message", "details"}, body
    assert body["status"] == status and body["code"] == code, body
    assert isinstance(body["message"], str) and body["message"]
    assert isinstance(body["details"], dict)
    return body


def bad_fields(body: dict[str, Any]) -> dict[str, str]:
    """details.fields as {field: location}."""
    return {entry["field"]: entry.get("location", "") for entry in body["details"]["fields"]}
