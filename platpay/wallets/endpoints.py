"""Embedded-wallet routes: /auth/credentials…, /auth/sessions…, and the wallet operations on internal
accounts (PATCH /internal-accounts/{id}, POST /internal-accounts/{id}/export)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Body, Depends, Query, Request, Response
from fastapi.responses import JSONResponse

from platpay.accounts.schemas import InternalAccount
from platpay.auth.principal import Principal
from platpay.auth.principals import Manager, Viewer, get_db
from platpay.kit.openapi import ExampleIds, Responses, request_examples
from platpay.kit.routing import api_router
from platpay.kit.wallet_signature import SignedRequestChallenge, WalletSignature, wallet_signature_headers
from platpay.wallets import accounts as wallet_accounts
from platpay.wallets import challenges, credentials, sessions, verification
from platpay.wallets.schemas import (
    AuthCredentialChallengeRequest,
    AuthCredentialCreateRequestOneOf,
    AuthCredentialListResponse,
    AuthCredentialResponseOneOf,
    AuthCredentialVerifyRequestOneOf,
    AuthMethodResponse,
    AuthSession,
    AuthSessionRefreshRequest,
    AuthSignedRequestChallenge,
    EmailOtpCredentialCreateRequest,
    EmailOtpCredentialVerifyRequest,
    InternalAccountExportRequest,
    InternalAccountExportResponse,
    InternalAccountUpdateRequest,
    OauthCredentialCreateRequest,
    OauthCredentialVerifyRequest,
    PasskeyCredentialCreateRequest,
    PasskeyRegistrationChallenge,
    PasskeyRegistrationChallengeRequest,
    SessionListResponse,
)
from platpay.wallets.signed.endpoints import Signed, SignedRetry
from platpay.wallets.types import (
    Assertion,
    Attestation,
    EmailOtpProof,
    NewCredential,
    NewEmailOtp,
    NewOauth,
    NewPasskey,
    OauthProof,
    PasskeyProof,
    Proof,
)

router = api_router(tags=["Embedded Wallet Auth"])
_ACCOUNT = ExampleIds.EMBEDDED_WALLET
_CLIENT_KEY = (
    "04f45f2a22c908b9ce09a7150e514afd24627c401c38a4afc164e1ea783adaaa31d4245acfb88c2ebd42b47628d63ecabf345484f0a"
    "9f665b63c54c897d5578be2"
)
CREATE_EXAMPLES = {
    "emailOtp": {
        "summary": "Add an EMAIL_OTP credential back",
        "value": {"type": "EMAIL_OTP", "accountId": _ACCOUNT},
    },
    "oauth": {
        "summary": "Add an OAUTH credential (an OIDC ID token less than 60 s old)",
        "value": {"type": "OAUTH", "accountId": _ACCOUNT, "oidcToken": "<header>.<claims>.<signature>"},
    },
    "passkey": {
        "summary": "Add a passkey (challenge from POST /auth/credentials/passkey-challenges)",
        "value": {
            "type": "PASSKEY",
            "accountId": _ACCOUNT,
            "nickname": "iPhone Face-ID",
            "challenge": "ArkQi2yAYHPlgnJNFBlneIwchQdWXBOTrdB-AmMUB21L",
            "attestation": {
                "credentialId": "AdKXJEch1aV5Wo7bj7qLHskVY4OoNaj9qu8TPdJ7kSAg",
                "clientDataJson": "eyJ0eXBlIjoid2ViYXV0aG4uY3JlYXRlIn0",
                "attestationObject": "o2NmbXRkbm9uZWdhdHRTdG10oGhhdXRoRGF0YVg",
                "transports": ["internal", "hybrid"],
            },
        },
    },
}
VERIFY_EXAMPLES = {
    "emailOtp": {
        "summary": "EMAIL_OTP (both legs: the retry adds Svc-Wallet-Signature and Request-Id)",
        "value": {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": '{"encappedPublic":"04…","ciphertext":"…"}',
        },
    },
    "oauth": {
        "summary": "OAUTH (nonce = hex SHA-256 of clientPublicKey)",
        "value": {
            "type": "OAUTH",
            "oidcToken": "<header>.<claims>.<signature>",
            "clientPublicKey": _CLIENT_KEY,
        },
    },
    "passkey": {
        "summary": "PASSKEY (with Request-Id: the challenge's requestId)",
        "value": {
            "type": "PASSKEY",
            "assertion": {
                "credentialId": "KEbWNCc7NgaYnUyrNeFGX9_3Y-8oJ3KwzjnaiD1d1LVT",
                "clientDataJson": "eyJ0eXBlIjoid2ViYXV0aG4uZ2V0In0",
                "authenticatorData": "PdxHEOnAiLIp26idVjIguzn3Ipr_RlsKZWsa-5qK-KABAAAAkA",
                "signature": "MEUCIQDYXBOpCWSWq2Ll4558GJKD2RoWg958lvJSB_GdeokxogIgWuEVQ7ee6AswQY0",
            },
        },
    },
}
CHALLENGE_EXAMPLES = {
    "passkey": {"summary": "PASSKEY: the client's fresh key", "value": {"clientPublicKey": _CLIENT_KEY}},
    "emailOtp": {"summary": "EMAIL_OTP: no body needed", "value": {}},
}
account_router = api_router(tags=["Internal Accounts"])
AUTH_CHALLENGE: Responses = {
    202: {"model": AuthSignedRequestChallenge, "description": "stamp payloadToSign and retry"}
}
SIGNED_CHALLENGE: Responses = {
    202: {"model": SignedRequestChallenge, "description": "stamp payloadToSign and retry"}
}
AccountIdQuery = Annotated[
    str,
    Query(
        alias="accountId",
        max_length=64,
        description="the EMBEDDED_WALLET internal account",
        examples=["InternalAccount:019542f5-b3e7-1d02-0000-000000000002"],
    ),
]


def _new_credential(body: AuthCredentialCreateRequestOneOf) -> NewCredential:
    if isinstance(body, EmailOtpCredentialCreateRequest):
        return NewEmailOtp(account_id=body.account_id)
    if isinstance(body, OauthCredentialCreateRequest):
        return NewOauth(account_id=body.account_id, oidc_token=body.oidc_token)
    assert isinstance(body, PasskeyCredentialCreateRequest)
    attestation = body.attestation
    return NewPasskey(
        account_id=body.account_id,
        nickname=body.nickname,
        challenge=body.challenge,
        attestation=Attestation(
            credential_id=attestation.credential_id,
            client_data_json=attestation.client_data_json,
            attestation_object=attestation.attestation_object,
            transports=tuple(attestation.transports) if attestation.transports is not None else None,
        ),
    )


def _proof(body: AuthCredentialVerifyRequestOneOf) -> Proof:
    if isinstance(body, EmailOtpCredentialVerifyRequest):
        return EmailOtpProof(encrypted_otp_bundle=body.encrypted_otp_bundle)
    if isinstance(body, OauthCredentialVerifyRequest):
        return OauthProof(oidc_token=body.oidc_token, client_public_key=body.client_public_key)
    a = body.assertion
    return PasskeyProof(
        assertion=Assertion(
            credential_id=a.credential_id,
            client_data_json=a.client_data_json,
            authenticator_data=a.authenticator_data,
            signature=a.signature,
            user_handle=a.user_handle,
        )
    )


@router.post(
    "/auth/credentials",
    status_code=201,
    response_model=AuthMethodResponse,
    responses=AUTH_CHALLENGE,
    operation_id="createAuthCredential",
)
async def create_auth_credential(
    body: Annotated[AuthCredentialCreateRequestOneOf, Body(openapi_examples=CREATE_EXAMPLES)],
    request: Request,
    principal: Principal = Manager,
    signature: WalletSignature = Depends(wallet_signature_headers),
) -> Response:
    """Add an OAUTH, PASSKEY or EMAIL_OTP credential to a wallet: 202, then the signed retry answers 201."""
    return await credentials.add_credential(
        get_db(request),
        tenant=principal.tenant,
        new=_new_credential(body),
        signature=signature,
        settings=request.app.state.settings,
    )


@router.get(
    "/auth/credentials", response_model=AuthCredentialListResponse, operation_id="listAuthCredentials"
)
async def list_auth_credentials(
    account_id: AccountIdQuery, request: Request, principal: Principal = Viewer
) -> dict:
    """Every credential of a wallet (not paginated); an unknown wallet has none."""
    async with get_db(request).read() as session:
        found = await credentials.list_credentials(session, tenant=principal.tenant, account_id=account_id)
    return {"data": [credential.to_api() for credential in found]}


@router.post(
    "/auth/credentials/passkey-challenges",
    status_code=201,
    response_model=PasskeyRegistrationChallenge,
    operation_id="createPasskeyRegistrationChallenge",
    openapi_extra=request_examples(
        wallet=("Register a passkey on an EMBEDDED_WALLET account", {"accountId": _ACCOUNT})
    ),
)
async def create_passkey_registration_challenge(
    body: PasskeyRegistrationChallengeRequest, request: Request, principal: Principal = Manager
) -> PasskeyRegistrationChallenge:
    """Issue the single-use WebAuthn challenge (and RP, user) for registering a passkey on a wallet."""
    async with get_db(request).transaction() as session:
        return await challenges.registration_challenge(
            session, tenant=principal.tenant, account_id=body.account_id, settings=request.app.state.settings
        )


@router.delete(
    "/auth/credentials/{id}",
    status_code=204,
    response_class=Response,
    responses=AUTH_CHALLENGE,
    operation_id="revokeAuthCredential",
)
async def revoke_auth_credential(
    id: str, signed: SignedRetry = Signed, principal: Principal = Manager
) -> Response:
    """Revoke a credential (and its sessions): 202, then the retry signed by another credential's session, 204."""
    return await signed.run(
        prepare=lambda s, first: credentials.revoke_intent(s, tenant=principal.tenant, credential_id=id),
        then=lambda s, proof: credentials.revoke(s, tenant=principal.tenant, credential_id=id, signed=proof),
    )


