"""A credential's lifecycle (kit/states.py): created UNVERIFIED (the bootstrap EMAIL_OTP, an EMAIL_OTP added
back) or VERIFIED (OAUTH and PASSKEY are proven at registration); the first successful verify makes an
UNVERIFIED one VERIFIED; revoking ends either (its sessions end with it)."""

from __future__ import annotations

from enum import StrEnum

from platpay.kit.states import StateMachine


class CredentialStatus(StrEnum):
    UNVERIFIED = "UNVERIFIED"
    VERIFIED = "VERIFIED"
    REVOKED = "REVOKED"


CREDENTIAL = StateMachine(
    "credential",
    CredentialStatus,
    {
        CredentialStatus.UNVERIFIED: {CredentialStatus.VERIFIED, CredentialStatus.REVOKED},
        CredentialStatus.VERIFIED: {CredentialStatus.VERIFIED, CredentialStatus.REVOKED},
    },
    initial={CredentialStatus.UNVERIFIED, CredentialStatus.VERIFIED},
)
