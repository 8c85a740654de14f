"""Credentials kept in the process while the database tells it of changes (platpay.db.watch). PostgreSQL:
answered without a statement, dropped at once by this process's own commits, by another connection's commit
when its notification arrives, and whenever the listening connection is lost. SQLite (a file): answered
after reading the file's change counter alone, dropped by any commit of any connection, seen by the very
next request."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from typing import Any

import asyncpg
import pytest

from platpay.auth import repository as auth_repository
from platpay.config import Settings
from platpay.db.database import Database
from platpay.db.watch import CHANNELS, MAX_ENTRIES, Listener, SqliteChanges
from tests.support.databases import PG_URL

# Longer than any test here: a change seen is a notification's (or this process's commit's) doing.
MAX_AGE = 300.0


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"credential_cache_seconds": MAX_AGE})


@pytest.fixture
def backend_is_pg(backend: str) -> None:
    if not PG_URL or backend != "postgresql":
        pytest.skip("notifications are PostgreSQL's (SQLite's counter: tested below)")


@pytest.fixture
def backend_is_sqlite(backend: str) -> None:
    if backend != "sqlite":
        pytest.skip("SQLite's change counter")


def _dsn() -> str:
    assert PG_URL is not None
    return PG_URL.replace("postgresql+asyncpg://", "postgresql://").split("?")[0]


class _Reads:
    """Counts the database reads of the credential query (the real reads run)."""

    def __init__(self, db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = db.fetch_first

        async def counted(query: Any, params: dict[str, Any]) -> Any:
            if query is auth_repository.CREDENTIAL:
                self.count += 1
            return await real(query, params)

        monkeypatch.setattr(db, "fetch_first", counted)


async def _listening(db: Database) -> Listener:
    listener = db.listener("platpay_credentials")
    assert listener is not None
    deadline = time.monotonic() + 10
    while not listener.live:
        assert time.monotonic() < deadline, "the listener never connected"
        await asyncio.sleep(0.01)
    return listener


async def _until(check: Any, seconds: float = 5.0) -> float:
    """Seconds until `await check()` is true (fails after `seconds`)."""
    started = time.monotonic()
    while not await check():
        assert time.monotonic() - started < seconds, "not seen in time"
        await asyncio.sleep(0.005)
    return time.monotonic() - started


async def test_every_table_of_a_channel_has_its_trigger(db: Database, backend_is_pg: None) -> None:
    conn = await asyncpg.connect(_dsn())
    try:
        rows = await conn.fetch(
            "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE t.tgname = 'platpay_credentials_changed' AND c.relnamespace = 'public'::regnamespace"
        )
    finally:
        await conn.close()
    assert sorted(row["relname"] for row in rows) == sorted(CHANNELS["platpay_credentials"])


async def test_a_kept_credential_answers_without_reading(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_pg: None
) -> None:
    await _listening(db)
    reads = _Reads(db, monkeypatch)
    for _ in range(5):
        assert (await client.get("/config", auth=auth)).status_code == 200
    assert reads.count == 1
    # the secret is still checked on every request
    assert (await client.get("/config", auth=(auth[0], auth[1] + "x"))).status_code == 401
    # an unknown client id is never kept: read each time
    for _ in range(2):
        assert (await client.get("/config", auth=("nobody", "x"))).status_code == 401
    assert reads.count == 3


async def test_a_token_deleted_through_this_process_stops_at_once(
    client: Any, auth: tuple[str, str], db: Database, backend_is_pg: None
) -> None:
    await _listening(db)
    created = (await client.post("/tokens", auth=auth, json={"name": "t", "permissions": ["VIEW"]})).json()
    creds = (created["clientId"], created["clientSecret"])
    assert (await client.get("/config", auth=creds)).status_code == 200  # now kept
    assert (await client.delete(f"/tokens/{created['id']}", auth=auth)).status_code == 204
    assert (await client.get("/config", auth=creds)).status_code == 401  # no wait for any notification


async def test_a_change_through_this_process_is_seen_by_the_next_request(
    client: Any, auth: tuple[str, str], db: Database, backend_is_pg: None
) -> None:
    await _listening(db)
    for domain in ("a.example.com", "b.example.com", "c.example.com"):
        assert (await client.patch("/config", auth=auth, json={"umaDomain": domain})).status_code == 200
        assert (await client.get("/config", auth=auth)).json()["umaDomain"] == domain


async def test_another_connections_commit_reaches_the_process_by_notification(
    client: Any, auth: tuple[str, str], db: Database, backend_is_pg: None
) -> None:
    listener = await _listening(db)
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert listener.entries  # kept
    other = await asyncpg.connect(_dsn())  # another process's commit, as far as this one can tell
    try:
        await other.execute("UPDATE api_tokens SET deleted_at = now() WHERE client_id = $1", auth[0])
    finally:
        await other.close()

    async def refused() -> bool:
        return (await client.get("/config", auth=auth)).status_code == 401

    assert await _until(refused) < MAX_AGE  # seen by notification, far before the age bound


async def test_a_read_that_raced_a_change_is_not_kept(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_pg: None
) -> None:
    listener = await _listening(db)
    real = db.fetch_first

    async def raced(query: Any, params: dict[str, Any]) -> Any:
        row = await real(query, params)
        listener.changed()  # a notification handled while the read was on its way back
        return row

    monkeypatch.setattr(db, "fetch_first", raced)
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert not listener.entries


async def test_losing_the_listening_connection_drops_everything_until_it_is_back(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_pg: None
) -> None:
    listener = await _listening(db)
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert listener.entries
    generation = listener.generation
    pid = listener._connection.get_server_pid()
    admin = await asyncpg.connect(_dsn())
    try:
        assert await admin.fetchval("SELECT pg_terminate_backend($1)", pid)
    finally:
        await admin.close()

    async def dropped() -> bool:
        return listener.generation > generation

    await _until(dropped)
    assert not listener.entries
    reads = _Reads(db, monkeypatch)
    await _listening(db)  # reconnected (a new connection, LISTEN again)
    assert listener._connection.get_server_pid() != pid
    for _ in range(3):
        assert (await client.get("/config", auth=auth)).status_code == 200
    assert reads.count == 1  # kept again


class _SlowReads:
    """The credential's reads, each held `delay` seconds before it runs (the real read), counted; the first
    `fail` of them raise instead of reading."""

    def __init__(self, db: Database, monkeypatch: pytest.MonkeyPatch, delay: float, fail: int = 0) -> None:
        self.count = 0
        real = db.fetch_first

        async def slow(query: Any, params: dict[str, Any]) -> Any:
            if query is auth_repository.CREDENTIAL:
                self.count += 1
                await asyncio.sleep(delay)
                if self.count <= fail:
                    raise ConnectionResetError("the read's connection was lost")
            return await real(query, params)

        monkeypatch.setattr(db, "fetch_first", slow)


async def test_requests_that_miss_at_once_share_one_read(
    db: Database, auth: tuple[str, str], monkeypatch: pytest.MonkeyPatch, backend_is_pg: None
) -> None:
    listener = await _listening(db)
    reads = _SlowReads(db, monkeypatch, delay=0.05)
    rows = await asyncio.gather(*(auth_repository.credential(db, auth[0]) for _ in range(20)))
    assert reads.count == 1
    assert all(row is not None and row == rows[0] for row in rows)
    assert not listener.pending
    # a key nothing matches is shared while in flight too, and not kept
    missing = await asyncio.gather(*(auth_repository.credential(db, "nobody") for _ in range(5)))
    assert missing == [None] * 5 and reads.count == 2


async def test_a_read_begun_before_a_change_is_not_shared_after_it(
    db: Database, auth: tuple[str, str], monkeypatch: pytest.MonkeyPatch, backend_is_pg: None
) -> None:
    listener = await _listening(db)
    reads = _SlowReads(db, monkeypatch, delay=0.05)
    first = asyncio.create_task(auth_repository.credential(db, auth[0]))
    await asyncio.sleep(0.01)  # the first read is on its way
    listener.changed()  # e.g. this process committed a change to a token
    second = asyncio.create_task(auth_repository.credential(db, auth[0]))
    await asyncio.gather(first, second)
    assert reads.count == 2


@pytest.mark.parametrize("ending", ["fails", "is cancelled"])
async def test_those_that_joined_a_read_that_ends_without_a_row_read_for_themselves(
    ending: str, db: Database, auth: tuple[str, str], monkeypatch: pytest.MonkeyPatch, backend_is_pg: None
) -> None:
    listener = await _listening(db)
    reads = _SlowReads(db, monkeypatch, delay=0.05, fail=1 if ending == "fails" else 0)
    first = asyncio.create_task(auth_repository.credential(db, auth[0]))
    await asyncio.sleep(0.01)  # the first read is on its way
    joined = [asyncio.create_task(auth_repository.credential(db, auth[0])) for _ in range(3)]
    await asyncio.sleep(0.01)
    if ending == "is cancelled":
        first.cancel()  # its client went away
    with pytest.raises(ConnectionResetError if ending == "fails" else asyncio.CancelledError):
        await first
    assert all(row is not None for row in await asyncio.gather(*joined))
    assert reads.count == 4 and not listener.pending


async def test_kept_rows_are_bounded(db: Database, auth: tuple[str, str], backend_is_pg: None) -> None:
    listener = await _listening(db)
    listener.entries.update({("x", n): (listener.generation, 0.0, ()) for n in range(MAX_ENTRIES)})
    assert await auth_repository.credential(db, "missing") is None
    assert len(listener.entries) == MAX_ENTRIES  # a miss is not kept
    assert await auth_repository.credential(db, auth[0]) is not None
    assert len(listener.entries) == 1  # full: emptied, then the new row kept


async def test_a_max_age_of_zero_and_an_in_memory_sqlite_keep_nothing(db: Database) -> None:
    off = Database(db.url, pool_size=1, watch_max_age=0)
    try:
        assert off.listener("platpay_credentials") is None
    finally:
        await off.dispose()
    memory = Database("sqlite+aiosqlite:///:memory:", pool_size=1, watch_max_age=MAX_AGE)
    try:
        assert memory.listener("platpay_credentials") is None
    finally:
        await memory.dispose()


# ---- SQLite: the file's change counter (PRAGMA data_version) ---------------------------------------------


def _sqlite_file(db: Database) -> str:
    assert db._inline_path is not None
    return str(db._inline_path)


def _commit_elsewhere(db: Database, sql: str, *args: Any) -> None:
    """A commit by another connection to the file: another process's (`platpay worker`, a CLI command), as
    far as this one can tell."""
    other = sqlite3.connect(_sqlite_file(db), isolation_level=None, timeout=10)
    try:
        other.execute(sql, args)
    finally:
        other.close()


def _changes(db: Database) -> SqliteChanges:
    changes = db.listener("platpay_credentials")
    assert isinstance(changes, SqliteChanges)
    return changes


async def test_sqlite_keeps_a_credential_while_nothing_is_committed(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_sqlite: None
) -> None:
    assert (await client.get("/config", auth=auth)).status_code == 200
    reads = _Reads(db, monkeypatch)
    for _ in range(5):
        assert (await client.get("/config", auth=auth)).status_code == 200
    assert reads.count == 0  # read once above, kept since
    # the secret is still checked on every request; an unknown client id is read each time
    assert (await client.get("/config", auth=(auth[0], auth[1] + "x"))).status_code == 401
    for _ in range(2):
        assert (await client.get("/config", auth=("nobody", "x"))).status_code == 401
    assert reads.count == 2


async def test_sqlite_another_connections_commit_is_seen_by_the_next_request(
    client: Any, auth: tuple[str, str], db: Database, backend_is_sqlite: None
) -> None:
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert _changes(db).entries  # kept
    _commit_elsewhere(db, "UPDATE api_tokens SET deleted_at = CURRENT_TIMESTAMP WHERE client_id = ?", auth[0])
    assert (await client.get("/config", auth=auth)).status_code == 401  # no wait, no age bound


async def test_sqlite_any_commit_drops_what_was_kept(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_sqlite: None
) -> None:
    """The counter says that something was committed, not what: a commit to any table drops every kept row
    (one read more, never a stale answer)."""
    assert (await client.get("/config", auth=auth)).status_code == 200
    reads = _Reads(db, monkeypatch)
    _commit_elsewhere(db, "CREATE TABLE IF NOT EXISTS unrelated_probe (n INTEGER)")
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert reads.count == 1  # read again once, then kept again


async def test_sqlite_a_token_deleted_through_this_process_stops_at_once(
    client: Any, auth: tuple[str, str], db: Database, backend_is_sqlite: None
) -> None:
    created = (await client.post("/tokens", auth=auth, json={"name": "t", "permissions": ["VIEW"]})).json()
    creds = (created["clientId"], created["clientSecret"])
    assert (await client.get("/config", auth=creds)).status_code == 200  # now kept
    assert (await client.delete(f"/tokens/{created['id']}", auth=auth)).status_code == 204
    assert (await client.get("/config", auth=creds)).status_code == 401
    for domain in ("a.example.com", "b.example.com"):
        assert (await client.patch("/config", auth=auth, json={"umaDomain": domain})).status_code == 200
        assert (await client.get("/config", auth=auth)).json()["umaDomain"] == domain


async def test_sqlite_a_read_that_raced_a_commit_is_not_kept(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_sqlite: None
) -> None:
    real = db.fetch_first

    async def raced(query: Any, params: dict[str, Any]) -> Any:
        row = await real(query, params)
        if query is auth_repository.CREDENTIAL:  # a commit while the row was on its way
            _commit_elsewhere(db, "CREATE TABLE IF NOT EXISTS raced_probe (n INTEGER)")
        return row

    monkeypatch.setattr(db, "fetch_first", raced)
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert not _changes(db).entries


async def test_sqlite_a_reader_opened_again_does_not_trust_its_counter(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_sqlite: None
) -> None:
    """A new connection's counter starts afresh and could equal the old one's: rows kept on the old one
    are dropped (the reader's epoch is part of what they carry)."""
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert _changes(db).entries
    db._drop_inline_reader()  # as after an error reading the file
    reads = _Reads(db, monkeypatch)
    assert (await client.get("/config", auth=auth)).status_code == 200
    assert reads.count == 1


async def test_sqlite_an_unreadable_counter_keeps_nothing(
    client: Any, auth: tuple[str, str], db: Database, monkeypatch: pytest.MonkeyPatch, backend_is_sqlite: None
) -> None:
    monkeypatch.setattr(_changes(db), "_version", lambda: None)
    reads = _Reads(db, monkeypatch)
    for _ in range(3):
        assert (await client.get("/config", auth=auth)).status_code == 200
    assert reads.count == 3
    assert not _changes(db).entries