@router.post(
    "/auth/credentials/{id}/verify",
    response_model=AuthSession,
    responses=AUTH_CHALLENGE,
    operation_id="verifyAuthCredential",
)
async def verify_auth_credential(
    id: str,
    body: Annotated[AuthCredentialVerifyRequestOneOf, Body(openapi_examples=VERIFY_EXAMPLES)],
    request: Request,
    principal: Principal = Manager,
    signature: WalletSignature = Depends(wallet_signature_headers),
) -> Response:
    """Prove a credential and get a session (EMAIL_OTP: 202, then the TEK-stamped retry)."""
    return await verification.verify(
        get_db(request),
        tenant=principal.tenant,
        credential_id=id,
        proof=_proof(body),
        signature=signature,
        settings=request.app.state.settings,
    )


@router.post(
    "/auth/credentials/{id}/challenge",
    response_model=AuthCredentialResponseOneOf,
    operation_id="challengeAuthCredential",
)
async def challenge_auth_credential(
    id: str,
    request: Request,
    body: Annotated[AuthCredentialChallengeRequest | None, Body(openapi_examples=CHALLENGE_EXAMPLES)] = None,
    principal: Principal = Manager,
) -> Response:
    """Send a new OTP (EMAIL_OTP) or issue a passkey login challenge bound to clientPublicKey (PASSKEY)."""
    challenge = await verification.challenge(
        get_db(request),
        tenant=principal.tenant,
        credential_id=id,
        client_public_key=body.client_public_key if body is not None else None,
        settings=request.app.state.settings,
    )
    # Rendered here as FastAPI would (`to_api`: by alias, no nulls), without its validating the model again
    # against the response union: one of every EMAIL_OTP login's three requests.
    return JSONResponse(challenge.to_api())


