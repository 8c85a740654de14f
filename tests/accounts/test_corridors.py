"""Account info validation: every account type, input shape, error shape, canonical forms, responses."""

from __future__ import annotations

import json
from importlib import resources

import pytest

from platpay.accounts.validators import corridors
from platpay.accounts.validators.corridor_specs import account_type_specs
from platpay.accounts.validators.field_checks import FIELD_CHECKS, RECORD_RULES
from platpay.kit import currencies
from tests.accounts.examples import INVALID, PERSON, VALID, fields_of, person, problems_of, validate


class TestEveryAccountType:
    def test_the_examples_cover_every_account_type(self) -> None:
        assert set(VALID) == corridors.ACCOUNT_TYPES == set(INVALID)
        assert len(corridors.ACCOUNT_TYPES) == 45

    @pytest.mark.parametrize("account_type", sorted(VALID))
    def test_a_valid_account_is_accepted(self, account_type: str) -> None:
        currency, info = VALID[account_type]
        stored = validate(currency, {"accountType": account_type, **info})
        assert stored["accountType"] == account_type
        assert corridors.primary_identifier(stored)

    @pytest.mark.parametrize("account_type", sorted(INVALID))
    def test_an_invalid_account_is_rejected_naming_the_field(self, account_type: str) -> None:
        currency, changes, failing = INVALID[account_type]
        info = {"accountType": account_type, **VALID[account_type][1], **changes}
        error = problems_of(currency, info)
        expected = "currency" if failing == "currency" else "accountInfo" + (f".{failing}" if failing else "")
        assert expected in fields_of(error)


class TestShapeOfTheInput:
    @pytest.mark.parametrize("raw", [None, [], "USD_ACCOUNT", 42, True])
    def test_a_non_object_is_one_problem_on_account_info(self, raw: object) -> None:
        error = problems_of("USD", raw)
        assert error.code == "INVALID_INPUT"
        assert fields_of(error) == ["accountInfo"]
        assert "must be an object" in error.details["fields"][0]["message"]

    def test_a_missing_account_type_lists_the_types(self) -> None:
        error = problems_of("USD", {"accountNumber": "1"})
        assert fields_of(error) == ["accountInfo.accountType"]
        assert "USD_ACCOUNT" in error.details["fields"][0]["message"]

    def test_an_unknown_account_type_is_named(self) -> None:
        error = problems_of("USD", {"accountType": "ARS_ACCOUNT"})
        assert "unknown account type 'ARS_ACCOUNT'" in error.details["fields"][0]["message"]

    def test_a_non_string_account_type_is_a_problem(self) -> None:
        assert (
            "must be a string, got number"
            in problems_of("USD", {"accountType": 7}).details["fields"][0]["message"]
        )

    def test_unknown_fields_are_rejected_by_name(self) -> None:
        info = {
            "accountType": "MXN_ACCOUNT",
            **VALID["MXN_ACCOUNT"][1],
            "routingNumber": "1",
            "paymentRails": ["SPEI"],
        }
        error = problems_of("MXN", info)
        assert fields_of(error) == ["accountInfo.routingNumber", "accountInfo.paymentRails"]
        assert "unknown field for MXN_ACCOUNT" in error.details["fields"][0]["message"]

    def test_a_number_where_a_string_belongs_is_a_problem(self) -> None:
        error = problems_of(
            "USD",
            {
                "accountType": "USD_ACCOUNT",
                "accountNumber": 123456789,
                "routingNumber": "011000015",
                "beneficiary": PERSON,
            },
        )
        assert error.details["fields"] == [
            {"field": "accountInfo.accountNumber", "message": "must be a string, got number"}
        ]

    def test_null_and_blank_optional_fields_are_dropped(self) -> None:
        stored = validate(
            "EUR",
            {
                "accountType": "EUR_ACCOUNT",
                "iban": "DE89370400440532013000",
                "swiftCode": None,
                "beneficiary": person(countryOfResidence="DE", email="", address=None),
            },
        )
        assert "swiftCode" not in stored
        assert stored["beneficiary"] == person(countryOfResidence="DE")

    def test_surrounding_whitespace_is_trimmed(self) -> None:
        stored = validate(
            "USD",
            {
                "accountType": "USD_ACCOUNT",
                "accountNumber": " 123456789 ",
                "routingNumber": "011000015\n",
                "beneficiary": PERSON,
            },
        )
        assert (stored["accountNumber"], stored["routingNumber"]) == ("123456789", "011000015")

    def test_the_field_prefix_names_nested_fields_and_the_sibling_currency(self) -> None:
        error = problems_of(
            "EUR",
            {"accountType": "USD_ACCOUNT", "accountNumber": "1", "routingNumber": "011000016"},
            field="destination.accountInfo",
        )
        assert fields_of(error) == [
            "destination.currency",
            "destination.accountInfo.routingNumber",
            "destination.accountInfo.beneficiary",
        ]

    def test_a_huge_value_is_refused_before_any_decoding(self) -> None:
        error = problems_of("USDC", {"accountType": "SOLANA_WALLET", "address": "1" * 1_000_000})
        assert error.details["fields"] == [
            {"field": "accountInfo.address", "message": "must be at most 4096 characters long, got 1000000"}
        ]

    def test_the_problem_list_is_bounded(self) -> None:
        info = {
            "accountType": "MXN_ACCOUNT",
            **VALID["MXN_ACCOUNT"][1],
            **{f"extra{n}": 1 for n in range(500)},
        }
        assert len(problems_of("MXN", info).details["fields"]) == 100


