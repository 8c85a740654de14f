"""expect: the server-side check that lets a money operation's writes go as one statement (PostgreSQL)

A lean transaction on PostgreSQL (platpay/db/lean.py) defers its writes and sends them together as one
statement of data-modifying CTEs. Some of them are conditional and their outcome decides whether the
operation stands: a balance's UPDATE that must find its row (it refuses to take an account below zero), an
expectation that the tenant's webhook endpoint is the one the operation scheduled deliveries to. The
statement ends with `SELECT platpay_expect(<every such condition>)`: false (or NULL) raises SQLSTATE PP001,
which aborts the whole statement, so none of its writes happen, and the operation runs again in an ORM
session that checks each condition as it goes (`Raced`, platpay/db/unit_of_work.py).

SQLite runs each statement in process as it comes and needs no such function.

Revision ID: 0027_expect
Revises: 0026_retention
Create Date: 2026-11-29 17:40:00.000000
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0027_expect'
down_revision: str | None = '0026_retention'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_CREATE = """
CREATE OR REPLACE FUNCTION platpay_expect(ok boolean) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'platpay: a deferred write found its rows changed; the operation runs again'
            USING ERRCODE = 'PP001';
    END IF;
    RETURN true;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute(_CREATE)


def downgrade() -> None:
    if op.get_bind().dialect.name == 'postgresql':
        op.execute('DROP FUNCTION IF EXISTS platpay_expect(boolean)')
