"""Platform fees (the August 2026 reference's feeConfigs and platformFeeOverride)

tenants: `fee_configs` (PlatformConfig.feeConfigs as stored: a JSON list of {feeType, sourceCurrency,
variableFeeBps, fixedFee: {amount, currency}}); NULL for every existing tenant, which has none.

quotes: `platform_fee` (the platform-collected fee in minor units of the sending currency, part of
feesIncluded), 0 for every existing quote (there were no platform fees); `platform_fee_entry_id`, the ledger
entry that moved a completed payment's fee into the platform's internal account (NULL until then).

Revision ID: 0020_fees
Revises: 0019_cust28
Create Date: 2026-11-28 22:00:00.000000
"""
from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

import platpay.db.types

revision: str = '0020_fees'
down_revision: str | None = '0019_cust28'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain ADD COLUMNs (not batch copies: SQLite's foreign keys refuse dropping `tenants`, see 0019); the
    # server default fills existing quotes.
    op.add_column('tenants', sa.Column('fee_configs', platpay.db.types.JsonType, nullable=True))
    op.add_column(
        'quotes', sa.Column('platform_fee', sa.BigInteger(), server_default=sa.text('0'), nullable=False)
    )
    op.add_column('quotes', sa.Column('platform_fee_entry_id', platpay.db.types.IdColumn(), nullable=True))


def downgrade() -> None:
    for table, column in (
        ('quotes', 'platform_fee_entry_id'),
        ('quotes', 'platform_fee'),
        ('tenants', 'fee_configs'),
    ):
        op.execute(f'ALTER TABLE {table} DROP COLUMN {column}')
