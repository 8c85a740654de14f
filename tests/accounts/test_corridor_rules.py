"""Corridor rules beyond single fields: currencies per type, PIX keys, field combinations."""

from __future__ import annotations

import pytest

from platpay.accounts.validators import corridors
from tests.accounts.examples import COMPANY, PERSON, VALID, fields_of, problems_of, validate


class TestCurrencies:
    @pytest.mark.parametrize(
        ("account_type", "currency"), [("SPARK_WALLET", "USDB"), ("SOLANA_WALLET", "USDT")]
    )
    def test_wallets_take_each_of_their_assets(self, account_type: str, currency: str) -> None:
        validate(currency, {"accountType": account_type, **VALID[account_type][1]})

    @pytest.mark.parametrize(
        ("account_type", "currency"), [("TRON_WALLET", "USDC"), ("LIGHTNING", "USDB"), ("USD_ACCOUNT", "EUR")]
    )
    def test_a_currency_the_type_does_not_hold_is_rejected(self, account_type: str, currency: str) -> None:
        error = problems_of(currency, {"accountType": account_type, **VALID[account_type][1]})
        assert error.details["fields"][0]["field"] == "currency"

    @pytest.mark.parametrize("currency", ["USD", "EUR", "JPY", "NGN"])
    def test_swift_takes_any_fiat_currency(self, currency: str) -> None:
        validate(currency, {"accountType": "SWIFT_ACCOUNT", **VALID["SWIFT_ACCOUNT"][1]})

    @pytest.mark.parametrize("currency", ["USDC", "BTC", "XYZ"])
    def test_swift_rejects_crypto_and_unknown_currencies(self, currency: str) -> None:
        assert (
            "pays out fiat currencies"
            in problems_of(currency, {"accountType": "SWIFT_ACCOUNT", **VALID["SWIFT_ACCOUNT"][1]}).details[
                "fields"
            ][0]["message"]
        )


class TestBrazilPix:
    @pytest.mark.parametrize(
        ("key_type", "key", "stored_key"),
        [
            ("CPF", "52998224725", "52998224725"),
            ("CNPJ", "11222333000181", "11222333000181"),
            ("EMAIL", "testuser.002@Pix.com.br", "testuser.002@pix.com.br"),
            ("PHONE", "+5511987654321", "+5511987654321"),
            ("RANDOM", "123E4567-E89B-42D3-A456-426614174000", "123e4567-e89b-42d3-a456-426614174000"),
        ],
    )
    def test_each_key_type_validates_and_normalizes_its_key(
        self, key_type: str, key: str, stored_key: str
    ) -> None:
        stored = validate(
            "BRL",
            {
                "accountType": "BRL_ACCOUNT",
                "pixKey": key,
                "pixKeyType": key_type,
                "taxId": "11222333000181",
                "beneficiary": COMPANY,
            },
        )
        assert stored["pixKey"] == stored_key

    @pytest.mark.parametrize(
        ("key_type", "key"),
        [
            ("CPF", "52998224726"),
            ("CNPJ", "52998224725"),
            ("EMAIL", "not-an-email"),
            ("PHONE", "+14155552671"),
            ("RANDOM", "not-a-uuid"),
        ],
    )
    def test_a_key_that_does_not_fit_its_type_is_a_bad_account(self, key_type: str, key: str) -> None:
        error = problems_of(
            "BRL",
            {
                "accountType": "BRL_ACCOUNT",
                "pixKey": key,
                "pixKeyType": key_type,
                "taxId": "52998224725",
                "beneficiary": PERSON,
            },
        )
        assert error.code == "INVALID_BANK_ACCOUNT"
        assert fields_of(error) == ["accountInfo.pixKey"]
        assert f"not a valid {key_type} PIX key" in error.details["fields"][0]["message"]

    @pytest.mark.parametrize("tax_id", ["529982247250", "11111111111", "11222333000182", "5299822472X"])
    def test_the_tax_id_must_be_a_valid_cpf_or_cnpj(self, tax_id: str) -> None:
        info = {**VALID["BRL_ACCOUNT"][1], "taxId": tax_id}
        assert fields_of(problems_of("BRL", {"accountType": "BRL_ACCOUNT", **info})) == ["accountInfo.taxId"]

    def test_an_unknown_key_type_is_reported_and_the_key_left_alone(self) -> None:
        info = {**VALID["BRL_ACCOUNT"][1], "pixKeyType": "IBAN"}
        error = problems_of("BRL", {"accountType": "BRL_ACCOUNT", **info})
        assert error.details["fields"] == [
            {
                "field": "accountInfo.pixKeyType",
                "message": "must be one of CPF, CNPJ, EMAIL, PHONE, RANDOM, got 'IBAN'",
            }
        ]


