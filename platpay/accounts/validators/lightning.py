"""Lightning payment destinations: BOLT11 invoices, BOLT12 offers and lightning addresses (LUD-16).

Checked here: the encoding, the checksum (BOLT11), the structure each spec requires of a reader. Not
checked: invoice signatures (they need an ECDSA public-key recovery the service has no other use for),
expiry (an invoice's age says nothing about whether the account details are well formed), and the inner
structure of BOLT12 blinded paths.
"""

from __future__ import annotations

import re

from platpay.accounts.validators import IdentifierError
from platpay.accounts.validators.encodings import (
    BECH32_CHARSET,
    Bech32Variant,
    bech32_decode,
    convert_bits,
)
from platpay.accounts.validators.wallets import is_compressed_secp256k1_key

# --- BOLT11 -------------------------------------------------------------------------------------------

# ln + network (bc mainnet, tb testnet, tbs signet, bcrt regtest) + optional amount with multiplier.
_BOLT11_PREFIX = re.compile(r"ln(bcrt|bc|tbs|tb)(?:([0-9]+)([munp]?))?")
_TIMESTAMP_WORDS = 7
_SIGNATURE_WORDS = 104  # 65 bytes: 64-byte compact signature + recovery id
_PAYMENT_HASH_TAG = BECH32_CHARSET.index("p")
_PAYMENT_HASH_WORDS = 52  # 256 bits


def validate_bolt11_invoice(value: str) -> str:
    """A BOLT11 payment request, stored lower case and without a 'lightning:' URI prefix."""
    invoice = value[len("lightning:") :] if value.lower().startswith("lightning:") else value
    hrp, words, variant = bech32_decode(invoice, max_length=None)
    if variant is not Bech32Variant.BECH32:
        raise IdentifierError("BOLT11 invoices use the bech32 checksum, not bech32m")
    prefix = _BOLT11_PREFIX.fullmatch(hrp)
    if prefix is None:
        raise IdentifierError(
            f"prefix {hrp!r} is not ln + a Bitcoin network (lnbc, lntb, lntbs, lnbcrt) + optional amount"
        )
    _, amount, multiplier = prefix.groups()
    if amount is not None:
        if amount.startswith("0"):
            raise IdentifierError(
                f"invoice amount {amount}{multiplier} must be a positive number without leading zeros"
            )
        if multiplier == "p" and not amount.endswith("0"):
            raise IdentifierError(f"invoice amount {amount}p is not a whole number of millisatoshis")
    if len(words) < _TIMESTAMP_WORDS + _SIGNATURE_WORDS:
        raise IdentifierError("invoice is too short to hold a timestamp and a signature")
    position = _TIMESTAMP_WORDS
    end = len(words) - _SIGNATURE_WORDS
    has_payment_hash = False
    while position < end:
        if position + 3 > end:
            raise IdentifierError("invoice ends inside a tagged field header")
        tag, length = words[position], words[position + 1] * 32 + words[position + 2]
        if position + 3 + length > end:
            raise IdentifierError(f"tagged field {BECH32_CHARSET[tag]!r} runs past the signature")
        has_payment_hash |= tag == _PAYMENT_HASH_TAG and length == _PAYMENT_HASH_WORDS
        position += 3 + length
    if not has_payment_hash:
        raise IdentifierError("invoice has no 256-bit payment hash ('p' field)")
    signature = convert_bits(words[end:], 5, 8, pad=True)
    if signature[64] > 3:
        raise IdentifierError("invoice signature recovery id must be 0 to 3")
    return invoice.lower()


# --- BOLT12 offers ------------------------------------------------------------------------------------

_OFFER_TYPES = range(1, 80)
_EXPERIMENTAL_OFFER_TYPES = range(1_000_000_000, 2_000_000_000)
_KNOWN_EVEN_TYPES = {2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22}
_CHAINS, _CURRENCY, _AMOUNT, _DESCRIPTION, _FEATURES, _PATHS, _ISSUER, _ISSUER_ID = (
    2,
    6,
    8,
    10,
    12,
    16,
    18,
    22,
)
_UTF8_TYPES = {_CURRENCY: "currency", _DESCRIPTION: "description", _ISSUER: "issuer"}


