"""kind_checks: every closed-set kind/type column refuses a value its enum does not have (issue 29 item 1)

As 0022_status_checks did for the status columns: transactions.type (payments.state.TransactionType),
transactions.kind (TransactionKind), internal_accounts.type (accounts.state.InternalAccountType) and
agent_actions.type (agents.state.ActionType) and ledger_accounts.kind (ledger.state.LedgerAccountKind, LOSS
included) get `CHECK (column IN (...))`, named `ck_<table>_known_<column>` as the models declare it
(platpay.db.base.check_in). The values are frozen here as they are at this revision.

Before adding them the upgrade looks for rows that would violate one and stops, naming them, if any does.
On SQLite each table is rebuilt the way 0022 rebuilds them (its docstring says why, and why the foreign keys
are deferred meanwhile).

Revision ID: 0023_kind_checks
Revises: 0022_status_checks
Create Date: 2026-11-29 02:05:00.000000
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0023_kind_checks'
down_revision: str | None = '0022_status_checks'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, the values it may hold)
_CHECKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
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
_SCRATCH = '_0023_rows'


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
            'rows hold kinds/types platpay does not know; correct them, then migrate again: ' + ', '.join(unknown)
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
