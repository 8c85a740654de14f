"""verification_decision: who decided a manual review and why (POST /verifications/{id}/decision)

verifications gain `decided_by` (the acting API token's id) and `decision_reason` (up to 500 characters),
both nullable: rows decided by the KYC provider or the sandbox's override, and every existing row, keep
them null.

Revision ID: 0024_decision
Revises: 0023_console
Create Date: 2026-11-29 04:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0024_decision'
down_revision: str | None = '0023_console'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ALTER TABLE on both backends (SQLite >= 3.35 drops a column too): no batch rebuild, so the
    # table's CHECKs (0022) stay exactly as they are.
    op.add_column('verifications', sa.Column('decided_by', sa.String(length=64), nullable=True))
    op.add_column('verifications', sa.Column('decision_reason', sa.String(length=500), nullable=True))


def downgrade() -> None:
    op.drop_column('verifications', 'decision_reason')
    op.drop_column('verifications', 'decided_by')
