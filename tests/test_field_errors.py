"""A 400 names every bad field twice (DRIFT-2026-08 §4): platpay's `details.fields` as
before, and beside it the reference's `details.errors` of `{field (dot path), constraint?, message}`, the
constraint holding only the keys that apply (format, pattern, enum, minLength, maxLength). Whatever refuses
the input: the request models, a query parameter, a rule in a service, the JSON parser. Runs on every
backend; the `db` fixture verifies the ledger after each test (nothing was moved).

That every other 400 the tests receive agrees with its `details.fields` is checked on each answer by the
`client` fixture (tests/support/field_errors.py)."""

from __future__ import annotations

from typing import Any

import httpx

from tests.factories import FULL_PERSON
from tests.support.agents import funded_customer
from tests.support.api_errors import assert_error

NOT_AN_ACCOUNT = "InternalAccount:019542f5-b3e7-1d02-0000-000000000002"


def field_errors(response: httpx.Response) -> list[dict[str, Any]]:
    body = assert_error(response, 400, "INVALID_INPUT")
    assert len(body["details"]["errors"]) == len(body["details"]["fields"]), body
    return body["details"]["errors"]


def fields(response: httpx.Response) -> list[dict[str, Any]]:
    return response.json()["details"]["fields"]


def quote(**changes: Any) -> dict[str, Any]:
    body = {
        "source": {"sourceType": "ACCOUNT", "accountId": NOT_AN_ACCOUNT},
        "destination": {"destinationType": "ACCOUNT", "accountId": NOT_AN_ACCOUNT},
        "lockedCurrencySide": "SENDING",
        "lockedCurrencyAmount": 1_000,
    }
    return {**body, **changes}


