"""Bad input is refused, never accepted: duplicate JSON keys, an explicit null where
leaving a field out means something, loose types, bodies that are not UTF-8, and a sweep of malformed
variants over the money and onboarding endpoints. Every refusal is a 4xx in the error shape naming what is
wrong, and changes nothing (no row created, no state moved, the ledger verifies). Runs on every backend.

The oversized body on a real server (the 413 read through a raw socket) is tests/e2e/test_oversized_body.py;
the parser alone is tests/kit/test_json_body.py."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import ValidationError
from sqlalchemy import text

from platpay import domains
from platpay.db.base import Base
from platpay.kit.api_model import NullRefused
from tests.factories import (
    FULL_PERSON,
    account_destination,
    account_source,
    customer,
    internal_account,
    mxn_account,
    quote,
)
from tests.support.agents import connect, funded_customer
from tests.support.api_errors import assert_error, bad_fields
from tests.support.cards import approved_cardholder, funded_account, issue
from tests.support.onboarding import BUSINESS, OWNER_INFO
from tests.support.onboarding import create as create_customer
from tests.support.onboarding import owner as create_owner
from tests.support.wallets import wallet_account

JSON = {"Content-Type": "application/json"}
# Tables whose rows a refusal may add without changing anything: none today. (Should agents' refusals of
# malformed money requests be audited one day, their audit table would belong here.)
MAY_GROW: frozenset[str] = frozenset()


# ---- what "nothing changed" means -------------------------------------------------------------------


async def row_counts(db) -> dict[str, int]:
    """Every table's row count, in one statement."""
    domains.load()
    tables = [table.name for table in Base.metadata.sorted_tables if table.name not in MAY_GROW]
    columns = ", ".join(f'(SELECT count(*) FROM "{name}") AS "{name}"' for name in tables)
    async with db.read() as session:
        row = (await session.execute(text(f"SELECT {columns}"))).one()
    return dict(zip(tables, row, strict=True))


STATE_VIEWS = (
    "/customers?limit=100",
    "/customers/internal-accounts?limit=100",
    "/transactions?limit=100",
    "/cards?limit=100",
    "/agents?limit=100",
    "/config",
)


async def api_state(client: httpx.AsyncClient, auth: tuple[str, str]) -> dict[str, Any]:
    """What the API shows of everything a refused request could have moved (balances, states, fields)."""
    state: dict[str, Any] = {}
    for path in STATE_VIEWS:
        response = await client.get(path, auth=auth)
        assert response.status_code == 200, (path, response.text)
        state[path] = response.json()
    clock_now = (await client.get("/sandbox/clock", auth=auth)).json()
    # a moved clock's offset is read against real time: microseconds of jitter between two reads
    state["clock"] = (clock_now["frozen"], round(clock_now["offsetSeconds"], 1))
    return state


@dataclass
class Snapshot:
    counts: dict[str, int]
    state: dict[str, Any]


async def snapshot(db, client, auth) -> Snapshot:
    return Snapshot(await row_counts(db), await api_state(client, auth))


async def assert_unchanged(before: Snapshot, db, client, auth, what: str) -> None:
    after = await snapshot(db, client, auth)
    grown = {
        name: (count, after.counts[name])
        for name, count in before.counts.items()
        if after.counts[name] != count
    }
    assert not grown, f"{what}: rows changed {grown}"
    changed = [key for key in before.state if before.state[key] != after.state[key]]
    assert not changed, f"{what}: the API shows a change in {changed}"


def assert_refusal(response: httpx.Response, what: str) -> dict[str, Any]:
    """A 4xx refusing malformed input: 400 INVALID_INPUT naming fields, 413, or 415, in the error shape."""
    assert response.status_code in (400, 413, 415), f"{what}: {response.status_code} {response.text[:500]}"
    code = {400: "INVALID_INPUT", 413: "PAYLOAD_TOO_LARGE", 415: "UNSUPPORTED_MEDIA_TYPE"}[
        response.status_code
    ]
    body = assert_error(response, response.status_code, code)
    if response.status_code == 400:
        fields = body["details"].get("fields")
        assert fields and all(isinstance(f["field"], str) and f["field"] and f["message"] for f in fields), (
            what,
            body,
        )
    return body


# ---- the malformed variants -------------------------------------------------------------------------


