"""Customer field rules (SPEC §2 rules 1-6). Every check returns problems instead of raising so that one
400 (or one bulk-import row error) can name every bad field at once."""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from platpay.customers import sandbox
from platpay.customers.errors import EndUserTermsVersionNotFound, MissingMandatoryUserInfo
from platpay.errors import (
    ApiError,
    FieldConstraint,
    InvalidCurrency,
    InvalidInput,
    InvalidUmaAddress,
    field_error,
)
from platpay.kit import countries, currencies

# Besides letters of any script and their combining marks (Unicode L and M: "é" written e + U+0301, the
# vowel signs of Devanagari or Thai), the punctuation real names carry: space, hyphen, apostrophes, period.
_NAME_PUNCTUATION = frozenset(" '’-.")
# Control, format (RTL override, zero-width), surrogate, private-use and unassigned characters; line and
# paragraph separators.
_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
_EMAIL_RE = re.compile(
    r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$"
)
_UMA_USER_RE = re.compile(r"^[a-z0-9._+\-]+$")
_TAX_ID_RE = re.compile(r"^[A-Za-z0-9\-./ ]{1,64}$")
UMA_MAX_USERNAME = 64  # including the leading $
# An individual's identification (the reference accepts SSN and ITIN only, as ###-##-####): an SSN's area is
# never 000, 666 or 9xx, its group never 00, its serial never 0000; an ITIN starts with 9 and its middle
# digits are in the IRS's ranges.
_IDENTIFIER_RE = {
    "SSN": re.compile(r"^(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}$"),
    "ITIN": re.compile(r"^9\d{2}-(?:5\d|6[0-5]|7\d|8[0-8]|9[0-2]|9[4-9])-\d{4}$"),
}
INDIVIDUAL_ID_TYPES = tuple(_IDENTIFIER_RE)
ID_COUNTRY = "US"  # SSN and ITIN are issued by the United States
CONSENT_CLOCK_SKEW = timedelta(minutes=5)  # an acceptance stamped by a device's clock a little ahead


@dataclass(frozen=True)
class Problem:
    field: str
    message: str
    error: type[ApiError] = InvalidInput  # the error class (so the code) the problem answers with
    constraint: FieldConstraint | None = None  # what the value must satisfy, for the 400's details.errors

    def as_detail(self) -> dict[str, str]:
        return {"field": self.field, "message": self.message}

    def as_error(self) -> dict[str, Any]:
        return field_error(self.field, self.message, self.constraint)


DATE: FieldConstraint = {"format": "date"}
COUNTRY: FieldConstraint = {"format": "iso3166-1-alpha-2"}  # the reference's slug
EMAIL: FieldConstraint = {"format": "email"}


def _invisible(value: str) -> str | None:
    """The first control or formatting character (see _INVISIBLE), if any."""
    return next((char for char in value if unicodedata.category(char) in _INVISIBLE), None)


def _invisible_problem(field: str, char: str) -> Problem:
    return Problem(
        field,
        "must not contain control or formatting characters such as line breaks, tabs or direction "
        f"overrides (found U+{ord(char):04X})",
    )


def _spacing_problem(value: str, field: str) -> Problem | None:
    other = next((c for c in value if unicodedata.category(c)[0] == "Z" and c != " "), None)
    if other is not None:
        return Problem(field, f"must separate words with plain spaces only (found U+{ord(other):04X})")
    if value != value.strip() or "  " in value:
        return Problem(field, "must not have leading, trailing or repeated spaces")
    return None


def _layout_problem(value: str, field: str) -> Problem | None:
    """What every name must avoid: control and formatting characters, and stray spaces."""
    if (char := _invisible(value)) is not None:
        return _invisible_problem(field, char)
    return _spacing_problem(value, field)


def check_name(value: str | None, field: str, *, sandbox_suffix: bool = False) -> list[Problem]:
    """A person's name: starts with a letter; then letters, combining marks, single spaces, - ' ’ .
    `sandbox_suffix`: the name may end in the sandbox's three magic digits (`Jane Doe 001`,
    customers/sandbox.py), checked without them."""
    if value is None:
        return []
    if sandbox_suffix:
        name, digits = sandbox.split_name(value)
        if digits is not None and not name:
            return [Problem(field, "must hold a name before the sandbox's three-digit suffix")]
        value = name
    if (layout := _layout_problem(value, field)) is not None:
        return [layout]
    if unicodedata.category(value[0])[0] != "L":
        return [Problem(field, "must start with a letter")]
    if any(unicodedata.category(char)[0] not in "LM" and char not in _NAME_PUNCTUATION for char in value):
        return [Problem(field, "must contain only letters, single spaces, hyphens, apostrophes and periods")]
    return []


