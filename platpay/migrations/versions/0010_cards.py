"""cards

The cards domain's tables (cards, their ordered funding sources, card transactions, card refunds) and the
ledger's holds (money reserved on an account for one business object, e.g. a card authorization).

Revision ID: 0010_cards
Revises: 0009_invitations
Create Date: 2026-11-26 02:10:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0010_cards'
down_revision: str | None = '0009_invitations'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('ledger_holds',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('account_id', sa.String(length=64), nullable=False),
    sa.Column('currency', sa.String(length=8), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.Column('remaining', sa.BigInteger(), nullable=False),
    sa.Column('status', sa.String(length=8), nullable=False),
    sa.Column('reference', sa.String(length=120), nullable=False),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.CheckConstraint('remaining >= 0 AND remaining <= amount', name=op.f('ck_ledger_holds_remaining_within_amount')),
    sa.CheckConstraint("status IN ('OPEN', 'CLOSED')", name=op.f('ck_ledger_holds_known_status')),
    sa.ForeignKeyConstraint(['account_id'], ['ledger_accounts.id'], name=op.f('fk_ledger_holds_account_id_ledger_accounts')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_ledger_holds_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_ledger_holds')),
    sa.UniqueConstraint('tenant_id', 'reference', name=op.f('uq_ledger_holds_tenant_id_reference'))
    )
    with op.batch_alter_table('ledger_holds', schema=None) as batch_op:
        batch_op.create_index('ix_ledger_holds_account_id', ['account_id'], unique=False)

    op.create_table('cards',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('cardholder_id', sa.String(length=64), nullable=False),
    sa.Column('platform_card_id', sa.String(length=255), nullable=False),
    sa.Column('state', sa.String(length=16), nullable=False),
    sa.Column('state_reason', sa.String(length=24), nullable=True),
    sa.Column('form', sa.String(length=12), nullable=False),
    sa.Column('currency', sa.String(length=8), nullable=False),
    sa.Column('brand', sa.String(length=12), nullable=True),
    sa.Column('last4', sa.String(length=4), nullable=True),
    sa.Column('exp_month', sa.Integer(), nullable=True),
    sa.Column('exp_year', sa.Integer(), nullable=True),
    sa.Column('issuer_ref', sa.String(length=64), nullable=True),
    sa.Column('embed_token', sa.String(length=64), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_cards_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_cards'))
    )
    with op.batch_alter_table('cards', schema=None) as batch_op:
        batch_op.create_index('ix_cards_embed_token', ['embed_token'], unique=False)
        batch_op.create_index('ix_cards_tenant_cardholder', ['tenant_id', 'cardholder_id'], unique=False)
        batch_op.create_index('ix_cards_tenant_id_id', ['tenant_id', 'id'], unique=False)
        batch_op.create_index('ix_cards_tenant_platform_card_id', ['tenant_id', 'platform_card_id'], unique=False)

    op.create_table('card_funding_sources',
    sa.Column('card_id', sa.String(length=64), nullable=False),
    sa.Column('position', sa.Integer(), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('account_id', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['card_id'], ['cards.id'], name=op.f('fk_card_funding_sources_card_id_cards')),
    sa.PrimaryKeyConstraint('card_id', 'position', name=op.f('pk_card_funding_sources'))
    )
    with op.batch_alter_table('card_funding_sources', schema=None) as batch_op:
        batch_op.create_index('ix_card_funding_sources_tenant_account', ['tenant_id', 'account_id'], unique=False)

    op.create_table('card_transactions',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('card_id', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('decline_reason', sa.String(length=32), nullable=True),
    sa.Column('issuer_transaction_token', sa.String(length=64), nullable=False),
    sa.Column('merchant', platpay.db.types.JsonType, nullable=False),
    sa.Column('currency', sa.String(length=8), nullable=False),
    sa.Column('account_id', sa.String(length=64), nullable=True),
    sa.Column('source_ids', platpay.db.types.JsonType, nullable=False),
    sa.Column('authorized_amount', sa.BigInteger(), nullable=False),
    sa.Column('settled_amount', sa.BigInteger(), nullable=False),
    sa.Column('refunded_amount', sa.BigInteger(), nullable=False),
    sa.Column('settlement_count', sa.Integer(), nullable=False),
    sa.Column('pull_count', sa.Integer(), nullable=False),
    sa.Column('pull_amount', sa.BigInteger(), nullable=False),
    sa.Column('pull_pending', sa.Integer(), nullable=False),
    sa.Column('loss_amount', sa.BigInteger(), nullable=False),
    sa.Column('outcome', sa.String(length=32), nullable=True),
    sa.Column('authorized_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('last_event_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['card_id'], ['cards.id'], name=op.f('fk_card_transactions_card_id_cards')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_card_transactions_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_card_transactions'))
    )
    with op.batch_alter_table('card_transactions', schema=None) as batch_op:
        batch_op.create_index('ix_card_transactions_tenant_account', ['tenant_id', 'account_id'], unique=False)
        batch_op.create_index('ix_card_transactions_tenant_card', ['tenant_id', 'card_id', 'id'], unique=False)

    op.create_table('card_refunds',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('card_transaction_id', sa.String(length=64), nullable=False),
    sa.Column('account_id', sa.String(length=64), nullable=False),
    sa.Column('amount', sa.BigInteger(), nullable=False),
    sa.Column('currency', sa.String(length=8), nullable=False),
    sa.Column('status', sa.String(length=12), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['card_transaction_id'], ['card_transactions.id'], name=op.f('fk_card_refunds_card_transaction_id_card_transactions')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_card_refunds_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_card_refunds'))
    )
    with op.batch_alter_table('card_refunds', schema=None) as batch_op:
        batch_op.create_index('ix_card_refunds_card_transaction', ['card_transaction_id', 'id'], unique=False)


def downgrade() -> None:
    op.drop_table('card_refunds')
    op.drop_table('card_transactions')
    op.drop_table('card_funding_sources')
    op.drop_table('cards')
    op.drop_table('ledger_holds')
