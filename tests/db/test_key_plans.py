"""Statements that find their rows by a list of keys read them by their keys, not through the index of
another column they check (db/portable.py `only_if`), on PostgreSQL and on SQLite.

SQLite keeps no statistics: beside a list read by json_each it always preferred the index of a column the
statement only checks (a job's state), and read the list once for each row of that index: a webhook chain's
lease read every queued job of the lane, times the chain's 256 jobs (0.7 s with 20,000 queued), on the event
loop of the process serving requests. Its plans do not depend on the data: each statement's is asked once, of
an empty migrated database.

PostgreSQL plans a prepared statement once for any parameters (a generic plan, asyncpg's prepared statements
after their first executions): `id = ANY($n)` is then ten rows to it, and on a table never analyzed (a
fresh database under its first load; autovacuum off, as on this project's machines) one tenant's rows, or
the running jobs, looked fewer. Each statement here was read through that other index before: every
transaction of the tenant for each batch of settlement steps (18 ms for one against 0.35 by its key, in
bench/webhook_throughput.py), every running job for each finish of a chain. The plans asked for are the
generic ones, in a database of the test's own whose tables nothing has analyzed, filled in the transaction
that asks, before it commits: nothing can analyze the new rows meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import pkgutil
import re
import secrets
import sqlite3
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from sqlalchemy import event, text
from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection

import platpay
from platpay.config import get_settings
from platpay.db import migrate
from platpay.db.database import Database
from platpay.db.lean import Lean
from platpay.events import repository as events_repository
from platpay.jobs import repository as jobs_repository
from platpay.kit import clock
from platpay.payments import repository as payments_repository
from tests.factories import create_platform
from tests.support.databases import PG_URL

ROWS = 5_000


async def _admin(sql: str) -> None:
    assert PG_URL is not None
    url = make_url(PG_URL).set(drivername="postgresql", database="postgres")
    connection = await asyncpg.connect(url.render_as_string(hide_password=False))
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def fresh_url() -> Iterator[str]:
    """A migrated PostgreSQL database of this module's own: none of its tables was ever analyzed."""
    if PG_URL is None:
        pytest.skip("the plans are PostgreSQL's")
    name = f"{make_url(PG_URL).database}_plans_{secrets.token_hex(4)}"
    asyncio.run(_admin(f'CREATE DATABASE "{name}"'))
    try:
        url = make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
        migrate.upgrade(url)
        yield url
    finally:
        asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def fresh(fresh_url: str) -> AsyncIterator[Database]:
    database = Database(fresh_url, pool_size=2)
    try:
        yield database
    finally:
        await database.dispose()


def _literal(value: Any) -> str:
    """`value` as an SQL literal (the test's own values: ids, tokens, times)."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, datetime):
        return f"'{value.isoformat()}'"
    if isinstance(value, list):
        return f"ARRAY[{', '.join(_literal(item) for item in value)}]" if value else "'{}'"
    if isinstance(value, dict):
        value = json.dumps(value)
    return "'" + str(value).replace("'", "''") + "'"


def _indexes(node: dict[str, Any]) -> list[str]:
    """The indexes a bitmap's subtree reads."""
    own = [node["Index Name"]] if node["Node Type"] == "Bitmap Index Scan" else []
    return own + [name for child in node.get("Plans", []) for name in _indexes(child)]


def _scans(node: dict[str, Any]) -> list[tuple[str, str]]:
    """(relation, what reads it: an index's name, or "Seq Scan") of every scan in a JSON plan."""
    found = []
    if "Relation Name" in node and node["Node Type"] != "ModifyTable":
        if node["Node Type"] == "Bitmap Heap Scan":
            found.extend((node["Relation Name"], index) for index in _indexes(node))
        else:
            found.append((node["Relation Name"], node.get("Index Name") or node["Node Type"]))
    if node["Node Type"] != "Bitmap Heap Scan":
        for child in node.get("Plans", []):
            found.extend(_scans(child))
    return found


async def _generic_scans(
    connection: AsyncConnection, lean: Lean, params: dict[str, Any]
) -> list[tuple[str, str]]:
    """The scans of `lean`'s generic plan for `params` (its own defaults for the rest), in the connection's
    transaction."""
    sql, binds, _ = lean.plan(connection.dialect)
    await connection.execute(text("SET LOCAL plan_cache_mode = force_generic_plan"))
    await connection.exec_driver_sql(f"PREPARE keyed AS {sql}")
    args = ", ".join(_literal(params.get(name, default)) for name, default, _ in binds)
    [[plan]] = (await connection.exec_driver_sql(f"EXPLAIN (FORMAT JSON) EXECUTE keyed({args})")).all()
    await connection.exec_driver_sql("DEALLOCATE keyed")
    if isinstance(plan, str):
        plan = json.loads(plan)
    return _scans(plan[0]["Plan"])