def check_text_name(value: str | None, field: str) -> list[Problem]:
    """A business's name: any printable text, without control characters or stray spaces."""
    if value is None:
        return []
    layout = _layout_problem(value, field)
    return [layout] if layout is not None else []


def parse_past_date(value: str | None, field: str, *, today: date) -> tuple[date | None, list[Problem]]:
    if value is None:
        return None, []
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return None, [Problem(field, f"must be a date as YYYY-MM-DD, got {value!r}", constraint=DATE)]
    try:
        parsed = date.fromisoformat(value)
    except ValueError:
        return None, [Problem(field, f"{value!r} is not a real calendar date", constraint=DATE)]
    if parsed >= today:
        return None, [Problem(field, f"{value} is not in the past")]
    if parsed.year < 1900:
        return None, [Problem(field, f"{value} is before 1900")]
    return parsed, []


def check_country(value: str | None, field: str) -> list[Problem]:
    if value is not None and not countries.is_country(value):
        return [
            Problem(
                field,
                f"{value!r} is not an ISO 3166-1 alpha-2 country code (e.g. US, MX)",
                constraint=COUNTRY,
            )
        ]
    return []


def check_email(value: str | None, field: str = "email") -> list[Problem]:
    if value is not None and (not _EMAIL_RE.match(value) or len(value) > 254):
        return [Problem(field, f"{value!r} is not a valid email address", constraint=EMAIL)]
    return []


def normalize_uma_address(
    value: str, *, domain: str, field: str = "umaAddress"
) -> tuple[str | None, list[Problem]]:
    """`$username@domain`, username a-z 0-9 - _ . + (case-insensitive, stored lowercase), ≤64 with the $."""
    lowered = value.strip().lower()
    if not lowered.startswith("$") or lowered.count("@") != 1:
        return None, [Problem(field, f"must look like $username@{domain}", error=InvalidUmaAddress)]
    username, at_domain = lowered.split("@")
    if len(username) > UMA_MAX_USERNAME or len(username) < 2:
        return None, [
            Problem(
                field,
                f"the $username part must be 2-{UMA_MAX_USERNAME} characters including the $",
                error=InvalidUmaAddress,
            )
        ]
    if not _UMA_USER_RE.match(username[1:]):
        return None, [
            Problem(field, "the username may only use a-z, 0-9, '-', '_', '.', '+'", error=InvalidUmaAddress)
        ]
    if at_domain != domain.lower():
        return None, [
            Problem(
                field, f"the domain must be this platform's UMA domain {domain!r}", error=InvalidUmaAddress
            )
        ]
    return lowered, []


def check_address(address: dict[str, Any] | None, field: str = "address") -> list[Problem]:
    if address is None:
        return []
    problems = []
    for key in ("line1", "postal_code", "country"):
        if not address.get(key):
            problems.append(Problem(f"{field}.{_camel(key)}", "is required in an address"))
    problems += check_country(address.get("country"), f"{field}.country")
    for key in ("line1", "line2", "city", "state", "postal_code"):
        text = address.get(key)
        if text is not None and (text != text.strip() or not text.strip() or not text.isprintable()):
            problems.append(
                Problem(f"{field}.{_camel(key)}", "must be printable text without leading or trailing spaces")
            )
    return problems


def check_business_info(
    info: dict[str, Any] | None, *, creating: bool, today: date, field: str = "businessInfo"
) -> list[Problem]:
    if info is None:
        return []
    problems: list[Problem] = []
    # SPEC §2: which businessInfo fields are mandatory depends on the currency's provider (taxId,
    # incorporatedOn come through providerRequiredCustomerFields); the legal name is what makes it a business.
    if creating and info.get("legal_name") is None:
        problems.append(Problem(f"{field}.legalName", "is required when businessInfo is given on create"))
    for key in ("legal_name", "doing_business_as"):
        problems += check_text_name(info.get(key), f"{field}.{_camel(key)}")
    for key in ("tax_id", "registration_number"):
        value = info.get(key)
        if value is not None and not _TAX_ID_RE.match(value):
            problems.append(
                Problem(f"{field}.{_camel(key)}", "may only contain letters, digits, spaces and - . /")
            )
    incorporated = info.get("incorporated_on")
    if incorporated is not None and incorporated >= today:
        problems.append(Problem(f"{field}.incorporatedOn", f"{incorporated} is not in the past"))
    problems += check_country(info.get("country"), f"{field}.country")
    for key in (
        "countries_of_operation",
        "expected_recipient_jurisdictions",
        "expected_counterparty_countries",
    ):
        for index, code in enumerate(info.get(key) or []):
            problems += check_country(code, f"{field}.{_camel(key)}.{index}")
    for key in ("primary_contact_first_name", "primary_contact_last_name"):
        problems += check_name(info.get(key), f"{field}.{_camel(key)}")
    problems += check_free_text(info, BUSINESS_OTHER_DESCRIPTIONS, prefix=f"{field}.")
    problems += check_unique_lists(info, ("source_of_funds_categories",), prefix=f"{field}.")
    return problems


