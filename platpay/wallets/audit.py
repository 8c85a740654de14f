"""The wallets audit trail: one row per state change of a wallet's credentials, sessions, privacy or custody,
naming who caused it (the signing session, or the platform's API token). Never a secret in it."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db.unit_of_work import LeanSession
from platpay.kit.ids import new_id
from platpay.wallets import repository
from platpay.wallets.models import AuditRow

log = structlog.get_logger("platpay.wallets")
PLATFORM = "platform"


def entry(
    *,
    tenant_id: str,
    now: datetime,
    account_id: str,
    action: str,
    subject_id: str | None,
    actor: str = PLATFORM,
    details: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": new_id("WalletAudit"),
        "tenant_id": tenant_id,
        "account_id": account_id,
        "action": action,
        "subject_id": subject_id,
        "actor": actor,
        "details": details or {},
        "created_at": now,
    }


async def write(session: LeanSession, entries: list[dict[str, Any]]) -> None:
    if entries:
        await repository.insert_audit(session, entries)
    for item in entries:
        log.info(
            "wallets.audit",
            action=item["action"],
            account_id=item["account_id"],
            subject_id=item["subject_id"],
            actor=item["actor"],
        )


async def record(session: LeanSession, **fields: Any) -> None:
    """One entry (the fields of `entry`)."""
    await write(session, [entry(**fields)])


async def trail(session: AsyncSession, *, tenant_id: str, account_id: str) -> list[AuditRow]:
    return await repository.audit_of(session, tenant_id=tenant_id, account_id=account_id)