async def _read_by_key(
    db: Database, fill: str, filled: dict[str, Any], lean: Lean, params: dict[str, Any], table: str, key: str
) -> None:
    """`fill` run, then `lean`'s generic plan for `params` asked in the same transaction (the table never
    analyzed, its new rows not yet visible to anyone), which is committed: the plan reads `table` only
    through the index `key`."""
    async with db.engine.connect() as connection, connection.begin() as transaction:
        await connection.execute(text(fill), filled)
        scans = await _generic_scans(connection, lean, params)
        await transaction.commit()
    mine = [scan for scan in scans if scan[0] == table]
    assert mine, scans
    assert all(found == key for _, found in mine), mine


async def test_a_batch_of_transfers_is_read_by_their_ids(fresh: Database) -> None:
    """A batch of settlement steps reads its transfers (`read_many_with_account`) by their ids, not through
    the tenant's index; and only the tenant's."""
    platform = await create_platform(fresh, get_settings().model_copy(update={"database_url": fresh.url}))
    async with fresh.read() as session:
        tenant_id = await session.scalar(
            text("SELECT id FROM tenants WHERE platform_id = :platform AND environment = 'sandbox'"),
            {"platform": platform["platform_id"]},
        )
    ids = ["Transaction:plan-7", "Transaction:plan-8"]
    await _read_by_key(
        fresh,
        "INSERT INTO transactions (id, tenant_id, type, kind, status, direction, source, destination, fee_amount, "
        "extra, created_at, updated_at) SELECT 'Transaction:plan-' || n, :tenant, 'OUTGOING', 'TRANSFER_OUT', "
        f"'PENDING', 'DEBIT', '{{}}', '{{}}', 0, '{{}}', :now, :now FROM generate_series(1, {ROWS}) AS n",
        {"tenant": tenant_id, "now": clock.real_now()},
        payments_repository._MANY_WITH_ACCOUNT,
        {"transaction_ids": ids, "tenant_id": tenant_id},
        "transactions",
        "pk_transactions",
    )
    async with fresh.lean_transaction() as session:
        found = await payments_repository.read_many_with_account(
            session, tenant_id=tenant_id, transaction_ids=ids
        )
        assert sorted(found) == ids
        assert not await payments_repository.read_many_with_account(  # another tenant's: none
            session, tenant_id="Tenant:another", transaction_ids=ids
        )


async def test_a_chains_jobs_are_finished_by_their_ids(fresh: Database) -> None:
    """A chain's finish (`finish_many_leased`, and `finish_all_leased` of a batch of steps) reads its jobs
    by their ids, not through the index of the jobs' state (every running job); and only those of its
    lease."""
    now = clock.real_now()
    prefix = f"Task:plan-{secrets.token_hex(4)}-"
    ids = [f"{prefix}7", f"{prefix}8"]
    await _read_by_key(
        fresh,
        "INSERT INTO jobs (id, kind, lane, payload, state, run_at, attempts, max_attempts, lease_until, "
        "lease_token, created_at, updated_at) SELECT :prefix || n, 'system.noop', 'default', '{}', 'RUNNING', "
        ":now, 1, 5, CAST(:now AS timestamptz) + interval '1 minute', 'lease-A', :now, :now "
        f"FROM generate_series(1, {ROWS}) AS n",
        {"prefix": prefix, "now": now},
        jobs_repository._FINISH_LEASED,
        {"job_ids": ids, "token": "lease-A", "now": now},
        "jobs",
        "pk_jobs",
    )
    async with fresh.lean_transaction() as session:
        assert await jobs_repository.finish_many_leased(
            session, job_ids=ids, token="lease-A", now=now
        ) == set(ids)
        assert not await jobs_repository.finish_many_leased(  # a token not theirs: none
            session, job_ids=[f"{prefix}9"], token="lease-B", now=now
        )


async def test_a_claims_lease_takes_its_jobs_by_their_ids(fresh: Database) -> None:
    """A claim's lease of the jobs it chose (`_lease_pairs`: a webhook chain's up to 256, each to its
    token) reads them by their ids, not through the index of the states (the lane's whole queued backlog);
    and leases only those still claimable."""
    now = clock.real_now()
    prefix = f"Task:lease-{secrets.token_hex(4)}-"
    await _read_by_key(
        fresh,
        "INSERT INTO jobs (id, kind, lane, payload, state, run_at, attempts, max_attempts, created_at, "
        "updated_at) SELECT :prefix || n, 'system.noop', 'webhooks', '{}', 'QUEUED', :now, 0, 5, :now, :now "
        f"FROM generate_series(1, {ROWS}) AS n",
        {"prefix": prefix, "now": now},
        jobs_repository._LEASE_PAIRS,
        {"ids": [f"{prefix}7", f"{prefix}8"], "tokens": ["lease-A", "lease-B"], "now": now},
        "jobs",
        "pk_jobs",
    )
    async with fresh.transaction() as session:
        leased = await jobs_repository._lease_pairs(
            session,
            {f"{prefix}7": "lease-A", f"{prefix}8": "lease-B"},
            now=now,
            lease_until=now + timedelta(seconds=30),
        )
        assert {(row.id, row.lease_token, row.state) for row in leased} == {
            (f"{prefix}7", "lease-A", "RUNNING"),
            (f"{prefix}8", "lease-B", "RUNNING"),
        }
        again = await jobs_repository._lease_pairs(  # leased already (a live lease): not again
            session, {f"{prefix}7": "lease-C"}, now=now, lease_until=now + timedelta(seconds=30)
        )
        assert again == []


