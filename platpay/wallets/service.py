"""What other domains call on wallets (cards, payments, agents…): the signed-retry mechanism and the
wallet-signed transaction payloads of quotes funded from an EMBEDDED_WALLET account.

- A signed operation of another domain: `SignedRetry` (a FastAPI dependency, signed/retry.py) with a
  `SignedIntent` whose signers are `signers_for_account(account_id)`, or `begin`/`complete` directly.
- A quote funded by a wallet: `transaction_payload` is the `payloadToSign` of its EMBEDDED_WALLET payment
  instruction; `authorize_transaction` checks the `Svc-Wallet-Signature` of its execution (401s as
  signed_retry's).
"""

from __future__ import annotations

import hashlib
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.kit import clock
from platpay.tenants.context import TenantContext
from platpay.wallets import audit
from platpay.wallets.signed.endpoints import SignedRetry
from platpay.wallets.signed.retry import (
    Signed,
    SignedIntent,
    Signers,
    begin,
    canonical,
    complete,
    verify_stamp,
)

__all__ = [
    "Signed",
    "SignedIntent",
    "SignedRetry",
    "Signers",
    "authorize_transaction",
    "begin",
    "complete",
    "signers_for_account",
    "transaction_payload",
]


def signers_for_account(account_id: str) -> Signers:
    """A verified credential of `account_id`: any active session of the wallet."""
    return Signers.sessions_of(account_id)


def transaction_payload(
    *, tenant: TenantContext, account_id: str, quote_id: str, transfer: dict[str, Any], now: datetime
) -> str:
    """The EMBEDDED_WALLET instruction's payloadToSign for a quote: a sign-transaction activity whose
    unsigned transaction is the SHA-256 of the quote's terms (`transfer`: amounts, currencies, destination),
    so a stamp over it authorizes exactly this payment."""
    terms = canonical({"quoteId": quote_id, **transfer})
    return canonical(
        {
            "generateAppProofs": True,
            "organizationId": tenant.id,
            "parameters": {
                "signWith": account_id,
                "type": "TRANSACTION_TYPE_PLATPAY_QUOTE",
                "unsignedTransaction": hashlib.sha256(terms.encode()).hexdigest(),
            },
            "timestampMs": str(int(now.timestamp() * 1000)),
            "type": "ACTIVITY_TYPE_SIGN_TRANSACTION_V2",
        }
    )


async def authorize_transaction(
    session: AsyncSession,
    *,
    tenant: TenantContext,
    account_id: str,
    payload: str,
    header: str | None,
    subject_id: str,
) -> Signed:
    """The stamp of a wallet-funded quote's execution: over exactly `payload`, by an active session of the
    wallet; recorded in the wallet's audit trail."""
    signed = await verify_stamp(
        session, tenant=tenant, payload=payload, header=header, signers=signers_for_account(account_id)
    )
    await audit.record(
        session,
        tenant_id=tenant.id,
        now=clock.now(tenant),
        account_id=account_id,
        action="TRANSACTION_AUTHORIZED",
        subject_id=subject_id,
        actor=signed.actor,
    )
    return signed
