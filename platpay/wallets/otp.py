"""EMAIL_OTP: issuing a one-time code with its HPKE target, and checking a sealed attempt.

An issuance (POST /auth/credentials/{id}/challenge, or adding an EMAIL_OTP back) draws a code (sandbox
tenants: always 000000), stores only its keyed digest (keys.otp_digest), creates a fresh P-256 target key
(sealed at rest) and answers the target bundle; the code goes out by email. Only the newest issuance of a
credential counts, once, until it expires (embeddedWalletConfig.expirationSeconds, default 300 s): an
issuance marks the credential's pending ones used (repository.insert_otp). The
client seals {otp_code, public_key} to the target; the server opens it, compares the code in constant time
and, on success, answers a verificationToken bound to the client's key (the TEK) for it to stamp.
"""

from __future__ import annotations

import base64
import hmac
import json
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.kit.crypto import bundles, hpke, p256
from platpay.kit.ids import new_id
from platpay.tenants.context import TenantContext
from platpay.wallets import keys, repository
from platpay.wallets.errors import VerificationFailed
from platpay.wallets.models import CredentialRow

SANDBOX_CODE = "000000"
DEFAULT_LENGTH = 6
DEFAULT_EXPIRATION_SECONDS = 300
TARGET_SEAL_PURPOSE = "wallet-otp-target"
_DIGITS = "0123456789"
_ALPHANUMERIC = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: codes are read off an email and typed


@dataclass(frozen=True, slots=True)
class Issued:
    code: str  # to email; never logged, never in a response
    target_bundle: str
    expires_at: datetime


def _config(tenant: TenantContext) -> dict[str, Any]:
    return tenant.embedded_wallet_config or {}


def draw_code(tenant: TenantContext) -> str:
    if tenant.is_sandbox:
        return SANDBOX_CODE
    config = _config(tenant)
    alphabet = _ALPHANUMERIC if config.get("alphanumeric") else _DIGITS
    length = int(config.get("otpLength") or DEFAULT_LENGTH)
    return "".join(secrets.choice(alphabet) for _ in range(length))


async def issue(
    session: LeanSession, *, tenant: TenantContext, credential: CredentialRow, now: datetime
) -> Issued:
    otp_id = new_id("Otp")
    code = draw_code(tenant)
    target = p256.generate_private_key()
    expires_at = now + timedelta(
        seconds=int(_config(tenant).get("expirationSeconds") or DEFAULT_EXPIRATION_SECONDS)
    )
    await repository.insert_otp(
        session,
        {
            "id": otp_id,
            "tenant_id": tenant.id,
            "credential_id": credential.id,
            "code_digest": keys.otp_digest(otp_id, code),
            "target_key_sealed": keys.sealer().seal(
                p256.scalar_bytes(target), purpose=f"{TARGET_SEAL_PURPOSE}:{otp_id}"
            ),
            "created_at": now,
            "expires_at": expires_at,
            "used_at": None,
        },
    )
    signer = await keys.enclave_key(session, tenant=tenant)
    bundle = bundles.target_bundle(target.public_key(), signer=signer, organization_id=tenant.id)
    return Issued(code, bundle, expires_at)


async def check_attempt(
    session: LeanSession,
    *,
    tenant: TenantContext,
    credential: CredentialRow,
    encrypted_otp_bundle: str,
    now: datetime,
) -> ec.EllipticCurvePublicKey:
    """The TEK of a correct attempt at the credential's current OTP (which is then used up); 401 for a wrong,
    expired, used or superseded one, or a bundle sealed to another target; 400 for a malformed bundle.
    Raising rolls the caller's transaction back: a refused attempt leaves the OTP pending."""
    try:
        sealed = bundles.parse_sealed(encrypted_otp_bundle)
    except bundles.BundleMalformed as error:
        raise invalid_field("encryptedOtpBundle", str(error)) from None
    # Used up first, in one statement: every refusal below (a wrong code, another target, a malformed
    # attempt) raises, and the transaction's rollback gives the OTP back.
    otp = await repository.take_otp(session, tenant_id=tenant.id, credential_id=credential.id, now=now)
    if otp is None:
        raise VerificationFailed(
            "no OTP is pending for this credential (none issued, already used, or expired): request a new one "
            "with POST /auth/credentials/{id}/challenge"
        )
    target = p256.private_key_from_scalar(
        keys.sealer().open(otp.target_key_sealed, purpose=f"{TARGET_SEAL_PURPOSE}:{otp.id}")
    )
    try:
        attempt = bundles.open_otp_attempt(sealed, target)
    except hpke.HpkeError:
        raise VerificationFailed(
            "the encryptedOtpBundle is not sealed to the current otpEncryptionTargetBundle (an older one?)"
        ) from None
    except bundles.BundleMalformed as error:
        raise invalid_field("encryptedOtpBundle", str(error)) from None
    if not hmac.compare_digest(keys.otp_digest(otp.id, attempt.otp_code), otp.code_digest):
        raise VerificationFailed("Invalid OTP code")
    return attempt.public_key


def _b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def verification_token(
    *,
    signer: ec.EllipticCurvePrivateKey,
    organization_id: str,
    contact: str,
    tek: ec.EllipticCurvePublicKey,
    expires_at: datetime,
) -> str:
    """The EMAIL_OTP verificationToken: a compact ES256 JWT (header {"alg":"ES256","kid":"turnkey","typ":
    "JWT"}: the reference's header, plus the `typ` that @turnkey/crypto's verifyOtpVerificationToken
    requires) whose claims bind the TEK, with the string claims that function checks (`exp` in epoch
    milliseconds). Signed by the tenant's enclave key (raw r||s, low S). The client stamps this exact text
    with the TEK."""
    header = _b64url(
        json.dumps({"alg": "ES256", "kid": "turnkey", "typ": "JWT"}, separators=(",", ":")).encode()
    )
    claims = {
        "contact": contact,
        "exp": str(int(expires_at.timestamp() * 1000)),
        "id": new_id("Verification"),
        "organization_id": organization_id,
        "public_key": p256.compressed_hex(tek),
        "verification_type": "OTP_TYPE_EMAIL",
    }
    body = _b64url(json.dumps(claims, sort_keys=True, separators=(",", ":")).encode())
    r, s = decode_dss_signature(p256.sign_der(signer, f"{header}.{body}".encode()))
    s = min(s, p256.ORDER - s)
    return f"{header}.{body}.{_b64url(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"
