"""External accounts' ownershipType and longer statuses (the August 2026 reference's account formats and statuses)

`external_accounts.ownership_type` (FIRST_PARTY | THIRD_PARTY, null when the client did not say: existing
rows stay null, as the reference has no default), and `external_accounts.status` widened from 16 to 32
characters for PENDING_OWNERSHIP_VERIFICATION. Internal accounts' new status FAILED fits their column.

Revision ID: 0017_acct28
Revises: 0016_audit
Create Date: 2026-11-28 09:00:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0017_acct28'
down_revision: str | None = '0016_audit'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('external_accounts', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ownership_type', sa.String(length=16), nullable=True))
        batch_op.alter_column(
            'status', existing_type=sa.String(length=16), type_=sa.String(length=32), existing_nullable=False
        )


def downgrade() -> None:
    # the June statuses had no ownership verification: such accounts cannot be paid, as PENDING ones
    op.execute(
        "UPDATE external_accounts SET status = 'PENDING' "
        "WHERE status IN ('PENDING_OWNERSHIP_VERIFICATION', 'UNVERIFIED')"
    )
    op.execute("UPDATE internal_accounts SET status = 'CLOSED' WHERE status = 'FAILED'")
    with op.batch_alter_table('external_accounts', schema=None) as batch_op:
        batch_op.alter_column(
            'status', existing_type=sa.String(length=32), type_=sa.String(length=16), existing_nullable=False
        )
        batch_op.drop_column('ownership_type')
