"""The X-Svc-Signature header: {"v":"1","s":"<base64 DER ECDSA-P256-SHA256 over the exact raw body>"}."""

from __future__ import annotations

import base64
import binascii
import json

from cryptography.hazmat.primitives.asymmetric import ec

from platpay.kit.crypto import p256

HEADER = "X-Svc-Signature"


def signature_header(key: ec.EllipticCurvePrivateKey, body: bytes) -> str:
    signature = base64.b64encode(p256.sign_der(key, body)).decode()
    # (base64 holds no character JSON escapes: the same compact JSON json.dumps writes, without its cost on
    # every delivery)
    return '{"v":"1","s":"' + signature + '"}'


def verify_header(public_key_pem: str, header_value: str, body: bytes) -> bool:
    """What a receiver does: parse the header (bare base64 accepted too), verify over the raw body."""
    try:
        parsed = json.loads(header_value)
        encoded = parsed["s"] if isinstance(parsed, dict) else header_value
    except (ValueError, KeyError, TypeError):
        encoded = header_value
    try:
        signature = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        return False
    return p256.verify_der(p256.public_key_from_pem(public_key_pem), signature, body)


# Associated data when the tenant's private signing key is sealed at rest.
SEAL_PURPOSE = "webhook-signing-key"
