"""console: the console's sign-in sessions and its action trail (chained per tenant)

Revision ID: 0023_console
Revises: 0022_status_checks
Create Date: 2026-11-29 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0023_console'
down_revision: str | None = '0022_status_checks'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        'console_sessions',
        sa.Column('id', sa.String(length=64), nullable=False),
        sa.Column('tenant_id', sa.String(length=64), nullable=False),
        sa.Column('token_id', sa.String(length=64), nullable=False),
        sa.Column('secret_sha256', sa.String(length=64), nullable=False),
        sa.Column('address', sa.String(length=64), nullable=False),
        sa.Column('user_agent', sa.String(length=200), nullable=False),
        sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column('expires_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column('revoked_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_console_sessions_tenant_id_tenants')),
        sa.ForeignKeyConstraint(
            ['token_id'], ['api_tokens.id'], name=op.f('fk_console_sessions_token_id_api_tokens')
        ),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_console_sessions')),
        sa.UniqueConstraint('secret_sha256', name=op.f('uq_console_sessions_secret_sha256')),
    )
    op.create_index('ix_console_sessions_token_id', 'console_sessions', ['token_id'], unique=False)
    op.create_table(
        'console_actions',
        sa.Column('id', sa.String(length=64), nullable=False),
        sa.Column('tenant_id', sa.String(length=64), nullable=False),
        sa.Column('sequence', sa.BigInteger(), nullable=False),
        sa.Column('token_id', sa.String(length=64), nullable=False),
        sa.Column('session_id', sa.String(length=64), nullable=False),
        sa.Column('action', sa.String(length=64), nullable=False),
        sa.Column('subject_type', sa.String(length=40), nullable=False),
        sa.Column('subject_id', sa.String(length=120), nullable=False),
        sa.Column('occurred_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
        sa.Column('data', platpay.db.types.JsonType, nullable=False),
        sa.Column('previous_hash', sa.String(length=64), nullable=False),
        sa.Column('hash', sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_console_actions_tenant_id_tenants')),
        sa.PrimaryKeyConstraint('id', name=op.f('pk_console_actions')),
    )
    op.create_index('ix_console_actions_tenant_subject', 'console_actions', ['tenant_id', 'subject_id'])
    op.create_index(
        'ix_console_actions_tenant_sequence', 'console_actions', ['tenant_id', 'sequence'], unique=True
    )
    op.create_table(
        'console_trail_heads',
        sa.Column('tenant_id', sa.String(length=64), nullable=False),
        sa.Column('sequence', sa.BigInteger(), nullable=False),
        sa.Column('hash', sa.String(length=64), nullable=False),
        sa.ForeignKeyConstraint(
            ['tenant_id'], ['tenants.id'], name=op.f('fk_console_trail_heads_tenant_id_tenants')
        ),
        sa.PrimaryKeyConstraint('tenant_id', name=op.f('pk_console_trail_heads')),
    )


def downgrade() -> None:
    op.drop_table('console_trail_heads')
    op.drop_index('ix_console_actions_tenant_sequence', table_name='console_actions')
    op.drop_index('ix_console_actions_tenant_subject', table_name='console_actions')
    op.drop_table('console_actions')
    op.drop_index('ix_console_sessions_token_id', table_name='console_sessions')
    op.drop_table('console_sessions')
