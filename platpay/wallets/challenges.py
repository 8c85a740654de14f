"""Challenges of a wallet's credentials: a new OTP (EMAIL_OTP), a passkey login challenge bound to the
client's key (PASSKEY), and the single-use challenge a passkey registers against."""

from __future__ import annotations

import secrets
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.tenants.context import TenantContext
from platpay.wallets import otp, passkeys, repository
from platpay.wallets.credentials import (
    PASSKEY_LOGIN,
    PASSKEY_REGISTRATION,
    render,
    wallet_account,
)
from platpay.wallets.mail import send_otp
from platpay.wallets.models import CredentialRow
from platpay.wallets.schemas import AuthMethodResponse, PasskeyAuthChallenge, PasskeyRegistrationChallenge
from platpay.wallets.signed.retry import activity_payload, canonical


async def reissue_challenge(
    session: LeanSession,
    *,
    tenant: TenantContext,
    credential: CredentialRow,
    client_public_key: str | None,
    settings: Settings,
) -> AuthMethodResponse | PasskeyAuthChallenge:
    """POST /auth/credentials/{id}/challenge for the live `credential` (read in this transaction): a new OTP
    (EMAIL_OTP) or a passkey login challenge. Lean statements only."""
    now = clock.now(tenant)
    if credential.type == "OAUTH":
        raise invalid_field(
            "type",
            "OAUTH credentials have no challenge step: verify with a fresh oidcToken and clientPublicKey",
        )
    if credential.type == "EMAIL_OTP":
        issued = await otp.issue(session, tenant=tenant, credential=credential, now=now)
        await send_otp(session, tenant=tenant, to=credential.nickname, issued=issued)
        return AuthMethodResponse(
            **render(credential).model_dump(), otp_encryption_target_bundle=issued.target_bundle
        )
    if client_public_key is None:
        raise invalid_field("clientPublicKey", "is required to challenge a PASSKEY credential")
    request_id = new_id("Request")
    body = activity_payload(
        tenant=tenant,
        activity_type="ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2",
        parameters={"authMethodId": credential.id, "targetPublicKey": client_public_key},
        request_id=request_id,
        now_ms=int(now.timestamp() * 1000),
    )
    challenge = passkeys.session_challenge(body)
    expires_at = now + timedelta(seconds=settings.wallet_challenge_ttl_seconds)
    await repository.insert_challenge(
        session,
        {
            "id": request_id,
            "tenant_id": tenant.id,
            "operation": PASSKEY_LOGIN,
            "resource_id": credential.id,
            "bound": canonical({}),
            "signers": {},
            "context": {"clientPublicKey": client_public_key},
            "payload": challenge,
            "created_at": now,
            "expires_at": expires_at,
            "consumed_at": None,
        },
    )
    return PasskeyAuthChallenge(
        **render(credential).model_dump(), challenge=challenge, request_id=request_id, expires_at=expires_at
    )


async def registration_challenge(
    session: AsyncSession, *, tenant: TenantContext, account_id: str, settings: Settings
) -> PasskeyRegistrationChallenge:
    """POST /auth/credentials/passkey-challenges: what navigator.credentials.create() needs, with a
    single-use challenge bound to the wallet."""
    account = await wallet_account(session, tenant=tenant, account_id=account_id)
    now = clock.now(tenant)
    challenge = passkeys.b64url(secrets.token_bytes(32))
    expires_at = now + timedelta(seconds=settings.wallet_challenge_ttl_seconds)
    await repository.insert_challenge(
        session,
        {
            "id": new_id("Request"),
            "tenant_id": tenant.id,
            "operation": PASSKEY_REGISTRATION,
            "resource_id": account.id,
            "bound": canonical({}),
            "signers": {},
            "context": {},
            "payload": challenge,
            "created_at": now,
            "expires_at": expires_at,
            "consumed_at": None,
        },
    )
    emails = await customers_service.emails_of(
        session, tenant_id=tenant.id, customer_ids=[account.customer_id]
    )
    return PasskeyRegistrationChallenge(
        account_id=account.id,
        challenge=challenge,
        expires_at=expires_at,
        rp_id=settings.webauthn_rp_id,
        rp_name=settings.webauthn_rp_name,
        user_id=passkeys.b64url(account.id.encode()),
        user_name=emails.get(account.customer_id) or account.id,
    )
