"""The embedded-wallet bundle formats of INTERFACE-FACTS §6.4, byte for byte as @turnkey/crypto reads and
writes them. Every seal is HPKE (kit/crypto/hpke.py `seal_to`: info "turnkey_hpke", AAD enc || recipient).

- target bundle (otpEncryptionTargetBundle, server -> client): JSON text
  {"version":"v1.0.0","data":hex(json {"targetPublic": <uncompressed hex>, ...}),"dataSignature":<hex DER>,
   "enclaveQuorumPublic":<uncompressed hex>}; the client seals its OTP attempt to targetPublic.
- encrypted OTP bundle (client -> server): JSON text {"encappedPublic": <hex>, "ciphertext": <hex>} sealing
  {"otp_code": "...", "public_key": <TEK hex, uncompressed or compressed>}.
- credential bundle (encryptedSessionSigningKey): base58check(compressed enc (33 B) || ciphertext) sealing
  the 32-byte session scalar.
- export bundle (encryptedWalletCredentials): JSON text {"version":"v1.0.0","data":hex(json {"encappedPublic",
  "ciphertext","organizationId"}),"dataSignature","enclaveQuorumPublic"} sealing the mnemonic (UTF-8).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import ec

from platpay.kit.crypto import hpke, p256

VERSION = "v1.0.0"
_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BASE58_INDEX = {char: index for index, char in enumerate(_BASE58)}


class BundleMalformed(ValueError):
    """A bundle that does not have its format; the message names the part."""


def base58check_encode(payload: bytes) -> str:
    data = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    number = int.from_bytes(data, "big")
    encoded = ""
    while number:
        number, remainder = divmod(number, 58)
        encoded = _BASE58[remainder] + encoded
    zeros = len(data) - len(data.lstrip(b"\x00"))
    return "1" * zeros + encoded


def base58check_decode(text: str) -> bytes:
    number = 0
    for char in text:
        if char not in _BASE58_INDEX:
            raise BundleMalformed("not base58")
        number = number * 58 + _BASE58_INDEX[char]
    zeros = len(text) - len(text.lstrip("1"))
    body = number.to_bytes((number.bit_length() + 7) // 8, "big") if number else b""
    data = b"\x00" * zeros + body
    if len(data) < 5:
        raise BundleMalformed("too short for base58check")
    payload, checksum = data[:-4], data[-4:]
    if hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] != checksum:
        raise BundleMalformed("base58check checksum mismatch")
    return payload


def _signed_envelope(data: bytes, signer: ec.EllipticCurvePrivateKey | None) -> str:
    """The {"version","data","dataSignature","enclaveQuorumPublic"} envelope; an unsigned one (sandbox export)
    carries empty strings, as the reference's sandbox does."""
    signature = p256.sign_der(signer, data).hex() if signer is not None else ""
    quorum = p256.uncompressed_hex(signer.public_key()) if signer is not None else ""
    envelope = {
        "version": VERSION,
        "data": data.hex(),
        "dataSignature": signature,
        "enclaveQuorumPublic": quorum,
    }
    return json.dumps(envelope, separators=(",", ":"))


def target_bundle(
    target: ec.EllipticCurvePublicKey, *, signer: ec.EllipticCurvePrivateKey, organization_id: str
) -> str:
    """otpEncryptionTargetBundle: where the client seals its OTP attempt to."""
    data = json.dumps(
        {"targetPublic": p256.uncompressed_hex(target), "organizationId": organization_id},
        separators=(",", ":"),
    ).encode()
    return _signed_envelope(data, signer)


@dataclass(frozen=True, slots=True)
class OtpAttempt:
    otp_code: str
    public_key: ec.EllipticCurvePublicKey  # the client's TEK: the session key once verified


def _json_object(text: str, what: str) -> dict[str, object]:
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        raise BundleMalformed(f"{what} is not JSON") from None
    if not isinstance(value, dict):
        raise BundleMalformed(f"{what} is not a JSON object")
    return value


def _hex_field(obj: dict[str, object], name: str, what: str) -> bytes:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise BundleMalformed(f"{what} lacks {name}")
    try:
        return bytes.fromhex(value)
    except ValueError:
        raise BundleMalformed(f"{what}.{name} is not hexadecimal") from None


def parse_sealed(text: str, what: str = "encryptedOtpBundle") -> hpke.Sealed:
    """{"encappedPublic","ciphertext"} as HPKE parts (no decryption yet)."""
    bundle = _json_object(text, what)
    enc = _hex_field(bundle, "encappedPublic", what)
    ciphertext = _hex_field(bundle, "ciphertext", what)
    if len(enc) not in (33, 65):
        raise BundleMalformed(f"{what}.encappedPublic is not a SEC1 P-256 point")
    if len(ciphertext) < 17:
        raise BundleMalformed(f"{what}.ciphertext is shorter than an AES-GCM tag")
    return hpke.Sealed(enc, ciphertext)


