"""HPKE (RFC 9180), base mode, single-shot, for the embedded-wallet bundles (INTERFACE-FACTS §6.4).

Suite: DHKEM(P-256, HKDF-SHA256) (kem 0x0010), HKDF-SHA256 (kdf 0x0001), AES-256-GCM (aead 0x0002; the
AES-128-GCM suite 0x0001 is here too so RFC 9180's test vectors can check the key schedule). The wallet
formats use `info` = b"turnkey_hpke" and AAD = enc (65 B uncompressed) || recipient public key (65 B
uncompressed): `seal_to` / `open_from` apply those; `seal_base` / `open_base` take any info and AAD.

Built on `cryptography`'s ECDH, HMAC and AES-GCM: no pure-Python curve arithmetic, a few tens of
microseconds per operation. Only the first message of a context is used (sequence number 0), which is
all a single-shot seal needs.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from platpay.kit.crypto import p256

KEM_P256_SHA256 = 0x0010
KDF_HKDF_SHA256 = 0x0001
AEAD_AES_128_GCM = 0x0001
AEAD_AES_256_GCM = 0x0002
_KEY_LENGTHS = {AEAD_AES_128_GCM: 16, AEAD_AES_256_GCM: 32}
_NONCE_LENGTH = 12
_HASH_LENGTH = 32
_VERSION = b"HPKE-v1"
_KEM_SUITE = b"KEM" + KEM_P256_SHA256.to_bytes(2, "big")

TURNKEY_INFO = b"turnkey_hpke"


class HpkeError(ValueError):
    """Decryption failed: wrong key, tampered ciphertext, or a malformed encapsulated key."""


def _extract(salt: bytes, ikm: bytes) -> bytes:
    return hmac.new(salt or bytes(_HASH_LENGTH), ikm, hashlib.sha256).digest()


def _expand(prk: bytes, info: bytes, length: int) -> bytes:
    output, block, counter = b"", b"", 1
    while len(output) < length:
        block = hmac.new(prk, block + info + bytes([counter]), hashlib.sha256).digest()
        output += block
        counter += 1
    return output[:length]


def _labeled_extract(suite: bytes, salt: bytes, label: bytes, ikm: bytes) -> bytes:
    return _extract(salt, _VERSION + suite + label + ikm)


def _labeled_expand(suite: bytes, prk: bytes, label: bytes, info: bytes, length: int) -> bytes:
    return _expand(prk, length.to_bytes(2, "big") + _VERSION + suite + label + info, length)


def _shared_secret(dh: bytes, kem_context: bytes) -> bytes:
    eae_prk = _labeled_extract(_KEM_SUITE, b"", b"eae_prk", dh)
    return _labeled_expand(_KEM_SUITE, eae_prk, b"shared_secret", kem_context, _HASH_LENGTH)


def _key_schedule(shared_secret: bytes, info: bytes, aead: int) -> tuple[bytes, bytes]:
    suite = (
        b"HPKE"
        + KEM_P256_SHA256.to_bytes(2, "big")
        + KDF_HKDF_SHA256.to_bytes(2, "big")
        + aead.to_bytes(2, "big")
    )
    psk_id_hash = _labeled_extract(suite, b"", b"psk_id_hash", b"")
    info_hash = _labeled_extract(suite, b"", b"info_hash", info)
    context = b"\x00" + psk_id_hash + info_hash  # mode_base
    secret = _labeled_extract(suite, shared_secret, b"secret", b"")
    key = _labeled_expand(suite, secret, b"key", context, _KEY_LENGTHS[aead])
    base_nonce = _labeled_expand(suite, secret, b"base_nonce", context, _NONCE_LENGTH)
    return key, base_nonce


@dataclass(frozen=True, slots=True)
class Sealed:
    enc: bytes  # the sender's ephemeral public key, uncompressed SEC1 (65 bytes)
    ciphertext: bytes  # AEAD output, the 16-byte tag at its end


def seal_base(
    recipient: ec.EllipticCurvePublicKey,
    plaintext: bytes,
    *,
    info: bytes,
    aad: bytes = b"",
    aead: int = AEAD_AES_256_GCM,
    ephemeral: ec.EllipticCurvePrivateKey | None = None,
) -> Sealed:
    """SealBase(pkR, info, aad, pt). `ephemeral` fixes the sender's key (test vectors only)."""
    sender = ephemeral or p256.generate_private_key()
    enc = p256.encode_point(sender.public_key())
    dh = sender.exchange(ec.ECDH(), recipient)
    shared = _shared_secret(dh, enc + p256.encode_point(recipient))
    key, nonce = _key_schedule(shared, info, aead)
    return Sealed(enc, AESGCM(key).encrypt(nonce, plaintext, aad))


def open_base(
    recipient: ec.EllipticCurvePrivateKey,
    enc: bytes,
    ciphertext: bytes,
    *,
    info: bytes,
    aad: bytes = b"",
    aead: int = AEAD_AES_256_GCM,
) -> bytes:
    """OpenBase(enc, skR, info, aad, ct); HpkeError when it does not open."""
    try:
        sender = p256.decode_point(enc)
    except ValueError as error:
        raise HpkeError(f"the encapsulated key is not a P-256 point: {error}") from None
    dh = recipient.exchange(ec.ECDH(), sender)
    shared = _shared_secret(dh, p256.encode_point(sender) + p256.encode_point(recipient.public_key()))
    key, nonce = _key_schedule(shared, info, aead)
    try:
        return AESGCM(key).decrypt(nonce, ciphertext, aad)
    except Exception:  # cryptography's InvalidTag: nothing more to say without leaking why
        raise HpkeError("the ciphertext does not open with this key") from None


def seal_to(recipient: ec.EllipticCurvePublicKey, plaintext: bytes) -> Sealed:
    """The wallet formats' seal: info "turnkey_hpke", AAD = enc || recipient (both uncompressed)."""
    sender = p256.generate_private_key()
    enc = p256.encode_point(sender.public_key())
    return seal_base(
        recipient,
        plaintext,
        info=TURNKEY_INFO,
        aad=enc + p256.encode_point(recipient),
        ephemeral=sender,
    )


def open_from(recipient: ec.EllipticCurvePrivateKey, enc: bytes, ciphertext: bytes) -> bytes:
    """Open what `seal_to` (or @turnkey/crypto's hpkeEncrypt) sealed to `recipient`."""
    try:
        uncompressed = p256.encode_point(p256.decode_point(enc))
    except ValueError as error:
        raise HpkeError(f"the encapsulated key is not a P-256 point: {error}") from None
    aad = uncompressed + p256.encode_point(recipient.public_key())
    return open_base(recipient, uncompressed, ciphertext, info=TURNKEY_INFO, aad=aad)
