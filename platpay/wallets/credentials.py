"""Credentials (AuthMethods) of a wallet: list, register, revoke, and issue challenges.

Registering needs a signed retry from a session of the account once it has a verified credential (before
that, nothing could sign: the first credential of such a wallet is added at once, 201). One live EMAIL_OTP
per account; passkeys once each; the last credential cannot be revoked, and a revocation must be signed by
a session of another credential.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import Response
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.errors import InternalAccountNotFound
from platpay.accounts.state import InternalAccountStatus, InternalAccountType
from platpay.config import Settings
from platpay.customers import service as customers_service
from platpay.db.database import Database
from platpay.db.unit_of_work import LeanSession
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.kit.ids import is_id
from platpay.kit.wallet_signature import WalletSignature
from platpay.tenants.context import TenantContext
from platpay.wallets import audit, oidc, otp, passkeys, repository
from platpay.wallets.errors import (
    CredentialNotFound,
    EmailOtpCredentialExists,
    LastCredential,
    NotAnEmbeddedWallet,
    PasskeyCredentialExists,
    VerificationFailed,
)
from platpay.wallets.mail import send_otp
from platpay.wallets.models import CredentialRow
from platpay.wallets.provisioning import credential_row, email_otp_credential
from platpay.wallets.schemas import (
    AuthMethod,
    AuthMethodResponse,
)
from platpay.wallets.signed import retry as signed_retry
from platpay.wallets.signed.retry import Signed, SignedIntent, Signers
from platpay.wallets.state import CREDENTIAL, CredentialStatus
from platpay.wallets.types import NewCredential, NewEmailOtp, NewOauth

PASSKEY_REGISTRATION = "wallets.passkey_registration"
PASSKEY_LOGIN = "wallets.passkey_login"


def render(row: CredentialRow) -> AuthMethod:
    return AuthMethod(
        id=row.id,
        account_id=row.account_id,
        type=row.type,
        credential_id=row.passkey_credential_id,
        nickname=row.nickname,
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def wallet_account(
    session: AsyncSession, *, tenant: TenantContext, account_id: str, field: str = "accountId"
):
    """The EMBEDDED_WALLET internal account `account_id` (404 when the tenant has none such, 400 when it is
    another type of account or closed)."""
    if not is_id(account_id, "InternalAccount"):
        raise InternalAccountNotFound(account_id)
    account = await accounts_service.get_internal(session, tenant_id=tenant.id, account_id=account_id)
    if account.type != InternalAccountType.EMBEDDED_WALLET or account.customer_id is None:
        raise NotAnEmbeddedWallet(
            f"{field}: {account_id} is an {account.type} account; wallet operations need an EMBEDDED_WALLET one",
            details={"fields": [{"field": field, "message": "not an EMBEDDED_WALLET account"}]},
        )
    if account.status != InternalAccountStatus.ACTIVE:
        raise invalid_field(field, f"the wallet's account is {account.status}")
    return account


async def list_credentials(
    session: AsyncSession, *, tenant: TenantContext, account_id: str
) -> list[AuthMethod]:
    """GET /auth/credentials?accountId=: 400 for a malformed id, [] for an unknown one."""
    if not is_id(account_id, "InternalAccount"):
        raise invalid_field("accountId", "must be an internal account id (InternalAccount:<uuid>)")
    return [
        render(row)
        for row in await repository.credentials_of(session, tenant_id=tenant.id, account_id=account_id)
    ]


async def live_credential(
    session: LeanSession, *, tenant: TenantContext, credential_id: str, for_update: bool = False
) -> CredentialRow:
    row = (
        await repository.get_credential(
            session, tenant_id=tenant.id, credential_id=credential_id, for_update=for_update
        )
        if is_id(credential_id, "AuthMethod")
        else None
    )
    if row is None:
        raise CredentialNotFound(credential_id)
    return row


async def counted_credential(
    session: LeanSession,
    *,
    tenant: TenantContext,
    credential_id: str,
    credential_limit: tuple[str, int, int],
    account_limit: tuple[str, int, int],
    retry_request_id: str | None,
    take_otp: bool,
    now: datetime,
) -> tuple[CredentialRow, dict[str, int]]:
    """`live_credential(for_update=True)` with an attempt counted in the same statement (PostgreSQL, a lean
    transaction: repository.counted_credential); 404 for an unknown or revoked one (nothing counted).
    `retry_request_id`: that signed-retry challenge is consumed in the same statement too; `take_otp`: the
    credential's pending OTP is used up in it too (repository.take_otp answers it then)."""
    found = (
        await repository.counted_credential(
            session,
            tenant_id=tenant.id,
            credential_id=credential_id,
            credential_limit=credential_limit,
            account_limit=account_limit,
            retry_request_id=retry_request_id if is_id(retry_request_id or "", "Request") else None,
            take_otp=take_otp,
            now=now,
        )
        if is_id(credential_id, "AuthMethod")
        else None
    )
    if found is None:
        raise CredentialNotFound(credential_id)
    return found


