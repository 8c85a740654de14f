"""The August reference's customer fields (DRIFT-2026-08 §3): phoneNumber, an individual's
identification (idType, a write-only identifier, countryOfIssuance) and enhanced-due-diligence answers, a
business's new businessInfo fields and entity types, kybStatus beside kycStatus. Each is accepted,
validated (a 400 naming the field, nothing stored), stored, returned, changed by PATCH and carried by the
customer webhooks; the identifier is never returned, logged or stored in clear."""

from __future__ import annotations

from typing import Any

import pytest
import sqlalchemy as sa
from cryptography.exceptions import InvalidTag

from platpay.customers import identity
from tests.factories import FULL_PERSON, customer
from tests.support.jobs import run_jobs_until
from tests.support.wallets import Wallet, signed_headers, wallet_account

SSN = "123-45-6789"
EDD = {
    "sourceOfFundsCategories": ["SALARY", "OTHER"],
    "sourceOfFundsOtherDescription": "Prize money",
    "sourceOfWealthCategories": ["INVESTMENTS"],
    "purposeOfAccount": "P2P_TRANSFERS",
    "expectedMonthlyTransactionCount": "COUNT_10_TO_100",
    "expectedMonthlyTransactionVolume": "VOLUME_UNDER_10K",
    "annualIncomeRange": "RANGE_100K_250K",
    "netWorthRange": "RANGE_500K_1M",
    "pepStatus": "NONE",
}
BUSINESS_INFO = {
    "legalName": "Acme Corp",
    "taxId": "12-3456789",
    "incorporatedOn": "2015-06-01",
    "entityType": "PUBLICLY_LISTED_COMPANY",
    "naicsCode": "541511",
    "sourceOfFundsCategories": ["OPERATING_REVENUE", "OTHER"],
    "sourceOfFundsOtherDescription": "Grants",
    "purposeOfAccount": "OTHER",
    "purposeOfAccountOtherDescription": "Escrow for equipment leases",
    "expectedCounterpartyCountries": ["US", "MX"],
    "primaryContactFirstName": "Jane",
    "primaryContactLastName": "Smith",
}
ACME = {
    "customerType": "BUSINESS",
    "phoneNumber": "+14155550100",
    "address": {"line1": "500 Market St", "postalCode": "94105", "country": "US"},
    "businessInfo": BUSINESS_INFO,
}


async def _refused(client, auth, body: dict[str, Any], field: str, *, code: str = "INVALID_INPUT") -> dict:
    before = (await client.get("/customers", auth=auth)).json()["totalCount"]
    response = await client.post("/customers", auth=auth, json=body)
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["code"] == code, error
    assert field in [f["field"] for f in error["details"]["fields"]], error
    assert (await client.get("/customers", auth=auth)).json()["totalCount"] == before  # nothing stored
    return error


class TestPhoneNumber:
    async def test_is_stored_returned_and_changed(self, client, auth):
        person = await customer(client, auth, phoneNumber="+14155551234")
        assert person["phoneNumber"] == "+14155551234"
        changed = await client.patch(
            f"/customers/{person['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "phoneNumber": "+447700900123"},
        )
        assert changed.status_code == 200, changed.text
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()[
            "phoneNumber"
        ] == "+447700900123"

    @pytest.mark.parametrize(
        "number", ["4155551234", "+04155551234", "+1 415 555 1234", "+1234567890123456", "+1"]
    )
    async def test_anything_but_e164_is_refused(self, client, auth, number):
        await _refused(client, auth, {**FULL_PERSON, "phoneNumber": number}, "phoneNumber")

    async def test_a_business_has_one_too(self, client, auth):
        business = (await client.post("/customers", auth=auth, json=ACME)).json()
        assert business["phoneNumber"] == "+14155550100"


