"""customer_accounts_by_type: a customer's internal accounts are one per (currency, type), so a USDB
customer has the platform-managed holding account (INTERNAL_CRYPTO) and the embedded wallet
(EMBEDDED_WALLET) side by side.

Existing databases: customers provisioned before this revision have only the wallet in USDB. The upgrade
queues the accounts domain's backfill job (`accounts.backfill_currency`, the job that opens a newly
configured currency's accounts for every customer) for USDB in every tenant configured with it; the job
opens each customer's missing USDB holding account, in pages, once a worker runs.

Downgrade restores the one-account-per-(customer, currency) index; it fails while a customer has two
accounts in one currency (close out and remove the holding accounts first).

Revision ID: 0014_customer_accounts_by_type
Revises: 0013_agent_token_first_use
Create Date: 2026-11-26 06:00:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from platpay.db.types import JsonType, UtcDateTime
from platpay.kit.ids import new_id

revision: str = '0014_customer_accounts_by_type'
down_revision: str | None = '0013_agent_token_first_use'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

BACKFILL_JOB = "accounts.backfill_currency"  # platpay.accounts.service.BACKFILL_JOB
WALLET_CURRENCY = "USDB"

_TENANTS = sa.table("tenants", sa.column("id"), sa.column("supported_currencies", JsonType))
_JOBS = sa.table(
    "jobs",
    *(sa.column(name) for name in ("id", "kind", "lane", "concurrency_key", "tenant_id", "state")),
    sa.column("payload", JsonType),
    *(sa.column(name, UtcDateTime()) for name in ("run_at", "due_at", "lease_until", "created_at")),
    *(sa.column(name, UtcDateTime()) for name in ("updated_at", "finished_at")),
    *(sa.column(name) for name in ("attempts", "max_attempts", "lease_token", "dedupe_key", "last_error")),
)


def upgrade() -> None:
    with op.batch_alter_table('internal_accounts', schema=None) as batch_op:
        batch_op.drop_index('uq_internal_accounts_customer_currency')
        batch_op.create_index(
            'uq_internal_accounts_customer_currency_type',
            ['tenant_id', 'customer_id', 'currency', 'type'],
            unique=True,
        )
    connection = op.get_bind()
    tenants = connection.execute(sa.select(_TENANTS.c.id, _TENANTS.c.supported_currencies)).all()
    now = datetime.now(UTC)
    jobs = [
        {
            "id": new_id("Task"),
            "kind": BACKFILL_JOB,
            "lane": "default",
            "concurrency_key": None,
            "tenant_id": tenant_id,
            "state": "QUEUED",
            "payload": {"tenantId": tenant_id, "currency": WALLET_CURRENCY},
            "run_at": now,
            "due_at": None,
            "lease_until": None,
            "created_at": now,
            "updated_at": now,
            "finished_at": None,
            "attempts": 0,
            "max_attempts": 25,
            "lease_token": None,
            "dedupe_key": f"{BACKFILL_JOB}:0014:{tenant_id}",
            "last_error": None,
        }
        for tenant_id, supported in tenants
        if any(entry.get("currencyCode") == WALLET_CURRENCY for entry in supported or [])
    ]
    if jobs:
        connection.execute(_JOBS.insert(), jobs)


def downgrade() -> None:
    with op.batch_alter_table('internal_accounts', schema=None) as batch_op:
        batch_op.drop_index('uq_internal_accounts_customer_currency_type')
        batch_op.create_index(
            'uq_internal_accounts_customer_currency', ['tenant_id', 'customer_id', 'currency'], unique=True
        )
