"""Blockchain receive addresses: Solana, Tron, EVM chains (Ethereum, Base, Polygon) and Spark."""

from __future__ import annotations

import re

from platpay.accounts.validators import IdentifierError
from platpay.accounts.validators.encodings import (
    Bech32Variant,
    base58_decode,
    base58check_decode,
    bech32_decode,
    bech32_encode,
    convert_bits,
)
from platpay.accounts.validators.keccak import keccak256

# --- secp256k1 public keys (Spark identities, Lightning node ids) -------------------------------------

_SECP256K1_P = 2**256 - 2**32 - 977


def is_compressed_secp256k1_key(key: bytes) -> bool:
    """33 bytes, 0x02/0x03 then an x that lies on y^2 = x^3 + 7 (x^3 + 7 must be a square modulo p)."""
    if len(key) != 33 or key[0] not in (2, 3):
        return False
    x = int.from_bytes(key[1:], "big")
    if x >= _SECP256K1_P:
        return False
    right_side = (pow(x, 3, _SECP256K1_P) + 7) % _SECP256K1_P
    return pow(right_side, (_SECP256K1_P - 1) // 2, _SECP256K1_P) == 1


def compressed_key_from_seed(seed: bytes) -> bytes:
    """A valid compressed public key derived from 32 seed bytes: the first x at or after the seed that is
    on the curve. For deterministic sandbox fixtures only: nobody holds its private key."""
    x = int.from_bytes(seed[:32].rjust(32, b"\x00"), "big") % _SECP256K1_P
    while not is_compressed_secp256k1_key(b"\x02" + x.to_bytes(32, "big")):
        x = (x + 1) % _SECP256K1_P
    return b"\x02" + x.to_bytes(32, "big")


# --- Solana -------------------------------------------------------------------------------------------


def validate_solana_address(value: str) -> str:
    """Base58 of a 32-byte account key. Off-curve keys (program-derived addresses) are valid receivers."""
    if not 32 <= len(value) <= 44:
        raise IdentifierError(f"a Solana address is 32 to 44 base58 characters, this one has {len(value)}")
    decoded = base58_decode(value)
    if len(decoded) != 32:
        raise IdentifierError(f"a Solana address decodes to 32 bytes, this one to {len(decoded)}")
    return value


# --- Tron ---------------------------------------------------------------------------------------------

_TRON_VERSION = 0x41


def validate_tron_address(value: str) -> str:
    """Base58check of 0x41 + a 20-byte account hash: 34 characters starting with T."""
    if not value.startswith("T") or len(value) != 34:
        raise IdentifierError("a Tron address is 34 base58 characters starting with T")
    payload = base58check_decode(value)
    if len(payload) != 21 or payload[0] != _TRON_VERSION:
        raise IdentifierError("a Tron address carries version byte 0x41 and a 20-byte account hash")
    return value


# --- EVM chains (EIP-55) ------------------------------------------------------------------------------


def eip55_checksum(address: str) -> str:
    """The EIP-55 mixed-case form: a hex letter is upper case when the matching nibble of
    keccak256(lower-case hex) is 8 or more."""
    hex_part = address.removeprefix("0x").lower()
    digest = keccak256(hex_part.encode("ascii")).hex()
    return "0x" + "".join(
        char.upper() if char.isalpha() and int(digest[index], 16) >= 8 else char
        for index, char in enumerate(hex_part)
    )


def validate_evm_address(value: str) -> str:
    """0x + 40 hex digits. All-lower or all-upper hex carries no checksum; mixed case must match EIP-55."""
    if not re.fullmatch(r"0x[0-9a-fA-F]{40}", value):
        raise IdentifierError("an EVM address is 0x followed by 40 hexadecimal digits")
    hex_part = value[2:]
    if hex_part in (hex_part.lower(), hex_part.upper()):
        return value
    expected = eip55_checksum(value)
    if value != expected:
        raise IdentifierError(
            f"mixed-case address fails its EIP-55 checksum (the checksummed form is {expected})"
        )
    return value


# --- Spark --------------------------------------------------------------------------------------------

# Network prefixes of the Spark SDK: the current ones, then the legacy short ones it still decodes.
SPARK_NETWORK_PREFIXES = {
    "spark": "MAINNET",
    "sparkt": "TESTNET",
    "sparkrt": "REGTEST",
    "sparks": "SIGNET",
    "sparkl": "LOCAL",
    "sp": "MAINNET",
    "spt": "TESTNET",
    "sprt": "REGTEST",
    "sps": "SIGNET",
    "spl": "LOCAL",
}
# The payload is a protobuf SparkAddress: field 1 (tag 0x0a), length 33, the identity public key.
_SPARK_KEY_HEADER = bytes([0x0A, 33])


def validate_spark_address(value: str) -> str:
    """Bech32m of the identity public key under a Spark network prefix. A Spark invoice (the same prefix
    with payment fields after the key) is one-time and is refused as a reusable wallet address."""
    hrp, words, variant = bech32_decode(value, max_length=None)
    if hrp not in SPARK_NETWORK_PREFIXES:
        raise IdentifierError(f"prefix {hrp!r} is not a Spark network ({', '.join(SPARK_NETWORK_PREFIXES)})")
    if variant is not Bech32Variant.BECH32M:
        raise IdentifierError("Spark addresses use the bech32m checksum, this string carries a bech32 one")
    payload = bytes(convert_bits(words, 5, 8, pad=False))
    if not payload.startswith(_SPARK_KEY_HEADER) or len(payload) < 35:
        raise IdentifierError("a Spark address encodes a 33-byte identity public key")
    if len(payload) > 35:
        raise IdentifierError(
            "this is a Spark invoice (it carries payment fields), not a reusable Spark address"
        )
    if not is_compressed_secp256k1_key(payload[2:]):
        raise IdentifierError("the identity public key in this Spark address is not a secp256k1 point")
    return value.lower()


def make_spark_address(public_key: bytes, *, prefix: str = "spark") -> str:
    if not is_compressed_secp256k1_key(public_key):
        raise IdentifierError(
            "a Spark address needs a compressed secp256k1 public key (see compressed_key_from_seed)"
        )
    words = convert_bits(list(_SPARK_KEY_HEADER + public_key), 8, 5, pad=True)
    return bech32_encode(prefix, words, Bech32Variant.BECH32M)