class TestEveryProblemAtOnce:
    def test_all_problems_are_listed_in_one_error(self) -> None:
        info = {
            "accountType": "USD_ACCOUNT",
            "accountNumber": "",
            "routingNumber": "011000016",
            "nickname": "main",
            "beneficiary": {
                "beneficiaryType": "INDIVIDUAL",
                "fullName": "Jane  Doe",
                "birthDate": "2990-01-01",
                "email": "jane@",
                "address": {"line1": "1 Main St", "country": "XX"},
            },
        }
        error = problems_of("EUR", info)
        assert fields_of(error) == [
            "currency",
            "accountInfo.nickname",
            "accountInfo.accountNumber",
            "accountInfo.routingNumber",
            "accountInfo.beneficiary.fullName",
            "accountInfo.beneficiary.birthDate",
            "accountInfo.beneficiary.email",
            "accountInfo.beneficiary.address.postalCode",
            "accountInfo.beneficiary.address.country",
        ]
        assert error.message.startswith("invalid account details: currency:")
        assert error.message.endswith("(and 4 more)")

    def test_a_bad_identifier_makes_the_code_invalid_bank_account(self) -> None:
        error = problems_of(
            "USD",
            {
                "accountType": "USD_ACCOUNT",
                "accountNumber": "1",
                "routingNumber": "011000016",
                "beneficiary": PERSON,
            },
        )
        assert error.code == "INVALID_BANK_ACCOUNT"
        assert error.status == 400
        assert error.details["fields"] == [
            {
                "field": "accountInfo.routingNumber",
                "message": "routing number 011000016 fails the ABA checksum (3-7-1 weights)",
            }
        ]

    def test_only_non_identifier_problems_keep_invalid_input(self) -> None:
        error = problems_of(
            "USD", {"accountType": "USD_ACCOUNT", "accountNumber": "1", "routingNumber": "011000015"}
        )
        assert error.code == "INVALID_INPUT"
        assert fields_of(error) == ["accountInfo.beneficiary"]

    def test_a_missing_identifier_is_invalid_input_not_a_bad_account(self) -> None:
        error = problems_of("MXN", {"accountType": "MXN_ACCOUNT", "beneficiary": PERSON})
        assert error.code == "INVALID_INPUT"
        assert error.details["fields"] == [{"field": "accountInfo.clabeNumber", "message": "is required"}]


