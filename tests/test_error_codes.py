"""A client generated from the reference OpenAPI switches on `code` within the enumeration of the response's
status: every (status, code) platpay can answer with must be in the reference's enumeration for that
status (the reference document's Error<status> schemas, INTERFACE-FACTS §1.2), or documented in the
docs/errors.md's table of codes beyond the reference (the allow-list, with its status).

The codes come from the source: every ApiError subclass (its status and code), every literal `code=` passed
to a call (its status from the callee), every `(status, "CODE")` literal pair and every {status: "CODE"}
table. No server, no database.
"""

from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from platpay.kit.idempotency import IdempotencyKeyReused
from tests.openapi_reference import REFERENCE_DIR, REFERENCE_DOCUMENT
from tests.support.error_codes import REFERENCE_CODES, Pairs, answered_codes, codes_in_source

ROOT = Path(__file__).resolve().parents[1]

# What these tests read from the reference, kept in the repository so they run where the reference is not
# (a clean clone in CI); where it is, test_the_kept_copy_is_the_reference checks the copy is current
# (refresh: PLATPAY_UPDATE_REFERENCE_CODES=1 pytest tests/test_error_codes.py).
KEPT = ROOT / "tests" / "data" / "reference_error_codes.json"


def _have_reference() -> bool:
    return (REFERENCE_DIR / REFERENCE_DOCUMENT).is_file() and (REFERENCE_DIR / "INTERFACE-FACTS.md").is_file()


def _reference_file(name: str) -> Path:
    return REFERENCE_DIR / name


@cache
def _openapi() -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(_reference_file(REFERENCE_DOCUMENT).read_text(), Loader=loader)


def _openapi_codes_from_reference() -> Pairs:
    """The `code` enumeration of every error schema that pins its `status`."""
    pairs: Pairs = defaultdict(set)
    for schema in _openapi()["components"]["schemas"].values():
        properties = schema.get("properties", {})
        codes = properties.get("code", {}).get("enum")
        statuses = properties.get("status", {}).get("enum")
        if codes and statuses:
            for code in codes:
                pairs[code].update(statuses)
    return pairs


def _facts_codes_from_reference() -> tuple[Pairs, set[str]]:
    """INTERFACE-FACTS §1.2: the codes by status (its table, and the codes of operation texts with their
    status in parentheses), and the codes the guides use without naming a status."""
    text = _reference_file("INTERFACE-FACTS.md").read_text()
    section = text.split("### 1.2", 1)[1].split("\n### ", 1)[0]
    pairs: Pairs = defaultdict(set)
    for status, cells in re.findall(r"^\| (\d{3}) \| (.*) \|$", section, re.MULTILINE):
        for code in re.findall(r"`([A-Z][A-Z0-9_]+)`", cells):
            pairs[code].add(int(status))
    for code, status in re.findall(r"`([A-Z][A-Z0-9_]+)` \((\d{3})\)", section):
        pairs[code].add(int(status))
    guides = re.search(r"The guides also use ([^.]*)\.", section)
    assert guides, "INTERFACE-FACTS §1.2 no longer says which codes the guides use"
    return pairs, set(re.findall(r"`([A-Z][A-Z0-9_]+)`", guides.group(1)))


def documented_allow_list() -> Pairs:
    """docs/errors.md's table of codes beyond the reference, with their statuses."""
    errors_doc = (ROOT / "docs" / "errors.md").read_text()
    pairs: Pairs = defaultdict(set)
    for status, code in re.findall(r"^\s*\| (\d{3}) \| `([A-Z_]+)` \|", errors_doc, re.MULTILINE):
        pairs[code].add(int(status))
    return pairs


def _idempotent_400_from_reference() -> dict[str, list[str]]:
    """The 400 code enumeration of every reference operation taking an Idempotency-Key."""
    document = _openapi()
    found: dict[str, list[str]] = {}
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if not isinstance(operation, dict):
                continue
            headers = {p.get("name") for p in [*item.get("parameters", []), *operation.get("parameters", [])]}
            if "Idempotency-Key" not in headers or "400" not in operation.get("responses", {}):
                continue
            schema = operation["responses"]["400"]["content"]["application/json"]["schema"]
            name = schema["$ref"].rsplit("/", 1)[1]
            found[f"{method.upper()} {path}"] = list(
                document["components"]["schemas"][name]["properties"]["code"]["enum"]
            )
    return found