# (what may say OTHER, the description OTHER needs): an individual's due diligence, a business's info.
INDIVIDUAL_OTHER_DESCRIPTIONS = (
    ("source_of_funds_categories", "source_of_funds_other_description"),
    ("source_of_wealth_categories", "source_of_wealth_other_description"),
    ("purpose_of_account", "purpose_of_account_other_description"),
)
BUSINESS_OTHER_DESCRIPTIONS = (
    ("source_of_funds_categories", "source_of_funds_other_description"),
    ("purpose_of_account", "purpose_of_account_other_description"),
)


def _says_other(value: Any) -> bool:
    return value == "OTHER" or (isinstance(value, list) and "OTHER" in value)


def check_other_descriptions(
    merged: dict[str, Any],
    given: dict[str, Any],
    pairs: tuple[tuple[str, str], ...],
    *,
    prefix: str = "",
) -> list[Problem]:
    """A category list (or purpose) that says OTHER needs its description: checked on the customer as it
    will be (`merged`), for the pairs this request touches (`given`), so an update of other fields is not
    refused for what it did not change."""
    problems = []
    for choice, description in pairs:
        touched = choice in given or description in given
        if touched and _says_other(merged.get(choice)) and not merged.get(description):
            problems.append(
                Problem(
                    f"{prefix}{_camel(description)}",
                    f"is required when {prefix}{_camel(choice)} includes OTHER: say what it is",
                )
            )
    return problems


def check_free_text(
    values: Mapping[str, Any], pairs: tuple[tuple[str, str], ...], *, prefix: str = ""
) -> list[Problem]:
    """Free-form descriptions: any printable text (line breaks allowed), no control or formatting characters."""
    problems = []
    for _, key in pairs:
        text = values.get(key)
        if text is None:
            continue
        char = next((c for c in text if c not in "\n" and unicodedata.category(c) in _INVISIBLE), None)
        if char is not None:
            problems.append(_invisible_problem(f"{prefix}{_camel(key)}", char))
        elif not text.strip():
            problems.append(Problem(f"{prefix}{_camel(key)}", "must not be blank"))
    return problems


def check_unique_lists(
    values: Mapping[str, Any], keys: tuple[str, ...], *, prefix: str = ""
) -> list[Problem]:
    return [
        Problem(f"{prefix}{_camel(key)}", "a category is listed twice")
        for key in keys
        if values.get(key) is not None and len(set(values[key])) != len(values[key])
    ]


def check_identification(draft: Mapping[str, Any], *, stored_id_type: str | None) -> list[Problem]:
    """An individual's idType, identifier and countryOfIssuance (the reference's IndividualCustomerFields):
    idType SSN or ITIN and its identifier as ###-##-####, given together; countryOfIssuance US. A message
    never repeats the identifier."""
    id_type, identifier = draft.get("id_type"), draft.get("identifier")
    problems = []
    if id_type is not None and identifier is None:
        problems.append(Problem("identifier", "is required with idType (they are given together)"))
    if identifier is not None and id_type is None:
        problems.append(Problem("idType", "is required with identifier (SSN or ITIN)"))
    if id_type is not None and id_type not in INDIVIDUAL_ID_TYPES:
        problems.append(
            Problem(
                "idType",
                f"{id_type} does not identify an individual: use SSN or ITIN",
                constraint={"enum": list(INDIVIDUAL_ID_TYPES)},
            )
        )
    elif id_type is not None and identifier is not None and not _IDENTIFIER_RE[id_type].match(identifier):
        kind = "an SSN" if id_type == "SSN" else "an ITIN (9##-##-####)"
        problems.append(Problem("identifier", f"is not {kind} written as ###-##-####"))
    country = draft.get("country_of_issuance")
    if country is not None:
        problems += check_country(country, "countryOfIssuance")
        if id_type is None and stored_id_type is None:
            problems.append(Problem("countryOfIssuance", "is given with idType and identifier"))
        elif countries.is_country(country) and country != ID_COUNTRY:
            problems.append(
                Problem(
                    "countryOfIssuance", f"must be {ID_COUNTRY}: SSN and ITIN are issued by the United States"
                )
            )
    return problems


