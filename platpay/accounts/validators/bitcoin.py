"""Bitcoin on-chain addresses: legacy base58check (P2PKH, P2SH) and segwit bech32/bech32m (BIP-173, BIP-350)."""

from __future__ import annotations

from platpay.accounts.validators import IdentifierError
from platpay.accounts.validators.encodings import (
    Bech32Variant,
    base58check_decode,
    bech32_decode,
    convert_bits,
)

# Version bytes of base58check addresses: P2PKH and P2SH, mainnet then testnet/regtest/signet.
_BASE58_VERSIONS = {0x00: "MAINNET", 0x05: "MAINNET", 0x6F: "TESTNET", 0xC4: "TESTNET"}
SEGWIT_PREFIXES = {"bc": "MAINNET", "tb": "TESTNET", "bcrt": "REGTEST"}


def _validate_segwit(value: str) -> str:
    hrp, words, variant = bech32_decode(value)
    if hrp not in SEGWIT_PREFIXES:
        raise IdentifierError(f"prefix {hrp!r} is not a Bitcoin network ({', '.join(SEGWIT_PREFIXES)})")
    if not words:
        raise IdentifierError("a segwit address carries a witness version and a program")
    version, program = words[0], bytes(convert_bits(words[1:], 5, 8, pad=False))
    if version > 16:
        raise IdentifierError(f"witness version {version} does not exist (0 to 16)")
    expected = Bech32Variant.BECH32 if version == 0 else Bech32Variant.BECH32M
    if variant is not expected:
        raise IdentifierError(
            f"witness version {version} addresses use the {expected.name.lower()} checksum (BIP-350)"
        )
    if not 2 <= len(program) <= 40:
        raise IdentifierError(f"a witness program is 2 to 40 bytes, this one is {len(program)}")
    if version == 0 and len(program) not in (20, 32):
        raise IdentifierError("a version 0 witness program is 20 (P2WPKH) or 32 (P2WSH) bytes")
    if version == 1 and len(program) != 32:
        raise IdentifierError("a taproot (version 1) witness program is 32 bytes")
    return value.lower()


def validate_bitcoin_address(value: str) -> str:
    """A Bitcoin receive address; segwit addresses are returned lower case."""
    if value.lower().startswith(tuple(f"{hrp}1" for hrp in SEGWIT_PREFIXES)):
        return _validate_segwit(value)
    if not 26 <= len(value) <= 35:
        raise IdentifierError(
            "a Bitcoin address is a bc1… segwit address or 26 to 35 base58 characters (1…, 3…)"
        )
    payload = base58check_decode(value)
    if len(payload) != 21 or payload[0] not in _BASE58_VERSIONS:
        raise IdentifierError(
            "a base58 Bitcoin address carries a P2PKH or P2SH version byte and a 20-byte hash"
        )
    return value
