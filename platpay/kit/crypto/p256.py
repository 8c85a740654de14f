"""ECDSA P-256 keys and signatures (webhook signing; later wallet stamps)."""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

_ECDSA = ec.ECDSA(hashes.SHA256())
ORDER = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551  # n of P-256


def generate_private_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def private_key_to_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def private_key_from_pem(pem: bytes) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(pem, password=None)
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ValueError("not a P-256 private key")
    return key


def public_key_pem(key: ec.EllipticCurvePrivateKey | ec.EllipticCurvePublicKey) -> str:
    public = key.public_key() if isinstance(key, ec.EllipticCurvePrivateKey) else key
    return public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode()


def public_key_from_pem(pem: str | bytes) -> ec.EllipticCurvePublicKey:
    key = serialization.load_pem_public_key(pem.encode() if isinstance(pem, str) else pem)
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ValueError("not a P-256 public key")
    return key


def sign_der(key: ec.EllipticCurvePrivateKey, message: bytes) -> bytes:
    """ECDSA-P256-SHA256 over `message`, DER-encoded."""
    return key.sign(message, _ECDSA)


def verify_der(key: ec.EllipticCurvePublicKey, signature: bytes, message: bytes) -> bool:
    try:
        key.verify(signature, message, _ECDSA)
    except InvalidSignature:
        return False
    return True


# SEC1 point encodings: wallet formats carry public keys as hex, uncompressed (04 || x || y, 65 bytes) or
# compressed (02/03 || x, 33 bytes); one point has both forms, so keys are compared as points.


def encode_point(key: ec.EllipticCurvePublicKey, *, compressed: bool = False) -> bytes:
    form = (
        serialization.PublicFormat.CompressedPoint
        if compressed
        else serialization.PublicFormat.UncompressedPoint
    )
    return key.public_bytes(serialization.Encoding.X962, form)


def decode_point(data: bytes) -> ec.EllipticCurvePublicKey:
    """A P-256 public key from its SEC1 encoding (either form); ValueError when it is not a curve point."""
    if len(data) not in (33, 65) or data[0] not in ((2, 3) if len(data) == 33 else (4,)):
        raise ValueError("not a SEC1 P-256 point (33 bytes 02/03.., or 65 bytes 04..)")
    return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), data)


def public_key_from_hex(value: str) -> ec.EllipticCurvePublicKey:
    """A public key from compressed (66) or uncompressed (130) hex; ValueError otherwise."""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raise ValueError("not hexadecimal") from None
    return decode_point(raw)


def compressed_hex(key: ec.EllipticCurvePublicKey) -> str:
    return encode_point(key, compressed=True).hex()


def uncompressed_hex(key: ec.EllipticCurvePublicKey) -> str:
    return encode_point(key).hex()


def private_key_from_scalar(scalar: bytes) -> ec.EllipticCurvePrivateKey:
    return ec.derive_private_key(int.from_bytes(scalar, "big"), ec.SECP256R1())


def scalar_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_numbers().private_value.to_bytes(32, "big")