class TestCanonicalForms:
    def test_iban_is_upper_case_without_spaces(self) -> None:
        stored = validate(
            "EUR",
            {
                "accountType": "EUR_ACCOUNT",
                "iban": "de89 3704 0044 0532 0130 00",
                "beneficiary": person(countryOfResidence="de"),
            },
        )
        assert stored["iban"] == "DE89370400440532013000"
        assert stored["beneficiary"]["countryOfResidence"] == "DE"

    def test_sort_code_keeps_digits_only(self) -> None:
        stored = validate(
            "GBP",
            {
                "accountType": "GBP_ACCOUNT",
                "sortCode": "40-47-84",
                "accountNumber": "70872490",
                "beneficiary": PERSON,
            },
        )
        assert stored["sortCode"] == "404784"

    def test_evm_address_is_kept_as_given(self) -> None:
        lower = "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"
        assert validate("USDC", {"accountType": "BASE_WALLET", "address": lower})["address"] == lower

    def test_bank_name_is_stored_as_the_catalog_code(self) -> None:
        info = {**VALID["PHP_ACCOUNT"][1], "bankName": "bdo unibank"}
        assert validate("PHP", {"accountType": "PHP_ACCOUNT", **info})["bankName"] == "BDO_UNIBANK"

    def test_fields_come_in_schema_order_with_the_beneficiary_last(self) -> None:
        stored = validate(
            "USD",
            {
                "beneficiary": PERSON,
                "routingNumber": "011000015",
                "accountNumber": "9",
                "accountType": "USD_ACCOUNT",
            },
        )
        assert list(stored) == ["accountType", "accountNumber", "routingNumber", "beneficiary"]


