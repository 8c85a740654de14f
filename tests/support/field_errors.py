"""The property every 400 answer holds (DRIFT-2026-08 §4): a refusal that names bad fields names each of them
twice, in `details.fields` (platpay's `{field, location?, message}`) and in `details.errors` (the
reference's `{field, constraint?, message}`), entry for entry in the same order.

Checked on every answer the tests' `client` fixture receives (tests/conftest.py) and on every error the
schemathesis fuzz provokes (tests/test_openapi_fuzz.py), so each existing validation test checks it too."""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

FIELD_NAME = re.compile(r"[a-z][A-Za-z0-9]*|[0-9]+")  # a request field (camelCase) or an array index

CONSTRAINT_TYPES: dict[str, type] = {
    "format": str,
    "pattern": str,
    "enum": list,
    "minLength": int,
    "maxLength": int,
}


def sent_json(content: bytes | None) -> Any:
    """The JSON a request sent, or None (no body, or not JSON)."""
    if not content:
        return None
    try:
        return json.loads(content)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def _resolves(path: list[str], value: Any) -> bool:
    for part in path:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return False
    return True


def _is_subsequence(short: list[str], long: list[str]) -> bool:
    remaining = iter(long)
    return all(part in remaining for part in short)


def assert_field_errors_match(body: Any, *, sent: Any = None) -> None:
    """`body` is an answer's JSON; `sent` the JSON body of its request (None when unknown). A 400 with
    `details.fields` has `details.errors` of as many entries, each with the same message and the same dot
    path but for the union tags pydantic inserts (`source.ACCOUNT.accountId` is `source.accountId`), a path
    found in the request when the body field's parent is; its constraint holds only the reference's keys,
    each of its type. `errors` never comes without `fields`."""
    if not isinstance(body, dict) or body.get("status") != 400 or not isinstance(body.get("details"), dict):
        return
    details = body["details"]
    fields, errors = details.get("fields"), details.get("errors")
    if fields is None:
        assert errors is None, f"details.errors without details.fields: {body}"
        return
    assert isinstance(errors, list) and len(errors) == len(fields), (
        f"details.errors does not match fields: {body}"
    )
    for entry, error in zip(fields, errors, strict=True):
        assert set(error) <= {"field", "constraint", "message"}, error
        assert isinstance(error["field"], str) and error["field"], error
        assert error.get("message") == entry.get("message"), (entry, error)
        named, path = entry["field"].split("."), error["field"].split(".")
        assert _is_subsequence(path, named), f"errors names {error['field']!r}, fields {entry['field']!r}"
        dropped = Counter(named) - Counter(path)
        assert not [part for part in dropped if FIELD_NAME.fullmatch(part)], (
            f"errors names {error['field']!r}, fields {entry['field']!r}: only union tags and labels are left out"
        )
        if entry.get("location") == "body" and isinstance(sent, dict) and _resolves(named, sent):
            assert path == named, f"{error['field']!r}: the request holds {entry['field']!r}"
        if "constraint" in error:
            constraint = error["constraint"]
            assert isinstance(constraint, dict) and constraint, error
            for key, value in constraint.items():
                assert isinstance(value, CONSTRAINT_TYPES[key]) and not isinstance(value, bool), error
            assert all(isinstance(item, str) for item in constraint.get("enum", [])), error
