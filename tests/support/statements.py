"""Counting the SQL statements a piece of code runs, to show that a read costs a fixed number of them however
many rows it returns (no query per row).

    with count_statements(db) as statements:
        await service.read(session, ...)
    assert statements.count == 2

It listens to the engine's `before_cursor_execute` (every statement SQLAlchemy sends through a session or a
connection of `db`, on both backends); lean statements (db/lean.py) run on the raw driver connection and are
not seen, which is fine for reads: none is lean.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import event

from platpay.db.database import Database


@dataclass
class Statements:
    sql: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.sql)


@contextmanager
def count_statements(db: Database) -> Iterator[Statements]:
    seen = Statements()
    engine = db.engine.sync_engine

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        # SQLite's transaction control (BEGIN via the on_begin hook) is not a statement of the read.
        if not statement.lstrip().upper().startswith(("BEGIN", "SAVEPOINT", "RELEASE", "ROLLBACK")):
            seen.sql.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", record)