class TestCombinationsOfFields:
    def test_lightning_takes_exactly_one_destination(self) -> None:
        none_given = problems_of("BTC", {"accountType": "LIGHTNING"})
        assert (
            "exactly one of invoice, bolt12, lightningAddress; got none"
            in none_given.details["fields"][0]["message"]
        )
        two_given = problems_of(
            "BTC",
            {
                "accountType": "LIGHTNING",
                "lightningAddress": "a@b.com",
                "bolt12": "lno1zcss9mk8y3wkklfvevcrszlmu23kfrxh49px20665dqwmn4p72pksese",
            },
        )
        assert "got bolt12 and lightningAddress" in two_given.details["fields"][0]["message"]

    @pytest.mark.parametrize(
        "destination",
        [
            {
                "invoice": "LNBC2500U1PVJLUEZPP5QQQSYQCYQ5RQWZQFQQQSYQCYQ5RQWZQFQQQSYQCYQ5RQWZQFQYPQDQ5XYSXXATSYP3K7ENXV4JSXQZPUAZTRNWNGZN3KDZW5HYDLZF03QDGM2HDQ27CQV3AGM2AWHZ5SE903VRUATFHQ77W3LS4EVS3CH9ZW97J25EMUDUPQ63NYW24CG27H2RSPFJ9SRP"
            },
            {"bolt12": "lno1zcss9mk8y3wkklfvevcrszlmu23kfrxh49px20665dqwmn4p72pksese"},
        ],
    )
    def test_lightning_invoices_and_offers_are_accepted(self, destination: dict[str, str]) -> None:
        stored = validate("BTC", {"accountType": "LIGHTNING", **destination})
        assert corridors.primary_identifier(stored) == next(iter(destination.values())).lower()

    def test_swift_needs_an_account_number_or_an_iban(self) -> None:
        info = {**VALID["SWIFT_ACCOUNT"][1], "accountNumber": None}
        assert (
            "at least one of accountNumber, iban"
            in problems_of("JPY", {"accountType": "SWIFT_ACCOUNT", **info}).details["fields"][0]["message"]
        )

    def test_a_swift_iban_must_belong_to_the_account_country(self) -> None:
        info = {
            "accountType": "SWIFT_ACCOUNT",
            "country": "BR",
            "swiftCode": "BRASBRRJ",
            "bankName": "BANCO_DO_BRASIL",
            "iban": "BR1800360305000010009795493C1",
            "beneficiary": COMPANY,
        }
        assert validate("USD", info)["iban"] == "BR1800360305000010009795493C1"
        error = problems_of("USD", {**info, "iban": "DE89370400440532013000"})
        assert error.details["fields"] == [
            {"field": "accountInfo.iban", "message": "is a DE IBAN but country is BR"}
        ]

    def test_a_rail_dependent_corridor_needs_one_complete_rail(self) -> None:
        error = problems_of(
            "GHS", {"accountType": "GHS_ACCOUNT", "bankName": "GCB_BANK", "beneficiary": PERSON}
        )
        assert error.details["fields"] == [
            {
                "field": "accountInfo",
                "message": "GHS_ACCOUNT needs every field of one payment rail: BANK_TRANSFER (accountNumber, bankName) or MOBILE_MONEY (bankName, phoneNumber)",
            }
        ]

    def test_eur_ibans_must_come_from_sepa_countries(self) -> None:
        info = {**VALID["EUR_ACCOUNT"][1], "iban": "SA0380000000608010167519"}
        assert (
            "outside the SEPA scheme"
            in problems_of("EUR", {"accountType": "EUR_ACCOUNT", **info}).details["fields"][0]["message"]
        )
