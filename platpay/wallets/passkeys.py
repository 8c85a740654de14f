"""PASSKEY ceremonies, checked with py_webauthn against the relying party of the settings
(PLATPAY_WEBAUTHN_RP_ID, PLATPAY_WEBAUTHN_ORIGINS).

- Registration: platpay issues a single-use challenge (POST /auth/credentials/passkey-challenges); the
  attestation's clientDataJSON must carry it (type webauthn.create, an allowed origin), the authenticator
  data the RP id hash and the user-presence flag; the credential's COSE public key and counter are kept.
- Login: the challenge is the lowercase hex SHA-256 of the canonical session-creation body that binds the
  client's key; the WebAuthn challenge is that hex text's UTF-8 bytes. The assertion must be for the
  credential, the challenge, an allowed origin and the RP id, with user presence, a signature over
  authenticatorData || SHA-256(clientDataJSON) by the registered key, and a counter that moved forward
  (when the authenticator keeps one).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass

from webauthn import verify_authentication_response, verify_registration_response
from webauthn.helpers.exceptions import WebAuthnException

from platpay.config import Settings
from platpay.wallets.errors import VerificationFailed


def b64url_decode(value: str) -> bytes:
    stripped = value.rstrip("=")
    return base64.urlsafe_b64decode(stripped + "=" * (-len(stripped) % 4))


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def session_challenge(session_creation_body: str) -> str:
    """A passkey login's challenge: the lowercase hex SHA-256 of the session-creation body it authorizes."""
    return hashlib.sha256(session_creation_body.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class RegisteredPasskey:
    credential_id: str  # base64url rawId
    public_key: str  # base64url COSE key
    sign_count: int


def verify_registration(
    *,
    credential_id: str,
    client_data_json: str,
    attestation_object: str,
    transports: list[str] | None,
    challenge: str,
    settings: Settings,
) -> RegisteredPasskey:
    """The passkey an attestation registers; 401 when the ceremony does not check out."""
    try:
        verified = verify_registration_response(
            credential={
                "id": credential_id,
                "rawId": credential_id,
                "response": {
                    "clientDataJSON": client_data_json,
                    "attestationObject": attestation_object,
                    "transports": transports or [],
                },
                "type": "public-key",
                "clientExtensionResults": {},
            },
            expected_challenge=b64url_decode(challenge),
            expected_rp_id=settings.webauthn_rp_id,
            expected_origin=list(settings.webauthn_origins),
            require_user_verification=False,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError, binascii.Error) as error:
        raise VerificationFailed(f"the passkey attestation does not verify: {error}") from None
    if b64url(verified.credential_id) != credential_id.rstrip("="):
        raise VerificationFailed("attestation.credentialId is not the credential the attestation registers")
    return RegisteredPasskey(
        b64url(verified.credential_id), b64url(verified.credential_public_key), verified.sign_count
    )


def verify_assertion(
    *,
    assertion: dict[str, str | None],
    challenge_hex: str,
    public_key: str,
    sign_count: int,
    settings: Settings,
) -> int:
    """The authenticator's new signature counter once the assertion checks out; 401 otherwise."""
    response = {
        "clientDataJSON": assertion["clientDataJson"],
        "authenticatorData": assertion["authenticatorData"],
        "signature": assertion["signature"],
    }
    if assertion.get("userHandle"):
        response["userHandle"] = assertion["userHandle"]
    try:
        verified = verify_authentication_response(
            credential={
                "id": assertion["credentialId"],
                "rawId": assertion["credentialId"],
                "response": response,
                "type": "public-key",
                "clientExtensionResults": {},
            },
            expected_challenge=challenge_hex.encode(),
            expected_rp_id=settings.webauthn_rp_id,
            expected_origin=list(settings.webauthn_origins),
            credential_public_key=b64url_decode(public_key),
            credential_current_sign_count=sign_count,
            require_user_verification=False,
        )
    except (WebAuthnException, ValueError, KeyError, TypeError, binascii.Error) as error:
        raise VerificationFailed(f"the passkey assertion does not verify: {error}") from None
    return verified.new_sign_count
