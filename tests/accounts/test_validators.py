"""Bank, tax and contact identifiers against published test vectors.

Sources: ABA numbers of the Federal Reserve Bank of Boston (011000015) and large US banks; CLABE examples of
Banxico's documentation and Wikipedia; IBAN examples of the SWIFT IBAN registry; CPF/CNPJ numbers used in
Receita Federal examples; the CRC-16/CCITT-FALSE check value.
"""

from __future__ import annotations

import pytest

from platpay.accounts.validators import IdentifierError, checksums, formats


class TestAbaRoutingNumber:
    @pytest.mark.parametrize("number", ["011000015", "021000021", "121000358", "026009593", "322271627"])
    def test_published_routing_numbers_pass(self, number: str) -> None:
        assert checksums.validate_aba_routing_number(number) == number

    def test_a_wrong_check_digit_fails_with_the_number(self) -> None:
        with pytest.raises(IdentifierError, match="011000016 fails the ABA checksum"):
            checksums.validate_aba_routing_number("011000016")

    @pytest.mark.parametrize("number", ["01100001", "0110000155", "01100001a", "021-000-21"])
    def test_anything_but_nine_digits_fails(self, number: str) -> None:
        with pytest.raises(IdentifierError, match="exactly 9 digits"):
            checksums.validate_aba_routing_number(number)

    def test_a_prefix_outside_the_federal_reserve_symbols_fails(self) -> None:
        with pytest.raises(IdentifierError, match="starts with 13"):
            checksums.validate_aba_routing_number("131000015")  # checksum-valid, prefix unassigned

    def test_all_zeros_fails_although_its_checksum_adds_up(self) -> None:
        with pytest.raises(IdentifierError, match="not assigned"):
            checksums.validate_aba_routing_number("000000000")


class TestClabe:
    @pytest.mark.parametrize("clabe", ["002010077777777771", "032180000118359719"])
    def test_published_clabes_pass(self, clabe: str) -> None:
        assert checksums.validate_clabe(clabe) == clabe

    def test_a_wrong_control_digit_fails_saying_the_expected_one(self) -> None:
        with pytest.raises(IdentifierError, match="control digit is 2, the 3-7-1 checksum expects 1"):
            checksums.validate_clabe("002010077777777772")

    def test_bank_code_000_fails(self) -> None:
        with pytest.raises(IdentifierError, match="000 is not a bank"):
            checksums.validate_clabe(checksums.make_clabe("00001007777777777"))

    @pytest.mark.parametrize("clabe", ["00201007777777777", "0020100777777777712", "00201007777777777X"])
    def test_anything_but_eighteen_digits_fails(self, clabe: str) -> None:
        with pytest.raises(IdentifierError, match="exactly 18 digits"):
            checksums.validate_clabe(clabe)

    def test_make_clabe_appends_the_control_digit(self) -> None:
        assert checksums.make_clabe("00201007777777777") == "002010077777777771"


class TestIban:
    @pytest.mark.parametrize(
        "iban",
        [
            "DE89370400440532013000",
            "GB29NWBK60161331926819",
            "FR1420041010050500013M02606",
            "ES9121000418450200051332",
            "IT60X0542811101000000123456",
            "NL91ABNA0417164300",
            "BE68539007547034",
            "CH9300762011623852957",
            "DK5000400440116243",
            "NO9386011117947",
            "AE070331234567890123456",
            "SA0380000000608010167519",
            "PK36SCBL0000001123456702",
            "EG380019000500000000263180002",
            "MT84MALT011000012345MTLCAST001S",
            "BR1800360305000010009795493C1",
            "LC55HEMM000100010012001200023015",
            "RU0304452522540817810538091310419",
            "SC18SSCB11010000000000001497USD",
            "XK051212012345678906",
        ],
    )
    def test_registry_examples_pass(self, iban: str) -> None:
        assert checksums.validate_iban(iban) == iban

    def test_printed_form_is_canonicalized_to_upper_case_without_spaces(self) -> None:
        assert checksums.validate_iban("de89 3704 0044 0532 0130 00") == "DE89370400440532013000"

    def test_a_changed_digit_breaks_mod_97(self) -> None:
        with pytest.raises(IdentifierError, match="mod-97"):
            checksums.validate_iban("DE89370400440532013001")

    def test_the_reference_dkk_example_has_a_typo_and_fails(self) -> None:
        with pytest.raises(IdentifierError, match="mod-97"):
            checksums.validate_iban("DK5000400040116243")

    def test_wrong_length_for_the_country_fails_naming_both_lengths(self) -> None:
        with pytest.raises(IdentifierError, match="a DE IBAN has 22 characters, this one has 21"):
            checksums.validate_iban("DE8937040044053201300")

    def test_a_country_outside_the_registry_fails(self) -> None:
        with pytest.raises(IdentifierError, match="US does not issue IBANs"):
            checksums.validate_iban("US12345678901234567890")

    def test_letters_where_the_bban_structure_wants_digits_fail(self) -> None:
        # GB is 4 letters + 14 digits; a digit-for-letter swap keeps the length but breaks the structure
        with pytest.raises(IdentifierError, match="GB IBAN structure"):
            checksums.validate_iban("GB29NWBK6016133192681A")

    def test_check_digits_outside_02_98_fail(self) -> None:
        with pytest.raises(IdentifierError, match="outside 02-98"):
            checksums.validate_iban("DE00370400440532013000")

    def test_make_iban_computes_check_digits(self) -> None:
        assert checksums.make_iban("DE", "370400440532013000") == "DE89370400440532013000"


