"""job lanes, concurrency keys, webhook endpoints

Jobs get a lane (webhook deliveries run apart from settlement and every other job) and a concurrency key
(a delivery's endpoint, capped in flight); deliveries already queued move to the webhooks lane, each its
own key (their endpoints' keys are only set on deliveries scheduled from now on). webhook_endpoints holds
each endpoint's circuit breaker.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-25 07:21:48.357219
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0002'
down_revision: str | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('webhook_endpoints',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('consecutive_failures', sa.Integer(), nullable=False),
    sa.Column('failing_since', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('probe_round', sa.Integer(), nullable=False),
    sa.Column('next_probe_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('probe_job_id', sa.String(length=64), nullable=True),
    sa.Column('last_failure_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('recovered_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_webhook_endpoints_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_webhook_endpoints'))
    )
    with op.batch_alter_table('webhook_endpoints', schema=None) as batch_op:
        batch_op.create_index('ix_webhook_endpoints_status', ['status'], unique=False)
        batch_op.create_index('ix_webhook_endpoints_tenant_id_id', ['tenant_id', 'id'], unique=False)

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('lane', sa.String(length=16), nullable=False, server_default='default'))
        batch_op.add_column(sa.Column('concurrency_key', sa.String(length=64), nullable=True))
        batch_op.drop_index(batch_op.f('ix_jobs_state_run_at'))
        batch_op.create_index('ix_jobs_lane_state_concurrency_key_run_at', ['lane', 'state', 'concurrency_key', 'run_at'], unique=False)
        batch_op.create_index('ix_jobs_lane_state_run_at', ['lane', 'state', 'run_at'], unique=False)
    op.execute("UPDATE jobs SET lane = 'webhooks' WHERE kind = 'webhook.deliver'")
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.alter_column('lane', server_default=None)


def downgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_lane_state_run_at')
        batch_op.drop_index('ix_jobs_lane_state_concurrency_key_run_at')
        batch_op.create_index(batch_op.f('ix_jobs_state_run_at'), ['state', 'run_at'], unique=False)
        batch_op.drop_column('concurrency_key')
        batch_op.drop_column('lane')

    with op.batch_alter_table('webhook_endpoints', schema=None) as batch_op:
        batch_op.drop_index('ix_webhook_endpoints_tenant_id_id')
        batch_op.drop_index('ix_webhook_endpoints_status')

    op.drop_table('webhook_endpoints')
