"""clocks

Sandbox tenants' clocks (platpay/clocks: each sandbox tenant's own time): sandbox_clocks, one row per tenant whose clock was
moved; jobs.due_at, when a tenant job is due on its tenant's clock, with the index the clock's moves
recompute run_at through; webhook_sandbox_faults (events), a sandbox tenant's webhook delivery faults.

Revision ID: 0007_clocks
Revises: 0006
Create Date: 2026-11-26 02:10:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0007_clocks'
down_revision: str | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('sandbox_clocks',
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('offset_us', sa.BigInteger(), nullable=False),
    sa.Column('frozen_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_sandbox_clocks_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_sandbox_clocks'))
    )
    op.create_table('webhook_sandbox_faults',
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('duplicate', sa.Boolean(), nullable=False),
    sa.Column('delay_ms', sa.Integer(), nullable=False),
    sa.Column('reorder_ms', sa.Integer(), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_webhook_sandbox_faults_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_webhook_sandbox_faults'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('due_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_jobs_tenant_id_state_due_at', ['tenant_id', 'state', 'due_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_tenant_id_state_due_at')
        batch_op.drop_column('due_at')

    op.drop_table('webhook_sandbox_faults')
    op.drop_table('sandbox_clocks')
