"""Request and response bodies of the embedded-wallet operations, under the reference's schema names
(INTERFACE-FACTS §3.4, §3.13)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, Field
from typing_extensions import TypeAliasType

from platpay.kit.api_model import ApiModel, ApiRequest
from platpay.kit.crypto import p256
from platpay.kit.openapi import DocumentedOneOf

AuthMethodType = Literal["OAUTH", "EMAIL_OTP", "PASSKEY"]
UNCOMPRESSED_KEY = r"^04[0-9a-fA-F]{128}$"
# The session-issuing requests take either SEC1 form; the form selects the flow (sessions.py).
CLIENT_PUBLIC_KEY = r"^(0[23][0-9a-fA-F]{64}|04[0-9a-fA-F]{128})$"
_KEY_EXAMPLE = (
    "04f45f2a22c908b9ce09a7150e514afd24627c401c38a4afc164e1ea783adaaa31d4245acfb88c2ebd42b47628d63ecabf3454"
    "84f0a9f665b63c54c897d5578be2"
)
_COMPRESSED_KEY_EXAMPLE = "02f45f2a22c908b9ce09a7150e514afd24627c401c38a4afc164e1ea783adaaa31"
_ACCOUNT_EXAMPLE = "InternalAccount:019542f5-b3e7-1d02-0000-000000000002"


def _on_the_curve(value: str) -> str:
    """A key of the right shape must also be a point of P-256 (a 66-hex value is one only if its X has a
    square root on the curve; a 130-hex one only if Y fits X)."""
    try:
        p256.public_key_from_hex(value)
    except ValueError:
        raise ValueError("is not a point on the P-256 curve") from None
    return value


ClientPublicKey = Annotated[
    str,
    Field(
        min_length=66,
        max_length=130,
        pattern=CLIENT_PUBLIC_KEY,
        description="a fresh client P-256 public key in SEC1 hex: compressed (66 characters, 02 or 03 "
        "first) for the client-held-key flow, where the client's key is the session signing key and the "
        "answer carries no encryptedSessionSigningKey; or uncompressed (130 characters, 04 first) for the "
        "deprecated flow, where platpay draws the session key and seals it to this key",
        examples=[_COMPRESSED_KEY_EXAMPLE, _KEY_EXAMPLE],
    ),
    AfterValidator(_on_the_curve),
]
ExportPublicKey = Annotated[
    str,
    Field(
        pattern=UNCOMPRESSED_KEY,
        description="a fresh client P-256 public key, uncompressed SEC1 hex (130 characters, 04 first)",
        examples=[_KEY_EXAMPLE],
    ),
    AfterValidator(_on_the_curve),
]
B64Url = Annotated[str, Field(min_length=1, max_length=16384, pattern=r"^[A-Za-z0-9_-]+={0,2}$")]


class AuthMethod(ApiModel):
    id: str = Field(examples=["AuthMethod:019542f5-b3e7-1d02-0000-000000000001"])
    account_id: str = Field(examples=[_ACCOUNT_EXAMPLE])
    type: AuthMethodType
    credential_id: str | None = Field(default=None, description="PASSKEY only: base64url WebAuthn rawId")
    nickname: str = Field(description="the email (EMAIL_OTP), the OIDC email (OAUTH), the passkey's label")
    created_at: datetime
    updated_at: datetime


class AuthMethodResponse(AuthMethod):
    otp_encryption_target_bundle: str | None = Field(
        default=None,
        description="EMAIL_OTP responses that issue an OTP: the HPKE target to seal {otp_code, public_key} to",
    )


class PasskeyAuthChallenge(AuthMethod):
    challenge: str = Field(description="lowercase hex SHA-256; its UTF-8 bytes are the WebAuthn challenge")
    request_id: str = Field(description="send as Request-Id on POST /auth/credentials/{id}/verify")
    expires_at: datetime


AuthCredentialResponseOneOf = TypeAliasType(
    "AuthCredentialResponseOneOf",
    Annotated[
        AuthMethodResponse | PasskeyAuthChallenge,
        DocumentedOneOf("type", {"EMAIL_OTP": AuthMethodResponse, "PASSKEY": PasskeyAuthChallenge}),
    ],
)
"""POST /auth/credentials/{id}/challenge's answer: a new OTP's target (EMAIL_OTP) or a passkey login
challenge (PASSKEY), documented as the reference's oneOf by `type`."""


class AuthCredentialListResponse(ApiModel):
    data: list[AuthMethod]


class AuthSession(ApiModel):
    id: str = Field(examples=["Session:019542f5-b3e7-1d02-0000-000000000003"])
    account_id: str
    type: AuthMethodType
    credential_id: str | None = None
    nickname: str
    created_at: datetime
    updated_at: datetime
    expires_at: datetime
    encrypted_session_signing_key: str | None = Field(
        default=None,
        json_schema_extra={"deprecated": True},  # in the document only: reading it warns nobody
        description="only when an uncompressed clientPublicKey chose the legacy flow (OAUTH and PASSKEY "
        "logins, refreshes), once: base58check(compressed enc || HPKE ciphertext) of the session's 32-byte "
        "private key, sealed to clientPublicKey. A compressed clientPublicKey is itself the session key",
    )