def _from_reference() -> dict[str, Any]:
    facts, guides = _facts_codes_from_reference()
    return {
        "openapi": {
            code: sorted(statuses) for code, statuses in sorted(_openapi_codes_from_reference().items())
        },
        "facts": {code: sorted(statuses) for code, statuses in sorted(facts.items())},
        "guides": sorted(guides),
        "idempotent_400": dict(sorted(_idempotent_400_from_reference().items())),
    }


@cache
def _reference() -> dict[str, Any]:
    if _have_reference():
        return _from_reference()
    return json.loads(KEPT.read_text(encoding="utf-8"))


def reference_openapi_codes() -> Pairs:
    return defaultdict(set, {code: set(statuses) for code, statuses in _reference()["openapi"].items()})


def reference_facts_codes() -> tuple[Pairs, set[str]]:
    facts = defaultdict(set, {code: set(statuses) for code, statuses in _reference()["facts"].items()})
    return facts, set(_reference()["guides"])


def test_the_kept_copy_is_the_reference() -> None:
    if not _have_reference():
        pytest.skip(f"the reference is not at {REFERENCE_DIR}: the kept copy {KEPT.name} is used")
    rendered = json.dumps(_from_reference(), indent=1) + "\n"
    if os.environ.get("PLATPAY_UPDATE_REFERENCE_CODES"):
        KEPT.write_text(rendered, encoding="utf-8")
    assert KEPT.read_text(encoding="utf-8") == rendered, (
        "tests/data/reference_error_codes.json is out of date"
    )


def test_the_reference_enumerations_are_read():
    by_status = reference_openapi_codes()
    facts, guides = reference_facts_codes()
    assert {400} == by_status["INVALID_INPUT"] == facts["INVALID_INPUT"]
    assert by_status["UNAUTHORIZED"] == {401} and by_status["CONFLICT"] == {409}
    assert guides == {"QUOTE_EXPIRED", "INSUFFICIENT_BALANCE"}
    assert "INSUFFICIENT_FUNDS" not in facts  # a card decline reason, not an HTTP code
    # Every §1.2 code with a status is in the OpenAPI's enumeration for it, except one an operation's text
    # names (the August document added the other card codes to the enumerations: DRIFT-2026-08.md §2).
    operation_texts = {"FUNDING_SOURCE_INELIGIBLE"}
    assert {c for c, s in facts.items() if not s <= by_status.get(c, set())} == operation_texts
    # tests/test_errors.py's written-out copy of the reference codes holds only reference codes.
    assert set(REFERENCE_CODES) <= set(by_status) | set(facts) | guides


def test_every_code_platpay_answers_is_in_the_reference_for_its_status_or_on_the_allow_list():
    answered, unknown = answered_codes()
    assert unknown == [], "literal codes passed to a callee whose status this test cannot tell"
    assert codes_in_source() <= set(answered)  # tests/test_errors.py's textual search finds no more
    assert {"INVALID_INPUT", "INSUFFICIENT_BALANCE", "SERVICE_UNAVAILABLE", "NOT_FOUND"} <= set(answered)
    openapi = reference_openapi_codes()
    assert openapi["SERVICE_UNAVAILABLE"] == {503}  # the August document's Error503 (DRIFT-2026-08.md §4)
    facts, guides = reference_facts_codes()
    allowed = documented_allow_list()
    outside = {
        f"{status} {code}"
        for code, statuses in answered.items()
        if code not in guides
        for status in statuses
        if status not in openapi.get(code, set()) | facts.get(code, set()) | allowed.get(code, set())
    }
    assert outside == set(), "answered outside the reference's enumeration and docs/errors.md's table"


def test_the_allow_list_holds_only_codes_beyond_the_reference():
    openapi = reference_openapi_codes()
    facts, guides = reference_facts_codes()
    allowed = documented_allow_list()
    assert set(allowed) & (set(openapi) | set(facts) | guides) == set()


def test_a_reused_idempotency_key_is_a_400_code_of_every_idempotent_reference_operation():
    """The answer to a reused Idempotency-Key is in the 400 enumeration of each reference operation that
    takes the header (POST /transfer-out, /quotes, /quotes/{quoteId}/execute, …)."""
    assert IdempotencyKeyReused.status == 400
    operations = _reference()["idempotent_400"]
    for operation, codes in operations.items():
        assert IdempotencyKeyReused.code in codes, operation
    assert {"POST /transfer-out", "POST /quotes", "POST /quotes/{quoteId}/execute"} <= set(operations)