# SQLite: every statement that finds its rows by a list bound as JSON, found in platpay's modules


def _json_list_statements() -> list[tuple[str, str]]:
    """(module.name, SQLite SQL) of every module-level Lean whose SQLite statement reads a bound JSON list."""
    dialect = sqlite_dialect.dialect()
    found: dict[int, tuple[str, str]] = {}
    for info in pkgutil.walk_packages(platpay.__path__, prefix="platpay."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, Lean) and id(value) not in found:
                sql = value.plan(dialect)[0]
                if "json_each(" in sql:
                    found[id(value)] = (f"{info.name}.{name}", sql)
    return sorted(found.values())


# `table.column IN (SELECT anon.value FROM json_each(?))`, or `table.column = picked."key"` (a JSON object's
# keys joined): the column whose keys the list holds
_BY_LIST = re.compile(r'(\w+)\.(\w+) IN \(SELECT \w+\.value\s+FROM json_each\(|(\w+)\.(\w+) = \w+\."key"')


@pytest.fixture(scope="module")
def sqlite_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    path = Path(tmp_path_factory.mktemp("plans")) / "plans.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    connection = sqlite3.connect(path)
    try:
        yield connection
    finally:
        connection.close()


STATEMENTS = _json_list_statements()


def test_the_statements_with_json_lists_are_found() -> None:
    """(The test below has something to check: the lease of claimed jobs, their finish, balances, ...)"""
    names = {name for name, _ in STATEMENTS}
    assert {"platpay.jobs.repository._LEASE_PAIRS", "platpay.jobs.repository._FINISH_LEASED"} <= names
    assert all(_BY_LIST.search(sql) for _, sql in STATEMENTS), [
        n for n, sql in STATEMENTS if not _BY_LIST.search(sql)
    ]


@pytest.mark.parametrize(("name", "sql"), STATEMENTS, ids=[name for name, _ in STATEMENTS])
def test_sqlite_reads_a_list_of_keys_by_the_keys(
    sqlite_schema: sqlite3.Connection, name: str, sql: str
) -> None:
    """SQLite's plan reads each table found by a list either after the list (the list the outer loop, the
    table searched by each key) or through an index whose equalities include the listed column (the list
    its IN), never through another index or a scan with the list as a filter."""
    plan = [row[3] for row in sqlite_schema.execute(f"EXPLAIN QUERY PLAN {sql}", [None] * sql.count("?"))]
    for match in _BY_LIST.finditer(sql):
        table, column = (
            (match.group(1), match.group(2)) if match.group(1) else (match.group(3), match.group(4))
        )
        list_read = False
        reads = []
        for line in plan:
            if "VIRTUAL TABLE" in line:
                list_read = True
            elif re.match(rf"(SCAN|SEARCH) {table}\b", line):
                reads.append(line)
                keyed = re.search(rf"\((?:[^)]*\bAND )?{column}=\?", line) is not None
                assert list_read or keyed, f"{name} reads {table} not by its {column}: {plan}"
        assert reads, f"{name}: {table} not in {plan}"


async def test_sqlite_reads_a_timelines_deliveries_by_their_events(
    sqlite_template: Path, tmp_path: Path
) -> None:
    """A resource's timeline (events/service.py `timeline_for_resource`) reads the deliveries of its events by
    the events' ids and their attempts by the deliveries' ids, not every delivery of the tenant through the
    tenant's index (SQLite chose that one, the ids a filter)."""
    path = tmp_path / "timeline.db"
    path.write_bytes(sqlite_template.read_bytes())
    database = Database(f"sqlite+aiosqlite:///{path}")
    sent: list[str] = []

    def keep(connection: Any, cursor: Any, statement: str, *args: Any) -> None:
        sent.append(statement)

    event.listen(database.engine.sync_engine, "before_cursor_execute", keep)
    try:
        async with database.read() as session:
            assert not await events_repository.deliveries_of_events(
                session, tenant_id="Tenant:t", event_ids=["Event:1", "Event:2"]
            )
            assert not await events_repository.attempts_of_deliveries(
                session, tenant_id="Tenant:t", delivery_ids=["Delivery:1", "Delivery:2"]
            )
    finally:
        await database.dispose()
    reads = {
        table: next(statement for statement in sent if f"FROM {table}" in statement)
        for table in ("webhook_deliveries", "webhook_attempts")
    }
    with contextlib.closing(sqlite3.connect(path)) as connection:
        for table, column in (("webhook_deliveries", "event_id"), ("webhook_attempts", "delivery_id")):
            statement = reads[table]
            plan = [
                row[3]
                for row in connection.execute(
                    f"EXPLAIN QUERY PLAN {statement}", [None] * statement.count("?")
                )
            ]
            assert any(re.match(rf"SEARCH {table} USING INDEX \w+ \({column}=\?", line) for line in plan), (
                plan
            )
