"""The API-key stamp of `Svc-Wallet-Signature` (INTERFACE-FACTS §6.2), as @turnkey/api-key-stamper makes it.

    header = base64url_nopad(json {"publicKey": <compressed SEC1 hex>,
                                   "scheme": "SIGNATURE_SCHEME_TK_API_P256",
                                   "signature": <lowercase hex of DER ECDSA-P256-SHA256 over payload>})

The signature covers the UTF-8 bytes of `payloadToSign` exactly as the server returned it. The stamp JSON is
parsed as JSON (a Python stamper puts spaces after separators), padding is tolerated, and high-S signatures
are valid (the JavaScript stamper emits both forms).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import ec

from platpay.kit.crypto import p256

SCHEME = "SIGNATURE_SCHEME_TK_API_P256"
MAX_HEADER_CHARS = 4096


class StampMalformed(ValueError):
    """The header is not a stamp this server can read; the message says which part."""


@dataclass(frozen=True, slots=True)
class Stamp:
    public_key: ec.EllipticCurvePublicKey
    public_key_hex: str  # compressed SEC1 hex, the form sessions are looked up by
    signature: bytes  # DER

    def verifies(self, payload: str) -> bool:
        return p256.verify_der(self.public_key, self.signature, payload.encode())


def _b64url_decode(value: str) -> bytes:
    stripped = value.strip().rstrip("=")
    if not _B64URL.fullmatch(stripped):
        raise StampMalformed("the header is not base64url")
    try:
        return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))
    except (binascii.Error, ValueError):
        raise StampMalformed("the header is not base64url") from None


_B64URL = re.compile(r"[A-Za-z0-9_-]+")


def parse(header: str) -> Stamp:
    """The stamp in a `Svc-Wallet-Signature` value; StampMalformed naming what is wrong."""
    if len(header) > MAX_HEADER_CHARS:
        raise StampMalformed(f"the header is longer than {MAX_HEADER_CHARS} characters")
    raw = _b64url_decode(header)
    try:
        stamp = json.loads(raw)
    except (UnicodeDecodeError, ValueError):
        raise StampMalformed("the decoded header is not JSON") from None
    if not isinstance(stamp, dict):
        raise StampMalformed("the stamp is not a JSON object")
    names = ("publicKey", "scheme", "signature")
    fields: dict[str, str] = {
        name: value for name in names if isinstance(value := stamp.get(name), str) and value
    }
    missing = [name for name in names if name not in fields]
    if missing:
        raise StampMalformed(f"the stamp lacks {', '.join(missing)}")
    if fields["scheme"] != SCHEME:
        raise StampMalformed(f"scheme {fields['scheme'][:64]!r} is not {SCHEME}")
    try:
        public_key = p256.public_key_from_hex(fields["publicKey"])
    except ValueError:
        raise StampMalformed("publicKey is not a P-256 public key in SEC1 hex") from None
    try:
        signature = bytes.fromhex(fields["signature"])
    except ValueError:
        raise StampMalformed("signature is not hexadecimal") from None
    if not 8 <= len(signature) <= 72 or signature[0] != 0x30:
        raise StampMalformed("signature is not a DER ECDSA signature")
    return Stamp(public_key, p256.compressed_hex(public_key), signature)


def make(private_key: ec.EllipticCurvePrivateKey, payload: str) -> str:
    """A stamp header over `payload`, exactly as the JavaScript stamper builds it (tests, benchmarks)."""
    stamp = {
        "publicKey": p256.compressed_hex(private_key.public_key()),
        "scheme": SCHEME,
        "signature": p256.sign_der(private_key, payload.encode()).hex(),
    }
    encoded = json.dumps(stamp, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(encoded).rstrip(b"=").decode()