class TestBrazilianTaxIds:
    @pytest.mark.parametrize("cpf", ["52998224725", "11144477735", "12345678909"])
    def test_valid_cpfs_pass(self, cpf: str) -> None:
        assert checksums.validate_cpf(cpf) == cpf

    def test_a_wrong_cpf_check_digit_fails(self) -> None:
        with pytest.raises(IdentifierError, match="CPF check digits"):
            checksums.validate_cpf("52998224726")

    @pytest.mark.parametrize("cpf", ["11111111111", "00000000000"])
    def test_a_cpf_of_one_repeated_digit_fails_although_its_checksum_adds_up(self, cpf: str) -> None:
        with pytest.raises(IdentifierError, match="repeated digit"):
            checksums.validate_cpf(cpf)

    @pytest.mark.parametrize("cnpj", ["11222333000181", "11444777000161", "00000000000191"])
    def test_valid_cnpjs_pass(self, cnpj: str) -> None:
        assert checksums.validate_cnpj(cnpj) == cnpj

    def test_a_wrong_cnpj_check_digit_fails(self) -> None:
        with pytest.raises(IdentifierError, match="CNPJ check digits"):
            checksums.validate_cnpj("11222333000182")

    def test_a_cnpj_of_one_repeated_digit_fails(self) -> None:
        with pytest.raises(IdentifierError, match="repeated digit"):
            checksums.validate_cnpj("11111111111111")

    def test_a_tax_id_is_a_cpf_or_a_cnpj_by_length(self) -> None:
        assert checksums.validate_brazil_tax_id("52998224725") == "52998224725"
        assert checksums.validate_brazil_tax_id("11222333000181") == "11222333000181"
        with pytest.raises(IdentifierError, match="CPF \\(11 digits\\) or a CNPJ \\(14 digits\\)"):
            checksums.validate_brazil_tax_id("529982247250")


class TestUnitedKingdom:
    @pytest.mark.parametrize("sort_code", ["404784", "40-47-84", "40 47 84"])
    def test_sort_codes_are_stored_as_six_digits(self, sort_code: str) -> None:
        assert checksums.validate_uk_sort_code(sort_code) == "404784"

    @pytest.mark.parametrize("sort_code", ["40478", "40-4784", "40-47 84", "4O4784"])
    def test_malformed_sort_codes_fail(self, sort_code: str) -> None:
        with pytest.raises(IdentifierError, match="a sort code is 6 digits"):
            checksums.validate_uk_sort_code(sort_code)

    def test_account_numbers_are_eight_digits(self) -> None:
        assert checksums.validate_uk_account_number("70872490") == "70872490"
        with pytest.raises(IdentifierError, match="exactly 8 digits"):
            checksums.validate_uk_account_number("7087249")


