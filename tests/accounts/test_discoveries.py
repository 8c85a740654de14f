"""The receiving-institution catalog: GET /discoveries listings and the bankName rule of corridors."""

from __future__ import annotations

import re

import pytest

from platpay.accounts import discoveries
from platpay.accounts.validators import corridors
from platpay.accounts.validators.corridor_specs import account_type_specs
from platpay.errors import InvalidInput
from platpay.kit import currencies
from platpay.kit.countries import is_country as is_country_code
from tests.accounts.examples import VALID, fields_of, problems_of, validate


class TestInstitutionCatalogRule:
    def test_a_display_name_resolves_to_its_code_ignoring_case_and_accents(self) -> None:
        info = {**VALID["SLV_ACCOUNT"][1], "bankName": "banco cuscatlan"}
        assert validate("USD", {"accountType": "SLV_ACCOUNT", **info})["bankName"] == "BANCO_CUSCATLAN"

    def test_an_unknown_bank_points_at_discoveries(self) -> None:
        info = {**VALID["NGN_ACCOUNT"][1], "bankName": "Example Bank"}
        error = problems_of("NGN", {"accountType": "NGN_ACCOUNT", **info})
        assert error.details["fields"] == [
            {
                "field": "accountInfo.bankName",
                "message": "'Example Bank' is not a receiving institution for NG NGN; GET /discoveries?country=NG&currency=NGN lists them",
            }
        ]

    def test_a_bank_of_another_corridor_is_unknown_here(self) -> None:
        info = {**VALID["NGN_ACCOUNT"][1], "bankName": "BDO_UNIBANK"}
        assert fields_of(problems_of("NGN", {"accountType": "NGN_ACCOUNT", **info})) == [
            "accountInfo.bankName"
        ]

    def test_swift_looks_banks_up_in_the_account_country_whatever_the_currency(self) -> None:
        info = {**VALID["SWIFT_ACCOUNT"][1]}
        assert validate("USD", {"accountType": "SWIFT_ACCOUNT", **info})["bankName"] == "MUFG_BANK"
        error = problems_of("USD", {"accountType": "SWIFT_ACCOUNT", **info, "country": "DE"})
        assert "not a receiving institution for DE" in error.details["fields"][0]["message"]

    @pytest.mark.parametrize(
        ("account_type", "required"),
        [
            ("PHP_ACCOUNT", True),
            ("SWIFT_ACCOUNT", True),
            ("GHS_ACCOUNT", True),
            ("CNY_ACCOUNT", True),
            ("SLV_ACCOUNT", False),
            ("USD_ACCOUNT", False),
            ("KES_ACCOUNT", False),
            ("SPARK_WALLET", False),
        ],
    )
    def test_bank_name_required(self, account_type: str, required: bool) -> None:
        assert corridors.bank_name_required(account_type) is required

    @pytest.mark.parametrize("account_type", sorted(t for t in VALID if corridors.bank_name_required(t)))
    def test_every_corridor_needing_a_bank_name_has_several_institutions(self, account_type: str) -> None:
        spec = account_type_specs()[account_type]
        country = spec.country
        currency = None if spec.any_fiat_currency else spec.currencies[0]
        assert len(discoveries.list_institutions(country=country, currency=currency)) >= 3


class TestListInstitutions:
    def test_without_filters_every_institution_is_listed(self) -> None:
        everything = discoveries.list_institutions(country=None, currency=None)
        assert len(everything) > 200
        assert all(set(item) == {"bankName", "displayName", "country", "currency"} for item in everything)

    def test_filters_combine(self) -> None:
        philippine = discoveries.list_institutions(country="PH", currency="PHP")
        assert {"BDO_UNIBANK", "BPI"} <= {item["bankName"] for item in philippine}
        assert all((item["country"], item["currency"]) == ("PH", "PHP") for item in philippine)
        assert discoveries.list_institutions(country="PH", currency="USD") == []

    def test_the_euro_spans_several_countries(self) -> None:
        countries = {item["country"] for item in discoveries.list_institutions(country=None, currency="EUR")}
        assert {"DE", "FR", "ES", "IT", "NL"} <= countries

    @pytest.mark.parametrize(
        ("country", "currency"),
        [
            ("US", "USD"),
            ("MX", "MXN"),
            ("BR", "BRL"),
            ("IN", "INR"),
            ("DE", "EUR"),
            ("FR", "EUR"),
            ("ES", "EUR"),
            ("IT", "EUR"),
            ("NL", "EUR"),
            ("GB", "GBP"),
            ("PH", "PHP"),
            ("NG", "NGN"),
            ("KE", "KES"),
        ],
    )
    def test_every_main_corridor_has_several_institutions(self, country: str, currency: str) -> None:
        assert len(discoveries.list_institutions(country=country, currency=currency)) >= 3

    def test_unknown_but_well_formed_codes_list_nothing(self) -> None:
        assert discoveries.list_institutions(country="AQ", currency=None) == []
        assert discoveries.list_institutions(country=None, currency="XYZ") == []

    @pytest.mark.parametrize(
        ("country", "currency", "field"),
        [
            ("ph", None, "country"),
            ("PHL", None, "country"),
            (None, "php", "currency"),
            (None, "PH", "currency"),
            ("", None, "country"),
        ],
    )
    def test_malformed_codes_are_a_400_naming_the_parameter(
        self, country: str | None, currency: str | None, field: str
    ) -> None:
        with pytest.raises(InvalidInput) as caught:
            discoveries.list_institutions(country=country, currency=currency)
        assert caught.value.details["fields"][0]["field"] == field

    def test_results_are_copies(self) -> None:
        discoveries.list_institutions(country="PH", currency="PHP")[0]["bankName"] = "CHANGED"
        assert discoveries.list_institutions(country="PH", currency="PHP")[0]["bankName"] != "CHANGED"


class TestCatalogEntries:
    def test_codes_are_stable_upper_case_identifiers_unique_per_corridor(self) -> None:
        entries = discoveries.list_institutions(country=None, currency=None)
        assert all(re.fullmatch(r"[A-Z0-9_]+", item["bankName"]) for item in entries)
        keys = [(item["bankName"], item["country"], item["currency"]) for item in entries]
        assert len(keys) == len(set(keys))

    def test_countries_and_currencies_are_real(self) -> None:
        for item in discoveries.list_institutions(country=None, currency=None):
            assert is_country_code(item["country"]), item
            known = currencies.get(item["currency"])
            assert known is not None and known.kind == "FIAT", item

    def test_is_known_bank_matches_codes_and_display_names_within_the_corridor(self) -> None:
        assert discoveries.is_known_bank(bank_name="BPI", country="PH", currency="PHP")
        assert discoveries.is_known_bank(
            bank_name="Bank of the Philippine Islands", country=None, currency="PHP"
        )
        assert not discoveries.is_known_bank(bank_name="BPI", country="NG", currency=None)
        assert not discoveries.is_known_bank(bank_name="Example Bank", country=None, currency=None)
