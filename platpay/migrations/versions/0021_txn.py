"""txn: transactions as the reference has them since 2026-08 (direction, the CARD variant, cancellation)

transactions gain `direction` (CREDIT | DEBIT, from the customer's internal account's point of view),
`pending_reason`, the outgoing rail fields (`rail_selection_mode`, `expected_settlement_at`,
`settlement_timeline_seconds`; `paymentRail` is the existing `rail`), `remittance_information`,
`purpose_of_payment` and `cancel_reason`. card_transactions gain their cardholder (`customer_id`,
`platform_customer_id`), since GET /transactions lists and filters them beside the others. Both tables get a
(tenant_id, created_at, id) index: the list pages newest first by creation time, each table read through
it.

Backfill of existing rows:
- direction: OUTGOING rows DEBIT, INCOMING rows CREDIT (every incoming flow platpay had credits the internal
  account);
- the fields that moved up to every transaction (sentAmount, exchangeRate): a same-currency transfer-in sent
  what it received; an incoming payment between two customers of the platform takes its paying
  transaction's sentAmount and exchangeRate (same quote);
- purposeOfPayment: out of `extra`, where quotes kept it;
- rail_selection_mode: AUTO where an outgoing row has a rail (whether its request named the rail was never
  recorded: its destination keeps the rail resolved either way);
- card transactions: their card's cardholder and that customer's platformCustomerId.

Revision ID: 0021_txn
Revises: 0020_fees
Create Date: 2026-11-28 22:00:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0021_txn'
down_revision: str | None = '0020_fees'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_TX = sa.table(
    'transactions',
    *(
        sa.column(name)
        for name in (
            'id',
            'type',
            'kind',
            'direction',
            'quote_id',
            'rail',
            'rail_selection_mode',
            'sent_amount',
            'sent_currency',
            'received_amount',
            'received_currency',
            'exchange_rate',
        )
    ),
    sa.column('extra', sa.JSON),
    sa.column('purpose_of_payment'),
)
_CARD_TX = sa.table(
    'card_transactions', sa.column('id'), sa.column('card_id'), sa.column('customer_id'),
    sa.column('platform_customer_id'),
)
_CARDS = sa.table('cards', sa.column('id'), sa.column('cardholder_id'))
_CUSTOMERS = sa.table('customers', sa.column('id'), sa.column('platform_customer_id'))


def upgrade() -> None:
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.add_column(sa.Column('direction', sa.String(length=6), nullable=True))
        batch_op.add_column(sa.Column('pending_reason', sa.String(length=40), nullable=True))
        batch_op.add_column(sa.Column('rail_selection_mode', sa.String(length=8), nullable=True))
        batch_op.add_column(sa.Column('expected_settlement_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(sa.Column('settlement_timeline_seconds', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('remittance_information', sa.String(length=80), nullable=True))
        batch_op.add_column(sa.Column('purpose_of_payment', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('cancel_reason', sa.String(length=255), nullable=True))
        batch_op.create_index(
            'ix_transactions_tenant_created', ['tenant_id', 'created_at', 'id'], unique=False
        )
    # Plain ADD COLUMN, not batch mode, on card_transactions: SQLite's batch recreates the table, and its drop
    # fails while card_refunds reference its rows (as in 0018). customer_id comes NOT NULL with a default for
    # the rows already there, each backfilled below.
    op.add_column(
        'card_transactions',
        sa.Column('customer_id', sa.String(length=64), nullable=False, server_default=''),
    )
    op.add_column('card_transactions', sa.Column('platform_customer_id', sa.String(length=255), nullable=True))
    op.create_index(
        'ix_card_transactions_tenant_created', 'card_transactions', ['tenant_id', 'created_at', 'id'], unique=False
    )
    connection = op.get_bind()
    connection.execute(
        _TX.update()
        .values(direction=sa.case((_TX.c.type == 'OUTGOING', 'DEBIT'), else_='CREDIT'))
    )
    connection.execute(
        _TX.update()
        .where(_TX.c.kind == 'TRANSFER_IN', _TX.c.sent_amount.is_(None))
        .values(sent_amount=_TX.c.received_amount, sent_currency=_TX.c.received_currency)
    )
    paying = _TX.alias('paying')
    for column in ('sent_amount', 'sent_currency', 'exchange_rate'):
        connection.execute(
            _TX.update()
            .where(_TX.c.type == 'INCOMING', _TX.c.quote_id.is_not(None), _TX.c[column].is_(None))
            .values(
                {
                    column: sa.select(paying.c[column])
                    .where(paying.c.quote_id == _TX.c.quote_id, paying.c.type == 'OUTGOING')
                    .limit(1)
                    .scalar_subquery()
                }
            )
        )
    # whether a request named its rail was never recorded (the destination keeps the rail resolved either way)
    connection.execute(
        _TX.update().where(_TX.c.type == 'OUTGOING', _TX.c.rail.is_not(None)).values(rail_selection_mode='AUTO')
    )
    quotes = connection.execute(sa.select(_TX.c.id, _TX.c.extra).where(_TX.c.kind == 'QUOTE')).all()
    for row_id, extra in quotes:  # quotes kept purposeOfPayment in extra
        purpose = (extra or {}).get('purposeOfPayment')
        if purpose:
            connection.execute(_TX.update().where(_TX.c.id == row_id).values(purpose_of_payment=purpose))
    connection.execute(
        _CARD_TX.update().values(
            customer_id=sa.select(_CARDS.c.cardholder_id)
            .where(_CARDS.c.id == _CARD_TX.c.card_id)
            .scalar_subquery()
        )
    )
    connection.execute(
        _CARD_TX.update().values(
            platform_customer_id=sa.select(_CUSTOMERS.c.platform_customer_id)
            .where(_CUSTOMERS.c.id == _CARD_TX.c.customer_id)
            .scalar_subquery()
        )
    )
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.alter_column('direction', existing_type=sa.String(length=6), nullable=False)
    if connection.dialect.name == 'postgresql':  # (SQLite keeps the default: it has no ALTER … DROP DEFAULT)
        op.alter_column('card_transactions', 'customer_id', server_default=None)


def downgrade() -> None:
    op.drop_index('ix_card_transactions_tenant_created', table_name='card_transactions')
    op.drop_column('card_transactions', 'platform_customer_id')
    op.drop_column('card_transactions', 'customer_id')
    with op.batch_alter_table('transactions', schema=None) as batch_op:
        batch_op.drop_index('ix_transactions_tenant_created')
        batch_op.drop_column('cancel_reason')
        batch_op.drop_column('purpose_of_payment')
        batch_op.drop_column('remittance_information')
        batch_op.drop_column('settlement_timeline_seconds')
        batch_op.drop_column('expected_settlement_at')
        batch_op.drop_column('rail_selection_mode')
        batch_op.drop_column('pending_reason')
        batch_op.drop_column('direction')
