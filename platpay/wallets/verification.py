"""POST /auth/credentials/{id}/verify: proving a credential and getting a session (SPEC §4.10, §6.5).

- EMAIL_OTP, two legs: the sealed OTP attempt is checked (otp.py) and answered with a verificationToken
  bound to the client's TEK as a signed-retry challenge; the retry stamped by that TEK gets the session
  (whose key is the TEK: no key bundle).
- OAUTH, one call: the ID token's claims (nonce = SHA-256 of clientPublicKey), its identity equal to the
  credential's, and in production its signature (JWKS, fetched before the transaction) -> a session sealed
  to clientPublicKey.
- PASSKEY, one call with the challenge's Request-Id: the WebAuthn assertion against the pending login
  challenge (consumed) -> a session sealed to the clientPublicKey bound on the challenge call.

Every attempt counts against the credential's and the wallet's limits (attempts.py; 429 past them).

An EMAIL_OTP challenge and both legs of its verify run lean statements only, in the attempt's
`lean_transaction()` (no ORM session on PostgreSQL: the target is >= 200 logins/s on one process,
bench/wallet_auth.py); OAUTH and PASSKEY run in its ORM `transaction()`.
"""

from __future__ import annotations

from datetime import timedelta

from fastapi import Response
from fastapi.responses import JSONResponse

from platpay.config import Settings
from platpay.db.database import Database
from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.kit.crypto import p256
from platpay.kit.ids import is_id
from platpay.kit.wallet_signature import WalletSignature
from platpay.tenants.context import TenantContext
from platpay.wallets import challenges, keys, oidc, otp, passkeys, repository, sessions
from platpay.wallets.attempts import Attempt
from platpay.wallets.credentials import PASSKEY_LOGIN
from platpay.wallets.errors import RequestIdMissing, VerificationFailed
from platpay.wallets.models import CredentialRow
from platpay.wallets.schemas import AuthMethodResponse, AuthSession, PasskeyAuthChallenge
from platpay.wallets.signed import retry as signed_retry
from platpay.wallets.signed.retry import Signed, SignedIntent, Signers
from platpay.wallets.types import EmailOtpProof, OauthProof, PasskeyProof, Proof

VERIFY_EMAIL_OTP = "wallets.verify_email_otp"


def _same_type(credential: CredentialRow, proof: Proof) -> None:
    if credential.type != proof.type:
        raise invalid_field("type", f"the credential is {credential.type}, not {proof.type}")


async def verify(
    db: Database,
    *,
    tenant: TenantContext,
    credential_id: str,
    proof: Proof,
    signature: WalletSignature,
    settings: Settings,
) -> Response:
    attempt = Attempt(db, tenant=tenant, credential_id=credential_id, kind="verify", settings=settings)

    async def work() -> Response:
        if isinstance(proof, EmailOtpProof):
            return await _verify_email_otp(
                attempt,
                tenant=tenant,
                credential_id=credential_id,
                proof=proof,
                signature=signature,
                settings=settings,
            )
        if isinstance(proof, OauthProof):
            session_model = await _verify_oauth(
                attempt, tenant=tenant, credential_id=credential_id, proof=proof, settings=settings
            )
        else:
            session_model = await _verify_passkey(
                attempt,
                tenant=tenant,
                credential_id=credential_id,
                proof=proof,
                request_id=signature.request_id,
                settings=settings,
            )
        return JSONResponse(session_model.to_api(), status_code=200)

    return await attempt.run(work)


async def challenge(
    db: Database,
    *,
    tenant: TenantContext,
    credential_id: str,
    client_public_key: str | None,
    settings: Settings,
) -> AuthMethodResponse | PasskeyAuthChallenge:
    """POST /auth/credentials/{id}/challenge, counted against the challenge limits."""
    attempt = Attempt(db, tenant=tenant, credential_id=credential_id, kind="challenge", settings=settings)

    async def work() -> AuthMethodResponse | PasskeyAuthChallenge:
        async with attempt.lean_transaction() as session:
            return await challenges.reissue_challenge(
                session,
                tenant=tenant,
                credential=attempt.credential,
                client_public_key=client_public_key,
                settings=settings,
            )

    return await attempt.run(work)