def _leaves(value: Any, change: Callable[[Any], Any]) -> Any:
    """`value` with every scalar leaf passed through `change`."""
    if isinstance(value, dict):
        return {key: _leaves(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_leaves(item, change) for item in value]
    return change(value)


def _ints(replacement: Any) -> Callable[[Any], Any]:
    return lambda v: replacement if isinstance(v, int) and not isinstance(v, bool) else v


def _strings(replacement: Any) -> Callable[[Any], Any]:
    return lambda v: replacement if isinstance(v, str) else v


def _top(value: dict[str, Any], replacement: Any) -> dict[str, Any]:
    return {key: replacement for key in value}


def _first_object(value: Any) -> dict[str, Any] | None:
    """The first object nested in `value` (depth first), or None."""
    for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        if isinstance(item, dict):
            return item
        found = _first_object(item)
        if found is not None:
            return found
    return None


def _encode(value: Any, *, twice: Any = None) -> str:
    """JSON text of `value`; in the object `twice` (by identity) its first key is written twice, first
    with another value, as a proxy reading the first occurrence would see it."""
    if isinstance(value, dict):
        pairs = [f"{json.dumps(key)}: {_encode(item, twice=twice)}" for key, item in value.items()]
        if value is twice and value:
            key, item = next(iter(value.items()))
            other = -5 if isinstance(item, int) and not isinstance(item, bool) else "other"
            pairs.insert(0, f"{json.dumps(key)}: {json.dumps(other)}")
        return "{" + ", ".join(pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_encode(item, twice=twice) for item in value) + "]"
    return json.dumps(value)


def _with_token(value: Any, token: str) -> bytes:
    """Every number leaf written as `token` (NaN, Infinity…), or one added field when there is none."""
    marked = _leaves(
        value, lambda v: "__TOKEN__" if isinstance(v, int | float) and not isinstance(v, bool) else v
    )
    if marked == value:
        marked = {**value, "amount": "__TOKEN__"}
    return json.dumps(marked).replace('"__TOKEN__"', token).encode()


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@dataclass(frozen=True)
class Variant:
    name: str
    body: bytes
    headers: dict[str, str] = field(default_factory=lambda: dict(JSON))


def variants(base: dict[str, Any]) -> list[Variant]:
    """The sweep's categories applied to a valid body: wrong types, huge strings, deep nesting, invalid
    UTF-8 and other encodings, NaN/Infinity, ±2^63, unknown fields, missing or wrong content type,
    duplicate keys, nulls, bodies that are not objects. A variant that would leave the body as it is
    (an empty body has no numbers to make strings of) adds a field of the wrong type instead."""
    valid = json.dumps(base).encode()
    dumped: list[tuple[str, Any]] = [
        (
            "numbers as strings",
            _leaves(base, lambda v: str(v) if isinstance(v, int) and not isinstance(v, bool) else v),
        ),
        ("booleans as strings", _leaves(base, lambda v: str(v).lower() if isinstance(v, bool) else v)),
        ("numbers as booleans", _leaves(base, _ints(True))),
        (
            "integral floats",
            _leaves(base, lambda v: float(v) if isinstance(v, int) and not isinstance(v, bool) else v),
        ),
        (
            "fractions",
            _leaves(base, lambda v: v + 0.5 if isinstance(v, int) and not isinstance(v, bool) else v),
        ),
        ("strings as numbers", _leaves(base, _strings(12345))),
        ("objects for values", _top(base, {"x": 1})),
        ("arrays for values", _top(base, ["x"])),
        ("nulls for values", _top(base, None)),
        ("huge strings", _leaves(base, _strings("x" * 100_000))),
        ("deeply nested values", _top(base, _deep(200))),
        ("2^63", _leaves(base, _ints(2**63))),
        ("-2^63", _leaves(base, _ints(-(2**63)))),
        ("2^64", _leaves(base, _ints(2**64))),
        ("-1", _leaves(base, _ints(-1))),
        ("NUL in text", _leaves(base, _strings("a\x00b"))),
        ("unknown field", {**base, "unexpectedField": 1}),
        ("not an object: array", [base]),
        ("not an object: string", "text"),
        ("not an object: null", None),
    ]
    nested = _first_object(base)
    dumped.append(("unknown nested field", _add_nested(base, nested)))
    dumped.append(("lone surrogate in a nested key", _add_nested(base, nested, key="bad\ud800key")))
    found = [Variant(name, json.dumps(value).encode()) for name, value in dumped]
    found += [
        Variant("duplicate key", _encode(base, twice=base).encode()),
        Variant("duplicate nested key", _encode(base, twice=nested if nested is not None else base).encode()),
        Variant("NaN", _with_token(base, "NaN")),
        Variant("Infinity", _with_token(base, "Infinity")),
        Variant("-Infinity", _with_token(base, "-Infinity")),
        Variant("exponent", _with_token(base, "1e3")),
        Variant("too many digits", _with_token(base, "1" * 5000)),
        Variant("nested too deeply to parse", b'{"a": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        Variant("invalid UTF-8", _invalid_utf8(base)),
        Variant("lone surrogate", json.dumps(_leaves(base, _strings("\ud800"))).encode()),
        Variant("UTF-16", json.dumps(base).encode("utf-16-le")),
        Variant("UTF-16 with BOM", json.dumps(base).encode("utf-16")),
        Variant("UTF-32", json.dumps(base).encode("utf-32")),
        Variant("UTF-8 with BOM", b"\xef\xbb\xbf" + valid),
        Variant("truncated", valid[:-1]),
        Variant("trailing garbage", valid + b" x"),
        Variant("no content type", valid, {}),
        Variant("text/plain", valid, {"Content-Type": "text/plain"}),
        Variant("form content type", valid, {"Content-Type": "application/x-www-form-urlencoded"}),
        Variant("charset UTF-16 declared", valid, {"Content-Type": "application/json; charset=utf-16"}),
    ]
    return [
        v if (v.body != valid or v.headers != JSON) else Variant(v.name, b'{"unexpectedField": "12"}')
        for v in found
    ]


def _add_nested(
    base: dict[str, Any], nested: dict[str, Any] | None, key: str = "unexpectedField"
) -> dict[str, Any]:
    if nested is None:
        return {**base, key: {"x": 1}}

    def copy(value: Any) -> Any:
        if value is nested:
            return {**value, key: 1}
        if isinstance(value, dict):
            return {key: copy(item) for key, item in value.items()}
        if isinstance(value, list):
            return [copy(item) for item in value]
        return value

    return copy(base)


def _invalid_utf8(base: dict[str, Any]) -> bytes:
    marked = json.dumps(_leaves(base, _strings("__BAD__"))).encode()
    if b"__BAD__" not in marked:
        return b'{"unexpectedField": "\xff"}'
    return marked.replace(b"__BAD__", b"ok\xff\xfe\xfd")


# ---- the endpoints ----------------------------------------------------------------------------------


@dataclass
class Target:
    """One endpoint with everything a valid request to it needs; `body` None: it takes no body."""

    method: str
    path: str
    body: dict[str, Any] | None
    headers: dict[str, str] = field(default_factory=dict)
    platform_auth: bool = True
    expected: int = 200
    valid_variants: frozenset[str] = frozenset()  # variants that are valid input here (a float field's)


Prepare = Callable[[httpx.AsyncClient, tuple[str, str], Any], Awaitable[Target]]


def transfer(source: str, destination: str, amount: Any = 1_000) -> dict[str, Any]:
    """A transfer's body, out or in (`amount` None: left out)."""
    body = {"source": {"accountId": source}, "destination": {"accountId": destination}}
    return body if amount is None else {**body, "amount": amount}


async def _transfer_out(client, auth, runner) -> Target:
    funded = await funded_customer(client, auth)
    body = transfer(funded["account"]["id"], funded["bank"]["id"])
    return Target("POST", "/transfer-out", body, expected=201)


async def _transfer_in(client, auth, runner) -> Target:
    funded = await funded_customer(client, auth)
    body = transfer(funded["bank"]["id"], funded["account"]["id"])
    return Target("POST", "/transfer-in", body, expected=201)


async def _quote_body(client, auth) -> dict[str, Any]:
    funded = await funded_customer(client, auth)
    mxn = await mxn_account(client, auth, funded["customer"]["id"])
    return {
        "source": account_source(funded["account"]["id"]),
        "destination": account_destination(mxn["id"]),
        "lockedCurrencySide": "SENDING",
        "lockedCurrencyAmount": 1_000,
        "description": "rent",
    }


async def _quotes(client, auth, runner) -> Target:
    return Target("POST", "/quotes", await _quote_body(client, auth), expected=201)


async def _quote_execute(client, auth, runner) -> Target:
    body = await _quote_body(client, auth)
    created = await quote(client, auth, source=body["source"], destination=body["destination"], amount=1_000)
    assert created.status_code == 201, created.text
    return Target("POST", f"/quotes/{created.json()['id']}/execute", None)


async def _customers_create(client, auth, runner) -> Target:
    body = {**FULL_PERSON, "email": "new@example.com", "currencies": ["USD"], "platformCustomerId": "c-1"}
    return Target("POST", "/customers", body, expected=201)


async def _customers_patch(client, auth, runner) -> Target:
    person = await customer(client, auth)
    body = {
        "customerType": "INDIVIDUAL",
        "fullName": "Jane Q. Doe",
        "address": {**FULL_PERSON["address"], "city": "Springfield"},
    }
    return Target("PATCH", f"/customers/{person['id']}", body)


USD_ACCOUNT_INFO = {
    "accountType": "USD_ACCOUNT",
    "accountNumber": "987654321",
    "routingNumber": "011000015",
    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
}


async def _external_accounts(client, auth, runner) -> Target:
    person = await customer(client, auth)
    body = {"customerId": person["id"], "currency": "USD", "accountInfo": USD_ACCOUNT_INFO}
    return Target("POST", "/customers/external-accounts", body, expected=201)


async def _verifications(client, auth, runner) -> Target:
    business = await create_customer(client, auth, BUSINESS)
    return Target("POST", "/verifications", {"customerId": business["id"]})


async def _beneficial_owners(client, auth, runner) -> Target:
    business = await create_customer(client, auth, BUSINESS)
    body = {
        "customerId": business["id"],
        "roles": ["UBO"],
        "ownershipPercentage": 40,
        "personalInfo": OWNER_INFO,
    }
    return Target("POST", "/beneficial-owners", body, expected=201)


async def _cards_create(client, auth, runner) -> Target:
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 10_000)
    body = {
        "cardholderId": holder["id"],
        "form": "VIRTUAL",
        "fundingSources": [account["id"]],
        "platformCardId": "card-7",
    }
    return Target("POST", "/cards", body, expected=201)


async def _cards_patch(client, auth, runner) -> Target:
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 10_000)
    created = await issue(client, auth, holder["id"], [account["id"]])
    assert created.status_code == 201, created.text
    await runner.run_until_idle()  # the issuer activates it
    return Target("PATCH", f"/cards/{created.json()['id']}", {"state": "FROZEN"})