class TestSwiftBic:
    @pytest.mark.parametrize("bic", ["DEUTDEFF", "DEUTDEFF500", "NEDSZAJJXXX", "BOTKJPJT"])
    def test_eight_and_eleven_character_codes_pass(self, bic: str) -> None:
        assert checksums.validate_swift_bic(bic) == bic

    def test_lower_case_is_upper_cased(self) -> None:
        assert checksums.validate_swift_bic("deutdeff") == "DEUTDEFF"

    def test_a_country_that_does_not_exist_fails(self) -> None:
        with pytest.raises(IdentifierError, match="names country ZZ"):
            checksums.validate_swift_bic("DEUTZZFF")

    @pytest.mark.parametrize("bic", ["DEUTDEF", "DEUTDEFF5", "1EUTDEFF", "DEUT DEFF"])
    def test_malformed_codes_fail(self, bic: str) -> None:
        with pytest.raises(IdentifierError, match="is not a SWIFT/BIC code"):
            checksums.validate_swift_bic(bic)


class TestContactFormats:
    @pytest.mark.parametrize(
        "email", ["jane@example.com", "jane.doe+pix@mail.example.com.br", "o'brien@xn--bcher-kva.example"]
    )
    def test_practical_email_addresses_pass(self, email: str) -> None:
        assert formats.validate_email(email) == email

    def test_the_email_domain_is_lower_cased(self) -> None:
        assert formats.validate_email("Jane@Example.COM") == "Jane@example.com"

    @pytest.mark.parametrize(
        "email",
        [
            "jane",
            "@example.com",
            "jane@",
            "jane..doe@example.com",
            "jane@example",
            "jane@-example.com",
            "jane doe@example.com",
            "jane@example.c0m",
        ],
    )
    def test_malformed_email_addresses_fail(self, email: str) -> None:
        with pytest.raises(IdentifierError):
            formats.validate_email(email)

    @pytest.mark.parametrize("phone", ["+5511987654321", "+14155552671", "+12"])
    def test_e164_numbers_pass(self, phone: str) -> None:
        assert formats.validate_e164_phone(phone) == phone

    @pytest.mark.parametrize(
        "phone", ["5511987654321", "+0511987654321", "+5511 98765 4321", "+1234567890123456", "+1"]
    )
    def test_non_e164_numbers_fail(self, phone: str) -> None:
        with pytest.raises(IdentifierError, match=r"E\.164"):
            formats.validate_e164_phone(phone)

    def test_pix_phone_keys_are_brazilian_mobile_numbers(self) -> None:
        assert formats.validate_brazil_mobile_phone("+5511987654321") == "+5511987654321"
        with pytest.raises(IdentifierError, match="Brazilian mobile"):
            formats.validate_brazil_mobile_phone("+551133334444")  # a landline
        with pytest.raises(IdentifierError, match="Brazilian mobile"):
            formats.validate_brazil_mobile_phone("+14155552671")

    @pytest.mark.parametrize(
        "key",
        [
            "123e4567-e89b-12d3-a456-426614174000",
            "123E4567-E89B-42D3-A456-426614174000",
            "0193b5f2-7c1a-7e3d-9b2a-5f6e7d8c9b0a",
        ],
    )
    def test_uuids_of_any_version_pass_and_are_stored_lower_case(self, key: str) -> None:
        assert formats.validate_random_uuid(key) == key.lower()

    @pytest.mark.parametrize(
        "key",
        [
            "123e4567e89b12d3a456426614174000",
            "123e4567-e89b-12d3-a456-42661417400",
            "00000000-0000-0000-0000-000000000000",
            "{123e4567-e89b-12d3-a456-426614174000}",
        ],
    )
    def test_non_canonical_or_nil_uuids_fail(self, key: str) -> None:
        with pytest.raises(IdentifierError):
            formats.validate_random_uuid(key)

    @pytest.mark.parametrize("vpa", ["user@upi", "Jane.Doe-1_x@okhdfcbank"])
    def test_upi_addresses_pass_and_are_stored_lower_case(self, vpa: str) -> None:
        assert formats.validate_upi_vpa(vpa) == vpa.lower()

    @pytest.mark.parametrize("vpa", ["user@ok.hdfc", "user", "@upi", "us er@upi", "a@", "x" * 250 + "@upi12"])
    def test_malformed_upi_addresses_fail(self, vpa: str) -> None:
        with pytest.raises(IdentifierError):
            formats.validate_upi_vpa(vpa)


class TestCrc16:
    def test_the_ccitt_false_check_value(self) -> None:
        assert checksums.crc16_ccitt(b"123456789") == 0x29B1
