"""The named checks corridors.json attaches to fields, and the cross-field rules account types name.

A field passes through its check first (which may normalize it: IBAN spacing, sort code hyphens), then
through the reference's own constraints (length, pattern, enum) on the normalized value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from platpay.accounts import discoveries
from platpay.accounts.validators import IdentifierError, checksums, formats
from platpay.accounts.validators.corridor_specs import FieldSpec
from platpay.accounts.validators.problems import FieldProblems, json_type
from platpay.kit.countries import is_country as is_country_code


@dataclass(frozen=True, slots=True)
class CheckContext:
    """What a check may need beyond the value: the corridor an institution name must belong to."""

    account_type: str
    institution_country: str | None
    institution_currency: str | None


Check = Callable[[str, CheckContext], str]


def _value_only(validate: Callable[[str], str]) -> Check:
    return lambda value, _context: validate(value)


def _country_code(value: str) -> str:
    code = value.upper()
    if not is_country_code(code):
        raise IdentifierError(f"{value!r} is not an ISO 3166-1 alpha-2 country code")
    return code


def _known_institution(value: str, context: CheckContext) -> str:
    code = discoveries.resolve_bank_name(
        bank_name=value, country=context.institution_country, currency=context.institution_currency
    )
    if code is None:
        corridor = " ".join(filter(None, (context.institution_country, context.institution_currency)))
        query = "&".join(
            f"{key}={val}"
            for key, val in (
                ("country", context.institution_country),
                ("currency", context.institution_currency),
            )
            if val
        )
        raise IdentifierError(
            f"{value!r} is not a receiving institution for {corridor}; GET /discoveries?{query} lists them"
        )
    return code


FIELD_CHECKS: dict[str, Check] = {
    "aba_routing_number": _value_only(checksums.validate_aba_routing_number),
    "clabe": _value_only(checksums.validate_clabe),
    "iban": _value_only(checksums.validate_iban),
    "swift_bic": _value_only(checksums.validate_swift_bic),
    "brazil_tax_id": _value_only(checksums.validate_brazil_tax_id),
    "uk_sort_code": _value_only(checksums.validate_uk_sort_code),
    "uk_account_number": _value_only(checksums.validate_uk_account_number),
    "upi_vpa": _value_only(formats.validate_upi_vpa),
    "ifsc": _value_only(formats.validate_ifsc),
    "e164_phone": _value_only(formats.validate_e164_phone),
    "country_code": _value_only(_country_code),
    "spark_address": _value_only(checksums.validate_spark_address),
    "solana_address": _value_only(checksums.validate_solana_address),
    "tron_address": _value_only(checksums.validate_tron_address),
    "evm_address": _value_only(checksums.validate_evm_address),
    "bolt11_invoice": _value_only(checksums.validate_bolt11_invoice),
    "bolt12_offer": _value_only(checksums.validate_bolt12_offer),
    "lightning_address": _value_only(checksums.validate_lightning_address),
    "known_institution": _known_institution,
}

# Values that identify no person or account, so messages may repeat them.
_ECHOABLE_FIELDS = {
    "bankCode", "branchCode", "swiftCode", "routingNumber", "sortCode", "country", "region", "bankAccountType",
    "pixKeyType", "documentType", "provider", "bankName", "rail", "ifsc",
}  # fmt: skip
_CHECKED_FIELD_MAX_LENGTH = 4096  # BOLT11 invoices with routing hints run to a few thousand characters
_PLAIN_FIELD_MAX_LENGTH = 255


def _constraint_failure(spec: FieldSpec, value: str) -> str | None:
    shown = f", got {value!r}" if spec.name in _ECHOABLE_FIELDS and len(value) <= 64 else ""
    if spec.enum is not None and value not in spec.enum:
        return f"must be one of {', '.join(spec.enum)}{shown}"
    default_max = _CHECKED_FIELD_MAX_LENGTH if spec.check else _PLAIN_FIELD_MAX_LENGTH
    minimum, maximum = spec.min_length or 1, spec.max_length or default_max
    if not minimum <= len(value) <= maximum:
        span = f"exactly {minimum}" if minimum == maximum else f"{minimum} to {maximum}"
        return f"must be {span} characters long, got {len(value)}"
    if spec.pattern is not None and not spec.pattern.fullmatch(value):
        return f"must match {spec.pattern.pattern}{shown}"
    return None


def validate_field(
    spec: FieldSpec, raw_value: object, *, field: str, context: CheckContext, problems: FieldProblems
) -> str | None:
    """The canonical value, or None after recording why there is none (absent optional fields too)."""
    if raw_value is None or (isinstance(raw_value, str) and not raw_value.strip()):
        if spec.required:
            problems.add(field, "is required" if raw_value is None else "must not be empty")
        return None
    if not isinstance(raw_value, str):
        problems.add(field, f"must be a string, got {json_type(raw_value)}")
        return None
    value = raw_value.strip()
    if len(value) > _CHECKED_FIELD_MAX_LENGTH:
        # Before any check runs: base58 and bech32 decoding cost grows with the square of the length.
        problems.add(field, f"must be at most {_CHECKED_FIELD_MAX_LENGTH} characters long, got {len(value)}")
        return None
    if spec.check is not None:
        try:
            value = FIELD_CHECKS[spec.check](value, context)
        except IdentifierError as error:
            problems.add(field, str(error), account_identifier=spec.account_identifier)
            return None
    failure = _constraint_failure(spec, value)
    if failure is not None:
        problems.add(field, failure, account_identifier=spec.account_identifier)
        return None
    return value


# --- cross-field rules --------------------------------------------------------------------------------

RecordRule = Callable[[dict[str, Any], str, FieldProblems], None]

_PIX_KEY_CHECKS: dict[str, Callable[[str], str]] = {
    "CPF": checksums.validate_cpf,
    "CNPJ": checksums.validate_cnpj,
    "EMAIL": formats.validate_email,
    "PHONE": formats.validate_brazil_mobile_phone,
    "RANDOM": formats.validate_random_uuid,
}


def _pix_key_matches_type(info: dict[str, Any], field: str, problems: FieldProblems) -> None:
    key_type, key = info.get("pixKeyType"), info.get("pixKey")
    if key_type not in _PIX_KEY_CHECKS or key is None:
        return  # a missing or invalid key type is already reported
    try:
        info["pixKey"] = _PIX_KEY_CHECKS[key_type](key)
    except IdentifierError as error:
        del info["pixKey"]
        problems.add(f"{field}.pixKey", f"not a valid {key_type} PIX key: {error}", account_identifier=True)


# SEPA scheme countries that issue their own IBANs: the EU and EEA, Switzerland, the United Kingdom,
# Gibraltar, Monaco, San Marino, Vatican City, Andorra, and Albania, Moldova, Montenegro, North Macedonia
# and Serbia (admitted by the European Payments Council in 2024-2025). Overseas territories and crown
# dependencies use their parent country's IBAN prefix.
SEPA_IBAN_COUNTRIES = frozenset({
    "AD", "AL", "AT", "BE", "BG", "CH", "CY", "CZ", "DE", "DK", "EE", "ES", "FI", "FR", "GB", "GI", "GR", "HR",
    "HU", "IE", "IS", "IT", "LI", "LT", "LU", "LV", "MC", "MD", "ME", "MK", "MT", "NL", "NO", "PL", "PT", "RO",
    "RS", "SE", "SI", "SK", "SM", "VA",
})  # fmt: skip


def _sepa_iban_country(info: dict[str, Any], field: str, problems: FieldProblems) -> None:
    iban = info.get("iban")
    if iban is not None and iban[:2] not in SEPA_IBAN_COUNTRIES:
        problems.add(
            f"{field}.iban",
            f"{iban[:2]} is outside the SEPA scheme, so EUR_ACCOUNT cannot pay it; use SWIFT_ACCOUNT",
            account_identifier=True,
        )


def _iban_matches_country(info: dict[str, Any], field: str, problems: FieldProblems) -> None:
    iban, country = info.get("iban"), info.get("country")
    if iban is not None and country is not None and iban[:2] != country:
        problems.add(
            f"{field}.iban", f"is a {iban[:2]} IBAN but country is {country}", account_identifier=True
        )


INR_BANK_FORM = ("accountNumber", "ifsc", "rail")


def _inr_bank_form(info: dict[str, Any], field: str, problems: FieldProblems) -> None:
    """The NEFT/RTGS form is all three fields or none: a UPI account (vpa) may carry it too, but half of it
    would be a payout that cannot be routed."""
    given = [name for name in INR_BANK_FORM if name in info]
    if given:
        for name in INR_BANK_FORM:
            if name not in info and not problems.names(f"{field}.{name}"):
                problems.add(
                    f"{field}.{name}",
                    f"is required with {', '.join(given)}: the NEFT/RTGS bank form is accountNumber, ifsc "
                    "and rail (NEFT or RTGS)",
                )


RECORD_RULES: dict[str, RecordRule] = {
    "pix_key_matches_type": _pix_key_matches_type,
    "sepa_iban_country": _sepa_iban_country,
    "iban_matches_country": _iban_matches_country,
    "inr_bank_form": _inr_bank_form,
}