async def _sandbox_fund(client, auth, runner) -> Target:
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    return Target("POST", f"/sandbox/internal-accounts/{account['id']}/fund", {"amount": 1_000})


async def _clock_advance(client, auth, runner) -> Target:
    # `seconds` is a number, not only an integer: 60.0, 60.5 and 1e3 are seconds too
    valid = frozenset({"integral floats", "fractions", "exponent"})
    return Target("POST", "/sandbox/clock/advance", {"seconds": 60}, valid_variants=valid)


async def _wallet_privacy(client, auth, runner) -> Target:
    wallet = await wallet_account(client, auth)
    return Target("PATCH", f"/internal-accounts/{wallet['id']}", {"privateEnabled": True}, expected=202)


async def _connected(client, auth, customer_id: str) -> dict[str, Any]:
    """An agent whose token has been used once (its first use is audited: TOKEN_FIRST_USED)."""
    agent = await connect(client, auth, customer_id)
    assert (await client.get("/agents/me", headers=agent["headers"])).status_code == 200
    return agent


async def _agent_transfer_out(client, auth, runner) -> Target:
    funded = await funded_customer(client, auth)
    agent = await _connected(client, auth, funded["customer"]["id"])
    body = transfer(funded["account"]["id"], funded["bank"]["id"])
    return Target(
        "POST", "/agents/me/transfer-out", body, headers=agent["headers"], platform_auth=False, expected=201
    )


