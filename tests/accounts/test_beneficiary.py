"""The account holder of a bank account: individual and business beneficiaries, addresses."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from platpay.kit import clock
from tests.accounts.examples import COMPANY, PERSON, VALID, address, fields_of, person, problems_of, validate


class TestBeneficiary:
    @pytest.mark.parametrize("account_type", ["SPARK_WALLET", "LIGHTNING", "ETHEREUM_WALLET"])
    def test_wallets_and_lightning_take_no_beneficiary(self, account_type: str) -> None:
        currency, info = VALID[account_type]
        error = problems_of(currency, {"accountType": account_type, **info, "beneficiary": PERSON})
        assert error.details["fields"] == [
            {"field": "accountInfo.beneficiary", "message": f"{account_type} accounts take no beneficiary"}
        ]

    def test_bank_accounts_require_one(self) -> None:
        error = problems_of("MXN", {"accountType": "MXN_ACCOUNT", "clabeNumber": "002010077777777771"})
        assert "is required for MXN_ACCOUNT" in error.details["fields"][0]["message"]

    def test_a_full_individual_is_kept_normalized(self) -> None:
        beneficiary = {
            "beneficiaryType": "INDIVIDUAL",
            "fullName": "Jean-Luc O'Brien Jr.",
            "birthDate": "1990-02-28",
            "nationality": "fr",
            "email": "Jean@Example.FR",
            "phoneNumber": "+33612345678",
            "countryOfResidence": "FR",
            "address": {
                "line1": "8 Rue de Rivoli",
                "line2": "Bât. B",
                "city": "Paris",
                "state": "IDF",
                "postalCode": "75004",
                "country": "FR",
            },
        }
        stored = validate(
            "EUR",
            {"accountType": "EUR_ACCOUNT", "iban": "FR1420041010050500013M02606", "beneficiary": beneficiary},
        )
        assert stored["beneficiary"] == {**beneficiary, "nationality": "FR", "email": "Jean@example.fr"}

    def test_a_full_business_is_accepted(self) -> None:
        beneficiary = {
            **COMPANY,
            "legalName": "AT&T (Mexico) 2 S.A. de C.V.",
            "registrationNumber": "ABC-123/45",
            "taxId": "AAA010101AAA",
            "countryOfResidence": "MX",
            "address": address("MX"),
        }
        assert (
            validate(
                "MXN",
                {
                    "accountType": "MXN_ACCOUNT",
                    "clabeNumber": "002010077777777771",
                    "beneficiary": beneficiary,
                },
            )["beneficiary"]
            == beneficiary
        )

    @pytest.mark.parametrize(
        ("account_type", "currency", "base", "missing"),
        [
            ("EUR_ACCOUNT", "EUR", {"iban": "DE89370400440532013000"}, ["countryOfResidence"]),
            ("AED_ACCOUNT", "AED", {"iban": "AE070331234567890123456"}, ["address"]),
            (
                "GTQ_ACCOUNT",
                "GTQ",
                {"accountNumber": "1", "bankAccountType": "CHECKING", "bankName": "BANRURAL"},
                ["phoneNumber", "countryOfResidence"],
            ),
            (
                "JMD_ACCOUNT",
                "JMD",
                {
                    "accountNumber": "1",
                    "branchCode": "11111",
                    "bankAccountType": "CHECKING",
                    "bankName": "JN_BANK",
                },
                ["phoneNumber", "address"],
            ),
        ],
    )
    def test_corridors_require_more_of_individuals(
        self, account_type: str, currency: str, base: dict[str, str], missing: list[str]
    ) -> None:
        error = problems_of(currency, {"accountType": account_type, **base, "beneficiary": PERSON})
        assert sorted(fields_of(error)) == sorted(f"accountInfo.beneficiary.{name}" for name in missing)
        assert all(
            f"is required for {account_type} INDIVIDUAL beneficiaries" == entry["message"]
            for entry in error.details["fields"]
        )
        assert (
            validate(currency, {"accountType": account_type, **base, "beneficiary": COMPANY})["beneficiary"]
            == COMPANY
        )

    def test_corridor_extra_individual_fields_are_checked(self) -> None:
        info = {**VALID["COP_ACCOUNT"][1], "beneficiary": person(documentType="SSN")}
        assert fields_of(problems_of("COP", {"accountType": "COP_ACCOUNT", **info})) == [
            "accountInfo.beneficiary.documentType"
        ]
        mxn = {
            "accountType": "MXN_ACCOUNT",
            "clabeNumber": "002010077777777771",
            "beneficiary": person(documentType="CC"),
        }
        assert (
            "unknown field for a INDIVIDUAL beneficiary"
            in problems_of("MXN", mxn).details["fields"][0]["message"]
        )

    @pytest.mark.parametrize(
        ("beneficiary", "field", "fragment"),
        [
            ({"fullName": "Jane"}, "beneficiaryType", "is required"),
            ({"beneficiaryType": "PERSON", "fullName": "Jane"}, "beneficiaryType", "INDIVIDUAL or BUSINESS"),
            ({"beneficiaryType": "BUSINESS", "legalName": None}, "legalName", "is required"),
            (person(fullName="Jane  Doe"), "fullName", "run of spaces"),
            (person(fullName="Jane <Doe>"), "fullName", "'<'"),
            (person(fullName="R2D2"), "fullName", "'2'"),
            (person(fullName="Jane\tDoe"), "fullName", "'\\t'"),
            (person(fullName="..."), "fullName", "no letter"),
            ({**COMPANY, "legalName": "Acme; DROP TABLE"}, "legalName", "';'"),
            (person(birthDate="1990-02-30"), "birthDate", "not a calendar date"),
            (person(birthDate="01/02/1990"), "birthDate", "YYYY-MM-DD"),
            (person(birthDate="2999-01-01"), "birthDate", "in the past"),
            (person(birthDate="1850-01-01"), "birthDate", "after 1900"),
            (person(nationality="XX"), "nationality", "not an ISO 3166-1"),
            (person(countryOfResidence="USA"), "countryOfResidence", "not an ISO 3166-1"),
            (person(email="jane@localhost"), "email", "domain"),
            (person(phoneNumber="555-1234"), "phoneNumber", "E.164"),
            (person(nickname="JD"), "nickname", "unknown field"),
            (person(address="1 Main St"), "address", "must be an object"),
            (
                person(
                    address={"line1": "1 Main St", "postalCode": "10001", "country": "US", "zip": "10001"}
                ),
                "address.zip",
                "unknown field for an address",
            ),
            (person(address={"postalCode": "10001", "country": "US"}), "address.line1", "is required"),
            (
                person(address={"line1": "1 Main St", "postalCode": "10001", "country": "ZZ"}),
                "address.country",
                "not an ISO 3166-1",
            ),
            (
                person(address={"line1": "1 Main St", "postalCode": "100#01", "country": "US"}),
                "address.postalCode",
                "postal code",
            ),
            ("Jane Doe", "", "must be an object"),
        ],
    )
    def test_invalid_beneficiaries_name_the_rule(
        self, beneficiary: object, field: str, fragment: str
    ) -> None:
        error = problems_of(
            "MXN",
            {"accountType": "MXN_ACCOUNT", "clabeNumber": "002010077777777771", "beneficiary": beneficiary},
        )
        expected_field = "accountInfo.beneficiary" + (f".{field}" if field else "")
        assert error.code == "INVALID_INPUT"
        assert fields_of(error) == [expected_field]
        assert fragment in error.details["fields"][0]["message"]

    def test_an_individual_field_on_a_business_is_unknown(self) -> None:
        error = problems_of(
            "MXN",
            {
                "accountType": "MXN_ACCOUNT",
                "clabeNumber": "002010077777777771",
                "beneficiary": {**COMPANY, "fullName": "Jane"},
            },
        )
        assert fields_of(error) == ["accountInfo.beneficiary.fullName"]
        assert "unknown field for a BUSINESS beneficiary" in error.details["fields"][0]["message"]

    def test_a_birth_date_is_judged_against_the_clock(self) -> None:
        clock.freeze(datetime(2000, 1, 1, tzinfo=UTC))
        try:
            assert fields_of(
                problems_of(
                    "MXN",
                    {
                        "accountType": "MXN_ACCOUNT",
                        "clabeNumber": "002010077777777771",
                        "beneficiary": person(birthDate="2000-06-01"),
                    },
                )
            ) == ["accountInfo.beneficiary.birthDate"]
            assert validate(
                "MXN",
                {
                    "accountType": "MXN_ACCOUNT",
                    "clabeNumber": "002010077777777771",
                    "beneficiary": person(birthDate="1999-12-31"),
                },
            )
        finally:
            clock.reset()
