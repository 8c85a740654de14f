"""Wallets' housekeeping (jobs/registry.py `housekeeping`, run by every job runner every few minutes):
pending challenges and OTP issuances a day past their expiry are deleted (the audit log keeps what
happened; a used or expired challenge can never be used again either way)."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.jobs.registry import housekeeping
from platpay.wallets import repository

KEEP_EXPIRED = timedelta(days=1)


@housekeeping
async def purge_expired(session: AsyncSession, now: datetime) -> None:
    await repository.purge_challenges(session, before=now - KEEP_EXPIRED)
    await repository.purge_otps(session, before=now - KEEP_EXPIRED)