async def _agent_quote(client, auth, runner) -> Target:
    body = await _quote_body(client, auth)
    owner = (await client.get("/customers/internal-accounts?limit=100", auth=auth)).json()["data"]
    customer_id = next(a["customerId"] for a in owner if a["id"] == body["source"]["accountId"])
    agent = await _connected(client, auth, customer_id)
    agent_body = {
        key: body[key] for key in ("source", "destination", "lockedCurrencySide", "lockedCurrencyAmount")
    }
    return Target(
        "POST", "/agents/me/quotes", agent_body, headers=agent["headers"], platform_auth=False, expected=201
    )


TARGETS: dict[str, Prepare] = {
    "transfer-out": _transfer_out,
    "transfer-in": _transfer_in,
    "quotes": _quotes,
    "quote execute": _quote_execute,
    "customers create": _customers_create,
    "customers patch": _customers_patch,
    "external accounts": _external_accounts,
    "verifications": _verifications,
    "beneficial owners": _beneficial_owners,
    "cards create": _cards_create,
    "cards patch": _cards_patch,
    "sandbox fund": _sandbox_fund,
    "sandbox clock advance": _clock_advance,
    "wallet privacy (signed)": _wallet_privacy,
    "agent transfer-out": _agent_transfer_out,
    "agent quotes": _agent_quote,
}


async def send(
    client, auth, target: Target, *, body: bytes | None, headers: dict[str, str]
) -> httpx.Response:
    return await client.request(
        target.method,
        target.path,
        content=body,
        headers={**target.headers, **headers},
        auth=auth if target.platform_auth else None,
    )


class TestMalformedVariantsSweep:
    @pytest.mark.parametrize("name", list(TARGETS))
    async def test_every_variant_is_refused_and_changes_nothing(self, client, auth, db, runner, name):
        target = await TARGETS[name](client, auth, runner)
        failures = []
        for variant in variants(target.body if target.body is not None else {}):
            before = await snapshot(db, client, auth)
            response = await send(client, auth, target, body=variant.body, headers=variant.headers)
            if variant.name in target.valid_variants:
                assert response.status_code == target.expected, (variant.name, response.text)
                continue
            try:
                assert_refusal(response, f"{name}, {variant.name}")
                await assert_unchanged(before, db, client, auth, f"{name}, {variant.name}")
            except AssertionError as error:
                failures.append(str(error).splitlines()[0])
        assert not failures, "\n".join(failures)
        # the same request with a valid body is accepted: the variants were refused for what they broke
        valid = None if target.body is None else json.dumps(target.body).encode()
        response = await send(client, auth, target, body=valid, headers=JSON if valid else {})
        assert response.status_code == target.expected, response.text


# ---- one test per bullet -----------------------------------------------------------------------------


@pytest.fixture
async def funded(client, auth) -> dict[str, Any]:
    return await funded_customer(client, auth, amount=100_000)


