"""Portable column types: aware UTC timestamps, JSON (JSONB on PostgreSQL), string ids."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator


class UtcDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC in and out on every backend.

    SQLite has no timezone-aware type and hands back naive values; storing naive UTC in its fixed-width
    text format keeps ordering and comparisons right, and we re-attach UTC on the way out.

    The processors are built once per dialect (`bind_processor`, `result_processor`) rather than through
    TypeDecorator's generic wrapper, which called `process_bind_param(value, dialect)` for every value and
    converted values already in UTC anew: a money request binds ~30 timestamps and reads ~10.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Callable[[datetime | None], Any]:
        to_utc = _naive_utc if dialect.name == "sqlite" else _aware_utc
        inner = self.impl_instance.bind_processor(dialect)
        if inner is None:
            return to_utc
        return lambda value: inner(to_utc(value))

    def result_processor(self, dialect: Dialect, coltype: object) -> Callable[[Any], datetime | None]:
        inner = self.impl_instance.result_processor(dialect, coltype)
        if inner is None:
            return _as_utc
        return lambda value: _as_utc(inner(value))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return _naive_utc(value) if dialect.name == "sqlite" else _aware_utc(value)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return _as_utc(value)


def _aware_utc(value: datetime | None) -> datetime | None:
    """A bound timestamp in UTC (refusing a naive one: its zone is unknown)."""
    if value is not None and value.tzinfo is None:
        raise ValueError(f"naive datetime {value!r}: use platpay.kit.clock")
    return _as_utc(value)


def _naive_utc(value: datetime | None) -> datetime | None:
    """SQLite's bound timestamp: UTC without its zone."""
    aware = _aware_utc(value)
    return None if aware is None else aware.replace(tzinfo=None)


def _as_utc(value: datetime | None) -> datetime | None:
    """A timestamp read back, in UTC (SQLite's naive values are UTC)."""
    if value is None:
        return None
    zone = value.tzinfo
    if zone is UTC:
        return value
    if zone is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


JsonType = JSON().with_variant(JSONB(), "postgresql")


def IdColumn() -> Any:
    return String(64)
