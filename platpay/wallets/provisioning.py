"""Embedded wallets come into being with their internal account (accounts.hooks.on_opened): a wallet secret
from custody, sealed, and the bootstrap EMAIL_OTP credential tied to the customer's email (UNVERIFIED until
its first verify; none when the customer has no email yet: it is created when one is set)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.accounts import hooks as accounts_hooks
from platpay.accounts.hooks import OpenedAccount
from platpay.accounts.state import InternalAccountType
from platpay.customers import service as customers_service
from platpay.kit import clock
from platpay.kit.ids import new_id
from platpay.wallets import audit, repository
from platpay.wallets.providers import CUSTODY
from platpay.wallets.state import CredentialStatus

EMBEDDED_WALLET = InternalAccountType.EMBEDDED_WALLET


def credential_row(
    *,
    tenant_id: str,
    account_id: str,
    customer_id: str,
    type: str,
    nickname: str,
    status: CredentialStatus,
    now: datetime,
    **columns: Any,
) -> dict[str, Any]:
    """A new auth_credentials row: EMAIL_OTP ones start UNVERIFIED, OAUTH and PASSKEY ones VERIFIED (they were
    proven on registration); `columns` are the type's own (OIDC identity, passkey key)."""
    return {
        "id": new_id("AuthMethod"),
        "tenant_id": tenant_id,
        "account_id": account_id,
        "customer_id": customer_id,
        "type": type,
        "status": status,
        "nickname": nickname,
        "oidc_issuer": None,
        "oidc_audience": None,
        "oidc_subject": None,
        "passkey_credential_id": None,
        "passkey_public_key": None,
        "passkey_sign_count": None,
        "passkey_transports": None,
        "created_at": now,
        "updated_at": now,
        "verified_at": now if status == CredentialStatus.VERIFIED else None,
        "revoked_at": None,
        **columns,
    }


def email_otp_credential(
    *, tenant_id: str, account_id: str, customer_id: str, email: str, now: datetime
) -> dict[str, Any]:
    return credential_row(
        tenant_id=tenant_id,
        account_id=account_id,
        customer_id=customer_id,
        type="EMAIL_OTP",
        nickname=email,
        status=CredentialStatus.UNVERIFIED,
        now=now,
    )


async def provision_wallets(
    session: AsyncSession, *, tenant_id: str, accounts: list[OpenedAccount], with_credentials: bool = True
) -> None:
    wallets = [a for a in accounts if a.type == EMBEDDED_WALLET and a.customer_id is not None]
    if not wallets:
        return
    custody = CUSTODY.get()
    now = clock.now()  # as the accounts opened in this transaction were stamped
    await repository.insert_wallets(
        session,
        [
            {
                "account_id": wallet.id,
                "tenant_id": tenant_id,
                "customer_id": wallet.customer_id,
                "custody": custody.name,
                "sealed_secret": await custody.create_secret(account_id=wallet.id),
                "created_at": now,
            }
            for wallet in wallets
        ],
    )
    credentials: list[dict[str, Any]] = []
    if with_credentials:
        emails = await customers_service.emails_of(
            session,
            tenant_id=tenant_id,
            customer_ids=sorted({w.customer_id for w in wallets if w.customer_id}),
        )
        credentials = [
            email_otp_credential(
                tenant_id=tenant_id, account_id=w.id, customer_id=w.customer_id, email=email, now=now
            )
            for w in wallets
            if w.customer_id and (email := emails.get(w.customer_id))
        ]
        await repository.insert_credentials(session, credentials)
    entries = [
        audit.entry(
            tenant_id=tenant_id,
            now=now,
            account_id=wallet.id,
            action="WALLET_PROVISIONED",
            subject_id=wallet.id,
            details={"custody": custody.name},
        )
        for wallet in wallets
    ]
    entries += [
        audit.entry(
            tenant_id=tenant_id,
            now=now,
            account_id=credential["account_id"],
            action="CREDENTIAL_CREATED",
            subject_id=credential["id"],
            details={"type": "EMAIL_OTP"},
        )
        for credential in credentials
    ]
    await audit.write(session, entries)


# Subscribed after the definition, not as a decorator: the name keeps its own signature (with_credentials,
# which wallets/accounts.py passes), which the hook point's Protocol does not have.
accounts_hooks.on_opened.subscribe(provision_wallets)