def transfer_text(funded: dict[str, Any], amount_json: str, *, source: str | None = None) -> bytes:
    source_json = source or json.dumps({"accountId": funded["account"]["id"]})
    destination = json.dumps({"accountId": funded["bank"]["id"]})
    return f'{{"source": {source_json}, "destination": {destination}, {amount_json}}}'.encode()


async def available(client, auth, funded) -> int:
    return (await internal_account(client, auth, funded["customer"]["id"]))["balance"]["amount"]


class TestDuplicateKeys:
    async def test_a_repeated_amount_on_transfer_out_is_refused_naming_it(self, client, auth, db, funded):
        before = await snapshot(db, client, auth)
        body = transfer_text(funded, '"amount": -5, "amount": 100')
        response = await client.post("/transfer-out", auth=auth, content=body, headers=JSON)
        refused = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(refused) == {"amount": "body"}
        assert "amount" in refused["message"]
        await assert_unchanged(before, db, client, auth, "duplicate amount")
        assert await available(client, auth, funded) == 100_000

    async def test_a_repeated_nested_key_is_named_by_its_dotted_path(self, client, auth, db, funded):
        real = json.dumps(funded["account"]["id"])
        source = f'{{"accountId": "InternalAccount:other", "accountId": {real}}}'
        body = transfer_text(funded, '"amount": 100', source=source)
        response = await client.post("/transfer-out", auth=auth, content=body, headers=JSON)
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"source.accountId": "body"}
        assert await available(client, auth, funded) == 100_000

    async def test_keys_repeated_in_objects_inside_arrays_are_each_named(self, client, auth):
        body = (
            b'{"name": "a", "name": "b", "permissions": ["VIEW"], "x": [{"k": 1, "k": 2}, {"j": 1, "j": 1}]}'
        )
        response = await client.post("/tokens", auth=auth, content=body, headers=JSON)
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {
            "name": "body",
            "x.0.k": "body",
            "x.1.j": "body",
        }

    @pytest.mark.parametrize(
        ("method", "path", "body"),
        [
            ("POST", "/tokens", b'{"name": "a", "permissions": ["VIEW"], "permissions": ["MANAGE"]}'),
            ("PATCH", "/config", b'{"webhookEndpoint": "https://a.test/h", "webhookEndpoint": null}'),
            ("POST", "/customers", b'{"customerType": "BUSINESS", "customerType": "INDIVIDUAL"}'),
            ("POST", "/sandbox/clock/advance", b'{"seconds": 1, "seconds": 100000}'),
        ],
    )
    async def test_every_route_refuses_them_where_the_body_is_parsed(
        self, client, auth, db, method, path, body
    ):
        before = await snapshot(db, client, auth)
        response = await client.request(method, path, auth=auth, content=body, headers=JSON)
        assert_error(response, 400, "INVALID_INPUT")
        await assert_unchanged(before, db, client, auth, path)

    async def test_an_agent_s_transfer_out_refuses_them_too(self, client, auth, db, funded):
        agent = await connect(client, auth, funded["customer"]["id"])
        body = transfer_text(funded, '"amount": 1, "amount": 1000')
        response = await client.post(
            "/agents/me/transfer-out", content=body, headers={**agent["headers"], **JSON}
        )
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"amount": "body"}
        assert await available(client, auth, funded) == 100_000


# The fields whose omission means something, so null is refused (kit/api_model.NullRefused): what the test
# below finds in the models must be this list; a field added to it says here what its omission means.
NULL_REFUSED = {
    ("TransferOutRequest", "amount"),
    ("AgentPolicyEvaluateRequest", "amount"),
    ("SandboxSendRequest", "currencyAmount"),
    ("ExternalAccountDestinationReference", "paymentRail"),
    ("AccountDestination", "paymentRail"),
    ("UmaAddressDestination", "currency"),
    ("AccountQuoteSource", "customerId"),
    ("RealtimeFundingQuoteSource", "customerId"),
    ("ConfirmReceiptDeliveryRequest", "receiptDeliveryConfirmedAt"),
    ("ExternalAccountCreateRequest", "customerId"),
    ("PhoneVerificationRequest", "phoneNumber"),
    ("CardCreateRequest", "platformCardId"),
    ("CardUpdateRequest", "state"),
    ("CardUpdateRequest", "fundingSources"),
    ("AgentUpdateRequest", "name"),
    ("AgentUpdateRequest", "isPaused"),
    ("BeneficialOwnerUpdateRequest", "roles"),
    ("BeneficialOwnerUpdateRequest", "ownershipPercentage"),
    ("BeneficialOwnerUpdateRequest", "personalInfo"),
    *(
        ("BeneficialOwnerPersonalInfoUpdate", name)
        for name in ("firstName", "lastName", "birthDate", "nationality", "address", "idType", "identifier")
    ),
    *(
        (model, name)
        for model in (
            "CustomerCreateRequestOneOf",
            "CustomerCreateRequest",
            "IndividualCustomerCreateRequest",
            "BusinessCustomerCreateRequest",
        )
        for name in ("platformCustomerId", "umaAddress", "currencies")
    ),
}


