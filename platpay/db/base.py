"""Declarative base with a naming convention so that migrations name constraints identically everywhere."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from sqlalchemy import MetaData, Table
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
