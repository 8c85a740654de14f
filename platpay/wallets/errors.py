"""Wallets errors: each class carries its code and HTTP status. Wallet-auth 401s also carry `reason`, the
check that failed (INTERFACE-FACTS §1.1), at the top level of the body and in `details`."""

from __future__ import annotations

from typing import Any

from platpay.errors import ApiError, Conflict, InvalidInput, ResourceNotFound, Unauthorized


class WalletAuthError(Unauthorized):
    """A 401 of the wallet checks (a signed retry, an OTP, an OIDC token, a WebAuthn assertion)."""

    def __init__(self, reason: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(reason, details={"reason": reason, **(details or {})})
        self.reason = reason

    def body(self) -> dict[str, Any]:
        return {**super().body(), "reason": self.reason}


class WalletSignatureMissing(WalletAuthError):
    code = "WALLET_SIGNATURE_MISSING"


class WalletSignatureMalformed(WalletAuthError):
    code = "WALLET_SIGNATURE_MALFORMED"


class WalletSignatureBodyMismatch(WalletAuthError):
    code = "WALLET_SIGNATURE_BODY_MISMATCH"


class WalletSignatureInvalid(WalletAuthError):
    code = "WALLET_SIGNATURE_INVALID"


class RequestIdMissing(WalletAuthError):
    code = "REQUEST_ID_MISSING"


class VerificationFailed(WalletAuthError):
    """A bad OTP, an OIDC token failing a check, a WebAuthn ceremony failing, a passkey Request-Id that is
    not a pending challenge: 401 UNAUTHORIZED."""

    code = "UNAUTHORIZED"


class CredentialNotFound(ResourceNotFound):
    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "authentication credential", "credentialId"


class SessionNotFound(ResourceNotFound):
    """Any id that is not an active session: never issued, revoked or expired (SPEC §4.12: repeating a revoke
    is safe)."""

    code = "REFERENCE_NOT_FOUND"
    resource, id_key = "session", "sessionId"


class NotAnEmbeddedWallet(InvalidInput):
    """A wallet operation on an internal account that is not EMBEDDED_WALLET."""


class EmailOtpCredentialExists(InvalidInput):
    code = "EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS"


class PasskeyCredentialExists(InvalidInput):
    code = "PASSKEY_CREDENTIAL_ALREADY_EXISTS"


class LastCredential(InvalidInput):
    """The only credential of an account cannot be revoked."""


class EmailOtpCredentialSetChanged(Conflict):
    code = "EMAIL_OTP_CREDENTIAL_SET_CHANGED"


class CustodyError(ApiError):
    """The custody provider could not produce or open a wallet secret (a 500: never the client's fault)."""
