"""The account formats of the 2026-08 reference: INR's NEFT/RTGS bank form with its IFSC,
GTQ and JMD bankName, SGD without it, USD's bank and intermediary fields — each validated, every problem
named — and what a June client sent still accepted."""

from __future__ import annotations

from typing import Any

import pytest

from platpay.accounts.validators import corridors
from platpay.errors import InvalidInput
from tests.accounts.examples import PERSON, VALID

BANK_FORM = {"accountNumber": "000111222333", "ifsc": "HDFC0001234", "rail": "NEFT"}


def validate(currency: str, info: dict[str, Any]) -> dict[str, Any]:
    return corridors.validate_account_info(currency=currency, account_info=info)


def problems(currency: str, info: dict[str, Any]) -> dict[str, str]:
    """field -> message of every problem the validation names."""
    with pytest.raises(InvalidInput) as caught:
        validate(currency, info)
    return {entry["field"]: entry["message"] for entry in caught.value.details["fields"]}


def inr(**fields: Any) -> dict[str, Any]:
    return {"accountType": "INR_ACCOUNT", "beneficiary": PERSON, **fields}


def usd(**fields: Any) -> dict[str, Any]:
    return {"accountType": "USD_ACCOUNT", **VALID["USD_ACCOUNT"][1], **fields}


class TestInrBankForm:
    @pytest.mark.parametrize("rail", ["NEFT", "RTGS"])
    def test_the_bank_form_is_paid_over_the_rail_it_names(self, rail: str) -> None:
        info = validate("INR", inr(**BANK_FORM | {"rail": rail, "bankName": "HDFC Bank"}))
        assert info["rail"] == rail and info["bankName"] == "HDFC Bank"
        assert corridors.response_account_info(info)["paymentRails"] == [rail]
        assert corridors.usable_rails(info) == [rail]
        assert corridors.primary_identifier(info) == "000111222333"

    def test_upi_stays_valid_without_the_bank_form(self) -> None:
        info = validate("INR", inr(vpa="Asha@UPI"))
        assert info["vpa"] == "asha@upi"
        assert corridors.response_account_info(info)["paymentRails"] == ["UPI"]

    def test_an_account_with_both_forms_can_be_paid_over_either(self) -> None:
        info = validate("INR", inr(vpa="asha@upi", **BANK_FORM))
        assert corridors.usable_rails(info) == ["UPI", "NEFT"]

    def test_the_ifsc_is_stored_upper_case(self) -> None:
        assert validate("INR", inr(**BANK_FORM | {"ifsc": "hdfc0001234"}))["ifsc"] == "HDFC0001234"

    @pytest.mark.parametrize(
        "ifsc",
        [
            "HDFC1001234",  # the fifth character is always 0
            "HDF00001234",  # four letters name the bank
            "HDFC000123",  # 11 characters
            "HDFC00012345",
            "HDFC0-01234",
        ],
    )
    def test_a_malformed_ifsc_is_named(self, ifsc: str) -> None:
        with pytest.raises(InvalidInput) as caught:
            validate("INR", inr(**BANK_FORM | {"ifsc": ifsc}))
        assert caught.value.code == "INVALID_BANK_ACCOUNT"
        assert [entry["field"] for entry in caught.value.details["fields"]] == ["accountInfo.ifsc"]

    def test_a_rail_other_than_neft_or_rtgs_is_refused(self) -> None:
        found = problems("INR", inr(**BANK_FORM | {"rail": "IMPS"}))
        assert found["accountInfo.rail"] == "must be one of NEFT, RTGS, got 'IMPS'"

    def test_half_a_bank_form_names_the_missing_fields(self) -> None:
        found = problems("INR", inr(vpa="asha@upi", accountNumber="000111222333"))
        assert "accountInfo.ifsc" in found and "accountInfo.rail" in found
        assert "NEFT/RTGS bank form is accountNumber, ifsc and rail" in found["accountInfo.ifsc"]

    def test_an_account_number_outside_9_to_18_digits_is_refused(self) -> None:
        assert "accountInfo.accountNumber" in problems(
            "INR", inr(**BANK_FORM | {"accountNumber": "12345678"})
        )

    def test_neither_form_is_refused(self) -> None:
        assert "UPI (vpa)" in problems("INR", inr())["accountInfo"]

    def test_the_same_account_at_two_branches_is_not_a_duplicate(self) -> None:
        first = validate("INR", inr(**BANK_FORM))
        other_branch = validate("INR", inr(**BANK_FORM | {"ifsc": "HDFC0009999"}))
        assert corridors.duplicate_key(first) == "INR_ACCOUNT:HDFC0001234:000111222333"
        assert corridors.duplicate_key(first) != corridors.duplicate_key(other_branch)


