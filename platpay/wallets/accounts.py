"""Wallet operations on accounts' resources, served by wallets because they are wallets' to authorize:
`PATCH /internal-accounts/{id}` (wallet privacy) and `POST /internal-accounts/{id}/export` (the mnemonic,
sealed to the client), both by signed retry from a session of the wallet."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import service as accounts_service
from platpay.accounts.hooks import OpenedAccount
from platpay.accounts.schemas import InternalAccount
from platpay.errors import invalid_field
from platpay.kit import clock
from platpay.kit.crypto import bundles, p256
from platpay.tenants.context import TenantContext
from platpay.wallets import audit, keys, provisioning, repository
from platpay.wallets.credentials import wallet_account
from platpay.wallets.errors import CustodyError
from platpay.wallets.providers import CUSTODY
from platpay.wallets.schemas import InternalAccountExportResponse
from platpay.wallets.signed.retry import Signed, SignedIntent, Signers


async def update_intent(
    session: AsyncSession, *, tenant: TenantContext, account_id: str, private_enabled: bool | None
) -> SignedIntent:
    account = await wallet_account(session, tenant=tenant, account_id=account_id, field="id")
    if private_enabled is None:
        raise invalid_field("privateEnabled", "is the field to update (true or false)")
    return SignedIntent(
        operation="wallets.update_account",
        resource_id=account.id,
        bound={"privateEnabled": private_enabled},
        signers=Signers.sessions_of(account.id),
        activity_type="ACTIVITY_TYPE_UPDATE_WALLET_SETTINGS",
        parameters={"walletId": account.id, "privateEnabled": private_enabled},
    )


async def update(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    account_id: str,
    private_enabled: bool,
    signed: Signed | None,
) -> InternalAccount:
    now = clock.now(tenant)
    account = await accounts_service.set_private_enabled(
        session, tenant_id=tenant.id, account_id=account_id, private_enabled=private_enabled, now=now
    )
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=now,
        account_id=account_id,
        action="PRIVACY_UPDATED",
        subject_id=account_id,
        actor=signed.actor if signed else audit.PLATFORM,
        details={"privateEnabled": private_enabled},
    )
    return account


async def export_intent(
    session: AsyncSession, *, tenant: TenantContext, account_id: str, client_public_key: str
) -> SignedIntent:
    account = await wallet_account(session, tenant=tenant, account_id=account_id, field="id")
    return SignedIntent(
        operation="wallets.export",
        resource_id=account.id,
        bound={"clientPublicKey": client_public_key},
        signers=Signers.sessions_of(account.id),
        activity_type="ACTIVITY_TYPE_EXPORT_WALLET",
        parameters={"walletId": account.id, "targetPublicKey": client_public_key},
    )


async def export(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    account_id: str,
    client_public_key: str,
    signed: Signed | None,
) -> InternalAccountExportResponse:
    """The wallet's mnemonic sealed to `client_public_key` (production: signed by the tenant's enclave key;
    sandbox: unsigned, as the reference's sandbox)."""
    wallet = await repository.get_wallet(session, tenant_id=tenant.id, account_id=account_id)
    if wallet is None:  # a wallet opened before custody existed (migration 0006): its secret is made now
        account = await wallet_account(session, tenant=tenant, account_id=account_id, field="id")
        await provisioning.provision_wallets(
            session,
            tenant_id=tenant.id,
            accounts=[OpenedAccount(account.id, account.customer_id, account.currency, account.type)],
            with_credentials=False,
        )
        wallet = await repository.get_wallet(session, tenant_id=tenant.id, account_id=account_id)
    if wallet is None:
        raise CustodyError(f"wallet {account_id} has no custody record")
    mnemonic = await CUSTODY.get().reveal_secret(wallet.sealed_secret, account_id=account_id)
    signer = None if tenant.is_sandbox else await keys.enclave_key(session, tenant=tenant)
    bundle = bundles.export_bundle(
        p256.public_key_from_hex(client_public_key),
        mnemonic.encode(),
        organization_id=tenant.id,
        signer=signer,
    )
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=clock.now(tenant),
        account_id=account_id,
        action="WALLET_EXPORTED",
        subject_id=account_id,
        actor=signed.actor if signed else audit.PLATFORM,
        details={"clientPublicKey": client_public_key},
    )
    return InternalAccountExportResponse(id=account_id, encrypted_wallet_credentials=bundle)
