"""Customers: create, validate, read, update, list and filter, delete, KYC status events, isolation."""

from __future__ import annotations

import pytest

from tests.factories import create_platform
from tests.support.jobs import run_jobs_until

JANE = {
    "customerType": "INDIVIDUAL",
    "platformCustomerId": "user-1",
    "fullName": "Jane Doe",
    "birthDate": "1990-04-12",
    "nationality": "US",
    "email": "jane@example.com",
    "address": {
        "line1": "1 Main St",
        "city": "Springfield",
        "state": "IL",
        "postalCode": "62701",
        "country": "US",
    },
}
DOMAIN = "test-platform.platpay.test"
ACME = {
    "customerType": "BUSINESS",
    "platformCustomerId": "biz-1",
    "email": "ops@acme.example",
    "address": {"line1": "500 Market St", "postalCode": "94105", "country": "US"},
    "businessInfo": {
        "legalName": "Acme Corp",
        "taxId": "12-3456789",
        "incorporatedOn": "2015-06-01",
        "entityType": "LLC",
    },
}


async def _count(client, auth, **params):
    return (
        await client.get("/customers", auth=auth, params={"isIncludingDeleted": "true", **params})
    ).json()["totalCount"]


class TestCreate:
    async def test_individual_on_an_unregulated_platform_is_pending(self, client, auth):
        response = await client.post("/customers", auth=auth, json=JANE)
        assert response.status_code == 201, response.text
        body = response.json()
        assert body["id"].startswith("Customer:") and body["kycStatus"] == "PENDING"
        assert body["fullName"] == "Jane Doe" and body["birthDate"] == "1990-04-12"
        assert body["address"]["postalCode"] == "62701" and body["isDeleted"] is False
        assert body["umaAddress"].startswith("$") and body["umaAddress"].endswith(
            "@test-platform.platpay.test"
        )
        assert body["currencies"] == ["USD", "USDC", "USDB"]
        assert (await client.get(f"/customers/{body['id']}", auth=auth)).json() == body

    async def test_business_on_a_regulated_platform_is_approved(self, client, db, settings):
        regulated = await create_platform(db, settings, is_regulated=True)
        body = (await client.post("/customers", auth=regulated["sandbox"], json=ACME)).json()
        assert body["kycStatus"] == "APPROVED" and body["customerType"] == "BUSINESS"
        assert (
            body["businessInfo"]["legalName"] == "Acme Corp"
            and body["businessInfo"]["incorporatedOn"] == "2015-06-01"
        )

    async def test_only_customer_type_is_required(self, client, auth):
        body = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        assert len(body["platformCustomerId"]) == 32 and body["umaAddress"].startswith("$")

    async def test_uma_address_is_normalized_to_lowercase_and_unique_case_insensitively(self, client, auth):
        first = await client.post(
            "/customers",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "umaAddress": "$Jane.Doe@Test-Platform.platpay.test"},
        )
        assert first.json()["umaAddress"] == "$jane.doe@test-platform.platpay.test"
        again = await client.post(
            "/customers",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "umaAddress": "$JANE.DOE@test-platform.platpay.test"},
        )
        assert again.status_code == 409 and again.json()["code"] == "UMA_ADDRESS_EXISTS"

    async def test_duplicate_platform_customer_id_is_409_among_active_customers(self, client, auth):
        first = (await client.post("/customers", auth=auth, json=JANE)).json()
        dup = await client.post(
            "/customers", auth=auth, json={"customerType": "INDIVIDUAL", "platformCustomerId": "user-1"}
        )
        assert dup.status_code == 409 and dup.json()["code"] == "CONFLICT"
        await client.delete(f"/customers/{first['id']}", auth=auth)
        reused = await client.post(
            "/customers", auth=auth, json={"customerType": "INDIVIDUAL", "platformCustomerId": "user-1"}
        )
        assert reused.status_code == 201

    async def test_retrying_a_create_whose_keys_are_both_taken_is_one_409_naming_both(self, client, auth):
        body = {**JANE, "umaAddress": "$jane@test-platform.platpay.test"}
        assert (await client.post("/customers", auth=auth, json=body)).status_code == 201
        again = await client.post("/customers", auth=auth, json=body)
        assert again.status_code == 409, again.text
        error = again.json()
        assert error["code"] == "CONFLICT"
        assert [f["field"] for f in error["details"]["fields"]] == ["platformCustomerId", "umaAddress"]
        assert "platformCustomerId" in error["message"] and "umaAddress" in error["message"]
        assert await _count(client, auth) == 1

    async def test_idempotent_create(self, client, auth):
        a = await client.post("/customers", auth=auth, json=JANE, headers={"Idempotency-Key": "c1"})
        b = await client.post("/customers", auth=auth, json=JANE, headers={"Idempotency-Key": "c1"})
        assert a.status_code == 201 and a.content == b.content
        assert await _count(client, auth) == 1

    async def test_internal_accounts_are_opened_per_platform_currency(self, client, auth):
        customer = (await client.post("/customers", auth=auth, json=JANE)).json()
        accounts = (
            await client.get("/customers/internal-accounts", auth=auth, params={"customerId": customer["id"]})
        ).json()
        # a holding account per configured currency, and for USDB the embedded wallet besides it
        by_kind = {(a["balance"]["currency"]["code"], a["type"]): a for a in accounts["data"]}
        assert len(accounts["data"]) == 4 and set(by_kind) == {
            ("USD", "INTERNAL_FIAT"),
            ("USDC", "INTERNAL_CRYPTO"),
            ("USDB", "INTERNAL_CRYPTO"),
            ("USDB", "EMBEDDED_WALLET"),
        }
        by_currency = {code: a for (code, kind), a in by_kind.items() if kind != "EMBEDDED_WALLET"}
        assert by_kind[("USDB", "EMBEDDED_WALLET")]["privateEnabled"] is False
        assert all("privateEnabled" not in a for a in by_currency.values())
        assert by_currency["USD"]["balance"] == {
            "amount": 0,
            "currency": {"code": "USD", "name": "US Dollar", "symbol": "$", "decimals": 2},
        }
        assert by_currency["USD"]["totalBalance"]["amount"] == 0


