"""Schemathesis over our own /openapi.json: every operation the app serves, on every backend.

The document is fetched from the app's /openapi.json when this module is collected, and one test item is
made per operation in it (x backend), so an operation a new router adds is fuzzed without touching this
file. (Schemathesis' lazy `from_fixture` loader would fetch it per test, but it relies on pytest's
`Node._nodeid`, which pytest 9 removed.) Each operation gets the examples, coverage (boundary and invalid
values, undeclared methods) and fuzzing phases, with positive and negative data and a fixed seed, so a
failure reproduces. Every request carries valid HTTP Basic credentials so the handlers run beyond 401; every
AUTH_VARIANT_EVERY-th case is also sent without credentials and with wrong ones. A response fails the test
if it is a 5xx, has an undocumented status, content type or header, does not match its documented schema,
accepts schema-violating input, or is an error not in our {status, code, message, details} shape.

The app runs in-process on schemathesis' ASGI transport, which serves every request (and the lifespan) on
one event loop of its own. The app is therefore built WITHOUT the test's `db` (whose connections belong to
the test's event loop): its lifespan opens, and on teardown closes, its own Database on the same URL. The
`platform` fixture has committed the credentials through the test's `db` before the app starts.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CheckContext
from schemathesis.python import asgi as schemathesis_asgi

from platpay.app import create_app
from platpay.config import Settings

SEED = 20251013
# Fuzzing-phase examples per operation: fewer as operations are added, so the run stays near a minute per
# backend (the coverage phase adds a fixed set per operation on top); PLATPAY_FUZZ_EXAMPLES overrides it.
FUZZ_EXAMPLES_BUDGET = 800
# The first case of each operation, and every Nth after it, is also sent without credentials and with
# wrong ones (authentication comes before any handler logic, so more would mostly repeat the same 401).
AUTH_VARIANT_EVERY = 8

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
ERROR_KEYS = {"status", "code", "message", "details"}
REQUIRED_ERROR_KEYS = {"status", "code", "message"}
# Refusals that may come before authentication: unknown route, bad method, unparseable or oversized body.
UNAUTHENTICATED_STATUSES = {400, 401, 404, 405, 413, 415}


@schemathesis.check
def error_body_shape(
    ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool | None:
    """Every 4xx/5xx, documented or not (e.g. a 405 to an undeclared method), is our error shape."""
    if response.status_code < 400:
        return None
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.split(";")[0].strip() == "application/json", (
        f"error with content type {content_type!r}"
    )
    body = json.loads(response.content)
    assert isinstance(body, dict) and REQUIRED_ERROR_KEYS <= set(body) <= ERROR_KEYS, (
        f"not an error: {body!r}"
    )
    assert body.get("status") == response.status_code, (
        f"body status {body.get('status')} != {response.status_code}"
    )
    assert isinstance(body.get("code"), str) and body["code"], body
    assert isinstance(body.get("message"), str) and body["message"], body
    assert isinstance(body.get("details", {}), dict), body
    return None


CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
    schemathesis.checks.response_headers_conformance,
    schemathesis.checks.negative_data_rejection,
    schemathesis.checks.missing_required_header,
    schemathesis.checks.unsupported_method,
    error_body_shape,
]
# For the variants without valid credentials (they replace schemathesis' `ignored_auth` probes, which only
# follow a 2xx and do not look at the refusal itself).
UNAUTHENTICATED_CHECKS = [
    schemathesis.checks.not_a_server_error,
    schemathesis.checks.status_code_conformance,
    schemathesis.checks.content_type_conformance,
    schemathesis.checks.response_schema_conformance,
    error_body_shape,
]


def _config(max_examples: int) -> schemathesis.Config:
    return schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "base-url": "http://testserver",
            "generation": {
                "mode": "all",
                "max-examples": max_examples,
                "deterministic": True,
                "database": "none",
                # Credentials are ours to set: valid on every case, and the no/wrong-credential variants below.
                "with-security-parameters": False,
            },
            "phases": {
                "examples": {"enabled": True},
                "coverage": {"enabled": True},
                "fuzzing": {"enabled": True},
                "stateful": {"enabled": False},
            },
        }
    )


class _CurrentApp:
    """The ASGI app schemathesis sends to (its checks' extra probes included): the app of the running test."""

    app: Any = None

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert self.app is not None, "no fuzz_app fixture is active"
        await self.app(scope, receive, send)


CURRENT_APP = _CurrentApp()


@pytest.fixture
def fuzz_app(settings: Settings, platform: dict[str, Any]) -> Iterator[Any]:
    # Failed webhook deliveries (the fuzzer may configure an endpoint) must not slow the run down.
    fuzz_settings = settings.model_copy(update={"webhook_timeout_seconds": 0.5})
    app = create_app(fuzz_settings, embedded_worker=False)
    CURRENT_APP.app = app
    try:
        yield app
    finally:
        schemathesis_asgi.shutdown_lifespans()  # runs the app's lifespan shutdown: disposes its Database
        CURRENT_APP.app = None


@pytest.fixture
def fuzz_counter() -> itertools.count[int]:
    return itertools.count()


def _served_openapi() -> dict[str, Any]:
    """The document the app serves at /openapi.json (no lifespan needed: it touches no database)."""
    from platpay.config import get_settings

    async def fetch() -> httpx.Response:
        transport = httpx.ASGITransport(app=create_app(get_settings(), embedded_worker=False))
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            return await client.get("/openapi.json")

    response = asyncio.run(fetch())
    assert response.status_code == 200, response.text
    return response.json()


def _max_examples(document: dict[str, Any]) -> int:
    if os.environ.get("PLATPAY_FUZZ_EXAMPLES"):
        return int(os.environ["PLATPAY_FUZZ_EXAMPLES"])
    operations = sum(1 for item in document["paths"].values() for method in item if method in HTTP_METHODS)
    return max(10, min(25, FUZZ_EXAMPLES_BUDGET // max(operations, 1)))


DOCUMENT = _served_openapi()
schema = schemathesis.openapi.from_dict(DOCUMENT, config=_config(_max_examples(DOCUMENT)))
schema.app = CURRENT_APP


@schema.parametrize()
# One app (and its database) per operation, shared by that operation's examples: that is the point here.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_every_operation_survives_fuzzing(
    case: schemathesis.Case, fuzz_app: Any, auth: tuple[str, str], fuzz_counter: itertools.count[int]
) -> None:
    # `fuzz_app` is requested for its effect: CURRENT_APP, which every request goes to, is that app.
    case.call_and_validate(auth=auth, checks=CHECKS)
    security = [name for entry in case.operation.definition.raw.get("security", []) for name in entry]
    secured = bool(security)
    # agent operations take a Bearer token (wrong Basic credentials there still meet the Basic challenge)
    challenge = ("bearer", "basic") if security == ["AgentAuth"] else ("basic",)
    if not secured or next(fuzz_counter) % AUTH_VARIANT_EVERY:
        return
    client_id, secret = auth
    for variant in (None, (client_id, "0" * len(secret)), ("no-such-client", secret)):
        response = case.call(auth=variant)
        assert response.status_code in UNAUTHENTICATED_STATUSES, (
            f"{case.operation.label} answered {response.status_code} to credentials {variant}"
        )
        if response.status_code == 401:
            assert response.headers.get("www-authenticate", [""])[0].lower().startswith(challenge)
            assert response.json()["code"] == "UNAUTHORIZED"
        case.validate_response(response, checks=UNAUTHENTICATED_CHECKS)