class TestRequestBodies:
    async def test_a_value_outside_an_enumeration_carries_the_allowed_values(self, client, auth, db):
        response = await client.post("/quotes", auth=auth, json=quote(lockedCurrencySide="SELLING"))
        assert field_errors(response) == [
            {
                "field": "lockedCurrencySide",
                "constraint": {"enum": ["SENDING", "RECEIVING"]},
                "message": "Input should be 'SENDING' or 'RECEIVING'",
            }
        ]
        assert fields(response) == [
            {
                "field": "lockedCurrencySide",
                "location": "body",
                "message": "Input should be 'SENDING' or 'RECEIVING'",
            }
        ]

    async def test_an_array_item_is_named_by_its_index(self, client, auth, db):
        response = await client.post(
            "/tokens", auth=auth, json={"name": "ci", "permissions": ["VIEW", "ALL"]}
        )
        assert field_errors(response) == [
            {
                "field": "permissions.1",
                "constraint": {"enum": ["VIEW", "TRANSACT", "MANAGE"]},
                "message": "Input should be 'VIEW', 'TRANSACT' or 'MANAGE'",
            }
        ]

    async def test_a_pattern_mismatch_carries_the_pattern(self, client, auth, db):
        response = await client.post("/customers", auth=auth, json={**FULL_PERSON, "phoneNumber": "555-0100"})
        assert field_errors(response) == [
            {
                "field": "phoneNumber",
                "constraint": {"pattern": r"^\+[1-9]\d{1,14}$"},
                "message": r"String should match pattern '^\+[1-9]\d{1,14}$'",
            }
        ]

    async def test_a_nested_field_is_named_by_its_dot_path(self, client, auth, db):
        business = {
            "customerType": "BUSINESS",
            "platformCustomerId": "b-1",
            "businessInfo": {"legalName": "Acme", "naicsCode": "52-21"},
        }
        response = await client.post("/customers", auth=auth, json=business)
        assert {"field": "businessInfo.naicsCode", "constraint": {"pattern": r"^\d{2,6}$"},
                "message": r"String should match pattern '^\d{2,6}$'"} in field_errors(response)  # fmt: skip

    async def test_strings_too_long_and_too_short_carry_their_bound(self, client, auth, db):
        person = {
            **FULL_PERSON,
            "email": "x" * 250 + "@example.com",
            "address": {**FULL_PERSON["address"], "country": "USA", "postalCode": ""},
        }
        response = await client.post("/customers", auth=auth, json=person)
        errors = {entry["field"]: entry for entry in field_errors(response)}
        assert errors["email"] == {
            "field": "email",
            "constraint": {"maxLength": 254},
            "message": "String should have at most 254 characters",
        }
        assert errors["address.country"] == {
            "field": "address.country",
            "constraint": {"maxLength": 2},
            "message": "String should have at most 2 characters",
        }
        assert errors["address.postalCode"] == {
            "field": "address.postalCode",
            "constraint": {"minLength": 1},
            "message": "String should have at least 1 character",
        }

    async def test_a_wrong_type_and_a_missing_field_carry_no_constraint(self, client, auth, db):
        body = {"source": {"accountId": 5}, "destination": {}, "amount": "10"}
        response = await client.post("/transfer-out", auth=auth, json=body)
        assert field_errors(response) == [
            {"field": "source.accountId", "message": "Input should be a valid string"},
            {"field": "destination.accountId", "message": "Field required"},
            {"field": "amount", "message": "Input should be a valid integer"},
        ]

    async def test_a_timestamp_that_does_not_parse_carries_its_format(self, client, auth, db):
        response = await client.post("/sandbox/clock/advance", auth=auth, json={"to": "2025-10-13T12:00:00"})
        assert field_errors(response) == [
            {
                "field": "to",
                "constraint": {"format": "date-time"},
                "message": "Input should have timezone info",
            }
        ]

    async def test_the_tag_of_a_union_is_not_part_of_the_path(self, client, auth, db):
        """pydantic locates an error in `source` under the union member's tag (`source.ACCOUNT.accountId`),
        which `details.fields` keeps as it always has; `details.errors` names the field of the request."""
        body = quote(
            source={"sourceType": "ACCOUNT", "accountId": 7}, destination={"destinationType": "ACCOUNT"}
        )
        response = await client.post("/quotes", auth=auth, json=body)
        assert field_errors(response) == [
            {"field": "source.accountId", "message": "Input should be a valid string"},
            {"field": "destination.accountId", "message": "Field required"},
        ]
        assert [entry["field"] for entry in fields(response)] == [
            "source.ACCOUNT.accountId",
            "destination.ACCOUNT.accountId",
        ]

    async def test_an_unknown_field_is_named(self, client, auth, db):
        response = await client.post("/quotes", auth=auth, json=quote(lockedAmount=5))
        assert field_errors(response) == [
            {"field": "lockedAmount", "message": "Extra inputs are not permitted"}
        ]


class TestParameters:
    async def test_bad_query_parameters_are_each_named_with_their_constraint(self, client, auth, db):
        response = await client.get(
            "/transactions", auth=auth, params={"limit": "many", "sortOrder": "up", "startDate": "yesterday"}
        )
        assert field_errors(response) == [
            {"field": "limit", "message": "Input should be a valid integer, unable to parse string as an integer"},
            {"field": "sortOrder", "constraint": {"enum": ["asc", "desc"]}, "message": "Input should be 'asc' or 'desc'"},
            {
                "field": "startDate",
                "constraint": {"format": "date-time"},
                "message": "must be an ISO 8601 timestamp, e.g. 2025-10-13T12:00:00Z",
            },
        ]  # fmt: skip
        assert {entry["location"] for entry in fields(response)} == {"query"}

    async def test_a_too_long_query_parameter_carries_its_bound(self, client, auth, db):
        response = await client.get("/transactions", auth=auth, params={"customerId": "x" * 65})
        assert field_errors(response) == [
            {"field": "customerId", "constraint": {"maxLength": 64}, "message": "String should have at most 64 characters"}
        ]  # fmt: skip

    async def test_a_nul_in_a_path_parameter_is_named(self, client, auth, db):
        response = await client.get("/tokens/a%00b", auth=auth)
        assert [entry["field"] for entry in field_errors(response)] == [
            entry["field"] for entry in fields(response)
        ]
        assert field_errors(response)[0]["message"] == fields(response)[0]["message"]