class SessionListResponse(ApiModel):
    data: list[AuthSession]


class AuthSignedRequestChallenge(ApiModel):
    type: AuthMethodType = Field(
        description="the credential type added, revoked, verified, or that issued the session"
    )
    payload_to_sign: str
    request_id: str
    expires_at: datetime


class PasskeyAttestation(ApiRequest):
    credential_id: B64Url
    client_data_json: B64Url
    attestation_object: B64Url
    transports: list[Literal["usb", "nfc", "ble", "internal", "hybrid"]] | None = Field(
        default=None, max_length=5
    )


class EmailOtpCredentialCreateRequest(ApiRequest):
    type: Literal["EMAIL_OTP"]
    account_id: str = Field(min_length=1, max_length=64, examples=[_ACCOUNT_EXAMPLE])


class OauthCredentialCreateRequest(ApiRequest):
    type: Literal["OAUTH"]
    account_id: str = Field(min_length=1, max_length=64, examples=[_ACCOUNT_EXAMPLE])
    oidc_token: str = Field(min_length=1, max_length=16384, description="an OIDC ID token (JWT)")


class PasskeyCredentialCreateRequest(ApiRequest):
    type: Literal["PASSKEY"]
    account_id: str = Field(min_length=1, max_length=64, examples=[_ACCOUNT_EXAMPLE])
    nickname: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^\s*[\w .'()\-]*[\w.'()\-][\w .'()\-]*\s*$",
        description="1-100 letters, digits, spaces and . _ - ' ( ); surrounding whitespace is ignored",
        examples=["iPhone Face-ID"],
    )
    challenge: B64Url = Field(description="from POST /auth/credentials/passkey-challenges, single-use")
    attestation: PasskeyAttestation


AuthCredentialCreateRequestOneOf = TypeAliasType(
    "AuthCredentialCreateRequestOneOf",
    Annotated[
        EmailOtpCredentialCreateRequest | OauthCredentialCreateRequest | PasskeyCredentialCreateRequest,
        Field(discriminator="type"),
    ],
)
"""POST /auth/credentials' body by `type`: the reference's oneOf of this name."""


class PasskeyAssertion(ApiRequest):
    credential_id: B64Url
    client_data_json: B64Url
    authenticator_data: B64Url
    signature: B64Url
    user_handle: str | None = Field(default=None, max_length=1024, pattern=r"^[A-Za-z0-9_-]*={0,2}$")


class EmailOtpCredentialVerifyRequest(ApiRequest):
    type: Literal["EMAIL_OTP"]
    encrypted_otp_bundle: str = Field(
        min_length=2, max_length=4096, description='JSON text {"encappedPublic", "ciphertext"} (hex)'
    )


class OauthCredentialVerifyRequest(ApiRequest):
    type: Literal["OAUTH"]
    oidc_token: str = Field(min_length=1, max_length=16384)
    client_public_key: ClientPublicKey


class PasskeyCredentialVerifyRequest(ApiRequest):
    type: Literal["PASSKEY"]
    assertion: PasskeyAssertion


AuthCredentialVerifyRequestOneOf = TypeAliasType(
    "AuthCredentialVerifyRequestOneOf",
    Annotated[
        EmailOtpCredentialVerifyRequest | OauthCredentialVerifyRequest | PasskeyCredentialVerifyRequest,
        Field(discriminator="type"),
    ],
)
"""POST /auth/credentials/{id}/verify's body by `type`: the reference's oneOf of this name."""


class AuthCredentialChallengeRequest(ApiRequest):
    client_public_key: ClientPublicKey | None = Field(default=None, description="required for PASSKEY")


class AuthSessionRefreshRequest(ApiRequest):
    client_public_key: ClientPublicKey


class PasskeyRegistrationChallengeRequest(ApiRequest):
    account_id: str = Field(min_length=1, max_length=64, examples=[_ACCOUNT_EXAMPLE])


class PasskeyRegistrationChallenge(ApiModel):
    """What navigator.credentials.create() needs to register a passkey on a wallet."""

    account_id: str
    challenge: str = Field(description="base64url; the WebAuthn challenge, single-use")
    expires_at: datetime
    rp_id: str
    rp_name: str
    user_id: str = Field(description="base64url WebAuthn user handle of the wallet")
    user_name: str


class InternalAccountUpdateRequest(ApiRequest):
    private_enabled: bool | None = Field(default=None, description="wallet privacy", examples=[True])


class InternalAccountExportRequest(ApiRequest):
    client_public_key: ExportPublicKey


class InternalAccountExportResponse(ApiModel):
    id: str
    encrypted_wallet_credentials: str = Field(
        description='JSON text {"version","data","dataSignature","enclaveQuorumPublic"}: the mnemonic '
        "sealed to clientPublicKey (sandbox: empty dataSignature and enclaveQuorumPublic)"
    )
