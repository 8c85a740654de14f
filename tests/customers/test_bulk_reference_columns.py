"""Bulk import columns for the August reference's single-valued customer fields (DRIFT-2026-08 §3;
docs/customers-and-accounts.md, "Bulk customer import"): phoneNumber, pepStatus, annualIncomeRange, netWorthRange for individuals and
businessEntityType, businessNaicsCode, businessPrimaryContactFirstName/LastName for businesses. They are
validated as POST /customers validates them, a bad cell naming its column."""

from __future__ import annotations

from tests.support.bulk_import import HEADER, company, csv_bytes, import_to_the_end, person, upload

COLUMNS = [
    *HEADER,
    "phoneNumber",
    "pepStatus",
    "annualIncomeRange",
    "netWorthRange",
    "businessEntityType",
    "businessNaicsCode",
    "businessPrimaryContactFirstName",
    "businessPrimaryContactLastName",
]


async def test_the_new_columns_are_imported_and_checked(client, auth, runner):
    rows = [
        person(
            1,
            phoneNumber="+14155551234",
            pepStatus="DOMESTIC",
            annualIncomeRange="OVER_1M",
            netWorthRange="OVER_25M",
        ),
        company(
            2,
            phoneNumber="+14155550100",
            businessEntityType="CHARITY",
            businessNaicsCode="813211",
            businessPrimaryContactFirstName="Jane",
            businessPrimaryContactLastName="Smith",
        ),
        person(3, phoneNumber="4155551234"),
        person(4, pepStatus="MAYBE"),
        company(5, businessNaicsCode="8"),
        company(6, businessEntityType="COOPERATIVE"),
        company(7, pepStatus="NONE"),
    ]
    accepted = await upload(client, auth, csv_bytes(rows, header=COLUMNS))
    assert accepted.status_code == 202, accepted.text
    done = await import_to_the_end(client, auth, runner, accepted.json()["jobId"])
    assert done["progress"]["successful"] == 2 and done["progress"]["failed"] == 5, done
    named = {
        error["details"]["row"]: [f["field"] for f in error["details"]["fields"]] for error in done["errors"]
    }
    assert named == {
        3: ["phoneNumber"],
        4: ["pepStatus"],
        5: ["businessNaicsCode"],
        6: ["businessEntityType"],
        7: ["pepStatus"],
    }

    individual = (await client.get("/customers", auth=auth, params={"platformCustomerId": "cust-1"})).json()[
        "data"
    ][0]
    assert (individual["phoneNumber"], individual["pepStatus"], individual["netWorthRange"]) == (
        "+14155551234",
        "DOMESTIC",
        "OVER_25M",
    )
    business = (await client.get("/customers", auth=auth, params={"platformCustomerId": "cust-2"})).json()[
        "data"
    ][0]
    info = business["businessInfo"]
    assert business["phoneNumber"] == "+14155550100" and business["kybStatus"] == "UNVERIFIED"
    assert (info["entityType"], info["naicsCode"], info["primaryContactLastName"]) == (
        "CHARITY",
        "813211",
        "Smith",
    )


async def test_an_identifier_column_is_refused_in_the_header(client, auth):
    refused = await upload(client, auth, csv_bytes([person(1)], header=[*HEADER, "identifier"]))
    assert refused.status_code == 400 and refused.json()["details"]["unknownColumns"] == ["identifier"]
