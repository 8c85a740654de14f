"""Customers: the August reference's customer fields and End User Terms (DRIFT-2026-08 §3 and §4)

customers: `phone_number` (E.164); an individual's identification (`id_type`, `identifier_sealed`: the
number sealed under the master key, never stored in clear; `country_of_issuance`); its enhanced-due-diligence
answers (`due_diligence`, JSON); the End User Terms acceptance (`end_user_terms_consent`, JSON). A business's
new fields live in its `business_info` JSON, and `kybStatus` is `kyc_status` under another name: neither
needs a column. Existing customers have none of the new values (all NULL): nothing to backfill.

tenants: `end_user_terms_required` (PlatformConfig.endUserTermsRequired), false for every existing tenant so
that existing integrations behave as before.

Revision ID: 0019_cust28
Revises: 0018_cards28
Create Date: 2026-11-28 12:00:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0019_cust28'
down_revision: str | None = '0018_cards28'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('customers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('phone_number', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('id_type', sa.String(length=16), nullable=True))
        batch_op.add_column(sa.Column('identifier_sealed', sa.Text(), nullable=True))
        batch_op.add_column(sa.Column('country_of_issuance', sa.String(length=2), nullable=True))
        batch_op.add_column(sa.Column('due_diligence', platpay.db.types.JsonType, nullable=True))
        batch_op.add_column(sa.Column('end_user_terms_consent', platpay.db.types.JsonType, nullable=True))
    # A plain ADD COLUMN (not a batch copy of `tenants`: see downgrade), its default filling existing rows.
    op.add_column(
        'tenants',
        sa.Column('end_user_terms_required', sa.Boolean(), server_default=sa.false(), nullable=False),
    )


def downgrade() -> None:
    # Plain DROP COLUMNs (SQLite >= 3.35), as 0006 does: a batch copy of `tenants` would drop the table every
    # other one references, which SQLite's foreign keys refuse.
    op.execute('ALTER TABLE tenants DROP COLUMN end_user_terms_required')
    for column in (
        'end_user_terms_consent',
        'due_diligence',
        'country_of_issuance',
        'identifier_sealed',
        'id_type',
        'phone_number',
    ):
        op.execute(f'ALTER TABLE customers DROP COLUMN {column}')