def _request_models() -> list[type]:
    from platpay.app import create_app
    from platpay.config import get_settings
    from platpay.kit.api_model import ApiRequest

    create_app(get_settings(), embedded_worker=False)  # every domain's schemas imported

    def below(cls: type) -> list[type]:
        return [sub for direct in cls.__subclasses__() for sub in (direct, *below(direct))]

    return list(dict.fromkeys(below(ApiRequest)))


def _null_refused_fields() -> dict[tuple[str, str], Any]:
    found = {}
    for model in _request_models():
        for name, info in model.model_fields.items():
            if any(isinstance(item, NullRefused) for item in info.metadata):
                found[(model.__name__, info.alias or name)] = model
    return found


class TestExplicitNull:
    async def test_a_null_amount_on_transfer_out_is_refused_and_moves_nothing(self, client, auth, db, funded):
        before = await snapshot(db, client, auth)
        response = await client.post(
            "/transfer-out", auth=auth, content=transfer_text(funded, '"amount": null'), headers=JSON
        )
        refused = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(refused) == {"amount": "body"}
        assert "omit it to send the whole available balance" in refused["details"]["fields"][0]["message"]
        await assert_unchanged(before, db, client, auth, "null amount")

    async def test_leaving_the_amount_out_still_sends_the_whole_balance(self, client, auth, funded):
        body = transfer(funded["account"]["id"], funded["bank"]["id"], None)
        response = await client.post("/transfer-out", auth=auth, json=body)
        assert response.status_code == 201, response.text
        assert await available(client, auth, funded) == 0

    async def test_an_agent_s_null_amount_is_refused_too(self, client, auth, funded):
        agent = await connect(client, auth, funded["customer"]["id"])
        response = await client.post(
            "/agents/me/transfer-out",
            content=transfer_text(funded, '"amount": null'),
            headers={**agent["headers"], **JSON},
        )
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"amount": "body"}
        assert await available(client, auth, funded) == 100_000

    def test_exactly_the_fields_whose_omission_means_something_refuse_null(self):
        found = _null_refused_fields()
        assert set(found) == NULL_REFUSED
        for (_, alias), model in found.items():
            with pytest.raises(ValidationError) as refused:
                model.model_validate({alias: None})
            [error] = [e for e in refused.value.errors() if e["loc"] == (alias,)]
            assert error["type"] == "null_refused" and error["msg"].startswith("must not be null: omit it")

    def test_the_document_shows_them_without_a_null_alternative(self):
        """In the reviewed snapshot, which tests/test_openapi.py holds equal to the served document."""
        document = json.loads((Path(__file__).parent / "data" / "openapi.json").read_text())
        schemas = document["components"]["schemas"]
        for model_name, alias in NULL_REFUSED:
            if model_name not in schemas or "oneOf" in schemas[model_name]:
                continue  # validated flat, documented as its oneOf variants (which are checked)
            properties = _properties_of(schemas[model_name], schemas)
            assert alias in properties, (model_name, alias)
            assert "anyOf" not in properties[alias] and properties[alias].get("type") != "null", (
                model_name,
                alias,
            )

    @pytest.mark.parametrize(
        ("path_kind", "body", "field"),
        [
            ("external accounts", {"customerId": None, "currency": "USD", "accountInfo": {}}, "customerId"),
            ("customers", {**FULL_PERSON, "currencies": None}, "currencies"),
            ("customers", {**FULL_PERSON, "platformCustomerId": None}, "platformCustomerId"),
        ],
    )
    async def test_creates_refuse_a_null_where_omission_has_a_default(
        self, client, auth, db, path_kind, body, field
    ):
        path = {"external accounts": "/customers/external-accounts", "customers": "/customers"}[path_kind]
        before = await snapshot(db, client, auth)
        response = await client.post(path, auth=auth, json=body)
        assert field in bad_fields(assert_error(response, 400, "INVALID_INPUT"))
        await assert_unchanged(before, db, client, auth, path)

    async def test_a_patch_refuses_null_on_a_field_that_cannot_be_cleared(self, client, auth, db, runner):
        holder = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, holder["id"], 1_000)
        card = (await issue(client, auth, holder["id"], [account["id"]])).json()
        await runner.run_until_idle()
        before = await snapshot(db, client, auth)
        for body, named in [({"state": None}, "state"), ({"fundingSources": None}, "fundingSources")]:
            response = await client.patch(f"/cards/{card['id']}", auth=auth, json=body)
            assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {named: "body"}
        await assert_unchanged(before, db, client, auth, "card PATCH null")

    async def test_a_beneficial_owner_s_name_cannot_be_cleared_but_an_optional_field_can(self, client, auth):
        business = await create_customer(client, auth, BUSINESS)
        owner = await create_owner(client, auth, business["id"])
        path = f"/beneficial-owners/{owner['id']}"
        refused = await client.patch(path, auth=auth, json={"personalInfo": {"firstName": None}})
        assert bad_fields(assert_error(refused, 400, "INVALID_INPUT")) == {"personalInfo.firstName": "body"}
        cleared = await client.patch(
            path, auth=auth, json={"personalInfo": {"middleName": None, "email": None}}
        )
        assert cleared.status_code == 200, cleared.text
        assert cleared.json()["personalInfo"]["firstName"] == OWNER_INFO["firstName"]
        assert "email" not in cleared.json()["personalInfo"]

    async def test_a_null_the_reference_defines_is_still_accepted(self, client, auth, funded):
        """PATCH of an agent's policy: `dailyLimit: null` removes the daily limit (the reference says so)."""
        agent = await connect(client, auth, funded["customer"]["id"])
        response = await client.patch(
            f"/agents/{agent['agent']['id']}/policy", auth=auth, json={"spendingLimits": {"dailyLimit": None}}
        )
        assert response.status_code == 200, response.text
        assert "dailyLimit" not in response.json()["policy"]["spendingLimits"]