class TestBankNames:
    @pytest.mark.parametrize("account_type", ["GTQ_ACCOUNT", "JMD_ACCOUNT"])
    def test_gtq_and_jmd_require_a_bank_name(self, account_type: str) -> None:
        currency, info = VALID[account_type]
        without = {k: v for k, v in info.items() if k != "bankName"}
        assert problems(currency, {"accountType": account_type, **without}) == {
            "accountInfo.bankName": "is required"
        }

    def test_a_gtq_bank_name_comes_from_the_discoveries_catalog(self) -> None:
        currency, info = VALID["GTQ_ACCOUNT"]
        assert (
            validate(currency, {"accountType": "GTQ_ACCOUNT", **info | {"bankName": "Banrural"}})["bankName"]
            == "BANRURAL"
        )
        found = problems(currency, {"accountType": "GTQ_ACCOUNT", **info | {"bankName": "Example Bank"}})
        assert "GET /discoveries?country=GT&currency=GTQ" in found["accountInfo.bankName"]

    def test_sgd_no_longer_requires_a_bank_name(self) -> None:
        currency, info = VALID["SGD_ACCOUNT"]
        without = {k: v for k, v in info.items() if k != "bankName"}
        assert "bankName" not in validate(currency, {"accountType": "SGD_ACCOUNT", **without})
        # a June client's bankName is still checked against the catalog
        assert validate(currency, {"accountType": "SGD_ACCOUNT", **info})["bankName"] == "DBS_BANK"


class TestUsdBankFields:
    def test_the_wire_fields_are_accepted_and_kept(self) -> None:
        fields = {
            "bankName": "Chase Bank",
            "bankAccountType": "SAVINGS",
            "intermediaryBankName": "JPMorgan Chase Bank",
            "intermediaryRoutingNumber": "021000021",
            "fiToFiInformation": "/BNF/Invoice 4471",
        }
        info = validate("USD", usd(**fields))
        assert {name: info[name] for name in fields} == fields
        assert corridors.response_account_info(info)["paymentRails"] == ["ACH", "WIRE", "RTP", "FEDNOW"]

    def test_a_june_account_without_them_is_unchanged(self) -> None:
        info = validate("USD", usd())
        assert set(info) == {"accountType", "accountNumber", "routingNumber", "beneficiary"}

    def test_a_bank_name_is_a_label_not_part_of_the_account_identity(self) -> None:
        """Two spellings of one bank do not register the same account twice."""
        assert corridors.duplicate_key(validate("USD", usd(bankName="Chase"))) == corridors.duplicate_key(
            validate("USD", usd(bankName="JPMorgan Chase Bank, N.A."))
        )

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("bankAccountType", "MONEY_MARKET", "must be one of CHECKING, SAVINGS, got 'MONEY_MARKET'"),
            ("bankAccountType", "checking", "must be one of CHECKING, SAVINGS, got 'checking'"),
            ("intermediaryRoutingNumber", "021000022", "fails the ABA checksum"),
            ("intermediaryRoutingNumber", "2100002", "9 digits"),
            ("bankName", "B" * 141, "must be 1 to 140 characters long, got 141"),
            ("intermediaryBankName", "B" * 141, "must be 1 to 140 characters long, got 141"),
            ("fiToFiInformation", "x" * 211, "must be 1 to 210 characters long, got 211"),
            ("bankAccountType", 1, "must be a string, got number"),
        ],
    )
    def test_each_field_is_validated_by_name(self, field: str, value: Any, message: str) -> None:
        found = problems("USD", usd(**{field: value}))
        assert list(found) == [f"accountInfo.{field}"]
        assert message in found[f"accountInfo.{field}"]

    def test_an_unknown_field_is_still_refused(self) -> None:
        assert "accountInfo.bankAddress" in problems("USD", usd(bankAddress="885 Teaneck Road"))
