"""Schemathesis over our own /openapi.json: every operation the app serves, on every backend.

The document is fetched from the app's /openapi.json when this module is collected, and one test item is
made per operation in it (x backend), so an operation a new router adds is fuzzed without touching this
file. (Schemathesis' lazy `from_fixture` loader would fetch it per test, but it relies on pytest's
`Node._nodeid`, which pytest 9 removed.) Each operation gets the examples, coverage (boundary and invalid
values, undeclared methods) and fuzzing phases, with positive and negative data and a fixed seed, so a
failure reproduces. Every request carries valid HTTP Basic credentials so the handlers run beyond 401; every
AUTH_VARIANT_EVERY-th case is also sent without credentials and with wrong ones. A response fails the test
if it is a 5xx, has an undocumented status, content type or header, does not match its documented schema,
accepts schema-violating input, is an error not in our {status, code, message, details} shape, or is a 400
whose `details.errors` does not name the fields its `details.fields` names (tests/support/field_errors.py).

The agent operations (/agents/me/...) take an agent's bearer token, not platform credentials: they are
fuzzed by a test of their own, with a real agent's token on a funded customer with a policy, so the cases
reach the agent logic (policy decisions, transfers, quotes, approvals). The ids the document's examples
name, and every other positive case's path ids, are replaced by the agent's real ones; each operation must
answer at least one case with a 2xx (proof that the fuzz got past authentication). Every case is also sent
with the platform's credentials, which must be refused (403), and every AUTH_VARIANT_EVERY-th without
credentials and with a wrong token (401). The ledger verifies after each operation's run (the `db` fixture).

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
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import CheckContext
from schemathesis.generation import GenerationMode
from schemathesis.python import asgi as schemathesis_asgi

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.config import Settings
from platpay.kit.openapi import ExampleIds
from tests.factories import account_destination, account_source, mxn_account
from tests.support.agents import connect, funded_customer
from tests.support.field_errors import assert_field_errors_match, sent_json

SEED = 20251013
# Fuzzing-phase examples per operation: fewer as operations are added, so the run stays near a minute per
# backend (the coverage phase adds a fixed set per operation on top); PLATPAY_FUZZ_EXAMPLES overrides it.
FUZZ_EXAMPLES_BUDGET = 800
# The first case of each operation, and every Nth after it, is also sent without credentials and with
# wrong ones (authentication comes before any handler logic, so more would mostly repeat the same 401).
AUTH_VARIANT_EVERY = 8
# Fuzzing-phase examples per agent operation (16 of them), beside the examples and coverage phases.
AGENT_EXAMPLES = 15

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}
ERROR_KEYS = {"status", "code", "message", "details"}
REQUIRED_ERROR_KEYS = {"status", "code", "message"}
# Refusals that may come before authentication: unknown route, bad method, unparseable or oversized body.
UNAUTHENTICATED_STATUSES = {400, 401, 404, 405, 413, 415}


@schemathesis.check
def error_body_shape(
    ctx: CheckContext, response: schemathesis.Response, case: schemathesis.Case
) -> bool | None:
    """Every 4xx/5xx, documented or not (e.g. a 405 to an undeclared method), is our error shape; a 400's
    `details.errors` matches its `details.fields`."""
    if response.status_code < 400:
        return None
    content_type = response.headers.get("content-type", [""])[0]
    assert content_type.split(";")[0].strip() == "application/json", (
        f"error with content type {content_type!r}"
    )
    body = json.loads(response.content)
    # A wallet check's 401 also carries the failed check as a top-level `reason` (INTERFACE-FACTS §1.1), the
    # same as its details.reason; no other error has a key beyond the four.
    allowed = ERROR_KEYS | {"reason"} if response.status_code == 401 else ERROR_KEYS
    assert isinstance(body, dict) and REQUIRED_ERROR_KEYS <= set(body) <= allowed, f"not an error: {body!r}"
    if "reason" in body:
        assert body["reason"] == body.get("details", {}).get("reason"), body
    assert body.get("status") == response.status_code, (
        f"body status {body.get('status')} != {response.status_code}"
    )
    assert isinstance(body.get("code"), str) and body["code"], body
    assert isinstance(body.get("message"), str) and body["message"], body
    assert isinstance(body.get("details", {}), dict), body
    request_body = response.request.body
    assert_field_errors_match(body, sent=sent_json(request_body if isinstance(request_body, bytes) else None))
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


def _config(max_examples: int, *, coverage_mode: str = "all") -> schemathesis.Config:
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
                "coverage": {"enabled": True, "generation": {"mode": coverage_mode}},
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
AGENT_OPERATIONS = f"^{BASE_PATH}/agents/me(/|$)"
platform_schema = schema.exclude(path_regex=AGENT_OPERATIONS)
# The agent operations' bodies are the platform's (TransferOutRequest, QuoteRequest…), whose negative
# boundary values the platform run covers: here the coverage phase sends positive values only, which reach
# the agent logic, and the fuzzing phase both kinds: about 500 cases in all (2 to 100 per operation).
agent_schema = schemathesis.openapi.from_dict(
    DOCUMENT, config=_config(AGENT_EXAMPLES, coverage_mode="positive")
).include(path_regex=AGENT_OPERATIONS)
agent_schema.app = CURRENT_APP


@platform_schema.parametrize()
# One app (and its database) per operation, shared by that operation's examples: that is the point here.
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_every_operation_survives_fuzzing(
    case: schemathesis.Case, fuzz_app: Any, auth: tuple[str, str], fuzz_counter: itertools.count[int]
) -> None:
    # `fuzz_app` is requested for its effect: CURRENT_APP, which every request goes to, is that app.
    case.call_and_validate(auth=auth, checks=CHECKS)
    secured = bool(case.operation.definition.raw.get("security"))
    if not secured or next(fuzz_counter) % AUTH_VARIANT_EVERY:
        return
    client_id, secret = auth
    for variant in (None, (client_id, "0" * len(secret)), ("no-such-client", secret)):
        response = case.call(auth=variant)
        assert response.status_code in UNAUTHENTICATED_STATUSES, (
            f"{case.operation.label} answered {response.status_code} to credentials {variant}"
        )
        if response.status_code == 401:
            assert response.headers.get("www-authenticate", [""])[0].lower().startswith("basic")
            assert response.json()["code"] == "UNAUTHORIZED"
        case.validate_response(response, checks=UNAUTHENTICATED_CHECKS)


# ---- the agent operations, with a real agent's token ------------------------------------------------

# Generous limits (the fuzz's transfers execute rather than all meeting the daily count), an approval
# threshold that the larger amounts cross (PENDING_APPROVAL actions too).
AGENT_LIMITS = {
    "currency": "USD",
    "perTransactionLimit": 1_000_000,
    "dailyLimit": 100_000_000,
    "dailyTransactionLimit": 10_000,
    "monthlyLimit": 1_000_000_000,
}
AGENT_APPROVAL = {"currency": "USD", "amount": 50_000}


@dataclass
class AgentWorld:
    """A funded customer with a bank account and an MXN account, its connected agent, and one quote and
    one transfer the agent made: the real ids the cases are given."""

    token: str
    example_ids: dict[str, str]  # an id the document's examples name -> the real one
    path_ids: dict[str, str]  # a path parameter -> a real value for it
    statuses: list[int] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
async def agent_world(client: httpx.AsyncClient, auth: tuple[str, str]) -> AsyncIterator[AgentWorld]:
    funded = await funded_customer(client, auth, amount=50_000_000)
    customer_id, account, bank = funded["customer"]["id"], funded["account"]["id"], funded["bank"]["id"]
    mxn = (await mxn_account(client, auth, customer_id))["id"]
    agent = await connect(
        client, auth, customer_id, spendingLimits=AGENT_LIMITS, approvalThresholds=AGENT_APPROVAL
    )
    headers = agent["headers"]
    quoted = await client.post(
        "/agents/me/quotes",
        headers=headers,
        json={
            "source": account_source(account),
            "destination": account_destination(mxn),
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 1_000,
        },
    )
    assert quoted.status_code == 201, quoted.text
    sent = await client.post(
        "/agents/me/transfer-out",
        headers=headers,
        json={"source": {"accountId": account}, "destination": {"accountId": bank}, "amount": 100},
    )
    assert sent.status_code == 201, sent.text
    world = AgentWorld(
        token=agent["token"],
        example_ids={
            ExampleIds.CUSTOMER: customer_id,
            ExampleIds.INTERNAL_ACCOUNT: account,
            ExampleIds.EXTERNAL_ACCOUNT: bank,
            ExampleIds.MXN_EXTERNAL_ACCOUNT: mxn,
            ExampleIds.QUOTE: quoted.json()["id"],
        },
        path_ids={
            "externalAccountId": bank,
            "quoteId": quoted.json()["id"],
            "transactionId": sent.json()["transaction"]["id"],
            "actionId": sent.json()["id"],
        },
    )
    EARLIER_REAL_IDS.update({real: example for example, real in world.example_ids.items()})
    yield world
    # Past authentication at least once: a 2xx is the agent logic answering (run on teardown, once the
    # operation's whole run is over).
    assert any(200 <= status < 300 for status in world.statuses), sorted(set(world.statuses))


# A real id -> the example id it replaced. Schemathesis keeps an operation's explicit-example cases and
# hands the same objects to each parametrization (SQLite, then PostgreSQL), so a case the previous world
# made real carries that world's ids, which this world's database has never seen: they go back to the
# example's id first, then to this world's.
EARLIER_REAL_IDS: dict[str, str] = {}


def _example_id(value: str) -> str:
    return EARLIER_REAL_IDS.get(value, value)


def _real(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, str):
        return ids.get(_example_id(value), value)
    if isinstance(value, dict):
        return {key: _real(item, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_real(item, ids) for item in value]
    return value


def _with_real_ids(case: schemathesis.Case, world: AgentWorld, turn: int) -> None:
    """The examples' ids made real everywhere; in every other positive case, the path's ids made real too
    (a random id only ever meets a 404). Schemathesis re-judges a case it sees modified."""
    if isinstance(case.body, dict | list):
        case.body = _real(case.body, world.example_ids)
    if case.query:
        case.query = _real(dict(case.query), world.example_ids)
    positive = case.meta is not None and case.meta.generation.mode == GenerationMode.POSITIVE
    for name, value in list((case.path_parameters or {}).items()):
        if isinstance(value, str) and _example_id(value) in world.example_ids:
            case.path_parameters[name] = world.example_ids[_example_id(value)]
        elif positive and turn % 2 == 0 and name in world.path_ids:
            case.path_parameters[name] = world.path_ids[name]


@agent_schema.parametrize()
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
def test_every_agent_operation_survives_fuzzing_with_an_agent_token(
    case: schemathesis.Case,
    fuzz_app: Any,
    agent_world: AgentWorld,
    auth: tuple[str, str],
    fuzz_counter: itertools.count[int],
) -> None:
    turn = next(fuzz_counter)
    _with_real_ids(case, agent_world, turn)
    response = case.call_and_validate(headers=agent_world.headers, checks=CHECKS)
    agent_world.statuses.append(response.status_code)
    # the platform's own credentials never reach an agent operation
    refused = case.call(auth=auth)
    assert refused.status_code in UNAUTHENTICATED_STATUSES | {403}, (
        f"{case.operation.label} answered {refused.status_code} to platform credentials"
    )
    if refused.status_code == 403:
        assert refused.json()["code"] == "FORBIDDEN"
    case.validate_response(refused, checks=UNAUTHENTICATED_CHECKS)
    if turn % AUTH_VARIANT_EVERY:
        return
    for headers in ({}, {"Authorization": "Bearer " + "0" * len(agent_world.token)}):
        response = case.call(headers=headers)
        assert response.status_code in UNAUTHENTICATED_STATUSES, (
            f"{case.operation.label} answered {response.status_code} to headers {headers}"
        )
        if response.status_code == 401:
            assert "bearer" in response.headers.get("www-authenticate", [""])[0].lower()
            assert response.json()["code"] == "UNAUTHORIZED"
        case.validate_response(response, checks=UNAUTHENTICATED_CHECKS)