class TestValidation:
    @pytest.mark.parametrize(
        ("patch", "field", "code"),
        [
            ({"birthDate": "1990-02-30"}, "birthDate", "INVALID_INPUT"),
            ({"birthDate": "2990-01-01"}, "birthDate", "INVALID_INPUT"),
            ({"birthDate": "12/04/1990"}, "birthDate", "INVALID_INPUT"),
            ({"fullName": "Jane  Doe"}, "fullName", "INVALID_INPUT"),
            ({"fullName": "Jane $Doe"}, "fullName", "INVALID_INPUT"),
            ({"fullName": "R2D2"}, "fullName", "INVALID_INPUT"),
            ({"nationality": "XX"}, "nationality", "INVALID_INPUT"),
            ({"email": "not-an-email"}, "email", "INVALID_INPUT"),
            ({"address": {"line1": "1 Main", "postalCode": "1"}}, "address.country", "INVALID_INPUT"),
            (
                {"address": {"line1": "1 Main", "postalCode": "1", "country": "USA"}},
                "address.country",
                "INVALID_INPUT",
            ),
            (
                {"address": {"line1": "1 Main", "postalCode": "1", "country": "ZZ"}},
                "address.country",
                "INVALID_INPUT",
            ),
            ({"umaAddress": "jane@test-platform.platpay.test"}, "umaAddress", "INVALID_UMA_ADDRESS"),
            ({"umaAddress": "$jane@elsewhere.com"}, "umaAddress", "INVALID_UMA_ADDRESS"),
            ({"umaAddress": "$ja ne@test-platform.platpay.test"}, "umaAddress", "INVALID_UMA_ADDRESS"),
            (
                {"umaAddress": "$" + "a" * 64 + "@test-platform.platpay.test"},
                "umaAddress",
                "INVALID_UMA_ADDRESS",
            ),
            (
                {"businessInfo": {"legalName": "X", "taxId": "1", "incorporatedOn": "2020-01-01"}},
                "businessInfo",
                "INVALID_INPUT",
            ),
            ({"currencies": ["EUR"]}, "currencies.0", "INVALID_CURRENCY"),
            ({"currencies": ["XYZ"]}, "currencies.0", "INVALID_CURRENCY"),
            ({"region": "U1"}, "region", "INVALID_INPUT"),
            ({"customerType": "ROBOT"}, "customerType", "INVALID_INPUT"),
        ],
    )
    async def test_invalid_individual_names_the_field_and_creates_nothing(
        self, client, auth, patch, field, code
    ):
        response = await client.post("/customers", auth=auth, json={**JANE, **patch})
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["code"] == code, error
        assert field in [f["field"] for f in error["details"]["fields"]], error
        assert await _count(client, auth) == 0

    async def test_every_problem_is_named_at_once(self, client, auth):
        response = await client.post(
            "/customers",
            auth=auth,
            json={**JANE, "birthDate": "1990-13-01", "nationality": "XX", "email": "not-an-email"},
        )
        assert {f["field"] for f in response.json()["details"]["fields"]} == {
            "birthDate",
            "nationality",
            "email",
        }

    @pytest.mark.parametrize(
        "name",
        [
            "Jose\u0301 García",  # é written as e + a combining acute accent
            "राहुल शर्मा",  # Devanagari: combining vowel signs and a virama
            "สมชาย ใจดี",  # Thai: combining vowels and tone marks
            "Zoë Åström",
            "李小龙",
            "محمد علي",
            "Mary-Jane O'Neil Jr.",
            "Seán O’Brien",
        ],
    )
    async def test_names_in_any_script_with_combining_marks_are_accepted(self, client, auth, name):
        created = await client.post("/customers", auth=auth, json={**JANE, "fullName": name})
        assert created.status_code == 201, created.text
        assert created.json()["fullName"] == name
        other = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        patched = await client.patch(
            f"/customers/{other['id']}", auth=auth, json={"customerType": "INDIVIDUAL", "fullName": name}
        )
        assert patched.status_code == 200 and patched.json()["fullName"] == name, patched.text
        business = await client.post(
            "/customers", auth=auth, json={**ACME, "businessInfo": {"legalName": name + " Ltd"}}
        )
        assert business.status_code == 201, business.text

    @pytest.mark.parametrize(
        ("name", "message"),
        [
            ("J@ne", "must contain only letters"),
            ("Jane 2", "must contain only letters"),
            ("Jane १", "must contain only letters"),  # a Devanagari digit is a digit
            ("Jane 😀", "must contain only letters"),
            ("\u0301Jane", "must start with a letter"),
            ("-Jane", "must start with a letter"),
            ("Jane  Doe", "repeated spaces"),
            ("Jane ", "trailing"),
            ("Jane\u00a0Doe", "plain spaces only (found U+00A0)"),
            (
                "Jane\nDoe",
                "control or formatting characters such as line breaks, tabs or direction overrides",
            ),
            ("Jane\tDoe", "(found U+0009)"),
            ("Jane\u202eeoD", "control or formatting characters"),  # right-to-left override
            ("Jane\u200bDoe", "(found U+200B)"),  # zero-width space
        ],
    )
    async def test_names_refused_say_why(self, client, auth, name, message):
        response = await client.post("/customers", auth=auth, json={**JANE, "fullName": name})
        assert response.status_code == 400, response.text
        [problem] = response.json()["details"]["fields"]
        assert problem["field"] == "fullName" and message in problem["message"], problem
        business = await client.post(
            "/customers",
            auth=auth,
            json={**ACME, "businessInfo": {**ACME["businessInfo"], "legalName": name}},
        )
        if "letter" in message:  # a business's legal name may hold digits and symbols
            assert business.status_code == 201, business.text
        else:  # but not control characters or stray spaces, with the same message
            assert business.status_code == 400, business.text
            [problem] = business.json()["details"]["fields"]
            assert problem["field"] == "businessInfo.legalName" and message in problem["message"], problem

    async def test_schema_and_rule_problems_are_named_in_one_400(self, client, auth):
        body = {
            **JANE,
            "email": "x",  # too short: refused by the request schema
            "fullName": "J@ne",  # the rest by the customer rules
            "birthDate": "2999-01-01",
            "nationality": "QQ",
            "umaAddress": "$jane@elsewhere.example",
            "address": {**JANE["address"], "postalCode": 62701, "line1": " 1 Main St"},
        }
        response = await client.post("/customers", auth=auth, json=body)
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["code"] == "INVALID_INPUT"
        fields = [f["field"] for f in error["details"]["fields"]]
        assert sorted(fields) == sorted(
            [
                "email",
                "address.postalCode",
                "fullName",
                "birthDate",
                "nationality",
                "umaAddress",
                "address.line1",
            ]
        ), error
        assert all(f["location"] == "body" for f in error["details"]["fields"])
        assert await _count(client, auth) == 0

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            # an invalid customerType: the rules that do not depend on it still run
            ({"customerType": "ROBOT", "fullName": "R2D2", "email": "a@b.co"}, {"customerType", "fullName"}),
            # a bad field inside businessInfo does not hide the rules on its other fields
            (
                {
                    **ACME,
                    "businessInfo": {
                        "legalName": "Acme\nCorp",
                        "entityType": "GUILD",
                        "incorporatedOn": "2999-01-01",
                    },
                },
                {"businessInfo.entityType", "businessInfo.legalName", "businessInfo.incorporatedOn"},
            ),
            # a field the schema refused is not named twice by the provider requirements
            (
                {**JANE, "currencies": ["USD"], "birthDate": 19900412, "address": {"line1": "1 Main St"}},
                {"birthDate", "address.postalCode", "address.country"},
            ),
            # unknown fields, wrong types and rules together
            (
                {**JANE, "nickname": "JJ", "region": 5, "nationality": "QQ", "fullName": "Jane\u202eDoe"},
                {"nickname", "region", "nationality", "fullName"},
            ),
        ],
    )
    async def test_every_problem_is_named_whatever_finds_it(self, client, auth, body, expected):
        response = await client.post("/customers", auth=auth, json=body)
        assert response.status_code == 400, response.text
        fields = [f["field"] for f in response.json()["details"]["fields"]]
        assert sorted(fields) == sorted(expected), response.json()

    async def test_rule_problems_and_missing_provider_fields_together(self, client, auth):
        response = await client.post(
            "/customers",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "currencies": ["USD"], "fullName": "J@ne"},
        )
        error = response.json()
        assert response.status_code == 400 and error["code"] == "INVALID_INPUT", error
        assert {f["field"] for f in error["details"]["fields"]} == {"fullName", "birthDate", "address"}

    async def test_missing_customer_type_is_400(self, client, auth):
        response = await client.post("/customers", auth=auth, json={"fullName": "Jane"})
        assert response.status_code == 400
        assert "customerType" in [f["field"] for f in response.json()["details"]["fields"]]

    @pytest.mark.parametrize(
        ("business_info", "field"),
        [
            ({"taxId": "1", "incorporatedOn": "2020-01-01"}, "businessInfo.legalName"),
            (
                {"legalName": "Acme", "taxId": "1", "incorporatedOn": "2999-01-01"},
                "businessInfo.incorporatedOn",
            ),
            (
                {"legalName": "Acme", "taxId": "1", "incorporatedOn": "2020-01-01", "entityType": "GUILD"},
                "businessInfo.entityType",
            ),
            (
                {
                    "legalName": "Acme",
                    "taxId": "1",
                    "incorporatedOn": "2020-01-01",
                    "countriesOfOperation": ["US", "QQ"],
                },
                "businessInfo.countriesOfOperation.1",
            ),
        ],
    )
    async def test_invalid_business(self, client, auth, business_info, field):
        response = await client.post("/customers", auth=auth, json={**ACME, "businessInfo": business_info})
        assert response.status_code == 400, response.text
        assert field in [f["field"] for f in response.json()["details"]["fields"]]

    async def test_individual_fields_do_not_apply_to_a_business(self, client, auth):
        response = await client.post("/customers", auth=auth, json={**ACME, "fullName": "Jane Doe"})
        assert response.status_code == 400 and response.json()["details"]["fields"][0]["field"] == "fullName"

    async def test_provider_required_fields_for_declared_currencies(self, client, auth):
        response = await client.post(
            "/customers",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "currencies": ["USD"], "fullName": "Jane Doe"},
        )
        assert response.status_code == 400
        error = response.json()
        assert error["code"] == "MISSING_MANDATORY_USER_INFO"
        assert {f["field"] for f in error["details"]["fields"]} == {"birthDate", "address"}
        ok = await client.post("/customers", auth=auth, json={**JANE, "currencies": ["USD", "USDC"]})
        assert ok.status_code == 201 and ok.json()["currencies"] == ["USD", "USDC"]

    async def test_business_requirements_follow_the_currency(self, client, auth):
        response = await client.post(
            "/customers",
            auth=auth,
            json={**ACME, "currencies": ["USD"], "businessInfo": {"legalName": "Acme Corp"}},
        )
        assert response.json()["code"] == "MISSING_MANDATORY_USER_INFO"
        assert {f["field"] for f in response.json()["details"]["fields"]} == {
            "businessInfo.incorporatedOn",
            "businessInfo.taxId",
        }
        assert (
            await client.post(
                "/customers",
                auth=auth,
                json={**ACME, "currencies": ["USDC"], "businessInfo": {"legalName": "Acme Corp"}},
            )
        ).status_code == 201

    async def test_usdb_needs_an_email(self, client, auth):
        response = await client.post(
            "/customers", auth=auth, json={"customerType": "BUSINESS", "currencies": ["USDB"]}
        )
        assert response.json()["code"] == "MISSING_MANDATORY_USER_INFO"
        assert response.json()["details"]["fields"] == [
            {"field": "email", "message": "required by the provider for USDB"}
        ]


