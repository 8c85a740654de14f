"""Read replicas' small parts that need no standby (the routing itself: tests/e2e/test_read_replica.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from platpay.config import Settings
from platpay.db.replica import SLOTS, RecentWrites, parse_lsn


def test_who_wrote_when_is_shared_through_the_file_by_every_process_of_the_machine(tmp_path: Path) -> None:
    path = tmp_path / "var" / "replica-writes.bin"
    serving, other = RecentWrites(path), RecentWrites(path)  # two processes map one file
    assert other.last("tenant-a") == 0
    serving.wrote("tenant-a", 1_000)
    assert other.last("tenant-a") == 1_000
    other.wrote("tenant-a", 500)  # a slot only grows: an older commit never hides a newer one
    assert serving.last("tenant-a") == 1_000
    assert path.stat().st_size == SLOTS * 8
    assert RecentWrites(path).last("tenant-a") == 1_000  # a process started later sees it too


def test_without_a_file_the_record_is_the_process_own() -> None:
    writes = RecentWrites()
    writes.wrote("tenant-b")
    assert writes.last("tenant-b") > 0
    assert RecentWrites().last("tenant-b") == 0


def test_an_lsn_reads_as_postgresql_orders_them() -> None:
    assert parse_lsn("0/3000148") == 0x3000148
    assert parse_lsn("1/0") > parse_lsn("0/FFFFFFFF")


def test_a_read_url_needs_postgresql_on_both_sides() -> None:
    with pytest.raises(ValidationError, match="needs a PostgreSQL PLATPAY_DATABASE_URL"):
        Settings(database_url="sqlite+aiosqlite:///x.db", database_read_url="postgresql+asyncpg://u@h/db")
    with pytest.raises(ValidationError, match="PostgreSQL standby"):
        Settings(database_url="postgresql+asyncpg://u@h/db", database_read_url="sqlite+aiosqlite:///x.db")
    settings = Settings(database_url="postgresql+asyncpg://u@h/db", database_read_url="")
    assert settings.database_read_url is None