# Registering


async def _check_new(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    customer_id: str,
    new: NewCredential,
    settings: Settings,
    first: bool,
) -> dict[str, object]:
    """The checks of a new credential that hold on both calls; the columns it will have. Time-bound proofs
    (the OIDC token's age, the registration challenge's expiry) are judged on the first call, whose body the
    retry must repeat."""
    now = clock.now(tenant)
    if isinstance(new, NewEmailOtp):
        live = await repository.credentials_of(session, tenant_id=tenant.id, account_id=new.account_id)
        if any(row.type == "EMAIL_OTP" for row in live):
            raise EmailOtpCredentialExists(
                "this wallet already has its EMAIL_OTP credential (one per account)",
                details={"accountId": new.account_id},
            )
        email = (
            await customers_service.emails_of(session, tenant_id=tenant.id, customer_ids=[customer_id])
        ).get(customer_id)
        if not email:
            raise invalid_field(
                "type", "the wallet's customer has no email: set one with PATCH /customers/{id}"
            )
        return {"nickname": email}
    if isinstance(new, NewOauth):
        token = oidc.parse(new.oidc_token, settings=settings)
        if first:
            oidc.check(token, settings=settings, now=now, client_public_key=None)
        live = await repository.credentials_of(session, tenant_id=tenant.id, account_id=new.account_id)
        if any(
            row.type == "OAUTH"
            and oidc.same_issuer(row.oidc_issuer or "", token.issuer)
            and (row.oidc_audience, row.oidc_subject) == (token.audience, token.subject)
            for row in live
        ):
            raise invalid_field("oidcToken", "this OAuth identity is already a credential of the wallet")
        return {
            "oidc_issuer": token.issuer,
            "oidc_audience": token.audience,
            "oidc_subject": token.subject,
            "nickname": (token.email or token.subject)[:320],
        }
    challenge = await repository.find_challenge(
        session,
        tenant_id=tenant.id,
        operation=PASSKEY_REGISTRATION,
        resource_id=new.account_id,
        payload=new.challenge,
    )
    if challenge is None or challenge.consumed_at is not None or (first and challenge.expires_at <= now):
        raise VerificationFailed(
            "challenge is not a pending passkey registration challenge of this wallet (issued by POST "
            "/auth/credentials/passkey-challenges, single-use)"
        )
    registered = passkeys.verify_registration(
        credential_id=new.attestation.credential_id,
        client_data_json=new.attestation.client_data_json,
        attestation_object=new.attestation.attestation_object,
        transports=list(new.attestation.transports or ()),
        challenge=new.challenge,
        settings=settings,
    )
    if await repository.passkey_registered(
        session, tenant_id=tenant.id, account_id=new.account_id, credential_id=registered.credential_id
    ):
        raise PasskeyCredentialExists("this passkey is already a credential of the wallet")
    return {
        "nickname": new.nickname.strip(),
        "passkey_credential_id": registered.credential_id,
        "passkey_public_key": registered.public_key,
        "passkey_sign_count": registered.sign_count,
        "passkey_transports": list(new.attestation.transports) if new.attestation.transports else None,
        "_challenge_id": challenge.id,
    }


async def register_intent(
    session: AsyncSession, *, tenant: TenantContext, new: NewCredential, settings: Settings, first: bool
) -> SignedIntent:
    account = await wallet_account(session, tenant=tenant, account_id=new.account_id)
    await _check_new(
        session, tenant=tenant, customer_id=account.customer_id, new=new, settings=settings, first=first
    )
    verified = await repository.has_verified_credential(session, tenant_id=tenant.id, account_id=account.id)
    return SignedIntent(
        operation="wallets.add_credential",
        resource_id=account.id,
        bound=new.as_api(),
        signers=Signers.sessions_of(account.id),
        activity_type={
            "EMAIL_OTP": "ACTIVITY_TYPE_UPDATE_USER_EMAIL",
            "OAUTH": "ACTIVITY_TYPE_CREATE_OAUTH_PROVIDERS",
            "PASSKEY": "ACTIVITY_TYPE_CREATE_AUTHENTICATORS_V2",
        }[new.type],
        response_extra={"type": new.type},
        signature_required=verified,
    )