class TestIdentification:
    async def test_the_identifier_is_accepted_and_never_returned(self, client, auth):
        person = await customer(client, auth, idType="SSN", identifier=SSN)
        assert person["idType"] == "SSN" and person["countryOfIssuance"] == "US"  # US by default
        fetched = (await client.get(f"/customers/{person['id']}", auth=auth)).json()
        listed = (await client.get("/customers", auth=auth)).json()["data"]
        for shown in (person, fetched, *listed):
            assert "identifier" not in shown and SSN not in str(shown)

    async def test_it_is_stored_sealed_to_its_customer(self, client, auth, db):
        person = await customer(client, auth, idType="ITIN", identifier="912-70-1234")
        async with db.read() as session:
            [(id_type, sealed, country)] = (
                await session.execute(
                    sa.text(
                        "SELECT id_type, identifier_sealed, country_of_issuance FROM customers WHERE id = :id"
                    ),
                    {"id": person["id"]},
                )
            ).all()
        assert (id_type, country) == ("ITIN", "US")
        assert "912-70-1234" not in sealed and "912701234" not in sealed
        assert identity.open_identifier(person["id"], sealed) == "912-70-1234"
        with pytest.raises(InvalidTag):  # sealed for this customer: it does not open as another's
            identity.open_identifier("Customer:someone-else", sealed)

    async def test_patch_replaces_it(self, client, auth, db):
        person = await customer(client, auth, idType="SSN", identifier=SSN)
        changed = await client.patch(
            f"/customers/{person['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "idType": "ITIN", "identifier": "912-80-4321"},
        )
        assert changed.status_code == 200 and changed.json()["idType"] == "ITIN", changed.text
        async with db.read() as session:
            sealed = await session.scalar(
                sa.text("SELECT identifier_sealed FROM customers WHERE id = :id"), {"id": person["id"]}
            )
        assert identity.open_identifier(person["id"], sealed) == "912-80-4321"

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"idType": "SSN"}, "identifier"),
            ({"identifier": SSN}, "idType"),
            ({"idType": "EIN", "identifier": "12-3456789"}, "idType"),
            ({"idType": "PASSPORT", "identifier": SSN}, "idType"),
            ({"idType": "SSN", "identifier": "123456789"}, "identifier"),
            ({"idType": "SSN", "identifier": "000-12-3456"}, "identifier"),
            ({"idType": "SSN", "identifier": "912-70-1234"}, "identifier"),  # an ITIN, not an SSN
            ({"idType": "ITIN", "identifier": SSN}, "identifier"),
            ({"idType": "SSN", "identifier": SSN, "countryOfIssuance": "MX"}, "countryOfIssuance"),
            ({"idType": "SSN", "identifier": SSN, "countryOfIssuance": "XX"}, "countryOfIssuance"),
            ({"countryOfIssuance": "US"}, "countryOfIssuance"),
        ],
    )
    async def test_bad_identification_is_refused_naming_the_field(self, client, auth, fields, named):
        error = await _refused(client, auth, {**FULL_PERSON, **fields}, named)
        assert "123-45-6789" not in str(error) and "912-70-1234" not in str(error)  # never echoed

    async def test_it_does_not_apply_to_a_business(self, client, auth):
        await _refused(client, auth, {**ACME, "idType": "SSN", "identifier": SSN}, "idType")

    async def test_an_email_change_signed_by_a_wallet_binds_no_identifier(self, client, auth, db):
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        await wallet.email_otp_login()
        customer_id = wallet.account["customer"]["id"]
        body = {
            "customerType": "INDIVIDUAL",
            "email": "jane.new@example.com",
            "idType": "SSN",
            "identifier": "321-54-9876",
        }
        first = await client.patch(f"/customers/{customer_id}", auth=auth, json=body)
        assert first.status_code == 202, first.text
        assert (
            "321-54-9876" not in first.text and "hmac-sha256:" in first.text
        )  # a keyed digest stands for it
        other = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json={**body, "identifier": "321-54-9870"},
            headers=signed_headers(wallet.key, first.json()),
        )
        assert other.status_code == 401 and other.json()["code"] == "WALLET_SIGNATURE_BODY_MISMATCH"
        again = await client.patch(f"/customers/{customer_id}", auth=auth, json=body)
        retry = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json=body,
            headers=signed_headers(wallet.key, again.json()),
        )
        assert retry.status_code == 200 and retry.json()["idType"] == "SSN", retry.text
        async with db.read() as session:
            sealed = await session.scalar(
                sa.text("SELECT identifier_sealed FROM customers WHERE id = :id"), {"id": customer_id}
            )
        assert identity.open_identifier(customer_id, sealed) == "321-54-9876"

    async def test_it_stays_out_of_the_logs(self, client, auth, capsys):
        person = await customer(client, auth, idType="SSN", identifier="321-54-9876")
        await client.patch(
            f"/customers/{person['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "idType": "SSN", "identifier": "321-54-9870"},
        )
        await client.post(
            "/customers", auth=auth, json={**FULL_PERSON, "idType": "SSN", "identifier": "321549876"}
        )
        logged = capsys.readouterr()
        text = logged.out + logged.err
        assert '"route": "/customers"' in text
        for secret in ("321-54-9876", "321-54-9870", "321549876"):
            assert secret not in text