class TestResponsesAndIdentifiers:
    def test_bank_accounts_gain_their_rails(self) -> None:
        stored = validate("USD", {"accountType": "USD_ACCOUNT", **VALID["USD_ACCOUNT"][1]})
        response = corridors.response_account_info(stored)
        assert response["paymentRails"] == ["ACH", "WIRE", "RTP", "FEDNOW"]
        assert list(response)[-1] == "beneficiary"
        assert "paymentRails" not in stored

    def test_rail_dependent_corridors_show_only_the_rails_their_fields_allow(self) -> None:
        mobile = validate("GHS", {"accountType": "GHS_ACCOUNT", **VALID["GHS_ACCOUNT"][1]})
        assert corridors.response_account_info(mobile)["paymentRails"] == ["MOBILE_MONEY"]
        both = validate(
            "GHS", {"accountType": "GHS_ACCOUNT", **VALID["GHS_ACCOUNT"][1], "accountNumber": "1234567890"}
        )
        assert corridors.response_account_info(both)["paymentRails"] == ["BANK_TRANSFER", "MOBILE_MONEY"]

    def test_wallets_have_no_rails(self) -> None:
        stored = validate("USDC", {"accountType": "SOLANA_WALLET", **VALID["SOLANA_WALLET"][1]})
        assert corridors.response_account_info(stored) == stored
        assert corridors.payment_rails("SOLANA_WALLET") == []

    @pytest.mark.parametrize(
        ("account_type", "rails"),
        [
            ("USD_ACCOUNT", ["ACH", "WIRE", "RTP", "FEDNOW"]),
            ("MXN_ACCOUNT", ["SPEI"]),
            ("BRL_ACCOUNT", ["PIX"]),
            ("INR_ACCOUNT", ["UPI", "NEFT", "RTGS"]),
            ("EUR_ACCOUNT", ["SEPA", "SEPA_INSTANT"]),
            ("GBP_ACCOUNT", ["FASTER_PAYMENTS"]),
            ("SWIFT_ACCOUNT", ["SWIFT"]),
            ("SGD_ACCOUNT", ["PAYNOW", "FAST", "BANK_TRANSFER"]),
            ("KES_ACCOUNT", ["MOBILE_MONEY"]),
        ],
    )
    def test_payment_rails_per_type(self, account_type: str, rails: list[str]) -> None:
        assert corridors.payment_rails(account_type) == rails

    def test_payment_rails_of_an_unknown_type_is_a_key_error(self) -> None:
        with pytest.raises(KeyError):
            corridors.payment_rails("ARS_ACCOUNT")

    @pytest.mark.parametrize(
        ("account_type", "identifier"),
        [
            ("USD_ACCOUNT", "123456789"),
            ("MXN_ACCOUNT", "002010077777777771"),
            ("BRL_ACCOUNT", "52998224725"),
            ("INR_ACCOUNT", "user@upi"),
            ("EUR_ACCOUNT", "DE89370400440532013000"),
            ("PKR_ACCOUNT", "PK36SCBL0000001123456702"),
            ("KES_ACCOUNT", "+254712345678"),
            ("TRON_WALLET", "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t"),
            ("LIGHTNING", "john.doe@lightningwallet.com"),
        ],
    )
    def test_primary_identifier(self, account_type: str, identifier: str) -> None:
        currency, info = VALID[account_type]
        assert (
            corridors.primary_identifier(validate(currency, {"accountType": account_type, **info}))
            == identifier
        )

    def test_duplicate_key_tells_banks_apart_and_ignores_evm_case(self) -> None:
        first = validate("USD", {"accountType": "USD_ACCOUNT", **VALID["USD_ACCOUNT"][1]})
        other_bank = validate(
            "USD", {"accountType": "USD_ACCOUNT", **VALID["USD_ACCOUNT"][1], "routingNumber": "021000021"}
        )
        assert corridors.duplicate_key(first) == "USD_ACCOUNT:011000015:123456789"
        assert corridors.duplicate_key(first) != corridors.duplicate_key(other_bank)
        mixed = validate(
            "USDC", {"accountType": "BASE_WALLET", "address": "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359"}
        )
        lower = validate(
            "USDC", {"accountType": "BASE_WALLET", "address": "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359"}
        )
        assert corridors.duplicate_key(mixed) == corridors.duplicate_key(lower)


class TestCatalogData:
    def test_every_named_check_and_rule_exists(self) -> None:
        for spec in account_type_specs().values():
            fields = [
                *spec.fields.values(),
                *(spec.individual_beneficiary.extra_fields.values() if spec.individual_beneficiary else []),
            ]
            assert all(field.check in FIELD_CHECKS for field in fields if field.check), spec.account_type
            assert all(rule in RECORD_RULES for rule in spec.rules), spec.account_type

    def test_every_currency_of_every_type_is_in_the_currency_catalog(self) -> None:
        for spec in account_type_specs().values():
            assert all(currencies.get(code) is not None for code in spec.currencies), spec.account_type

    def test_every_bank_type_has_rails_and_every_rail_requirement_names_real_fields(self) -> None:
        for spec in account_type_specs().values():
            if spec.takes_beneficiary:
                assert spec.payment_rails, spec.account_type
            for rail, names in spec.rail_requirements.items():
                assert rail in spec.payment_rails
                assert set(names) <= set(spec.fields)

    def test_the_extracted_data_matches_the_reference_on_known_points(self) -> None:
        raw = json.loads(
            resources.files("platpay.accounts").joinpath("data/corridors.json").read_text("utf-8")
        )
        php = raw["accountTypes"]["PHP_ACCOUNT"]
        assert php["fields"]["accountNumber"]["pattern"] == "^[0-9]{8,16}$"
        assert php["fields"]["bankName"]["required"] is True
        assert raw["accountTypes"]["EUR_ACCOUNT"]["individualBeneficiary"]["required"] == [
            "countryOfResidence"
        ]