def open_otp_attempt(sealed: hpke.Sealed, target: ec.EllipticCurvePrivateKey) -> OtpAttempt:
    """The OTP attempt inside an encryptedOtpBundle; HpkeError when it was not sealed to `target`,
    BundleMalformed when the plaintext is not {"otp_code", "public_key"}."""
    plaintext = hpke.open_from(target, sealed.enc, sealed.ciphertext)
    try:
        attempt = _json_object(plaintext.decode(), "the OTP attempt")
    except UnicodeDecodeError:
        raise BundleMalformed("the OTP attempt is not UTF-8 JSON") from None
    code, key_hex = attempt.get("otp_code"), attempt.get("public_key")
    if not isinstance(code, str) or not 1 <= len(code) <= 32:
        raise BundleMalformed("the OTP attempt lacks otp_code")
    if not isinstance(key_hex, str):
        raise BundleMalformed("the OTP attempt lacks public_key")
    try:
        key = p256.public_key_from_hex(key_hex)
    except ValueError:
        raise BundleMalformed("the OTP attempt's public_key is not a P-256 key in SEC1 hex") from None
    return OtpAttempt(code, key)


def seal_otp_attempt(target_bundle_text: str, *, otp_code: str, public_key_hex: str) -> str:
    """What a client does with a target bundle (tests and benchmarks use it; the Node suite uses the library)."""
    envelope = _json_object(target_bundle_text, "otpEncryptionTargetBundle")
    data = _json_object(_hex_field(envelope, "data", "otpEncryptionTargetBundle").decode(), "data")
    target = p256.public_key_from_hex(str(data["targetPublic"]))
    plaintext = json.dumps({"otp_code": otp_code, "public_key": public_key_hex}, separators=(",", ":"))
    sealed = hpke.seal_to(target, plaintext.encode())
    return json.dumps(
        {"encappedPublic": sealed.enc.hex(), "ciphertext": sealed.ciphertext.hex()}, separators=(",", ":")
    )


def credential_bundle(recipient: ec.EllipticCurvePublicKey, secret: bytes) -> str:
    """encryptedSessionSigningKey: base58check(compressed enc || ciphertext)."""
    sealed = hpke.seal_to(recipient, secret)
    compressed = p256.encode_point(p256.decode_point(sealed.enc), compressed=True)
    return base58check_encode(compressed + sealed.ciphertext)


def open_credential_bundle(bundle: str, recipient: ec.EllipticCurvePrivateKey) -> bytes:
    """What a client does with encryptedSessionSigningKey (tests, benchmarks)."""
    raw = base58check_decode(bundle)
    return hpke.open_from(recipient, raw[:33], raw[33:])


def export_bundle(
    recipient: ec.EllipticCurvePublicKey,
    secret: bytes,
    *,
    organization_id: str,
    signer: ec.EllipticCurvePrivateKey | None,
) -> str:
    """encryptedWalletCredentials: the secret sealed to `recipient` in the signed envelope (unsigned:
    empty dataSignature and enclaveQuorumPublic, the sandbox form)."""
    sealed = hpke.seal_to(recipient, secret)
    data = json.dumps(
        {
            "encappedPublic": sealed.enc.hex(),
            "ciphertext": sealed.ciphertext.hex(),
            "organizationId": organization_id,
        },
        separators=(",", ":"),
    ).encode()
    return _signed_envelope(data, signer)


def open_export_bundle(bundle: str, recipient: ec.EllipticCurvePrivateKey) -> bytes:
    """What a client does with encryptedWalletCredentials (tests): verify the signature when there is one,
    then open the seal."""
    envelope = _json_object(bundle, "encryptedWalletCredentials")
    data = _hex_field(envelope, "data", "encryptedWalletCredentials")
    signature, quorum = envelope.get("dataSignature"), envelope.get("enclaveQuorumPublic")
    if (
        signature
        and quorum
        and not p256.verify_der(p256.public_key_from_hex(str(quorum)), bytes.fromhex(str(signature)), data)
    ):
        raise BundleMalformed("dataSignature does not verify")
    inner = _json_object(data.decode(), "data")
    sealed = parse_sealed(json.dumps(inner), "data")
    return hpke.open_from(recipient, sealed.enc, sealed.ciphertext)
