"""watch: notifications of committed changes to the tables a process keeps rows of

Each process keeps the credential every request authenticates with (an API token or an agent's access
token, with its tenant, platform and sandbox clock) while it listens on the channel `platpay_credentials` (platpay/db/watch.py).
A statement-level trigger on each of those tables sends a notification on the channel; PostgreSQL delivers
it when the transaction commits (once per transaction and channel), and each listening process then drops
what it kept. The tables and the channel are platpay.db.watch.CHANNELS (tests/db/test_watch.py checks that
they match).

SQLite has no notifications and keeps nothing, so it needs no trigger.

Revision ID: 0029_watch
Revises: 0028_card_version
Create Date: 2026-11-29 20:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0029_watch'
down_revision: str | None = '0028_card_version'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Fixed here (not imported): a migration stays what it was when it ran.
_TABLES = ('api_tokens', 'agents', 'tenants', 'platforms', 'sandbox_clocks')

_FUNCTION = """
CREATE OR REPLACE FUNCTION platpay_credentials_changed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('platpay_credentials', '');
    RETURN NULL;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    op.execute(_FUNCTION)
    for table in _TABLES:
        op.execute(
            f'CREATE TRIGGER platpay_credentials_changed AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE '
            f'ON {table} FOR EACH STATEMENT EXECUTE FUNCTION platpay_credentials_changed()'
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != 'postgresql':
        return
    for table in _TABLES:
        op.execute(f'DROP TRIGGER IF EXISTS platpay_credentials_changed ON {table}')
    op.execute('DROP FUNCTION IF EXISTS platpay_credentials_changed()')
