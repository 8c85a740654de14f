"""invitations and contact verification

UMA invitations (the invitations domain), the one-time codes of contact verification
(customer_contact_codes) and the contacts each customer has confirmed (customers.verified_contacts).

Revision ID: 0009_invitations
Revises: 0008_onboarding
Create Date: 2026-11-26 02:10:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0009_invitations'
down_revision: str | None = '0008_onboarding'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('customers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('verified_contacts', platpay.db.types.JsonType, nullable=True))

    op.create_table('customer_contact_codes',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('customer_id', sa.String(length=64), nullable=False),
    sa.Column('channel', sa.String(length=8), nullable=False),
    sa.Column('destination', sa.String(length=320), nullable=False),
    sa.Column('code_digest', sa.String(length=64), nullable=False),
    sa.Column('failed_attempts', sa.Integer(), nullable=False),
    sa.Column('expires_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('used_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['customer_id'], ['customers.id'], name=op.f('fk_customer_contact_codes_customer_id_customers')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_customer_contact_codes_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_customer_contact_codes'))
    )
    with op.batch_alter_table('customer_contact_codes', schema=None) as batch_op:
        batch_op.create_index('uq_customer_contact_codes_customer_channel', ['tenant_id', 'customer_id', 'channel'], unique=True)

    op.create_table('invitations',
    sa.Column('code', sa.String(length=16), nullable=False),
    sa.Column('environment', sa.String(length=16), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('inviter_customer_id', sa.String(length=64), nullable=False),
    sa.Column('inviter_uma', sa.String(length=320), nullable=False),
    sa.Column('invitee_uma', sa.String(length=320), nullable=True),
    sa.Column('claimed_by_tenant_id', sa.String(length=64), nullable=True),
    sa.Column('status', sa.String(length=12), nullable=False),
    sa.Column('first_name', sa.String(length=100), nullable=True),
    sa.Column('amount_to_send', sa.BigInteger(), nullable=True),
    sa.Column('amount_currency', sa.String(length=8), nullable=True),
    sa.Column('url', sa.String(length=2048), nullable=False),
    sa.Column('expires_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('claimed_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('cancelled_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['claimed_by_tenant_id'], ['tenants.id'], name=op.f('fk_invitations_claimed_by_tenant_id_tenants')),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_invitations_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('code', name=op.f('pk_invitations'))
    )
    with op.batch_alter_table('invitations', schema=None) as batch_op:
        batch_op.create_index('ix_invitations_tenant_created_at', ['tenant_id', 'created_at'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('invitations', schema=None) as batch_op:
        batch_op.drop_index('ix_invitations_tenant_created_at')

    op.drop_table('invitations')
    with op.batch_alter_table('customer_contact_codes', schema=None) as batch_op:
        batch_op.drop_index('uq_customer_contact_codes_customer_channel')

    op.drop_table('customer_contact_codes')
    with op.batch_alter_table('customers', schema=None) as batch_op:
        batch_op.drop_column('verified_contacts')
