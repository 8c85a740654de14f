"""Declarative base with a naming convention so that migrations name constraints identically everywhere."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, ClassVar

from sqlalchemy import CheckConstraint, MetaData, Table
from sqlalchemy.orm import DeclarativeBase

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    if TYPE_CHECKING:
        # Every model is declared with columns (never with a selectable), so its `__table__` is a Table:
        # `Row.__table__.insert()` and `.c` type-check (SQLAlchemy types it as any FromClause).
        __table__: ClassVar[Table]


def check_in(column: str, values: type[StrEnum]) -> CheckConstraint:
    """`CHECK (column IN ('A', 'B', ...))` over the members of `values`, named `ck_<table>_known_<column>`:
    the database refuses a status the code does not know, whichever way it is written (a lean statement, a
    migration, a hand-typed UPDATE)."""
    return CheckConstraint(in_list(column, values), name=f"known_{column}")


def in_list(column: str, values: type[StrEnum]) -> str:
    """The condition of `check_in`, as its migration adds it: `column IN ('A', 'B', ...)`, members in order."""
    if any("'" in member.value for member in values):
        raise ValueError(f"{values.__name__}: a value with a quote cannot go into a CHECK")
    quoted = ", ".join(f"'{member.value}'" for member in values)
    return f"{column} IN ({quoted})"
