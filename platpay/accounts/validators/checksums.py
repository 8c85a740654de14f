"""Bank and tax identifiers: ABA routing numbers, CLABE, IBAN, CPF/CNPJ, UK sort codes, SWIFT/BIC.

Each `validate_*` returns the canonical form or raises IdentifierError naming the failed rule. The `make_*`
builders compute check digits, so sandbox fixtures always pass the same validators. The blockchain and
Lightning validators live in wallets.py and lightning.py and are re-exported here, so callers need one
import for every checksum.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources

from platpay.accounts.validators import IdentifierError
from platpay.accounts.validators.encodings import (
    base58_decode,
    base58_encode,
    base58check_decode,
    base58check_encode,
    bech32_decode,
)
from platpay.accounts.validators.formats import (
    validate_e164_phone,
    validate_email,
    validate_random_uuid,
    validate_upi_vpa,
)
from platpay.accounts.validators.keccak import keccak256
from platpay.accounts.validators.lightning import (
    validate_bolt11_invoice,
    validate_bolt12_offer,
    validate_lightning_address,
)
from platpay.accounts.validators.wallets import (
    compressed_key_from_seed,
    eip55_checksum,
    make_spark_address,
    validate_evm_address,
    validate_solana_address,
    validate_spark_address,
    validate_tron_address,
)
from platpay.kit.countries import is_country as is_country_code

__all__ = [
    "base58_decode",
    "base58_encode",
    "base58check_decode",
    "base58check_encode",
    "bech32_decode",
    "compressed_key_from_seed",
    "crc16_ccitt",
    "eip55_checksum",
    "keccak256",
    "make_clabe",
    "make_iban",
    "make_spark_address",
    "validate_aba_routing_number",
    "validate_bolt11_invoice",
    "validate_bolt12_offer",
    "validate_brazil_tax_id",
    "validate_clabe",
    "validate_cnpj",
    "validate_cpf",
    "validate_e164_phone",
    "validate_email",
    "validate_evm_address",
    "validate_iban",
    "validate_lightning_address",
    "validate_random_uuid",
    "validate_solana_address",
    "validate_spark_address",
    "validate_swift_bic",
    "validate_tron_address",
    "validate_uk_account_number",
    "validate_uk_sort_code",
    "validate_upi_vpa",
]

_DIGITS = re.compile(r"[0-9]+")

# --- ABA routing number (United States) -------------------------------------------------------------

# The first two digits are the Federal Reserve routing symbol: 00 (US government), 01-12 (Federal Reserve
# districts), 21-32 (thrift institutions), 61-72 (electronic transactions), 80 (traveler's cheques).
_ABA_PREFIXES = {0, 80, *range(1, 13), *range(21, 33), *range(61, 73)}


def validate_aba_routing_number(value: str) -> str:
    if not re.fullmatch(r"[0-9]{9}", value):
        raise IdentifierError("an ABA routing number is exactly 9 digits")
    if int(value[:2]) not in _ABA_PREFIXES:
        raise IdentifierError(
            f"routing number {value} starts with {value[:2]}, which is not a Federal Reserve routing symbol"
        )
    weighted = sum(int(digit) * weight for digit, weight in zip(value, (3, 7, 1) * 3, strict=True))
    if weighted % 10 != 0:
        raise IdentifierError(f"routing number {value} fails the ABA checksum (3-7-1 weights)")
    if value == "000000000":
        raise IdentifierError("routing number 000000000 is not assigned")
    return value


# --- CLABE (Mexico) -----------------------------------------------------------------------------------


def _clabe_control_digit(first17: str) -> int:
    weighted = sum((int(digit) * weight) % 10 for digit, weight in zip(first17, (3, 7, 1) * 6, strict=False))
    return (10 - weighted % 10) % 10


def validate_clabe(value: str) -> str:
    """18 digits: bank code (3), plaza (3), account (11), control digit (weights 3-7-1, modulo 10)."""
    if not re.fullmatch(r"[0-9]{18}", value):
        raise IdentifierError("a CLABE is exactly 18 digits")
    if value[:3] == "000":
        raise IdentifierError("a CLABE starts with the 3-digit code of its bank; 000 is not a bank")
    expected = _clabe_control_digit(value[:17])
    if int(value[17]) != expected:
        raise IdentifierError(f"CLABE control digit is {value[17]}, the 3-7-1 checksum expects {expected}")
    return value


def make_clabe(first17: str) -> str:
    if not re.fullmatch(r"[0-9]{17}", first17):
        raise IdentifierError("a CLABE is built from 17 digits plus its control digit")
    return first17 + str(_clabe_control_digit(first17))


# --- IBAN (ISO 13616) ---------------------------------------------------------------------------------

_BBAN_CHARSETS = {"n": "[0-9]", "a": "[A-Z]", "c": "[A-Z0-9]"}


@cache
def _bban_patterns() -> dict[str, tuple[re.Pattern[str], int]]:
    text = resources.files("platpay.accounts").joinpath("data/iban_registry.json").read_text("utf-8")
    patterns = {}
    for country, structure in json.loads(text)["bbanFormats"].items():
        parts = re.findall(r"(\d+)(!?)([nac])", structure)
        regex = "".join(f"{_BBAN_CHARSETS[kind]}{{{count}}}" for count, _, kind in parts)
        patterns[country] = (re.compile(regex), 4 + sum(int(count) for count, _, _ in parts))
    return patterns


def _mod97(text: str) -> int:
    """Letters become 10..35, then the whole number modulo 97 (ISO 7064 MOD 97-10)."""
    return int("".join(str(int(char, 36)) for char in text)) % 97


def iban_countries() -> frozenset[str]:
    return frozenset(_bban_patterns())


def validate_iban(value: str) -> str:
    """Canonical electronic form: upper case, no spaces; country length, BBAN structure and mod-97 checked."""
    iban = re.sub(r"\s+", "", value).upper()
    if not re.fullmatch(r"[A-Z]{2}[0-9]{2}[A-Z0-9]{1,30}", iban):
        raise IdentifierError(
            "an IBAN is a 2-letter country code, 2 check digits and up to 30 letters or digits"
        )
    country = iban[:2]
    known = _bban_patterns().get(country)
    if known is None:
        raise IdentifierError(f"{country} does not issue IBANs (not in the IBAN registry)")
    bban_pattern, length = known
    if len(iban) != length:
        raise IdentifierError(f"a {country} IBAN has {length} characters, this one has {len(iban)}")
    if not bban_pattern.fullmatch(iban[4:]):
        raise IdentifierError(f"the account part does not follow the {country} IBAN structure")
    if not 2 <= int(iban[2:4]) <= 98:
        raise IdentifierError(f"IBAN check digits {iban[2:4]} are outside 02-98")
    if _mod97(iban[4:] + iban[:4]) != 1:
        raise IdentifierError("IBAN check digits do not match (ISO 13616 mod-97)")
    return iban


def make_iban(country: str, bban: str) -> str:
    check = 98 - _mod97(bban.upper() + country.upper() + "00")
    return validate_iban(f"{country.upper()}{check:02d}{bban.upper()}")


# --- Brazil: CPF (individuals) and CNPJ (companies) ---------------------------------------------------


def _mod11_digit(digits: str, weights: list[int]) -> int:
    remainder = sum(int(digit) * weight for digit, weight in zip(digits, weights, strict=True)) % 11
    return 0 if remainder < 2 else 11 - remainder


def validate_cpf(value: str) -> str:
    if not re.fullmatch(r"[0-9]{11}", value):
        raise IdentifierError("a CPF is exactly 11 digits")
    if len(set(value)) == 1:
        raise IdentifierError("a CPF of one repeated digit is not issued")
    first = _mod11_digit(value[:9], list(range(10, 1, -1)))
    second = _mod11_digit(value[:10], list(range(11, 1, -1)))
    if value[9:] != f"{first}{second}":
        raise IdentifierError("CPF check digits do not match (mod-11)")
    return value


_CNPJ_WEIGHTS = [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]


def validate_cnpj(value: str) -> str:
    if not re.fullmatch(r"[0-9]{14}", value):
        raise IdentifierError("a CNPJ is exactly 14 digits")
    if len(set(value)) == 1:
        raise IdentifierError("a CNPJ of one repeated digit is not issued")
    first = _mod11_digit(value[:12], _CNPJ_WEIGHTS[1:])
    second = _mod11_digit(value[:13], _CNPJ_WEIGHTS)
    if value[12:] != f"{first}{second}":
        raise IdentifierError("CNPJ check digits do not match (mod-11)")
    return value


def validate_brazil_tax_id(value: str) -> str:
    """A CPF (11 digits) or a CNPJ (14 digits); nothing in between."""
    if not _DIGITS.fullmatch(value) or len(value) not in (11, 14):
        raise IdentifierError("a Brazilian tax id is a CPF (11 digits) or a CNPJ (14 digits)")
    return validate_cpf(value) if len(value) == 11 else validate_cnpj(value)


# --- United Kingdom -----------------------------------------------------------------------------------


def validate_uk_sort_code(value: str) -> str:
    """Six digits; the printed form 12-34-56 (or 12 34 56) is accepted and stored as 123456."""
    if not re.fullmatch(r"[0-9]{2}([- ]?)[0-9]{2}\1[0-9]{2}", value):
        raise IdentifierError(f"a sort code is 6 digits, optionally written 12-34-56; got {value!r}")
    return re.sub(r"[- ]", "", value)


def validate_uk_account_number(value: str) -> str:
    # Format only: Pay.UK's modulus-checking tables change with every bank merger and are licensed data.
    if not re.fullmatch(r"[0-9]{8}", value):
        raise IdentifierError("a UK account number is exactly 8 digits")
    return value


# --- SWIFT / BIC (ISO 9362) ---------------------------------------------------------------------------


def validate_swift_bic(value: str) -> str:
    """Institution (4 letters), country (ISO 3166), location (2), optional branch (3)."""
    bic = value.upper()
    if not re.fullmatch(r"[A-Z]{4}[A-Z]{2}[A-Z0-9]{2}([A-Z0-9]{3})?", bic):
        raise IdentifierError(
            f"{value!r} is not a SWIFT/BIC code: 4 letters, 2-letter country, 2 location characters, optional 3-character branch"
        )
    if not is_country_code(bic[4:6]):
        raise IdentifierError(f"SWIFT/BIC {bic} names country {bic[4:6]}, which is not an ISO 3166 country")
    return bic


# --- PIX "copia e cola" payloads ----------------------------------------------------------------------


def crc16_ccitt(data: bytes) -> int:
    """CRC-16/CCITT-FALSE (polynomial 0x1021, initial 0xFFFF), the checksum closing an EMV/PIX payload."""
    crc = 0xFFFF
    for byte in data:
        crc ^= byte << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) if crc & 0x8000 else crc << 1
            crc &= 0xFFFF
    return crc