class TestUpdate:
    async def test_partial_update(self, client, auth):
        created = (await client.post("/customers", auth=auth, json=JANE)).json()
        response = await client.patch(
            f"/customers/{created['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "nationality": "MX"},
        )
        assert response.status_code == 200
        body = response.json()
        assert body["nationality"] == "MX" and body["fullName"] == "Jane Doe"
        # (an email change of a customer whose wallet logs in by EMAIL_OTP is a signed retry:
        # tests/wallets/test_email_change.py)
        assert body["updatedAt"] >= created["updatedAt"]

    @pytest.mark.parametrize(
        ("patch", "field"),
        [
            ({"customerType": "BUSINESS"}, "customerType"),
            ({"customerType": "INDIVIDUAL", "region": "MX"}, "region"),
            ({"customerType": "INDIVIDUAL", "email": None}, "email"),
            ({"customerType": "INDIVIDUAL", "birthDate": "2100-01-01"}, "birthDate"),
            ({"customerType": "INDIVIDUAL", "businessInfo": {"legalName": "X"}}, "businessInfo"),
            ({"email": "x@example.com"}, "customerType"),
        ],
    )
    async def test_invalid_updates_change_nothing(self, client, auth, patch, field):
        created = (await client.post("/customers", auth=auth, json={**JANE, "region": "US"})).json()
        response = await client.patch(f"/customers/{created['id']}", auth=auth, json=patch)
        assert response.status_code == 400, response.text
        assert field in [f["field"] for f in response.json()["details"]["fields"]]
        assert (await client.get(f"/customers/{created['id']}", auth=auth)).json() == created

    async def test_every_problem_of_a_patch_is_named_in_one_400(self, client, auth):
        created = (await client.post("/customers", auth=auth, json={**JANE, "region": "US"})).json()
        response = await client.patch(
            f"/customers/{created['id']}",
            auth=auth,
            json={
                "customerType": "INDIVIDUAL",
                "region": "MX",
                "email": "x",
                "fullName": "J@ne",
                "birthDate": None,
                "nationality": "QQ",
                "address": {"line1": "2 St", "postalCode": "1", "country": "ZZ", "city": None},
            },
        )
        assert response.status_code == 400, response.text
        assert sorted(f["field"] for f in response.json()["details"]["fields"]) == [
            "address.city",
            "address.country",
            "birthDate",
            "email",
            "fullName",
            "nationality",
            "region",
        ], response.json()
        mismatched = await client.patch(
            f"/customers/{created['id']}", auth=auth, json={"customerType": "BUSINESS", "email": "x"}
        )
        assert {f["field"] for f in mismatched.json()["details"]["fields"]} == {"customerType", "email"}
        gone = await client.patch(
            "/customers/Customer:nope",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "email": "x", "fullName": "J@ne"},
        )
        assert gone.status_code == 400 and {f["field"] for f in gone.json()["details"]["fields"]} == {
            "email",
            "fullName",
        }
        assert (await client.get(f"/customers/{created['id']}", auth=auth)).json() == created

    @pytest.mark.parametrize(
        ("patch", "field", "message"),
        [
            (
                {"businessInfo": {"taxId": None}},
                "businessInfo.taxId",
                "cannot be null: omit it to keep its value",
            ),
            (
                {"businessInfo": {"registrationNumber": "R-1", "incorporatedOn": None}},
                "businessInfo.incorporatedOn",
                "cannot be null",
            ),
            (
                {"address": {"line1": "1 St", "postalCode": "1", "country": "US", "line2": None}},
                "address.line2",
                "cannot be null: omit it (an address is replaced as a whole)",
            ),
            ({"businessInfo": None}, "businessInfo", "cannot be null"),
        ],
    )
    async def test_nested_nulls_are_refused_too(self, client, auth, patch, field, message):
        created = (await client.post("/customers", auth=auth, json=ACME)).json()
        response = await client.patch(
            f"/customers/{created['id']}", auth=auth, json={"customerType": "BUSINESS", **patch}
        )
        assert response.status_code == 400, response.text
        [problem] = response.json()["details"]["fields"]
        assert problem["field"] == field and problem["message"].startswith(message), problem
        assert (await client.get(f"/customers/{created['id']}", auth=auth)).json() == created

    async def test_business_info_merges(self, client, auth):
        created = (await client.post("/customers", auth=auth, json=ACME)).json()
        body = (
            await client.patch(
                f"/customers/{created['id']}",
                auth=auth,
                json={"customerType": "BUSINESS", "businessInfo": {"registrationNumber": "R-9"}},
            )
        ).json()
        assert (
            body["businessInfo"]["legalName"] == "Acme Corp"
            and body["businessInfo"]["registrationNumber"] == "R-9"
        )

    async def test_currencies_update_checks_provider_requirements(self, client, auth):
        created = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        refused = await client.patch(
            f"/customers/{created['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "currencies": ["USDB"]},
        )
        assert refused.json()["code"] == "MISSING_MANDATORY_USER_INFO"
        accepted = await client.patch(
            f"/customers/{created['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "currencies": ["USDB"], "email": "a@b.co"},
        )
        assert accepted.status_code == 200 and accepted.json()["currencies"] == ["USDB"]

    async def test_uma_address_change_conflicts(self, client, auth):
        a = (
            await client.post(
                "/customers",
                auth=auth,
                json={"customerType": "INDIVIDUAL", "umaAddress": "$a@test-platform.platpay.test"},
            )
        ).json()
        b = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        response = await client.patch(
            f"/customers/{b['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "umaAddress": a["umaAddress"].upper()},
        )
        assert response.status_code == 409 and response.json()["code"] == "UMA_ADDRESS_EXISTS"

    async def test_taking_both_keys_of_another_customer_is_one_409_naming_both(self, client, auth):
        a = (await client.post("/customers", auth=auth, json={**JANE, "umaAddress": "$a@" + DOMAIN})).json()
        b = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
        response = await client.patch(
            f"/customers/{b['id']}",
            auth=auth,
            json={
                "customerType": "INDIVIDUAL",
                "platformCustomerId": a["platformCustomerId"],
                "umaAddress": a["umaAddress"],
            },
        )
        assert response.status_code == 409, response.text
        assert response.json()["code"] == "CONFLICT"
        assert [f["field"] for f in response.json()["details"]["fields"]] == [
            "platformCustomerId",
            "umaAddress",
        ]
        assert (await client.get(f"/customers/{b['id']}", auth=auth)).json() == b


