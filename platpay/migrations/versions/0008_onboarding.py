"""onboarding

Verifications, beneficial owners, documents (metadata; files live in the document store) and KYC links
(platpay/onboarding).

Revision ID: 0008_onboarding
Revises: 0007_clocks
Create Date: 2026-11-26 02:10:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0008_onboarding'
down_revision: str | None = '0007_clocks'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('verifications',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('customer_id', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('errors', platpay.db.types.JsonType, nullable=False),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_verifications_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_verifications'))
    )
    with op.batch_alter_table('verifications', schema=None) as batch_op:
        batch_op.create_index('ix_verifications_tenant_id_id', ['tenant_id', 'id'], unique=False)
        batch_op.create_index('ix_verifications_tenant_customer', ['tenant_id', 'customer_id'], unique=False)

    op.create_table('beneficial_owners',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('customer_id', sa.String(length=64), nullable=False),
    sa.Column('roles', platpay.db.types.JsonType, nullable=False),
    sa.Column('ownership_percentage', sa.Integer(), nullable=False),
    sa.Column('personal_info', platpay.db.types.JsonType, nullable=False),
    sa.Column('kyc_status', sa.String(length=16), nullable=False),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_beneficial_owners_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_beneficial_owners'))
    )
    with op.batch_alter_table('beneficial_owners', schema=None) as batch_op:
        batch_op.create_index('ix_beneficial_owners_tenant_id_id', ['tenant_id', 'id'], unique=False)
        batch_op.create_index('ix_beneficial_owners_tenant_customer', ['tenant_id', 'customer_id'], unique=False)

    op.create_table('documents',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('holder_id', sa.String(length=64), nullable=False),
    sa.Column('customer_id', sa.String(length=64), nullable=False),
    sa.Column('document_type', sa.String(length=48), nullable=False),
    sa.Column('side', sa.String(length=8), nullable=True),
    sa.Column('country', sa.String(length=2), nullable=False),
    sa.Column('document_number', sa.String(length=100), nullable=True),
    sa.Column('issuing_authority', sa.String(length=200), nullable=True),
    sa.Column('file_name', sa.String(length=255), nullable=False),
    sa.Column('content_type', sa.String(length=32), nullable=False),
    sa.Column('size', sa.BigInteger(), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('storage_key', sa.String(length=200), nullable=False),
    sa.Column('verification_id', sa.String(length=64), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('updated_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_documents_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_documents'))
    )
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.create_index('ix_documents_tenant_id_id', ['tenant_id', 'id'], unique=False)
        batch_op.create_index('ix_documents_tenant_holder', ['tenant_id', 'holder_id'], unique=False)
        batch_op.create_index('ix_documents_tenant_customer', ['tenant_id', 'customer_id'], unique=False)

    op.create_table('kyc_links',
    sa.Column('id', sa.String(length=64), nullable=False),
    sa.Column('tenant_id', sa.String(length=64), nullable=False),
    sa.Column('customer_id', sa.String(length=64), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('redirect_uri', sa.String(length=2048), nullable=True),
    sa.Column('expires_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.Column('used_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True),
    sa.Column('created_at', platpay.db.types.UtcDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['tenant_id'], ['tenants.id'], name=op.f('fk_kyc_links_tenant_id_tenants')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_kyc_links'))
    )
    with op.batch_alter_table('kyc_links', schema=None) as batch_op:
        batch_op.create_index('ix_kyc_links_tenant_id_id', ['tenant_id', 'id'], unique=False)
        batch_op.create_index('uq_kyc_links_token_hash', ['token_hash'], unique=True)


def downgrade() -> None:
    for table, indexes in (
        ('kyc_links', ('uq_kyc_links_token_hash', 'ix_kyc_links_tenant_id_id')),
        ('documents', ('ix_documents_tenant_customer', 'ix_documents_tenant_holder', 'ix_documents_tenant_id_id')),
        ('beneficial_owners', ('ix_beneficial_owners_tenant_customer', 'ix_beneficial_owners_tenant_id_id')),
        ('verifications', ('ix_verifications_tenant_customer', 'ix_verifications_tenant_id_id')),
    ):
        with op.batch_alter_table(table, schema=None) as batch_op:
            for index in indexes:
                batch_op.drop_index(index)
        op.drop_table(table)
