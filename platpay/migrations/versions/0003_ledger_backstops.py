"""ledger backstops: CHECK constraints on postings and balances

The database refuses what the ledger code never writes: a zero posting, a posting to a bucket other than
AVAILABLE or HELD, a negative bucket on an account that may not go negative, and an internal account that
may. Existing rows must already satisfy them (`platpay ledger verify` reports any that do not). PostgreSQL
adds them with ALTER TABLE (one scan of each table); SQLite recreates both tables (batch mode).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-02 09:00:00.000000
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from alembic import op

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

@contextmanager
def _postings_set_aside() -> Iterator[None]:
    """SQLite's batch mode recreates ledger_accounts (copy, drop, rename), and with foreign keys on, the
    drop fails while postings reference it (PRAGMA foreign_keys cannot change inside the migration's
    transaction). The postings wait in a scratch table meanwhile; on their way back every row is checked
    again (foreign keys and, after the upgrade, the new constraints)."""
    sqlite = op.get_bind().dialect.name == 'sqlite'
    if sqlite:
        op.execute('CREATE TEMP TABLE postings_0003 AS SELECT * FROM postings')
        op.execute('DELETE FROM postings')
    yield
    if sqlite:
        op.execute(
            'INSERT INTO postings (id, entry_id, account_id, tenant_id, currency, bucket, amount, created_at) '
            'SELECT id, entry_id, account_id, tenant_id, currency, bucket, amount, created_at '
            'FROM temp.postings_0003'
        )
        op.execute('DROP TABLE temp.postings_0003')


def upgrade() -> None:
    with _postings_set_aside():
        with op.batch_alter_table('ledger_accounts', schema=None) as batch_op:
            batch_op.create_check_constraint(
                op.f('ck_ledger_accounts_non_negative'), 'allow_negative OR (available >= 0 AND held >= 0)'
            )
            batch_op.create_check_constraint(
                op.f('ck_ledger_accounts_internal_never_negative'), "kind <> 'INTERNAL' OR NOT allow_negative"
            )

        with op.batch_alter_table('postings', schema=None) as batch_op:
            batch_op.create_check_constraint(op.f('ck_postings_nonzero_amount'), 'amount <> 0')
            batch_op.create_check_constraint(
                op.f('ck_postings_known_bucket'), "bucket IN ('AVAILABLE', 'HELD')"
            )


def downgrade() -> None:
    with _postings_set_aside():
        with op.batch_alter_table('postings', schema=None) as batch_op:
            batch_op.drop_constraint(op.f('ck_postings_known_bucket'), type_='check')
            batch_op.drop_constraint(op.f('ck_postings_nonzero_amount'), type_='check')

        with op.batch_alter_table('ledger_accounts', schema=None) as batch_op:
            batch_op.drop_constraint(op.f('ck_ledger_accounts_internal_never_negative'), type_='check')
            batch_op.drop_constraint(op.f('ck_ledger_accounts_non_negative'), type_='check')
