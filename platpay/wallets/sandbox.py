"""The sandbox custody (the default): BIP-39 mnemonics envelope-encrypted under the master key.

Each wallet gets a fresh 256-bit data key; the mnemonic is sealed with AES-256-GCM under it (the account id
as associated data) and the data key is sealed under PLATPAY_MASTER_KEY (kit/crypto/sealing.py, purpose
bound to the account). Stored form: "env1.<sealed data key>.<base64url(nonce || ciphertext)>". Without the
master key the stored value reveals nothing; a value copied to another account's row does not open.
"""

from __future__ import annotations

import base64
import os
from functools import cache

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from mnemonic import Mnemonic

from platpay.config import Settings
from platpay.kit.crypto.sealing import Sealer, get_sealer
from platpay.wallets.errors import CustodyError
from platpay.wallets.providers import CUSTODY

_PREFIX = "env1."
MNEMONIC_STRENGTH_BITS = 256  # 24 words


@cache
def _wordlist() -> Mnemonic:
    return Mnemonic("english")


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _b64d(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class EnvelopeCustody:
    name = "sandbox"

    def __init__(self, sealer: Sealer) -> None:
        self._sealer = sealer

    async def create_secret(self, *, account_id: str) -> str:
        mnemonic = _wordlist().generate(strength=MNEMONIC_STRENGTH_BITS)
        data_key, nonce = AESGCM.generate_key(bit_length=256), os.urandom(12)
        ciphertext = AESGCM(data_key).encrypt(nonce, mnemonic.encode(), account_id.encode())
        wrapped = self._sealer.seal(data_key, purpose=f"wallet-data-key:{account_id}")
        return f"{_PREFIX}{wrapped}.{_b64e(nonce + ciphertext)}"

    async def reveal_secret(self, sealed: str, *, account_id: str) -> str:
        if not sealed.startswith(_PREFIX):
            raise CustodyError(f"wallet {account_id}: the stored secret is not in a form this custody knows")
        wrapped, _, body = sealed[len(_PREFIX) :].rpartition(".")
        try:
            data_key = self._sealer.open(wrapped, purpose=f"wallet-data-key:{account_id}")
            raw = _b64d(body)
            return AESGCM(data_key).decrypt(raw[:12], raw[12:], account_id.encode()).decode()
        except (InvalidTag, ValueError):
            raise CustodyError(
                f"wallet {account_id}: the stored secret does not open with this master key"
            ) from None


@CUSTODY.implementation("sandbox")
def _envelope(settings: Settings) -> EnvelopeCustody:
    return EnvelopeCustody(get_sealer(settings.master_key, settings.var_dir))