@router.get("/auth/sessions", response_model=SessionListResponse, operation_id="listAuthSessions")
async def list_auth_sessions(
    account_id: AccountIdQuery, request: Request, principal: Principal = Viewer
) -> dict:
    """The active sessions of a wallet (not paginated; never a key bundle)."""
    async with get_db(request).read() as session:
        found = await sessions.list_active(session, tenant=principal.tenant, account_id=account_id)
    return {"data": [item.to_api() for item in found]}


@router.delete(
    "/auth/sessions/{id}",
    status_code=204,
    response_class=Response,
    responses=AUTH_CHALLENGE,
    operation_id="revokeAuthSession",
)
async def revoke_auth_session(
    id: str, signed: SignedRetry = Signed, principal: Principal = Manager
) -> Response:
    """Revoke an active session: 202, then the retry signed by any session of the wallet (itself too), 204."""
    return await signed.run(
        prepare=lambda s, first: sessions.revoke_intent(s, tenant=principal.tenant, session_id=id),
        then=lambda s, proof: sessions.revoke(s, tenant=principal.tenant, session_id=id, signed=proof),
    )


@router.post(
    "/auth/sessions/{id}/refresh",
    response_model=AuthSession,
    responses=SIGNED_CHALLENGE,
    operation_id="refreshAuthSession",
    openapi_extra=request_examples(
        refresh=(
            "A fresh client key (both calls; the retry adds Svc-Wallet-Signature and Request-Id)",
            {"clientPublicKey": _CLIENT_KEY},
        )
    ),
)
async def refresh_auth_session(
    id: str, body: AuthSessionRefreshRequest, signed: SignedRetry = Signed, principal: Principal = Manager
) -> Response:
    """A new session key sealed to clientPublicKey: 202, then the retry signed by this session, 200."""
    key = body.client_public_key
    return await signed.run(
        prepare=lambda s, first: sessions.refresh_intent(
            s, tenant=principal.tenant, session_id=id, client_public_key=key, first=first
        ),
        then=lambda s, proof: sessions.refresh(
            s,
            tenant=principal.tenant,
            session_id=id,
            client_public_key=key,
            signed=proof,
            settings=signed.request.app.state.settings,
        ),
    )


