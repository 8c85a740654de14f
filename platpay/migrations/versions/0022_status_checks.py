"""status_checks: every status column, and every closed-set kind/type column, refuses a value its enum does not have
(each is a StrEnum in its domain's state.py)

Each status/state column, and transactions.type and .kind, internal_accounts.type, agent_actions.type and
ledger_accounts.kind, gets `CHECK (column IN (...))`, named `ck_<table>_known_<column>` as the models
declare it (platpay.db.base.check_in); ledger_holds.status and postings.bucket had theirs already. The values
are frozen here as they are at this revision (a later enum change brings its own migration).

Before adding them the upgrade looks for rows that would violate one and stops, naming them, if any does:
every value platpay ever wrote is in these lists, so a violation is data written by hand.

SQLite cannot add a constraint to a table: the table is rebuilt. Not with batch mode, whose copy-drop-rename
breaks on the tables other ones reference (customers, transactions, cards, ...: 0018 and 0019 say why);
here the rows go to a scratch copy, the table is dropped and created again under its own name with the
CHECKs, and the rows come back. The foreign keys are deferred meanwhile: the drop counts a violation for each
row referencing the table, and each row put back cancels its own, so at COMMIT nothing is left over.

Revision ID: 0022_status_checks
Revises: 0021_txn
Create Date: 2026-11-29 01:30:00.000000
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0022_status_checks'
down_revision: str | None = '0021_txn'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, the values it may hold)
_CHECKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ('agent_actions', 'status', ('PENDING_APPROVAL', 'APPROVED', 'REJECTED', 'FAILED')),
    ('auth_credentials', 'status', ('UNVERIFIED', 'VERIFIED', 'REVOKED')),
    ('beneficial_owners', 'kyc_status', ('PENDING', 'APPROVED', 'REJECTED')),
    ('card_refunds', 'status', ('COMPLETED', 'REVERSED')),
    (
        'card_transactions',
        'status',
        ('AUTHORIZED', 'PARTIALLY_SETTLED', 'SETTLED', 'REFUNDED', 'EXCEPTION', 'DECLINED', 'EXPIRED'),
    ),
    ('cards', 'state', ('PENDING_ISSUE', 'ACTIVE', 'FROZEN', 'CLOSED')),
    ('customer_import_jobs', 'status', ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED')),
    ('customers', 'kyc_status', ('UNVERIFIED', 'PENDING', 'APPROVED', 'REJECTED', 'HOLD')),
    (
        'external_accounts',
        'beneficiary_verification_status',
        ('MATCHED', 'PARTIAL_MATCH', 'NOT_MATCHED', 'UNSUPPORTED', 'CHECKED_BY_RECEIVING_FI', 'PENDING'),
    ),
    (
        'external_accounts',
        'status',
        ('PENDING', 'ACTIVE', 'PENDING_OWNERSHIP_VERIFICATION', 'UNVERIFIED', 'UNDER_REVIEW', 'INACTIVE'),
    ),
    ('internal_accounts', 'status', ('PENDING', 'ACTIVE', 'FROZEN', 'CLOSED', 'FAILED')),
    ('invitations', 'status', ('PENDING', 'CLAIMED', 'CANCELLED', 'EXPIRED')),
    ('jobs', 'state', ('QUEUED', 'RUNNING', 'DONE', 'DEAD')),
    ('messages', 'status', ('QUEUED', 'SENT', 'FAILED')),
    ('quotes', 'status', ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED')),
    ('transactions', 'approval_state', ('AWAITING_REPLY', 'AWAITING_DECISION', 'APPROVED', 'DONE')),
    ('transactions', 'status', ('PENDING', 'PROCESSING', 'COMPLETED', 'FAILED', 'EXPIRED')),
    (
        'verifications',
        'status',
        (
            'RESOLVE_ERRORS',
            'IN_PROGRESS',
            'PENDING_MANUAL_REVIEW',
            'APPROVED',
            'REJECTED',
            'READY_FOR_VERIFICATION',
        ),
    ),
    ('webhook_deliveries', 'status', ('PENDING', 'DELIVERED', 'FAILED')),
    ('webhook_endpoints', 'status', ('ACTIVE', 'FAILING')),
    # kinds and types: closed sets too
    ('agent_actions', 'type', ('EXECUTE_QUOTE', 'TRANSFER_OUT', 'TRANSFER_IN')),
    ('internal_accounts', 'type', ('INTERNAL_FIAT', 'INTERNAL_CRYPTO', 'EMBEDDED_WALLET')),
    (
        'ledger_accounts',
        'kind',
        ('INTERNAL', 'CLEARING', 'FX', 'FEES', 'SANDBOX_FUNDING', 'PLATFORM_FEES', 'LOSS'),
    ),
    (
        'transactions',
        'kind',
        ('TRANSFER_OUT', 'TRANSFER_IN', 'QUOTE', 'UMA_INCOMING', 'INTERNAL_INCOMING'),
    ),
    ('transactions', 'type', ('OUTGOING', 'INCOMING')),
)
_SCRATCH = '_0022_rows'


def _name(table: str, column: str) -> str:
    return f'ck_{table}_known_{column}'


def _condition(column: str, values: tuple[str, ...]) -> str:
    quoted = ', '.join(f"'{value}'" for value in values)
    return f'{column} IN ({quoted})'


def _by_table() -> dict[str, list[tuple[str, str]]]:
    """table -> [(constraint name, condition)], in _CHECKS order."""
    tables: dict[str, list[tuple[str, str]]] = {}
    for table, column, values in _CHECKS:
        tables.setdefault(table, []).append((_name(table, column), _condition(column, values)))
    return tables


def _refuse_unknown_values(connection: sa.Connection) -> None:
    unknown = []
    for table, column, values in _CHECKS:
        found = connection.execute(
            sa.select(sa.column(column))
            .distinct()
            .select_from(sa.table(table, sa.column(column)))
            .where(sa.column(column).is_not(None), sa.column(column).not_in(values))
        ).scalars().all()
        unknown += [f'{table}.{column} = {value!r}' for value in found]
    if unknown:
        raise RuntimeError(
            'rows hold statuses or kinds platpay does not know; correct them, then migrate again: ' + ', '.join(unknown)
        )


def _rebuild_sqlite_table(connection: sa.Connection, table: str, create_sql: str) -> None:
    """`table` created again by `create_sql`, with its rows and indexes (foreign keys deferred: see above)."""
    indexes = connection.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND sql IS NOT NULL", (table,)
    ).scalars().all()
    # table names of _CHECKS, not input
    connection.exec_driver_sql(f'CREATE TABLE {_SCRATCH} AS SELECT * FROM {table}')  # noqa: S608
    connection.exec_driver_sql(f'DROP TABLE {table}')
    connection.exec_driver_sql(create_sql)
    connection.exec_driver_sql(f'INSERT INTO {table} SELECT * FROM {_SCRATCH}')  # noqa: S608
    connection.exec_driver_sql(f'DROP TABLE {_SCRATCH}')
    for index in indexes:
        connection.exec_driver_sql(index)


def _sqlite_create_sql(connection: sa.Connection, table: str) -> str:
    return connection.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
    ).scalar_one()


def _on_sqlite(connection: sa.Connection, change: Callable[[str, list[tuple[str, str]]], str]) -> None:
    """Every table of _CHECKS rebuilt from `change(its CREATE TABLE, its checks)`."""
    deferred = connection.exec_driver_sql('PRAGMA defer_foreign_keys').scalar()
    connection.exec_driver_sql('PRAGMA defer_foreign_keys = ON')
    for table, checks in _by_table().items():
        _rebuild_sqlite_table(connection, table, change(_sqlite_create_sql(connection, table), checks))
    connection.exec_driver_sql(f'PRAGMA defer_foreign_keys = {"ON" if deferred else "OFF"}')


def _with_checks(create_sql: str, checks: list[tuple[str, str]]) -> str:
    body = create_sql.rstrip()
    assert body.endswith(')'), create_sql
    added = ''.join(f', \n\tCONSTRAINT {name} CHECK ({condition})' for name, condition in checks)
    return f'{body[:-1].rstrip()}{added}\n)'


def _without_checks(create_sql: str, checks: list[tuple[str, str]]) -> str:
    for name, condition in checks:
        create_sql = re.sub(
            rf',\s*CONSTRAINT "?{name}"? CHECK \({re.escape(condition)}\)', '', create_sql, count=1
        )
    return create_sql


def upgrade() -> None:
    connection = op.get_bind()
    _refuse_unknown_values(connection)
    if connection.dialect.name == 'sqlite':
        _on_sqlite(connection, _with_checks)
        return
    for table, checks in _by_table().items():
        for name, condition in checks:
            op.create_check_constraint(op.f(name), table, condition)


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name == 'sqlite':
        _on_sqlite(connection, _without_checks)
        return
    for table, checks in _by_table().items():
        for name, _ in checks:
            op.drop_constraint(op.f(name), table, type_='check')