def _properties_of(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any]:
    """A component's properties, its allOf parts' included."""
    properties = dict(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        if "$ref" in part:
            properties.update(_properties_of(schemas[part["$ref"].rsplit("/", 1)[1]], schemas))
        else:
            properties.update(part.get("properties", {}))
    return properties


class TestStrictTypes:
    @pytest.mark.parametrize("seconds", ["12", True, "1e3", [12], {"value": 12}])
    async def test_the_clock_advance_refuses_anything_but_a_number(self, client, auth, db, seconds):
        before = await snapshot(db, client, auth)
        response = await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": seconds})
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"seconds": "body"}
        await assert_unchanged(before, db, client, auth, f"seconds={seconds!r}")

    @pytest.mark.parametrize("body", [{"seconds": 12}, {"seconds": 1.5}, {"to": "tomorrow"}])
    async def test_the_clock_advance_takes_a_number_or_an_iso_timestamp(self, client, auth, body):
        if body.get("to") == "tomorrow":
            now = datetime.fromisoformat((await client.get("/sandbox/clock", auth=auth)).json()["now"])
            body = {"to": (now + timedelta(days=1)).isoformat()}
        response = await client.post("/sandbox/clock/advance", auth=auth, json=body)
        assert response.status_code == 200, response.text

    @pytest.mark.parametrize("to", [4102444800, True, "next tuesday"])
    async def test_a_timestamp_is_an_iso_string_not_a_number(self, client, auth, to):
        response = await client.post("/sandbox/clock/advance", auth=auth, json={"to": to})
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"to": "body"}

    @pytest.mark.parametrize("value", ["true", "false", 1, 0, "yes"])
    async def test_wallet_privacy_refuses_a_boolean_in_disguise_before_any_challenge(
        self, client, auth, db, value
    ):
        wallet = await wallet_account(client, auth)
        before = await snapshot(db, client, auth)
        response = await client.patch(
            f"/internal-accounts/{wallet['id']}", auth=auth, json={"privateEnabled": value}
        )
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"privateEnabled": "body"}
        await assert_unchanged(before, db, client, auth, f"privateEnabled={value!r}")  # no challenge stored

    async def test_wallet_privacy_with_a_boolean_binds_the_boolean(self, client, auth):
        wallet = await wallet_account(client, auth)
        response = await client.patch(
            f"/internal-accounts/{wallet['id']}", auth=auth, json={"privateEnabled": True}
        )
        assert response.status_code == 202, response.text
        assert '"privateEnabled":true' in response.json()["payloadToSign"].replace(" ", "")

    async def test_a_date_is_an_iso_string_and_an_enum_its_value(self, client, auth):
        business = {**BUSINESS, "businessInfo": {**BUSINESS["businessInfo"], "incorporatedOn": 1433116800}}
        response = await client.post("/customers", auth=auth, json=business)
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {
            "businessInfo.incorporatedOn": "body"
        }
        assert (await client.post("/customers", auth=auth, json=BUSINESS)).status_code == 201
        token = await client.post("/tokens", auth=auth, json={"name": "ci", "permissions": ["VIEW"]})
        assert token.status_code == 201, token.text
        numeric = await client.post("/tokens", auth=auth, json={"name": "ci", "permissions": [0]})
        assert bad_fields(assert_error(numeric, 400, "INVALID_INPUT")) == {"permissions.0": "body"}

    @pytest.mark.parametrize("amount", ["100", 100.0, True, "1e2"])
    async def test_money_stays_an_integer(self, client, auth, funded, amount):
        body = transfer(funded["account"]["id"], funded["bank"]["id"], amount)
        response = await client.post("/transfer-out", auth=auth, json=body)
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"amount": "body"}
        assert await available(client, auth, funded) == 100_000


