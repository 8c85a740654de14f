"""The X-Svc-Signature header, as written and as a receiver reads it."""

from __future__ import annotations

import base64
import json

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from platpay.kit.crypto.webhook_signing import signature_header, verify_header


def _pem(key: ec.EllipticCurvePrivateKey) -> str:
    return (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def test_the_header_is_compact_json_of_the_version_and_the_signature_over_the_body() -> None:
    key = ec.generate_private_key(ec.SECP256R1())
    body = '{"id":"Webhook:1","type":"CUSTOMER.KYC_APPROVED","data":{"name":"Zoë \\"Z\\" Ångström"}}'.encode()
    for _ in range(20):  # DER signatures vary in length, and so does their base64
        header = signature_header(key, body)
        parsed = json.loads(header)
        assert set(parsed) == {"v", "s"} and parsed["v"] == "1"
        assert header == json.dumps(parsed, separators=(",", ":"))  # compact, in this order
        signature = base64.b64decode(parsed["s"], validate=True)
        key.public_key().verify(signature, body, ec.ECDSA(hashes.SHA256()))  # raises if it is not
        assert verify_header(_pem(key), header, body)
        assert not verify_header(_pem(key), header, body + b" ")
