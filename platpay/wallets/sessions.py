"""Authentication sessions: issued by a verify (or a refresh), listed, refreshed and revoked.

A session's API key is a P-256 public key kept as compressed hex. For EMAIL_OTP it is the client's TEK (the
client has the private key already). For OAUTH, PASSKEY and refreshes the form of the client's
`clientPublicKey` picks the flow (the reference since 2026-08):

- compressed (66 hex, 02/03 + X): the client-held-key flow. The client generated the key pair and keeps the
  private key; `clientPublicKey` is the session's key, so stamps by the client's key are the session's and
  the answer carries no key material (no encryptedSessionSigningKey), as for EMAIL_OTP;
- uncompressed (130 hex, 04 + X + Y): the deprecated legacy flow. platpay draws a key pair, seals the 32-byte
  private scalar to `clientPublicKey` (encryptedSessionSigningKey, kit/crypto/bundles.py) and forgets it:
  the key is in a response once and nowhere else.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.kit.crypto import bundles, p256
from platpay.kit.ids import is_id, new_id
from platpay.tenants.context import TenantContext
from platpay.wallets import audit, repository
from platpay.wallets.errors import SessionNotFound, WalletSignatureInvalid
from platpay.wallets.models import CredentialRow, SessionRow
from platpay.wallets.schemas import AuthSession
from platpay.wallets.signed.retry import Signed, SignedIntent, Signers
from platpay.wallets.state import CREDENTIAL, CredentialStatus


def render(row: SessionRow, credential: CredentialRow, *, encrypted_key: str | None = None) -> AuthSession:
    return AuthSession(
        id=row.id,
        account_id=row.account_id,
        type=credential.type,
        credential_id=credential.passkey_credential_id,
        nickname=credential.nickname,
        created_at=row.created_at,
        updated_at=row.created_at,
        expires_at=row.expires_at,
        encrypted_session_signing_key=encrypted_key,
    )


async def _insert(
    session: LeanSession,
    *,
    tenant: TenantContext,
    credential: CredentialRow,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime,
    refreshed_from: str | None,
    actor: str,
    settings: Settings,
) -> SessionRow:
    row = await repository.insert_session(
        session,
        {
            "id": new_id("Session"),
            "tenant_id": tenant.id,
            "account_id": credential.account_id,
            "credential_id": credential.id,
            "public_key": p256.compressed_hex(public_key),
            "refreshed_from": refreshed_from,
            "created_at": now,
            "expires_at": now + timedelta(seconds=settings.wallet_session_ttl_seconds),
            "revoked_at": None,
        },
    )
    if credential.status != CredentialStatus.VERIFIED:
        await repository.mark_verified(
            session,
            credential=credential,
            status=CREDENTIAL.move(credential.status, CredentialStatus.VERIFIED, subject=credential.id),
            now=now,
        )
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=now,
        account_id=credential.account_id,
        action="SESSION_REFRESHED" if refreshed_from else "SESSION_CREATED",
        subject_id=row.id,
        actor=actor,
        details={"credentialId": credential.id, "type": credential.type, "refreshedFrom": refreshed_from},
    )
    return row


async def issue_for_key(
    session: LeanSession,
    *,
    tenant: TenantContext,
    credential: CredentialRow,
    public_key: ec.EllipticCurvePublicKey,
    settings: Settings,
) -> AuthSession:
    """EMAIL_OTP: the session whose key is the client's TEK (no key bundle in the answer)."""
    row = await _insert(
        session,
        tenant=tenant,
        credential=credential,
        public_key=public_key,
        now=clock.now(tenant),
        refreshed_from=None,
        actor=audit.PLATFORM,
        settings=settings,
    )
    return render(row, credential)


async def issue_to_client_key(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    credential: CredentialRow,
    client_public_key: str,
    settings: Settings,
    refreshed_from: str | None = None,
    actor: str = audit.PLATFORM,
) -> AuthSession:
    """A session for the holder of `client_public_key`: that key itself when compressed (the client holds the
    session key), else a fresh key sealed to it (uncompressed: the legacy flow); see the module."""
    client_key = p256.public_key_from_hex(client_public_key)
    if client_holds_key(client_public_key):
        session_key, encrypted = client_key, None
    else:
        key = p256.generate_private_key()
        session_key, encrypted = (
            key.public_key(),
            bundles.credential_bundle(client_key, p256.scalar_bytes(key)),
        )
    row = await _insert(
        session,
        tenant=tenant,
        credential=credential,
        public_key=session_key,
        now=clock.now(tenant),
        refreshed_from=refreshed_from,
        actor=actor,
        settings=settings,
    )
    return render(row, credential, encrypted_key=encrypted)