class TestEncoding:
    @pytest.mark.parametrize(
        ("encoding", "named"),
        [
            ("utf-16-le", "UTF-16"),
            ("utf-16-be", "UTF-16"),
            ("utf-16", "UTF-16"),
            ("utf-32-le", "UTF-32"),
            ("utf-32", "UTF-32"),
            ("utf-8-sig", "byte order mark"),
        ],
    )
    async def test_a_body_not_in_plain_utf8_is_400_naming_the_problem(
        self, client, auth, db, funded, encoding, named
    ):
        body = transfer(funded["account"]["id"], funded["bank"]["id"], 100)
        before = await snapshot(db, client, auth)
        response = await client.post(
            "/transfer-out", auth=auth, content=json.dumps(body).encode(encoding), headers=JSON
        )
        refused = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(refused) == {"body": "body"} and named in refused["message"]
        await assert_unchanged(before, db, client, auth, encoding)

    @pytest.mark.parametrize(
        ("charset", "status"),
        [
            ("utf-16", 415),
            ("UTF-32", 415),
            ("iso-8859-1", 415),
            ('"utf-16"', 415),
            ("utf-8", 201),
            ("UTF-8", 201),
            ('"utf-8"', 201),
            ("utf8", 201),
        ],
    )
    async def test_a_declared_charset_other_than_utf8_is_415(self, client, auth, charset, status):
        response = await client.post(
            "/tokens",
            auth=auth,
            content=b'{"name": "x", "permissions": ["VIEW"]}',
            headers={"Content-Type": f"application/json; charset={charset}"},
        )
        assert response.status_code == status, response.text
        if status == 415:
            body = assert_error(response, 415, "UNSUPPORTED_MEDIA_TYPE")
            assert charset.strip('"').lower() in body["message"]

    @pytest.mark.parametrize(
        "raw",
        [
            b'{"name": "\xff", "permissions": ["VIEW"]}',
            b'{"name": "\xed\xa0\x80", "permissions": ["VIEW"]}',
            b'{"name": "\xc3"}',
        ],
    )
    async def test_invalid_utf8_is_400_naming_the_offset(self, client, auth, raw):
        response = await client.post("/tokens", auth=auth, content=raw, headers=JSON)
        refused = assert_error(response, 400, "INVALID_INPUT")
        assert "not valid UTF-8" in refused["message"] and "offset 10" in refused["message"]

    @pytest.mark.parametrize(
        ("beneficiary", "named"),
        [
            ({"fullName": "Jane \ud800 Doe"}, "accountInfo.beneficiary.fullName"),
            ({"fullName": "Jane Doe", "note\udc00": "x"}, "accountInfo.beneficiary.note\\udc00"),
        ],
    )
    async def test_an_unpaired_surrogate_escape_is_400_even_where_any_json_is_taken(
        self, client, auth, db, beneficiary, named
    ):
        """accountInfo is free-form JSON: a key holding `\\udc00` reached storage and answered 500."""
        person = await customer(client, auth)
        info = {**USD_ACCOUNT_INFO, "beneficiary": {"beneficiaryType": "INDIVIDUAL", **beneficiary}}
        raw = json.dumps({"customerId": person["id"], "currency": "USD", "accountInfo": info}).encode()
        before = await snapshot(db, client, auth)
        response = await client.post("/customers/external-accounts", auth=auth, content=raw, headers=JSON)
        refused = assert_error(response, 400, "INVALID_INPUT")
        assert bad_fields(refused) == {named: "body"} and "surrogate" in refused["message"]
        await assert_unchanged(before, db, client, auth, "unpaired surrogate")

    async def test_a_surrogate_pair_escape_is_text(self, client, auth):
        raw = b'{"name": "bot \\ud83d\\ude00", "permissions": ["VIEW"]}'
        response = await client.post("/tokens", auth=auth, content=raw, headers=JSON)
        assert response.status_code == 201 and response.json()["name"] == "bot \U0001f600"

    async def test_non_ascii_utf8_text_is_accepted(self, client, auth):
        response = await client.post(
            "/tokens", auth=auth, json={"name": "Zoë’s bot ✓", "permissions": ["VIEW"]}
        )
        assert response.status_code == 201 and response.json()["name"] == "Zoë’s bot ✓"


class TestBodyOnAnOperationWithoutOne:
    async def test_a_quote_execution_with_a_body_is_refused_and_the_quote_stays_pending(
        self, client, auth, db, runner
    ):
        target = await _quote_execute(client, auth, runner)
        before = await snapshot(db, client, auth)
        response = await client.post(target.path, auth=auth, json={"amount": 1})
        assert bad_fields(assert_error(response, 400, "INVALID_INPUT")) == {"body": "body"}
        await assert_unchanged(before, db, client, auth, "execute with a body")

    @pytest.mark.parametrize("body", [None, b"{}", b" { } "])
    async def test_no_body_or_an_empty_object_executes(self, client, auth, runner, body):
        target = await _quote_execute(client, auth, runner)
        response = await client.post(target.path, auth=auth, content=body, headers=JSON if body else {})
        assert response.status_code == 200, response.text