async def add_credential(
    db: Database, *, tenant: TenantContext, new: NewCredential, signature: WalletSignature, settings: Settings
) -> Response:
    """POST /auth/credentials: the signed retry of register_intent / register. A production OIDC token's
    signature is checked against its issuer's JWKS on the first call, before any transaction (the retry
    repeats the same token, bound into the challenge)."""
    if isinstance(new, NewOauth) and signature.absent and not tenant.is_sandbox:
        token = oidc.parse(new.oidc_token, settings=settings)
        async with db.read() as session:  # the wallet first: no key fetch for an account that is not there
            await wallet_account(session, tenant=tenant, account_id=new.account_id)
        await oidc.verify_signature(token, settings=settings)
    return await signed_retry.execute(
        db,
        tenant=tenant,
        signature=signature,
        prepare=lambda s, first: register_intent(s, tenant=tenant, new=new, settings=settings, first=first),
        then=lambda s, proof: register(s, tenant=tenant, new=new, settings=settings, signed=proof),
        status=201,
        settings=settings,
    )


async def register(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    new: NewCredential,
    settings: Settings,
    signed: Signed | None,
) -> AuthMethodResponse:
    """The signed retry of POST /auth/credentials (or its only call for a wallet nothing can sign for yet)."""
    now = clock.now(tenant)
    account = await wallet_account(session, tenant=tenant, account_id=new.account_id)
    columns = await _check_new(
        session,
        tenant=tenant,
        customer_id=account.customer_id,
        new=new,
        settings=settings,
        first=signed is None,
    )
    challenge_id = columns.pop("_challenge_id", None)
    if challenge_id is not None and not await repository.consume_challenge(
        session, tenant_id=tenant.id, request_id=str(challenge_id), now=now
    ):
        raise VerificationFailed(
            "the passkey registration challenge expired or was used meanwhile: get a new one"
        )
    if isinstance(new, NewEmailOtp):
        row = email_otp_credential(
            tenant_id=tenant.id,
            account_id=account.id,
            customer_id=account.customer_id,
            email=str(columns["nickname"]),
            now=now,
        )
    else:
        row = credential_row(
            tenant_id=tenant.id,
            account_id=account.id,
            customer_id=account.customer_id,
            type=new.type,
            nickname=str(columns.pop("nickname")),
            status=CredentialStatus.VERIFIED,
            now=now,
            **columns,
        )
    try:
        async with session.begin_nested():
            await repository.insert_credentials(session, [row])
    except IntegrityError:
        error = EmailOtpCredentialExists if new.type == "EMAIL_OTP" else PasskeyCredentialExists
        raise error(f"this wallet already has that {new.type} credential") from None
    created = await live_credential(session, tenant=tenant, credential_id=str(row["id"]))
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=now,
        account_id=account.id,
        action="CREDENTIAL_CREATED",
        subject_id=created.id,
        actor=signed.actor if signed else audit.PLATFORM,
        details={"type": created.type},
    )
    response = AuthMethodResponse(**render(created).model_dump())
    if isinstance(new, NewEmailOtp):
        issued = await otp.issue(session, tenant=tenant, credential=created, now=now)
        await send_otp(session, tenant=tenant, to=created.nickname, issued=issued)
        response.otp_encryption_target_bundle = issued.target_bundle
    return response


# Revoking


async def revoke_intent(session: AsyncSession, *, tenant: TenantContext, credential_id: str) -> SignedIntent:
    credential = await live_credential(session, tenant=tenant, credential_id=credential_id)
    live = await repository.credentials_of(session, tenant_id=tenant.id, account_id=credential.account_id)
    if len(live) <= 1:
        raise LastCredential(
            "this is the wallet's only credential: add another before revoking it",
            details={"credentialId": credential.id},
        )
    return SignedIntent(
        operation="wallets.revoke_credential",
        resource_id=credential.id,
        bound={},
        signers=Signers.sessions_of(credential.account_id, excluding=[credential.id]),
        activity_type="ACTIVITY_TYPE_DELETE_AUTHENTICATORS",
        parameters={"authMethodId": credential.id, "type": credential.type},
        response_extra={"type": credential.type},
    )


async def revoke(
    session: AsyncSession, *, tenant: TenantContext, credential_id: str, signed: Signed | None
) -> None:
    now = clock.now(tenant)
    credential = await live_credential(session, tenant=tenant, credential_id=credential_id, for_update=True)
    await repository.lock_wallet(session, tenant_id=tenant.id, account_id=credential.account_id)
    live = await repository.credentials_of(session, tenant_id=tenant.id, account_id=credential.account_id)
    if len(live) <= 1:
        raise LastCredential("this is the wallet's only credential", details={"credentialId": credential.id})
    credential.status = CREDENTIAL.move(credential.status, CredentialStatus.REVOKED, subject=credential.id)
    credential.revoked_at = now
    credential.updated_at = now
    await session.flush()
    ended = await repository.revoke_sessions_of_credential(
        session, tenant_id=tenant.id, credential_id=credential.id, now=now
    )
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=now,
        account_id=credential.account_id,
        action="CREDENTIAL_REVOKED",
        subject_id=credential.id,
        actor=signed.actor if signed else audit.PLATFORM,
        details={"type": credential.type, "sessionsRevoked": ended},
    )
