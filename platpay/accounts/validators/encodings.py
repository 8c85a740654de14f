"""Text encodings of binary identifiers: base58 / base58check (Bitcoin alphabet) and bech32 / bech32m.

bech32 is BIP-173 (also BOLT11 invoices), bech32m is BIP-350 (Spark addresses); they differ only in the
constant the checksum must produce, so one decoder reports which variant a string carries.
"""

from __future__ import annotations

import hashlib
from enum import Enum

from platpay.accounts.validators import IdentifierError

BASE58_ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_INDEX = {char: index for index, char in enumerate(BASE58_ALPHABET)}

BECH32_CHARSET = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_BECH32_INDEX = {char: index for index, char in enumerate(BECH32_CHARSET)}
_BECH32_GENERATOR = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


class Bech32Variant(Enum):
    BECH32 = 1
    BECH32M = 0x2BC830A3


# --- base58 -------------------------------------------------------------------------------------------


def base58_encode(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    encoded = ""
    while number:
        number, remainder = divmod(number, 58)
        encoded = BASE58_ALPHABET[remainder] + encoded
    leading_zeros = len(data) - len(data.lstrip(b"\x00"))
    return "1" * leading_zeros + encoded


def base58_decode(text: str) -> bytes:
    """Each leading '1' is a zero byte; every other character a base-58 digit."""
    number = 0
    for position, char in enumerate(text):
        digit = _BASE58_INDEX.get(char)
        if digit is None:
            raise IdentifierError(
                f"character {char!r} at position {position + 1} is not in the base58 alphabet"
            )
        number = number * 58 + digit
    leading_zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    return b"\x00" * leading_zeros + body


def _double_sha256(data: bytes) -> bytes:
    return hashlib.sha256(hashlib.sha256(data).digest()).digest()


def base58check_encode(payload: bytes) -> str:
    return base58_encode(payload + _double_sha256(payload)[:4])


def base58check_decode(text: str) -> bytes:
    """The payload without its 4-byte checksum (the first 4 bytes of a double SHA-256 of the payload)."""
    raw = base58_decode(text)
    if len(raw) < 5:
        raise IdentifierError("too short to carry a base58check checksum")
    payload, checksum = raw[:-4], raw[-4:]
    if _double_sha256(payload)[:4] != checksum:
        raise IdentifierError("base58check checksum does not match")
    return payload


# --- bech32 / bech32m ---------------------------------------------------------------------------------


def _polymod(values: list[int]) -> int:
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for bit, generator in enumerate(_BECH32_GENERATOR):
            if (top >> bit) & 1:
                checksum ^= generator
    return checksum


def _expand_hrp(hrp: str) -> list[int]:
    return [ord(char) >> 5 for char in hrp] + [0] + [ord(char) & 31 for char in hrp]


def bech32_create_checksum(hrp: str, data: list[int], variant: Bech32Variant) -> list[int]:
    polymod = _polymod([*_expand_hrp(hrp), *data, 0, 0, 0, 0, 0, 0]) ^ variant.value
    return [(polymod >> 5 * (5 - index)) & 31 for index in range(6)]


def bech32_encode(hrp: str, data: list[int], variant: Bech32Variant) -> str:
    combined = data + bech32_create_checksum(hrp, data, variant)
    return hrp + "1" + "".join(BECH32_CHARSET[value] for value in combined)


def bech32_decode(text: str, *, max_length: int | None = 90) -> tuple[str, list[int], Bech32Variant]:
    """(hrp, 5-bit data without the checksum, variant). max_length=None lifts BIP-173's 90-character cap,
    which BOLT11 invoices and Spark invoices exceed."""
    if any(ord(char) < 33 or ord(char) > 126 for char in text):
        raise IdentifierError("bech32 strings hold printable ASCII only")
    if text.lower() != text and text.upper() != text:
        raise IdentifierError("bech32 strings are all lower case or all upper case, never mixed")
    if max_length is not None and len(text) > max_length:
        raise IdentifierError(f"bech32 strings are at most {max_length} characters, this one has {len(text)}")
    text = text.lower()
    separator = text.rfind("1")
    if separator < 1:
        raise IdentifierError("no human-readable prefix before the '1' separator")
    if len(text) - separator - 1 < 6:
        raise IdentifierError(
            "the data part after the '1' separator is shorter than the 6-character checksum"
        )
    hrp, data_part = text[:separator], text[separator + 1 :]
    data = []
    for position, char in enumerate(data_part):
        value = _BECH32_INDEX.get(char)
        if value is None:
            raise IdentifierError(
                f"character {char!r} at position {separator + 2 + position} is not in the bech32 alphabet"
            )
        data.append(value)
    residue = _polymod(_expand_hrp(hrp) + data)
    for variant in Bech32Variant:
        if residue == variant.value:
            return hrp, data[:-6], variant
    raise IdentifierError("bech32 checksum does not match (a character is mistyped or missing)")


def convert_bits(data: list[int], from_bits: int, to_bits: int, *, pad: bool) -> list[int]:
    """Regroup a bit string, e.g. 5-bit bech32 words into bytes. Without pad, leftover bits must be fewer
    than from_bits and zero, as BIP-173 requires of a well-formed encoding."""
    accumulator = 0
    bits = 0
    result = []
    max_value = (1 << to_bits) - 1
    for value in data:
        accumulator = (accumulator << from_bits) | value
        bits += from_bits
        while bits >= to_bits:
            bits -= to_bits
            result.append((accumulator >> bits) & max_value)
    if pad:
        if bits:
            result.append((accumulator << (to_bits - bits)) & max_value)
    elif bits >= from_bits or ((accumulator << (to_bits - bits)) & max_value):
        raise IdentifierError("the encoded data has non-zero padding bits")
    return result