@account_router.patch(
    "/internal-accounts/{id}",
    response_model=InternalAccount,
    responses=SIGNED_CHALLENGE,
    operation_id="updateInternalAccount",
    openapi_extra=request_examples(
        private=(
            "Make the wallet private (both calls; the retry adds Svc-Wallet-Signature and Request-Id)",
            {"privateEnabled": True},
        )
    ),
)
async def update_internal_account(
    id: str,
    body: InternalAccountUpdateRequest,
    signed: SignedRetry = Signed,
    principal: Principal = Manager,
) -> Response:
    """Set an embedded wallet's privacy: 202, then the retry signed by a session of the wallet, 200."""
    value = body.private_enabled
    return await signed.run(
        prepare=lambda s, first: wallet_accounts.update_intent(
            s, tenant=principal.tenant, account_id=id, private_enabled=value
        ),
        then=lambda s, proof: wallet_accounts.update(
            s, tenant=principal.tenant, account_id=id, private_enabled=bool(value), signed=proof
        ),
    )


@account_router.post(
    "/internal-accounts/{id}/export",
    response_model=InternalAccountExportResponse,
    responses=SIGNED_CHALLENGE,
    operation_id="exportInternalAccount",
    openapi_extra=request_examples(
        export=(
            "A fresh client key for this export only (the retry adds Svc-Wallet-Signature, Request-Id)",
            {"clientPublicKey": _CLIENT_KEY},
        )
    ),
)
async def export_internal_account(
    id: str,
    body: InternalAccountExportRequest,
    signed: SignedRetry = Signed,
    principal: Principal = Manager,
) -> Response:
    """The wallet's mnemonic sealed to clientPublicKey: 202, then the retry signed by a session of the wallet."""
    key = body.client_public_key
    return await signed.run(
        prepare=lambda s, first: wallet_accounts.export_intent(
            s, tenant=principal.tenant, account_id=id, client_public_key=key
        ),
        then=lambda s, proof: wallet_accounts.export(
            s, tenant=principal.tenant, account_id=id, client_public_key=key, signed=proof
        ),
    )