def client_holds_key(client_public_key: str) -> bool:
    """A compressed SEC1 key (66 hex) selects the client-held-key flow."""
    return len(client_public_key) == COMPRESSED_HEX_LENGTH


COMPRESSED_HEX_LENGTH = 66


async def list_active(session: AsyncSession, *, tenant: TenantContext, account_id: str) -> list[AuthSession]:
    """GET /auth/sessions?accountId=: 400 for a malformed id, [] for an unknown one."""
    if not is_id(account_id, "InternalAccount"):
        raise invalid_field("accountId", "must be an internal account id (InternalAccount:<uuid>)")
    pairs = await repository.active_sessions_of(
        session, tenant_id=tenant.id, account_id=account_id, now=clock.now(tenant)
    )
    return [render(row, credential) for row, credential in pairs]


async def _active(
    session: AsyncSession, *, tenant: TenantContext, session_id: str
) -> tuple[SessionRow, CredentialRow]:
    row = None
    if is_id(session_id, "Session"):
        row = await repository.get_active_session(
            session, tenant_id=tenant.id, session_id=session_id, now=clock.now(tenant)
        )
    credential = (
        await repository.get_credential(session, tenant_id=tenant.id, credential_id=row.credential_id)
        if row is not None
        else None
    )
    if row is None or credential is None:
        raise SessionNotFound(session_id)
    return row, credential


async def _existing(session: AsyncSession, *, tenant: TenantContext, session_id: str) -> SessionRow:
    row = (
        await repository.get_session(session, tenant_id=tenant.id, session_id=session_id)
        if is_id(session_id, "Session")
        else None
    )
    if row is None:
        raise SessionNotFound(session_id)
    return row


async def refresh_intent(
    session: AsyncSession, *, tenant: TenantContext, session_id: str, client_public_key: str, first: bool
) -> SignedIntent:
    """POST /auth/sessions/{id}/refresh: signed by the session itself, which must be active on both calls
    (on the retry that is the signer check: an expired or revoked session cannot sign, 401)."""
    if first:
        row, _ = await _active(session, tenant=tenant, session_id=session_id)
    else:
        row = await _existing(session, tenant=tenant, session_id=session_id)
    return SignedIntent(
        operation="wallets.refresh_session",
        resource_id=row.id,
        bound={"clientPublicKey": client_public_key},
        signers=Signers.sessions_of(row.account_id),
        activity_type="ACTIVITY_TYPE_CREATE_READ_WRITE_SESSION_V2",
        parameters={"sessionId": row.id, "targetPublicKey": client_public_key},
    )


async def refresh(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    session_id: str,
    client_public_key: str,
    signed: Signed | None,
    settings: Settings,
) -> AuthSession:
    # refresh_intent always asks for a signature, so `then` gets the proof (never None)
    if signed is None or signed.session_id != session_id:
        raise WalletSignatureInvalid("a refresh must be stamped by the session being refreshed")
    row, credential = await _active(session, tenant=tenant, session_id=session_id)
    return await issue_to_client_key(
        session,
        tenant=tenant,
        credential=credential,
        client_public_key=client_public_key,
        settings=settings,
        refreshed_from=row.id,
        actor=row.id,
    )


async def revoke_intent(session: AsyncSession, *, tenant: TenantContext, session_id: str) -> SignedIntent:
    """DELETE /auth/sessions/{id}: any active session of the account signs, this one included."""
    row, credential = await _active(session, tenant=tenant, session_id=session_id)
    return SignedIntent(
        operation="wallets.revoke_session",
        resource_id=row.id,
        bound={},
        signers=Signers.sessions_of(row.account_id),
        activity_type="ACTIVITY_TYPE_DELETE_SESSIONS",
        parameters={"sessionIds": [row.id]},
        response_extra={"type": credential.type},
    )


async def revoke(
    session: AsyncSession, *, tenant: TenantContext, session_id: str, signed: Signed | None
) -> None:
    if signed is None:  # revoke_intent always asks for a signature: `then` gets the proof
        raise WalletSignatureInvalid("a session's revocation must be signed")
    now = clock.now(tenant)
    row, _ = await _active(session, tenant=tenant, session_id=session_id)
    if not await repository.revoke_session(session, tenant_id=tenant.id, session_id=row.id, now=now):
        raise SessionNotFound(session_id)
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=now,
        account_id=row.account_id,
        action="SESSION_REVOKED",
        subject_id=row.id,
        actor=signed.actor,
    )
