"""A customer's email change while their wallets log in by EMAIL_OTP (SPEC §4.4), subscribed to customers'
hook point: the PATCH's first call answers 202 binding the update fields and the set of tied EMAIL_OTP
credentials; the retry, stamped by a session of any tied wallet, updates the customer (customers does it,
after this returns) and every tied credential in the same transaction — or, if the set changed meanwhile,
nothing (409 EMAIL_OTP_CREDENTIAL_SET_CHANGED). A customer with no such credential changes email at once;
a wallet of theirs that has no credential at all then gets its EMAIL_OTP credential for the new email."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.config import Settings
from platpay.customers import hooks as customers_hooks
from platpay.customers.hooks import EmailChange
from platpay.kit import clock
from platpay.kit.wallet_signature import SignedRequestChallenge
from platpay.wallets import audit, repository
from platpay.wallets.errors import EmailOtpCredentialSetChanged
from platpay.wallets.provisioning import email_otp_credential
from platpay.wallets.signed import retry as signed_retry
from platpay.wallets.signed.retry import SignedIntent, Signers

OPERATION = "customers.update_email"


@customers_hooks.on_email_changing.subscribe
async def authorize_email_change(
    session: AsyncSession, *, change: EmailChange, settings: Settings
) -> SignedRequestChallenge | None:
    tenant = change.tenant
    tied = await repository.email_otp_credentials_of_customer(
        session,
        tenant_id=tenant.id,
        customer_id=change.customer_id,
        for_update=not change.wallet_signature.absent,
    )
    now = clock.now(tenant)
    if not tied:
        await _bootstrap_credentials(session, change=change)
        return None
    tied_ids = sorted(row.id for row in tied)
    wallets = sorted({row.account_id for row in tied})
    intent = SignedIntent(
        operation=OPERATION,
        resource_id=change.customer_id,
        bound=change.fields,
        signers=Signers.sessions_of(*wallets),
        activity_type="ACTIVITY_TYPE_UPDATE_USER_EMAIL",
        parameters={"credentialIds": tied_ids, "fields": change.fields, "userEmail": change.new_email},
        context={"credentialIds": tied_ids},
    )
    if change.wallet_signature.absent:
        return await signed_retry.begin(session, tenant=tenant, intent=intent, settings=settings)
    signed = await signed_retry.complete(
        session, tenant=tenant, intent=intent, signature=change.wallet_signature
    )
    if list(signed.context.get("credentialIds") or ()) != tied_ids:
        raise EmailOtpCredentialSetChanged(
            "the customer's EMAIL_OTP credentials changed since the 202: start the email change again",
            details={"bound": list(signed.context.get("credentialIds") or ()), "now": tied_ids},
        )
    entries = []
    for row in tied:
        row.nickname = change.new_email
        row.updated_at = now
        entries.append(
            audit.entry(
                tenant_id=tenant.id,
                now=now,
                account_id=row.account_id,
                action="CREDENTIAL_EMAIL_CHANGED",
                subject_id=row.id,
                actor=signed.actor,
                details={"customerId": change.customer_id},
            )
        )
    await repository.retire_otps(session, credential_ids=tied_ids, now=now)  # codes sent to the old address
    await session.flush()
    await audit.write(session, entries)
    return None


async def _bootstrap_credentials(session: AsyncSession, *, change: EmailChange) -> None:
    """Wallets of the customer without any credential (it had no email when they were opened) get theirs."""
    tenant = change.tenant
    now = clock.now(tenant)
    bare = await repository.wallets_without_credentials(
        session, tenant_id=tenant.id, customer_id=change.customer_id
    )
    rows = [
        email_otp_credential(
            tenant_id=tenant.id,
            account_id=account_id,
            customer_id=change.customer_id,
            email=change.new_email,
            now=now,
        )
        for account_id in bare
    ]
    await repository.insert_credentials(session, rows)
    await audit.write(
        session,
        [
            audit.entry(
                tenant_id=tenant.id,
                now=now,
                account_id=row["account_id"],
                action="CREDENTIAL_CREATED",
                subject_id=row["id"],
                details={"type": "EMAIL_OTP"},
            )
            for row in rows
        ],
    )