def _read_bigsize(data: bytes, position: int) -> tuple[int, int]:
    """BOLT1 BigSize: one byte below 0xfd, else a 2/4/8-byte big-endian value that must be minimal."""
    if position >= len(data):
        raise IdentifierError("offer ends inside a record header")
    first = data[position]
    if first < 0xFD:
        return first, position + 1
    width, minimum = {0xFD: (2, 0xFD), 0xFE: (4, 0x10000), 0xFF: (8, 0x100000000)}[first]
    if position + 1 + width > len(data):
        raise IdentifierError("offer ends inside a record header")
    number = int.from_bytes(data[position + 1 : position + 1 + width], "big")
    if number < minimum:
        raise IdentifierError("offer uses a non-minimal size encoding")
    return number, position + 1 + width


def _offer_records(data: bytes) -> dict[int, bytes]:
    records: dict[int, bytes] = {}
    position = 0
    previous = -1
    while position < len(data):
        record_type, position = _read_bigsize(data, position)
        length, position = _read_bigsize(data, position)
        if position + length > len(data):
            raise IdentifierError(f"offer record {record_type} is truncated")
        if record_type <= previous:
            raise IdentifierError("offer records are out of order or repeated")
        if record_type not in _OFFER_TYPES and record_type not in _EXPERIMENTAL_OFFER_TYPES:
            raise IdentifierError(f"record type {record_type} is outside the offer ranges")
        if record_type % 2 == 0 and record_type not in _KNOWN_EVEN_TYPES:
            raise IdentifierError(f"offer requires unknown feature record {record_type}")
        records[record_type] = data[position : position + length]
        previous = record_type
        position += length
    return records


def _check_offer_records(records: dict[int, bytes]) -> None:
    if len(records.get(_CHAINS, b"")) % 32:
        raise IdentifierError("offer_chains is not a list of 32-byte chain hashes")
    for record_type, name in _UTF8_TYPES.items():
        try:
            records.get(record_type, b"").decode("utf-8")
        except UnicodeDecodeError:
            raise IdentifierError(f"offer {name} is not valid UTF-8") from None
    features = int.from_bytes(records.get(_FEATURES, b""), "big")
    if any(features >> bit & 1 for bit in range(0, features.bit_length(), 2)):
        raise IdentifierError("offer requires a feature (even bit) this service does not know")
    if _AMOUNT in records and _DESCRIPTION not in records:
        raise IdentifierError("offer has an amount but no description")
    if _CURRENCY in records and _AMOUNT not in records:
        raise IdentifierError("offer has a currency but no amount")
    if _ISSUER_ID in records and not is_compressed_secp256k1_key(records[_ISSUER_ID]):
        raise IdentifierError("offer_issuer_id is not a secp256k1 public key")
    if _ISSUER_ID not in records and not records.get(_PATHS):
        raise IdentifierError("offer names neither an issuer id nor a blinded path to reach the issuer")


def validate_bolt12_offer(value: str) -> str:
    """A BOLT12 offer: 'lno1' + bech32 characters without a checksum, a TLV stream inside. Line-splitting
    '+' joins (each followed by optional whitespace) are removed; stored lower case."""
    if "+" in value and not re.fullmatch(r"[^+\s]+(\+\s*[^+\s]+)*", value):
        raise IdentifierError("a '+' in an offer must join two parts of it")
    offer = re.sub(r"\+\s*", "", value)
    if offer.lower() != offer and offer.upper() != offer:
        raise IdentifierError("an offer is all lower case or all upper case, never mixed")
    offer = offer.lower()
    if not offer.startswith("lno1"):
        raise IdentifierError("a BOLT12 offer starts with lno1")
    body = offer[len("lno1") :]
    bad = next((char for char in body if char not in BECH32_CHARSET), None)
    if bad is not None:
        raise IdentifierError(f"character {bad!r} is not in the bech32 alphabet")
    if not body:
        raise IdentifierError("the offer is empty")
    data = bytes(convert_bits([BECH32_CHARSET.index(char) for char in body], 5, 8, pad=False))
    _check_offer_records(_offer_records(data))
    return offer


# --- Lightning address (LUD-16) -----------------------------------------------------------------------

_HOST_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"


def validate_lightning_address(value: str) -> str:
    """name@domain, resolved over LNURL-pay. Stored lower case (LUD-16 names are case-insensitive)."""
    address = value.lower()
    if address.startswith("$"):
        raise IdentifierError(
            "this is a UMA address: pay it directly as a UMA destination, it needs no external account"
        )
    name, at, domain = address.partition("@")
    if not at or not re.fullmatch(r"[a-z0-9._+-]{1,64}", name):
        raise IdentifierError("a lightning address is name@domain, the name limited to a-z 0-9 - _ . +")
    if len(domain) > 253 or not re.fullmatch(rf"{_HOST_LABEL}(\.{_HOST_LABEL})+", domain):
        raise IdentifierError(f"{domain!r} is not a domain name")
    return address
