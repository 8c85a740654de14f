"""messages

Outbound email and SMS (platpay/messages): one row per message, its body sealed for production tenants
and kept for sandbox ones (the sandbox mailbox).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-25 22:30:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0005'
down_revision: str | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('messages',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('channel', sa.String(length=8), nullable=False),
    sa.Column('category', sa.String(length=64), nullable=False),
    sa.Column('recipient', sa.String(length=320), nullable=False),
    sa.Column('sender_address', sa.String(length=320), nullable=True),
    sa.Column('sender_name', sa.String(length=200), nullable=True),
    sa.Column('reply_to', sa.String(length=320), nullable=True),
    sa.Column('content', sa.Text(), nullable=True),
    sa.Column('sealed', sa.Boolean(), nullable=False),
    sa.Column('kept', sa.Boolean(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('sent_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_messages_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_messages'))
    )
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.create_index('ix_messages_tenant_id_id', ['tenant_id', 'id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('messages', schema=None) as batch_op:
        batch_op.drop_index('ix_messages_tenant_id_id')

    op.drop_table('messages')
