"""Server-side keys of the wallets domain, all derived from or sealed under the master key:

- each tenant's enclave key (P-256): signs otpEncryptionTargetBundle and production export bundles
  (`dataSignature`, its public key as `enclaveQuorumPublic`) and EMAIL_OTP verification tokens. Created on
  first use, sealed at rest, cached in this process per sealed value;
- the OTP digest key: OTP codes are stored as HMAC-SHA256 under a key derived from the master key, so a
  database dump reveals no code (not even a 6-digit one, which a plain hash would).
"""

from __future__ import annotations

import hashlib
import hmac
from functools import cache
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric import ec

from platpay.db.unit_of_work import LeanSession
from platpay.kit import clock
from platpay.kit.crypto import p256
from platpay.kit.crypto.sealing import Sealer, load_master_key, master_key_source, process_sealer
from platpay.tenants.context import TenantContext
from platpay.wallets import repository

ENCLAVE_SEAL_PURPOSE = "wallet-enclave-key"
_OTP_DIGEST_LABEL = b"platpay wallets: OTP digest key v1"


def sealer() -> Sealer:
    return process_sealer()


@cache
def _opened(sealed: str, tenant_id: str) -> ec.EllipticCurvePrivateKey:
    pem = sealer().open(sealed, purpose=f"{ENCLAVE_SEAL_PURPOSE}:{tenant_id}")
    return p256.private_key_from_pem(pem)


# A tenant's enclave key never changes once stored: kept per process after its first read.
_ENCLAVE_KEYS: dict[str, ec.EllipticCurvePrivateKey] = {}


async def enclave_key(session: LeanSession, *, tenant: TenantContext) -> ec.EllipticCurvePrivateKey:
    """The tenant's enclave key, created (race-safely: insert-or-ignore, then read) on first use."""
    known = _ENCLAVE_KEYS.get(tenant.id)
    if known is not None:
        return known
    row = await repository.get_enclave_key(session, tenant_id=tenant.id)
    if row is None:
        key = p256.generate_private_key()
        await repository.insert_enclave_key(
            session,
            {
                "tenant_id": tenant.id,
                "private_key_sealed": sealer().seal(
                    p256.private_key_to_pem(key), purpose=f"{ENCLAVE_SEAL_PURPOSE}:{tenant.id}"
                ),
                "public_key": p256.uncompressed_hex(key.public_key()),
                "created_at": clock.now(tenant),
            },
        )
        row = await repository.get_enclave_key(session, tenant_id=tenant.id)
        assert row is not None
        return _opened(row.private_key_sealed, tenant.id)  # not kept until its transaction has committed
    key = _ENCLAVE_KEYS[tenant.id] = _opened(row.private_key_sealed, tenant.id)
    return key


@cache
def _otp_digest_key(configured: str | None, var_dir: Path) -> bytes:
    return hmac.new(load_master_key(configured, var_dir), _OTP_DIGEST_LABEL, hashlib.sha256).digest()


def otp_digest(otp_id: str, code: str) -> str:
    key = _otp_digest_key(*master_key_source())
    return hmac.new(key, f"{otp_id}\x00{code}".encode(), hashlib.sha256).hexdigest()
