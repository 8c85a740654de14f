"""agent_token_first_use: when an agent's token first authenticated a request (the audit trail's TOKEN_FIRST_USED record)

Revision ID: 0013_agent_token_first_use
Revises: 0012_agent_audit
Create Date: 2026-11-26 05:50:00.000000

Existing tokens start unmarked: their next request records TOKEN_FIRST_USED (the trail cannot know of uses
before this column existed).
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0013_agent_token_first_use'
down_revision: str | None = '0012_agent_audit'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('token_first_used_at', platpay.db.types.UtcDateTime(timezone=True), nullable=True)
        )


def downgrade() -> None:
    with op.batch_alter_table('agents', schema=None) as batch_op:
        batch_op.drop_column('token_first_used_at')
