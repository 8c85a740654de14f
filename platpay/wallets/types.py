"""The domain types wallets' services take (plain frozen dataclasses, never request schemas). `as_api()` is
the request's JSON as the API names it: what a signed retry binds and compares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Attestation:
    credential_id: str
    client_data_json: str
    attestation_object: str
    transports: tuple[str, ...] | None = None

    def as_api(self) -> dict[str, Any]:
        api: dict[str, Any] = {
            "credentialId": self.credential_id,
            "clientDataJson": self.client_data_json,
            "attestationObject": self.attestation_object,
        }
        if self.transports is not None:
            api["transports"] = list(self.transports)
        return api


@dataclass(frozen=True, slots=True)
class NewEmailOtp:
    account_id: str
    type: str = "EMAIL_OTP"

    def as_api(self) -> dict[str, Any]:
        return {"type": self.type, "accountId": self.account_id}


@dataclass(frozen=True, slots=True)
class NewOauth:
    account_id: str
    oidc_token: str
    type: str = "OAUTH"

    def as_api(self) -> dict[str, Any]:
        return {"type": self.type, "accountId": self.account_id, "oidcToken": self.oidc_token}


@dataclass(frozen=True, slots=True)
class NewPasskey:
    account_id: str
    nickname: str
    challenge: str
    attestation: Attestation
    type: str = "PASSKEY"

    def as_api(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "accountId": self.account_id,
            "nickname": self.nickname,
            "challenge": self.challenge,
            "attestation": self.attestation.as_api(),
        }


NewCredential = NewEmailOtp | NewOauth | NewPasskey


@dataclass(frozen=True, slots=True)
class Assertion:
    credential_id: str
    client_data_json: str
    authenticator_data: str
    signature: str
    user_handle: str | None = None

    def as_api(self) -> dict[str, str | None]:
        return {
            "credentialId": self.credential_id,
            "clientDataJson": self.client_data_json,
            "authenticatorData": self.authenticator_data,
            "signature": self.signature,
            "userHandle": self.user_handle,
        }


@dataclass(frozen=True, slots=True)
class EmailOtpProof:
    encrypted_otp_bundle: str
    type: str = "EMAIL_OTP"

    def as_api(self) -> dict[str, Any]:
        return {"type": self.type, "encryptedOtpBundle": self.encrypted_otp_bundle}


@dataclass(frozen=True, slots=True)
class OauthProof:
    oidc_token: str
    client_public_key: str
    type: str = "OAUTH"


@dataclass(frozen=True, slots=True)
class PasskeyProof:
    assertion: Assertion
    type: str = "PASSKEY"


Proof = EmailOtpProof | OauthProof | PasskeyProof