class TestDueDiligence:
    async def test_is_stored_returned_and_merged_by_patch(self, client, auth):
        person = await customer(client, auth, **EDD)
        for key, value in EDD.items():
            assert person[key] == value, key
        changed = await client.patch(
            f"/customers/{person['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "pepStatus": "FOREIGN"},
        )
        body = changed.json()
        assert body["pepStatus"] == "FOREIGN" and body["annualIncomeRange"] == "RANGE_100K_250K"
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json() == body

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"pepStatus": "MAYBE"}, "pepStatus"),
            ({"annualIncomeRange": "LOTS"}, "annualIncomeRange"),
            ({"netWorthRange": "OVER_9000"}, "netWorthRange"),
            ({"purposeOfAccount": "GAMBLING"}, "purposeOfAccount"),
            ({"sourceOfFundsCategories": ["SALARY", "LOTTERY"]}, "sourceOfFundsCategories.1"),
            ({"sourceOfWealthCategories": ["SALARY", "SALARY"]}, "sourceOfWealthCategories"),
            ({"expectedMonthlyTransactionCount": "COUNT_LOTS"}, "expectedMonthlyTransactionCount"),
            ({"sourceOfFundsCategories": ["OTHER"]}, "sourceOfFundsOtherDescription"),
            ({"sourceOfWealthCategories": ["OTHER"]}, "sourceOfWealthOtherDescription"),
            ({"purposeOfAccount": "OTHER"}, "purposeOfAccountOtherDescription"),
            (
                {"sourceOfFundsCategories": ["OTHER"], "sourceOfFundsOtherDescription": ""},
                "sourceOfFundsOtherDescription",
            ),
            ({"sourceOfFundsOtherDescription": "x" * 501}, "sourceOfFundsOtherDescription"),
        ],
    )
    async def test_unknown_values_and_missing_descriptions_are_refused(self, client, auth, fields, named):
        await _refused(client, auth, {**FULL_PERSON, **fields}, named)

    async def test_patch_to_other_needs_the_description_the_customer_lacks(self, client, auth):
        person = await customer(client, auth, purposeOfAccount="P2P_TRANSFERS")
        path = f"/customers/{person['id']}"
        refused = await client.patch(
            path, auth=auth, json={"customerType": "INDIVIDUAL", "purposeOfAccount": "OTHER"}
        )
        assert refused.status_code == 400
        assert refused.json()["details"]["fields"][0]["field"] == "purposeOfAccountOtherDescription"
        assert (await client.get(path, auth=auth)).json()["purposeOfAccount"] == "P2P_TRANSFERS"
        described = await client.patch(
            path,
            auth=auth,
            json={"customerType": "INDIVIDUAL", "purposeOfAccountOtherDescription": "Household budgeting"},
        )
        assert described.status_code == 200  # a description may come first
        now_other = await client.patch(
            path, auth=auth, json={"customerType": "INDIVIDUAL", "purposeOfAccount": "OTHER"}
        )
        assert now_other.status_code == 200 and now_other.json()["purposeOfAccount"] == "OTHER"

    async def test_individual_answers_do_not_apply_to_a_business(self, client, auth):
        await _refused(client, auth, {**ACME, "pepStatus": "NONE"}, "pepStatus")