class TestDelete:
    async def test_soft_delete(self, client, auth, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        created = (await client.post("/customers", auth=auth, json=JANE)).json()
        deleted = await client.delete(f"/customers/{created['id']}", auth=auth)
        assert deleted.status_code == 200 and deleted.json()["isDeleted"] is True
        assert (await client.get(f"/customers/{created['id']}", auth=auth)).json()["isDeleted"] is True
        assert (await client.get("/customers", auth=auth)).json()["totalCount"] == 0
        listed = (await client.get("/customers", auth=auth, params={"isIncludingDeleted": "true"})).json()
        assert [c["id"] for c in listed["data"]] == [created["id"]]
        again = await client.delete(f"/customers/{created['id']}", auth=auth)
        assert again.status_code == 410 and again.json()["code"] == "CUSTOMER_DELETED"
        patched = await client.patch(
            f"/customers/{created['id']}", auth=auth, json={"customerType": "INDIVIDUAL", "email": "a@b.co"}
        )
        assert patched.status_code == 410
        accounts = (
            await client.get("/customers/internal-accounts", auth=auth, params={"customerId": created["id"]})
        ).json()["data"]
        assert {a["status"] for a in accounts} == {"CLOSED"}
        assert len(accounts) == 4  # USD, USDC, USDB (holding and wallet)
        await run_jobs_until(runner, lambda: len(receiver.of_type("INTERNAL_ACCOUNT.STATUS_UPDATED")) == 4)
        assert {r.json["data"]["status"] for r in receiver.of_type("INTERNAL_ACCOUNT.STATUS_UPDATED")} == {
            "CLOSED"
        }

    async def test_unknown_customer(self, client, auth):
        for method in ("get", "delete"):
            response = await getattr(client, method)("/customers/Customer:nope", auth=auth)
            assert response.status_code == 404 and response.json()["code"] == "USER_NOT_FOUND"


class TestKycStatus:
    async def test_status_changes_fire_customer_events(self, client, auth, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        person = (await client.post("/customers", auth=auth, json=JANE)).json()
        company = (await client.post("/customers", auth=auth, json=ACME)).json()
        approved = await client.post(
            f"/sandbox/customers/{person['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
        )
        assert approved.status_code == 200 and approved.json()["kycStatus"] == "APPROVED"
        await client.post(
            f"/sandbox/customers/{company['id']}/kyc", auth=auth, json={"kycStatus": "REJECTED"}
        )
        # TEST, KYC_APPROVED, and the business (UNVERIFIED: the override enters PENDING first, as a submission
        # would) KYB_PENDING then KYB_REJECTED
        await run_jobs_until(runner, lambda: len(receiver.received) == 4)
        events = {r.json["type"]: r.json["data"] for r in receiver.received}
        assert events["CUSTOMER.KYB_PENDING"]["id"] == company["id"]
        assert events["CUSTOMER.KYC_APPROVED"]["id"] == person["id"]
        assert events["CUSTOMER.KYC_APPROVED"]["kycStatus"] == "APPROVED"
        assert events["CUSTOMER.KYB_REJECTED"]["id"] == company["id"]
        fetched = (await client.get(f"/customers/{person['id']}", auth=auth)).json()
        assert events["CUSTOMER.KYC_APPROVED"] == fetched  # the payload is the resource as GET returns it

    async def test_simulation_is_sandbox_only(self, client, platform):
        prod = platform["production"]
        created = (await client.post("/customers", auth=prod, json=JANE)).json()
        response = await client.post(
            f"/sandbox/customers/{created['id']}/kyc", auth=prod, json={"kycStatus": "APPROVED"}
        )
        assert response.status_code == 403


class TestList:
    async def test_filters_combine_and_paginate(self, client, auth):
        ids = {}
        for i in range(5):
            ids[f"i{i}"] = (
                await client.post(
                    "/customers",
                    auth=auth,
                    json={
                        "customerType": "INDIVIDUAL",
                        "platformCustomerId": f"i{i}",
                        "region": "MX" if i % 2 else "US",
                    },
                )
            ).json()["id"]
        for i in range(3):
            await client.post(
                "/customers",
                auth=auth,
                json={
                    "customerType": "BUSINESS",
                    "platformCustomerId": f"b{i}",
                    "currencies": ["USDC"],
                    "region": "US",
                },
            )
        assert (await client.get("/customers", auth=auth, params={"customerType": "BUSINESS"})).json()[
            "totalCount"
        ] == 3
        assert (await client.get("/customers", auth=auth, params={"region": "MX"})).json()["totalCount"] == 2
        assert (
            await client.get("/customers", auth=auth, params={"region": "US", "customerType": "INDIVIDUAL"})
        ).json()["totalCount"] == 3
        assert (await client.get("/customers", auth=auth, params={"currency": "USD"})).json()[
            "totalCount"
        ] == 5
        assert (await client.get("/customers", auth=auth, params={"currency": "USDC"})).json()[
            "totalCount"
        ] == 8
        assert (await client.get("/customers", auth=auth, params={"platformCustomerId": "i3"})).json()[
            "data"
        ][0]["id"] == ids["i3"]
        seen, cursor = [], None
        while True:
            page = (
                await client.get(
                    "/customers", auth=auth, params={"limit": 3, **({"cursor": cursor} if cursor else {})}
                )
            ).json()
            seen += [c["id"] for c in page["data"]]
            if not page["hasMore"]:
                break
            cursor = page["nextCursor"]
        assert len(seen) == len(set(seen)) == 8

    async def test_uma_filter_is_case_insensitive(self, client, auth):
        created = (
            await client.post(
                "/customers",
                auth=auth,
                json={"customerType": "INDIVIDUAL", "umaAddress": "$bob@test-platform.platpay.test"},
            )
        ).json()
        found = (
            await client.get(
                "/customers", auth=auth, params={"umaAddress": "$BOB@test-platform.platpay.test"}
            )
        ).json()
        assert [c["id"] for c in found["data"]] == [created["id"]]


class TestIsolation:
    async def test_other_tenants_cannot_see_customers(self, client, auth, db, settings, platform):
        created = (await client.post("/customers", auth=auth, json=JANE)).json()
        other = await create_platform(db, settings, name="Other")
        for creds in (other["sandbox"], platform["production"]):
            assert (await client.get(f"/customers/{created['id']}", auth=creds)).status_code == 404
            assert (
                await client.patch(
                    f"/customers/{created['id']}", auth=creds, json={"customerType": "INDIVIDUAL"}
                )
            ).status_code == 404
            assert (await client.delete(f"/customers/{created['id']}", auth=creds)).status_code == 404
            assert (await client.get("/customers", auth=creds)).json()["totalCount"] == 0
            accounts = (
                await client.get(
                    "/customers/internal-accounts", auth=creds, params={"customerId": created["id"]}
                )
            ).json()
            assert accounts["totalCount"] == 0
        # the same platformCustomerId is free in another tenant
        assert (await client.post("/customers", auth=other["sandbox"], json=JANE)).status_code == 201


class TestConcurrentCreates:
    async def test_racing_creates_of_one_platform_customer_id_give_one_customer_and_409s(self, client, auth):
        import asyncio

        body = {"customerType": "INDIVIDUAL", "platformCustomerId": "race-1"}
        responses = await asyncio.gather(*(client.post("/customers", auth=auth, json=body) for _ in range(8)))
        statuses = sorted(r.status_code for r in responses)
        assert statuses.count(201) == 1 and set(statuses) <= {201, 409}, [r.text for r in responses]
        assert (await client.get("/customers", auth=auth, params={"platformCustomerId": "race-1"})).json()[
            "totalCount"
        ] == 1

    async def test_racing_identical_creates_give_one_customer_and_409s_never_400(self, client, auth):
        import asyncio

        body = {**JANE, "platformCustomerId": "race-2", "umaAddress": "$race2@" + DOMAIN}
        responses = []
        for _ in range(3):  # the keys are found taken before, during and after the winner's commit
            responses += await asyncio.gather(
                *(client.post("/customers", auth=auth, json=body) for _ in range(8))
            )
        statuses = [r.status_code for r in responses]
        assert statuses.count(201) == 1 and set(statuses) == {201, 409}, [r.text for r in responses]
        assert {r.json()["code"] for r in responses if r.status_code == 409} == {"CONFLICT"}, "\n".join(
            r.text for r in responses
        )
        listed = await client.get("/customers", auth=auth, params={"platformCustomerId": "race-2"})
        assert listed.json()["totalCount"] == 1
