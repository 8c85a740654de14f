"""Contact-style identifiers: email addresses, E.164 phone numbers, random UUID keys, UPI payment addresses;
and India's IFSC branch codes."""

from __future__ import annotations

import re

from platpay.accounts.validators import IdentifierError

# The dot-atom form of RFC 5322, without quoted local parts, comments or IP-literal domains: what mail
# providers actually issue and what payment networks (PIX, banks) accept.
_LOCAL_ATOM = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
_LOCAL_PART = re.compile(rf"{_LOCAL_ATOM}(\.{_LOCAL_ATOM})*")
_DOMAIN_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")
_TOP_LEVEL_DOMAIN = re.compile(r"[A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59}")


def validate_email(value: str) -> str:
    """Returned with the domain lower-cased; the local part keeps its case (RFC 5321 lets it matter)."""
    local, at, domain = value.rpartition("@")
    if not at or not local or not domain:
        raise IdentifierError("an email address is local-part@domain")
    if len(value) > 254:
        raise IdentifierError(f"an email address is at most 254 characters, this one has {len(value)}")
    if len(local) > 64:
        raise IdentifierError("the part before @ is at most 64 characters")
    if not _LOCAL_PART.fullmatch(local):
        raise IdentifierError(
            "the part before @ holds letters, digits and !#$%&'*+/=?^_`{|}~- in dot-separated runs"
        )
    labels = domain.split(".")
    if len(labels) < 2 or not all(_DOMAIN_LABEL.fullmatch(label) for label in labels):
        raise IdentifierError(f"{domain!r} is not a domain name")
    if not _TOP_LEVEL_DOMAIN.fullmatch(labels[-1]):
        raise IdentifierError(f"{labels[-1]!r} is not a top-level domain")
    return f"{local}@{domain.lower()}"


def validate_e164_phone(value: str) -> str:
    """+, a country code that does not start with 0, at most 15 digits in all (ITU-T E.164)."""
    if not re.fullmatch(r"\+[1-9][0-9]{1,14}", value):
        raise IdentifierError(
            "a phone number is in E.164 form: + then up to 15 digits, the first not 0 (e.g. +5511987654321)"
        )
    return value


def validate_brazil_mobile_phone(value: str) -> str:
    """A PIX phone key: +55, a two-digit area code (11-99) and a nine-digit mobile number starting with 9."""
    validate_e164_phone(value)
    if not re.fullmatch(r"\+55[1-9]{2}9[0-9]{8}", value):
        raise IdentifierError("a PIX phone key is a Brazilian mobile number: +55, area code, 9 and 8 digits")
    return value


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def validate_random_uuid(value: str) -> str:
    """A hyphenated UUID (PIX 'chave aleatória' / EVP key), any version, stored lower case."""
    if not _UUID.fullmatch(value):
        raise IdentifierError("a random key is a UUID: 32 hexadecimal digits grouped 8-4-4-4-12 by hyphens")
    if set(value.replace("-", "")) in ({"0"}, {"f"}, {"F"}):
        raise IdentifierError("the nil and max UUIDs are not random keys")
    return value.lower()


def validate_upi_vpa(value: str) -> str:
    """handle@psp as in the reference (^[a-zA-Z0-9.\\-_]+@[a-zA-Z0-9]+$, 3-255 characters), stored lower
    case: UPI resolves addresses case-insensitively."""
    if not 3 <= len(value) <= 255:
        raise IdentifierError(f"a UPI address is 3 to 255 characters, this one has {len(value)}")
    if not re.fullmatch(r"[a-zA-Z0-9.\-_]+@[a-zA-Z0-9]+", value):
        raise IdentifierError(
            "a UPI address is name@bank: letters, digits, '.', '-', '_' before @, letters and digits after"
        )
    return value.lower()


_IFSC = re.compile(r"[A-Z]{4}0[A-Z0-9]{6}")


def validate_ifsc(value: str) -> str:
    """An Indian Financial System Code, stored upper case: four letters naming the bank, a 0 (reserved),
    six letters or digits naming the branch (e.g. HDFC0001234)."""
    code = value.upper()
    if not _IFSC.fullmatch(code):
        raise IdentifierError(
            "an IFSC is 11 characters: 4 letters (the bank), 0, then 6 letters or digits (the branch), "
            "e.g. HDFC0001234"
        )
    return code