class TestBusinessInfo:
    async def test_new_fields_are_stored_returned_and_merged_by_patch(self, client, auth):
        business = (await client.post("/customers", auth=auth, json=ACME)).json()
        for key, value in BUSINESS_INFO.items():
            assert business["businessInfo"][key] == value, key
        changed = await client.patch(
            f"/customers/{business['id']}",
            auth=auth,
            json={"customerType": "BUSINESS", "businessInfo": {"naicsCode": "52", "entityType": "TRUST"}},
        )
        info = changed.json()["businessInfo"]
        assert info["naicsCode"] == "52" and info["entityType"] == "TRUST"
        assert info["primaryContactLastName"] == "Smith"

    @pytest.mark.parametrize(
        "entity_type", ["PUBLICLY_LISTED_COMPANY", "TRUST", "PRIVATE_FOUNDATION", "CHARITY"]
    )
    async def test_the_new_entity_types_are_accepted(self, client, auth, entity_type):
        body = {**ACME, "businessInfo": {**BUSINESS_INFO, "entityType": entity_type}}
        created = await client.post("/customers", auth=auth, json=body)
        assert created.status_code == 201 and created.json()["businessInfo"]["entityType"] == entity_type

    @pytest.mark.parametrize(
        ("change", "named"),
        [
            ({"entityType": "COOPERATIVE"}, "businessInfo.entityType"),
            ({"naicsCode": "5"}, "businessInfo.naicsCode"),
            ({"naicsCode": "5415119"}, "businessInfo.naicsCode"),
            ({"naicsCode": "54A511"}, "businessInfo.naicsCode"),
            ({"sourceOfFundsCategories": ["SALARY"]}, "businessInfo.sourceOfFundsCategories.0"),
            (
                {"sourceOfFundsOtherDescription": None, "sourceOfFundsCategories": ["OTHER"]},
                "businessInfo.sourceOfFundsOtherDescription",
            ),
            ({"purposeOfAccountOtherDescription": None}, "businessInfo.purposeOfAccountOtherDescription"),
            ({"expectedCounterpartyCountries": ["US", "ZZ"]}, "businessInfo.expectedCounterpartyCountries.1"),
            ({"primaryContactFirstName": "J4ne"}, "businessInfo.primaryContactFirstName"),
            ({"primaryContactLastName": "x" * 251}, "businessInfo.primaryContactLastName"),
        ],
    )
    async def test_bad_values_are_refused_naming_the_field(self, client, auth, change, named):
        info = {k: v for k, v in {**BUSINESS_INFO, **change}.items() if v is not None}
        await _refused(client, auth, {**ACME, "businessInfo": info}, named)

    async def test_a_business_may_still_be_created_without_business_info(self, client, auth):
        created = await client.post("/customers", auth=auth, json={"customerType": "BUSINESS"})
        assert created.status_code == 201, created.text  # SPEC wins (DRIFT-2026-08 §3)


class TestKybStatus:
    async def test_a_business_shows_its_status_under_both_names(self, client, auth):
        business = (await client.post("/customers", auth=auth, json=ACME)).json()
        assert business["kycStatus"] == business["kybStatus"] == "UNVERIFIED"
        decided = await client.post(
            f"/sandbox/customers/{business['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
        )
        assert decided.json()["kycStatus"] == decided.json()["kybStatus"] == "APPROVED"
        listed = (await client.get("/customers", auth=auth, params={"customerType": "BUSINESS"})).json()[
            "data"
        ]
        assert [(c["kycStatus"], c["kybStatus"]) for c in listed] == [("APPROVED", "APPROVED")]

    async def test_an_individual_has_kyc_status_only(self, client, auth):
        assert "kybStatus" not in await customer(client, auth)


class TestWebhooks:
    async def test_customer_events_carry_the_new_fields_and_no_identifier(
        self, client, auth, runner, receiver
    ):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        person = await customer(client, auth, phoneNumber="+14155551234", idType="SSN", identifier=SSN, **EDD)
        business = (await client.post("/customers", auth=auth, json=ACME)).json()
        for who in (person, business):
            await client.post(
                f"/sandbox/customers/{who['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
            )
        await run_jobs_until(
            runner,
            lambda: (
                len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1
                and len(receiver.of_type("CUSTOMER.KYB_APPROVED")) == 1
            ),
        )
        [kyc] = receiver.of_type("CUSTOMER.KYC_APPROVED")
        assert kyc.json["data"]["phoneNumber"] == "+14155551234" and kyc.json["data"]["pepStatus"] == "NONE"
        assert kyc.json["data"]["idType"] == "SSN" and SSN not in kyc.body.decode()
        [kyb] = receiver.of_type("CUSTOMER.KYB_APPROVED")
        assert (
            kyb.json["data"]["kybStatus"] == "APPROVED"
            and kyb.json["data"]["businessInfo"]["naicsCode"] == "541511"
        )
        assert kyb.json["data"] == (await client.get(f"/customers/{business['id']}", auth=auth)).json()