class TestServiceRules:
    async def test_a_rule_with_a_constraint_names_it(self, client, auth, db):
        before = (await client.get("/config", auth=auth)).json()
        response = await client.patch("/config", auth=auth, json={"webhookEndpoint": "not a url"})
        assert field_errors(response) == [
            {
                "field": "webhookEndpoint",
                "constraint": {"format": "url"},
                "message": "must be a URL without spaces or control characters",
            }
        ]
        assert (await client.get("/config", auth=auth)).json() == before

    async def test_a_customer_rule_names_the_format_it_checks(self, client, auth, db):
        response = await client.post("/customers", auth=auth, json={**FULL_PERSON, "email": "not-an-email"})
        assert field_errors(response) == [
            {"field": "email", "constraint": {"format": "email"}, "message": "'not-an-email' is not a valid email address"}
        ]  # fmt: skip
        assert fields(response) == [
            {"field": "email", "message": "'not-an-email' is not a valid email address"}
        ]
        assert (await client.get("/customers", auth=auth)).json()["data"] == []

    async def test_customer_rules_name_dates_and_countries_by_format(self, client, auth, db):
        person = {
            **FULL_PERSON,
            "birthDate": "1990-02-30",
            "address": {**FULL_PERSON["address"], "country": "ZZ"},
        }
        errors = {
            entry["field"]: entry
            for entry in field_errors(await client.post("/customers", auth=auth, json=person))
        }
        assert errors["birthDate"] == {
            "field": "birthDate",
            "constraint": {"format": "date"},
            "message": "'1990-02-30' is not a real calendar date",
        }
        assert errors["address.country"]["constraint"] == {"format": "iso3166-1-alpha-2"}

    async def test_a_rule_without_a_constraint_names_the_field_and_why(self, client, auth, db):
        response = await client.post("/customers", auth=auth, json={**FULL_PERSON, "fullName": "J4ne Doe"})
        assert field_errors(response) == [
            {
                "field": "fullName",
                "message": "must contain only letters, single spaces, hyphens, apostrophes and periods",
            }
        ]

    async def test_schema_errors_and_rule_problems_are_named_together(self, client, auth, db):
        """The customers routes add the rules' problems to the schema's (customers/endpoints.py)."""
        response = await client.post(
            "/customers", auth=auth, json={**FULL_PERSON, "email": "not-an-email", "phoneNumber": "12"}
        )
        errors = field_errors(response)
        assert [entry["field"] for entry in errors] == [entry["field"] for entry in fields(response)]
        assert {"field": "email", "constraint": {"format": "email"},
                "message": "'not-an-email' is not a valid email address"} in errors  # fmt: skip
        assert {"field": "phoneNumber", "constraint": {"pattern": r"^\+[1-9]\d{1,14}$"},
                "message": r"String should match pattern '^\+[1-9]\d{1,14}$'"} in errors  # fmt: skip


class TestTheJsonParser:
    async def test_a_key_given_twice_is_named_by_its_path(self, client, auth, db):
        content = b'{"name": "ci", "permissions": ["VIEW"], "name": "ci2"}'
        response = await client.post(
            "/tokens", auth=auth, content=content, headers={"Content-Type": "application/json"}
        )
        assert field_errors(response) == [
            {"field": "name", "message": "is given more than once: each key once per object"}
        ]

    async def test_a_body_that_is_not_json_names_the_body(self, client, auth, db):
        response = await client.post(
            "/tokens", auth=auth, content=b"{nope", headers={"Content-Type": "application/json"}
        )
        [error] = field_errors(response)
        assert error["field"] == "body" and error["message"].startswith("request body is not valid JSON")


async def test_a_refusal_naming_no_field_has_neither_list(client, auth, db):
    """The whole balance of an empty account: nothing to transfer, and no field of the request is wrong."""
    empty = await funded_customer(client, auth, 0)
    body = {
        "source": {"accountId": empty["account"]["id"]},
        "destination": {"accountId": empty["bank"]["id"]},
    }
    response = await client.post("/transfer-out", auth=auth, json=body)
    details = assert_error(response, 400, "INVALID_INPUT")["details"]
    assert details == {"accountId": empty["account"]["id"]}
