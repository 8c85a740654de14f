"""The account holder ("beneficiary") of a bank account, and postal addresses.

Individual: {beneficiaryType: INDIVIDUAL, fullName*, birthDate?, nationality?, email?, phoneNumber?,
countryOfResidence?, address?} plus whatever the corridor adds (EUR needs countryOfResidence, AED an
address, GTQ countryOfResidence and phoneNumber, JMD address and phoneNumber; CAD and COP add fields).
Business: {beneficiaryType: BUSINESS, legalName*, registrationNumber?, taxId?, email?, phoneNumber?,
countryOfResidence?, address?}, the same in every corridor.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from datetime import date
from typing import Any

from platpay.accounts.validators import IdentifierError, formats
from platpay.accounts.validators.corridor_specs import IndividualBeneficiaryRules
from platpay.accounts.validators.field_checks import CheckContext, validate_field
from platpay.accounts.validators.problems import FieldProblems, json_type, read_text
from platpay.kit import clock
from platpay.kit.countries import is_country as is_country_code

INDIVIDUAL = "INDIVIDUAL"
BUSINESS = "BUSINESS"
_COMMON_FIELDS = ("email", "phoneNumber", "countryOfResidence", "address")
INDIVIDUAL_FIELDS = ("beneficiaryType", "fullName", "birthDate", "nationality", *_COMMON_FIELDS)
BUSINESS_FIELDS = ("beneficiaryType", "legalName", "registrationNumber", "taxId", *_COMMON_FIELDS)
ADDRESS_FIELDS = ("line1", "line2", "city", "state", "postalCode", "country")

_NAME_MAX_LENGTH = 255
_PERSON_NAME_PUNCTUATION = set(" '’-.")
_BUSINESS_NAME_PUNCTUATION = _PERSON_NAME_PUNCTUATION | set("&,()/+")
_EARLIEST_BIRTH_DATE = date(1900, 1, 1)


def _check_name(value: str, *, business: bool) -> str:
    """Letters of any script and a little punctuation; no control or special characters, no runs of
    spaces. Business names may also hold digits and & , ( ) / +."""
    allowed = _BUSINESS_NAME_PUNCTUATION if business else _PERSON_NAME_PUNCTUATION
    if len(value) > _NAME_MAX_LENGTH:
        raise IdentifierError(f"must be at most {_NAME_MAX_LENGTH} characters")
    for char in value:
        category = unicodedata.category(char)
        if category[0] in "LM" or char in allowed or (business and category == "Nd"):
            continue
        kind = "business names" if business else "person names"
        raise IdentifierError(f"holds {char!r}, a character {kind} may not contain")
    if "  " in value:
        raise IdentifierError("holds a run of spaces")
    if not any(unicodedata.category(char)[0] == "L" for char in value):
        raise IdentifierError("holds no letter")
    return value


def _check_birth_date(value: str) -> str:
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise IdentifierError(f"must be a date written YYYY-MM-DD, got {value!r}")
    try:
        born_on = date.fromisoformat(value)
    except ValueError:
        raise IdentifierError(f"{value} is not a calendar date") from None
    if not _EARLIEST_BIRTH_DATE <= born_on < clock.now().date():
        raise IdentifierError(f"{value} is not a plausible birth date: it must be in the past, after 1900")
    return value


def _check_country(value: str) -> str:
    code = value.upper()
    if not is_country_code(code):
        raise IdentifierError(f"{value!r} is not an ISO 3166-1 alpha-2 country code")
    return code


def _check_registration(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 ./-]{0,63}", value):
        raise IdentifierError("must be 1 to 64 letters, digits, spaces, '.', '/' or '-'")
    return value


def _check_postal_code(value: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9 -]{0,15}", value):
        raise IdentifierError("a postal code is 1 to 16 letters, digits, spaces or hyphens")
    return value.upper()


def _check_address_line(value: str) -> str:
    if len(value) > 255 or any(unicodedata.category(char)[0] == "C" for char in value):
        raise IdentifierError("must be at most 255 printable characters")
    return value


_FIELD_CHECKS: dict[str, Callable[[str], str]] = {
    "fullName": lambda value: _check_name(value, business=False),
    "legalName": lambda value: _check_name(value, business=True),
    "birthDate": _check_birth_date,
    "nationality": _check_country,
    "countryOfResidence": _check_country,
    "country": _check_country,
    "email": formats.validate_email,
    "phoneNumber": formats.validate_e164_phone,
    "registrationNumber": _check_registration,
    "taxId": _check_registration,
    "postalCode": _check_postal_code,
    "line1": _check_address_line,
    "line2": _check_address_line,
    "city": _check_address_line,
    "state": _check_address_line,
}


def _read_checked(
    raw: Mapping[str, Any], name: str, *, field: str, required: bool, problems: FieldProblems
) -> str | None:
    value = read_text(raw, name, field=f"{field}.{name}", required=required, problems=problems)
    if value is None:
        return None
    try:
        return _FIELD_CHECKS[name](value)
    except IdentifierError as error:
        problems.add(f"{field}.{name}", str(error))
        return None


def validate_address(raw: object, *, field: str, problems: FieldProblems) -> dict[str, str] | None:
    """{line1*, line2?, city?, state?, postalCode*, country*}; country is ISO 3166-1 alpha-2."""
    if not isinstance(raw, Mapping):
        problems.add(field, f"must be an object, got {json_type(raw)}")
        return None
    problems.reject_unknown(raw, ADDRESS_FIELDS, field=field, owner="an address")
    address = {}
    for name in ADDRESS_FIELDS:
        required = name in ("line1", "postalCode", "country")
        value = _read_checked(raw, name, field=field, required=required, problems=problems)
        if value is not None:
            address[name] = value
    return address


def validate_beneficiary(
    raw: object, *, field: str, account_type: str, rules: IndividualBeneficiaryRules, problems: FieldProblems
) -> dict[str, Any] | None:
    """The normalized beneficiary, or None after recording every problem with it."""
    if raw is None:
        problems.add(
            field, f"is required for {account_type}: the account holder, an INDIVIDUAL or a BUSINESS"
        )
        return None
    if not isinstance(raw, Mapping):
        problems.add(field, f"must be an object, got {json_type(raw)}")
        return None
    kind = raw.get("beneficiaryType")
    if kind not in (INDIVIDUAL, BUSINESS):
        message = "is required" if kind is None else f"must be INDIVIDUAL or BUSINESS, got {kind!r}"
        problems.add(f"{field}.beneficiaryType", message)
        return None
    if kind == INDIVIDUAL:
        names: tuple[str, ...] = (*INDIVIDUAL_FIELDS, *rules.extra_fields)
        required = {"fullName", *rules.required}
    else:
        names, required = BUSINESS_FIELDS, {"legalName"}
    problems.reject_unknown(raw, names, field=field, owner=f"a {kind} beneficiary")

    beneficiary: dict[str, Any] = {"beneficiaryType": kind}
    context = CheckContext(account_type=account_type, institution_country=None, institution_currency=None)
    for name in names[1:]:
        if name in required and raw.get(name) is None:
            problems.add(f"{field}.{name}", f"is required for {account_type} {kind} beneficiaries")
            continue
        if name == "address":
            if raw.get("address") is not None:
                address = validate_address(raw["address"], field=f"{field}.address", problems=problems)
                if address:
                    beneficiary["address"] = address
        elif name in rules.extra_fields and kind == INDIVIDUAL:
            spec = rules.extra_fields[name]
            value = validate_field(
                spec, raw.get(name), field=f"{field}.{name}", context=context, problems=problems
            )
            if value is not None:
                beneficiary[name] = value
        else:
            value = _read_checked(raw, name, field=field, required=name in required, problems=problems)
            if value is not None:
                beneficiary[name] = value
    return beneficiary
