"""cardusd: a card transaction records what the network asked for (an authorization in another currency than the card's)

`requested_amount` and `requested_currency`: the authorization's amount in the currency the network sent it
in (USD on a USDB card), beside `authorized_amount` in the card's currency; its clearings and returns are
sent in that currency too.

Existing rows: until this revision an authorization was approved only in the card's own currency, so
requested = authorized in the card's currency (`requested_amount = authorized_amount`,
`requested_currency = currency`), which keeps their clearings and returns in the units they always had. (A
CURRENCY_MISMATCH decline recorded before it kept the request's number but not its currency: it cannot be
told apart and is backfilled the same way.)

Revision ID: 0015_cardusd
Revises: 0014_customer_accounts_by_type
Create Date: 2026-11-27 09:00:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0015_cardusd'
down_revision: str | None = '0014_customer_accounts_by_type'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CARD_TRANSACTIONS = sa.table(
    "card_transactions",
    sa.column("authorized_amount", sa.BigInteger()),
    sa.column("currency", sa.String(8)),
    sa.column("requested_amount", sa.BigInteger()),
    sa.column("requested_currency", sa.String(8)),
)


def upgrade() -> None:
    with op.batch_alter_table('card_transactions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('requested_amount', sa.BigInteger(), nullable=True))
        batch_op.add_column(sa.Column('requested_currency', sa.String(length=8), nullable=True))
    op.execute(
        _CARD_TRANSACTIONS.update().values(
            requested_amount=_CARD_TRANSACTIONS.c.authorized_amount,
            requested_currency=_CARD_TRANSACTIONS.c.currency,
        )
    )
    with op.batch_alter_table('card_transactions', schema=None) as batch_op:
        batch_op.alter_column('requested_amount', existing_type=sa.BigInteger(), nullable=False)
        batch_op.alter_column('requested_currency', existing_type=sa.String(length=8), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('card_transactions', schema=None) as batch_op:
        batch_op.drop_column('requested_currency')
        batch_op.drop_column('requested_amount')
