"""card version: what a card authorization decides on, versioned

`cards.version` is bumped by every change a card authorization decides on: its state, its
maxSpendPerTransaction and its funding sources (cards/service.py, cards/repository.py). An authorization's
fast path reads the card without locking it and decides at once; the statement that sends its writes locks
the card FOR SHARE and expects the version it read (db/lean.py's `expect`), so a change committed meanwhile
sends it to the careful attempt, which decides again under the card's lock.

Revision ID: 0028_card_version
Revises: 0027_expect
Create Date: 2026-11-29 18:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0028_card_version'
down_revision: str | None = '0027_expect'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # (a plain ADD COLUMN on SQLite too: a batch would recreate `cards`, which other tables reference)
    op.add_column('cards', sa.Column('version', sa.BigInteger(), server_default=sa.text('0'), nullable=False))


def downgrade() -> None:
    op.drop_column('cards', 'version')
