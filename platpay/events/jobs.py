"""Webhooks' retention (jobs/registry.py `Pruner`, scheduled by every job runner's maintenance): delivery
attempts' records (each try's answer, error and latency) are deleted `webhook_attempt_retention_days` after
they were made. Events and their deliveries are never pruned: a delivery keeps its envelope id, event, URL,
status, attempt count and last answer's status and error, so GET /webhooks/deliveries/{id} and the console
still answer for it (with the attempts that are left) and a redelivery sends the same envelope."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from platpay.events import repository
from platpay.jobs.registry import Pruner, pruning


async def _prune_attempts(session: AsyncSession, before: datetime, limit: int) -> int:
    return await repository.prune_attempts(session, before=before, limit=limit)


pruning(Pruner("webhook_attempts", lambda settings: settings.webhook_attempt_retention_days, _prune_attempts))