async def _verify_email_otp(
    attempt: Attempt,
    *,
    tenant: TenantContext,
    credential_id: str,
    proof: EmailOtpProof,
    signature: WalletSignature,
    settings: Settings,
) -> Response:
    if signature.absent:
        attempt.takes_otp = True  # used up with the count (attempts.py), as otp.check_attempt does
    else:
        attempt.retry_request_id = signature.request_id  # consumed with the count, as complete() does

    async def prepare(session: LeanSession, first: bool) -> SignedIntent:
        credential = attempt.credential  # read, its row locked, as the attempt was counted
        _same_type(credential, proof)
        intent = SignedIntent(
            operation=VERIFY_EMAIL_OTP,
            resource_id=credential.id,
            bound=proof.as_api(),
            signers=Signers(),
            response_extra={"type": "EMAIL_OTP"},
        )
        if not first:
            return intent  # the OTP was used up on the first leg; the retry is judged by its stamp
        now = clock.now(tenant)
        tek = await otp.check_attempt(
            session,
            tenant=tenant,
            credential=credential,
            encrypted_otp_bundle=proof.encrypted_otp_bundle,
            now=now,
        )
        token = otp.verification_token(
            signer=await keys.enclave_key(session, tenant=tenant),
            organization_id=tenant.id,
            contact=credential.nickname,
            tek=tek,
            expires_at=now + timedelta(seconds=settings.wallet_challenge_ttl_seconds),
        )
        return SignedIntent(
            operation=intent.operation,
            resource_id=intent.resource_id,
            bound=intent.bound,
            signers=Signers.key(p256.compressed_hex(tek)),
            payload=token,
            response_extra=intent.response_extra,
        )

    async def then(session: LeanSession, signed: Signed | None) -> AuthSession:
        assert signed is not None
        return await sessions.issue_for_key(
            session,
            tenant=tenant,
            credential=attempt.credential,
            public_key=p256.public_key_from_hex(signed.public_key),
            settings=settings,
        )

    return await signed_retry.execute(
        attempt.db,
        tenant=tenant,
        signature=signature,
        prepare=prepare,
        then=then,
        status=200,
        transaction=attempt.lean_transaction,
        settings=settings,
    )


async def _verify_oauth(
    attempt: Attempt, *, tenant: TenantContext, credential_id: str, proof: OauthProof, settings: Settings
) -> AuthSession:
    token = oidc.parse(proof.oidc_token, settings=settings)
    oidc.check(token, settings=settings, now=clock.now(tenant), client_public_key=proof.client_public_key)
    if not tenant.is_sandbox:
        await oidc.verify_signature(token, settings=settings)  # network: before the transaction
    async with attempt.transaction() as session:
        credential = attempt.credential  # read, its row locked, as the attempt was counted
        _same_type(credential, proof)
        if not (
            oidc.same_issuer(credential.oidc_issuer or "", token.issuer)
            and credential.oidc_audience == token.audience
            and credential.oidc_subject == token.subject
        ):
            raise VerificationFailed("the OIDC token's iss, aud and sub are not this credential's identity")
        return await sessions.issue_to_client_key(
            session,
            tenant=tenant,
            credential=credential,
            client_public_key=proof.client_public_key,
            settings=settings,
        )


async def _verify_passkey(
    attempt: Attempt,
    *,
    tenant: TenantContext,
    credential_id: str,
    proof: PasskeyProof,
    request_id: str | None,
    settings: Settings,
) -> AuthSession:
    if request_id is None:
        raise RequestIdMissing("a passkey verify carries the challenge's requestId in the Request-Id header")
    async with attempt.transaction() as session:
        now = clock.now(tenant)
        credential = attempt.credential  # read, its row locked, as the attempt was counted
        _same_type(credential, proof)
        challenge = (
            await repository.get_challenge(session, tenant_id=tenant.id, request_id=request_id)
            if is_id(request_id, "Request")
            else None
        )
        if (
            challenge is None
            or challenge.operation != PASSKEY_LOGIN
            or challenge.resource_id != credential.id
            or challenge.consumed_at is not None
            or challenge.expires_at <= now
        ):
            raise VerificationFailed(
                "Request-Id is not a pending passkey challenge of this credential (unknown, used or expired): get "
                "one from POST /auth/credentials/{id}/challenge"
            )
        if proof.assertion.credential_id.rstrip("=") != credential.passkey_credential_id:
            raise VerificationFailed("the assertion is for another passkey than this credential")
        new_count = passkeys.verify_assertion(
            assertion=proof.assertion.as_api(),
            challenge_hex=challenge.payload,
            public_key=credential.passkey_public_key or "",
            sign_count=int(credential.passkey_sign_count or 0),
            settings=settings,
        )
        if not await repository.consume_challenge(
            session, tenant_id=tenant.id, request_id=challenge.id, now=now
        ):
            raise VerificationFailed("the passkey challenge was just used by another request")
        credential.passkey_sign_count = new_count
        credential.updated_at = now
        return await sessions.issue_to_client_key(
            session,
            tenant=tenant,
            credential=credential,
            client_public_key=str(challenge.context["clientPublicKey"]),
            settings=settings,
        )