def check_consent(
    consent: dict[str, Any] | None,
    *,
    now: datetime,
    versions: tuple[str, ...],
    field: str = "endUserTermsConsent",
) -> list[Problem]:
    """An End User Terms acceptance: a real IP address, not in the future, a version platpay serves
    (END_USER_TERMS_VERSION_NOT_FOUND otherwise, the reference's 400)."""
    if consent is None:
        return []
    problems = []
    try:
        ipaddress.ip_address(consent["ip_address"])
    except ValueError:
        problems.append(Problem(f"{field}.ipAddress", "is not an IPv4 or IPv6 address"))
    accepted_at = consent["accepted_at"]
    if accepted_at > now + CONSENT_CLOCK_SKEW:
        problems.append(Problem(f"{field}.acceptedAt", f"{accepted_at.isoformat()} is in the future"))
    version = consent["terms_version"]
    if version not in versions:
        problems.append(
            Problem(
                f"{field}.termsVersion",
                f"{version!r} is not a version of the End User Terms: the current one is {versions[-1]!r} "
                "(GET /customers/end-user-terms)",
                error=EndUserTermsVersionNotFound,
            )
        )
    return problems


def check_currencies(
    codes: list[str] | None, *, platform_codes: list[str], field: str = "currencies"
) -> list[Problem]:
    if codes is None:
        return []
    problems = []
    for index, code in enumerate(codes):
        if currencies.get(code) is None:
            problems.append(
                Problem(f"{field}.{index}", f"unknown currency code {code!r}", error=InvalidCurrency)
            )
        elif code not in platform_codes:
            problems.append(
                Problem(
                    f"{field}.{index}",
                    f"{code} is not among this platform's supportedCurrencies {platform_codes}",
                    error=InvalidCurrency,
                )
            )
    if len(set(codes)) != len(codes):
        problems.append(Problem(field, "a currency is listed twice"))
    return problems


# Which customer field satisfies a provider-required CustomerInfoFieldName, per customer type.
_REQUIREMENT_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "INDIVIDUAL": {
        "FULL_NAME": ("full_name",),
        "BIRTH_DATE": ("birth_date",),
        "NATIONALITY": ("nationality",),
        "EMAIL": ("email",),
        "PHONE_NUMBER": ("phone_number",),
        "POSTAL_ADDRESS": ("address",),
        "COUNTRY_OF_RESIDENCE": ("address",),
    },
    "BUSINESS": {
        "FULL_NAME": ("business_info", "legal_name"),
        "COMPANY_LEGAL_NAME": ("business_info", "legal_name"),
        "BIRTH_DATE": ("business_info", "incorporated_on"),
        "TAX_ID": ("business_info", "tax_id"),
        "REGISTRATION_NUMBER": ("business_info", "registration_number"),
        "BUSINESS_TYPE": ("business_info", "business_type"),
        "EMAIL": ("email",),
        "PHONE_NUMBER": ("phone_number",),
        "POSTAL_ADDRESS": ("address",),
        "COUNTRY_OF_RESIDENCE": ("address",),
    },
}
_FIELD_NAMES = {
    "full_name": "fullName",
    "birth_date": "birthDate",
    "nationality": "nationality",
    "email": "email",
    "phone_number": "phoneNumber",
    "address": "address",
    "business_info": "businessInfo",
}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _present(customer: dict[str, Any], path: tuple[str, ...]) -> bool:
    value: Any = customer
    for key in path:
        if not isinstance(value, dict):
            return False
        value = value.get(key)
    return value not in (None, "", [], {})


def missing_for_currencies(customer: dict[str, Any], required: dict[str, list[str]]) -> list[Problem]:
    """Problems for provider-required fields (by currency) the customer lacks. `required` maps a currency
    code to its CustomerInfoFieldNames; fields that a customer type cannot carry are not asked for."""
    mapping = _REQUIREMENT_FIELDS[customer["customer_type"]]
    missing: dict[str, list[str]] = {}
    for code, names in required.items():
        for name in names:
            path = mapping.get(name)
            if path is not None and not _present(customer, path):
                field = ".".join([_FIELD_NAMES.get(path[0], path[0]), *(_camel(p) for p in path[1:])])
                missing.setdefault(field, []).append(code)
    return [
        Problem(field, f"required by the provider for {', '.join(codes)}", error=MissingMandatoryUserInfo)
        for field, codes in missing.items()
    ]
