"""Statements whose spelling differs between SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import JSON, any_, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncSession
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.elements import ColumnElement
from sqlalchemy.sql.visitors import InternalTraversal

from platpay.db.lean import Lean


def insert_ignore(session: AsyncSession, table: Any, values: dict[str, Any] | list[dict[str, Any]]) -> Any:
    """INSERT … ON CONFLICT DO NOTHING for the session's dialect."""
    dialect = session.bind.dialect.name if session.bind is not None else "sqlite"
    module = postgresql if dialect == "postgresql" else sqlite
    return module.insert(table).values(values).on_conflict_do_nothing()


async def insert_ignore_many(
    executor: AsyncSession | AsyncConnection, table: Any, rows: list[dict[str, Any]]
) -> None:
    """INSERT … ON CONFLICT DO NOTHING of many rows as one executemany of one cached statement, in a session
    or on a connection of its own. (A multi-row VALUES has bind parameters in proportion to the rows: it is
    compiled anew every time, which costs more than the insert, and asyncpg refuses it past 32767
    parameters.)"""
    if rows:
        if isinstance(executor, AsyncConnection):
            dialect = executor.dialect.name
        else:
            dialect = executor.bind.dialect.name if executor.bind is not None else "sqlite"
        module = postgresql if dialect == "postgresql" else sqlite
        await executor.execute(module.insert(table).on_conflict_do_nothing(), rows)


def lean_insert_ignore(table: Any) -> Lean:
    """A lean INSERT … ON CONFLICT DO NOTHING of one row, for either dialect, returning the primary key of
    the row when it was inserted (no row when it was ignored)."""
    primary_key = tuple(table.primary_key.columns)
    return Lean(
        sqlite.insert(table).on_conflict_do_nothing().returning(*primary_key),
        dialects={"postgresql": postgresql.insert(table).on_conflict_do_nothing().returning(*primary_key)},
    )


class _Unindexed(ColumnElement[Any]):
    """`column` as an operand that no index serves: on SQLite the unary `+`, a no-op on the value that takes
    the column out of the planner's choice of index; elsewhere the column itself."""

    inherit_cache = True
    _traverse_internals = [("column", InternalTraversal.dp_clauseelement)]

    def __init__(self, column: Any) -> None:
        self.column = column
        self.type = column.type


@compiles(_Unindexed)
def _column_itself(element: _Unindexed, compiler: Any, **kw: Any) -> str:
    return str(compiler.process(element.column, **kw))


@compiles(_Unindexed, "sqlite")
def _column_plus(element: _Unindexed, compiler: Any, **kw: Any) -> str:
    return "+" + str(compiler.process(element.column, **kw))


def only_if(column: Any, value: Any) -> Any:
    """`column` equal to `value` (neither NULL) as a condition the rows a statement finds by their keys must
    also meet, never one that finds them: PostgreSQL uses no index for IS NOT DISTINCT FROM, and SQLite none
    for `+column IS value` (its plain IS, as its =, may use one). A plain equality on a column with an index
    of its own (the tenant, a job's state or lease) beside a list of keys (`lean_in`, an IN list) let the
    planner read that index and filter the keys out of what it found. PostgreSQL with no statistics (a fresh
    database, autovacuum off), or one tenant's thousands of rows among many tenants', judged the tenant's
    rows or the running jobs fewer than the keys' ten, and every read of a batch of settlement steps read
    every transaction of the tenant (18 ms for one, against 0.35 ms by its key: bench/README.md). SQLite,
    which keeps no statistics, always prefers such an index to a list read by json_each: the lease of a
    claim's 256 webhook jobs read every queued job of the lane, and the bound list once for each (0.7 s with
    20,000 queued, against 4 ms by their ids), on the event loop of the process serving requests."""
    return _Unindexed(column).is_not_distinct_from(value)


def lean_in(build: Callable[[Any], Any], column: Any, name: str) -> Lean:
    """A Lean of `build(condition)`, `condition` being `column IN` the list bound as `name`, of any length
    (a Lean is compiled once: an expanding IN would be compiled anew for every length): PostgreSQL binds
    the list as an array (`column = ANY(:name)`), SQLite as a JSON array read by json_each. The other
    conditions of a statement that finds its rows by such a list are `only_if`'s."""
    as_json = func.json_each(bindparam(name, type_=JSON)).table_valued("value")
    return Lean(
        build(column.in_(select(as_json.c.value))),
        dialects={"postgresql": build(column == any_(bindparam(name, type_=postgresql.ARRAY(column.type))))},
    )
