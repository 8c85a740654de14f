"""The capacity model's inputs: CPU, round trips, WAL and storage per operation, and what they imply.

Feeds docs/capacity.md. For each operation below, against `platpay serve --no-worker` and one `platpay worker`
on a private PostgreSQL cluster of its own (tests/e2e/pg_cluster.py: initdb on a free port, deleted at the
end, started with pg_stat_statements and fsync on), it measures per operation:

* **app CPU**: the `serve` process tree's CPU (/proc), the request path; **worker CPU**: the `platpay worker`
  process's (settlement steps, webhook deliveries, emails the operation caused), until the job queue has
  nothing due; both net of what the idle processes use (measured first: the runner polls).
* **DB CPU**: the PostgreSQL backends serving the API's connections and the worker's (/proc of the pids in
  pg_stat_activity, by role: the API connects as role `api`, the worker as `worker`), net of idle; and the
  whole cluster's (every postgres process: background writer, WAL writer, checkpointer, autovacuum too).
* **statements** (round trips: asyncpg sends each statement, BEGIN and COMMIT included, as one round trip
  once prepared): pg_stat_statements calls by role (`track=all`, `track_utility=on`), net of idle polling.
* **WAL bytes** (pg_stat_wal: bytes, records, full-page images; a CHECKPOINT before each operation, so the
  first change of every page after it writes a full-page image, as in steady state after each checkpoint),
  **rows** (count(*) of every table before/after) and **bytes** (pg_total_relation_size of every table).

Operations (each run `--ops` times at `--concurrency` after `--warmup` unmeasured ones):
`transfer_out` (POST /transfer-out, customer account to its bank account; settles after 1 s by the worker),
`transfer_in` (POST /transfer-in, an ACH pull from the customer's bank account), `fund` (POST /sandbox/…/fund),
`quote_execute` (POST /quotes USD to an MXN bank account + POST /quotes/{id}/execute), `card_auth`
(POST /sandbox/cards/{id}/simulate/authorization), `agent_transfer_out` (POST /agents/me/transfer-out),
`list_transactions` (GET /transactions, first page of 20), `get_config` (GET /config), `otp_login` (an
EMAIL_OTP login: challenge, verify, signed verify; its email sent by the worker), `webhook_delivery` (events
inserted directly, ~700-byte payloads; the worker signs and POSTs each to bench/receiver.py). The platform's
webhook endpoint is set, so every money operation's events are delivered by the worker too (counted in its
worker figures).

Then the model (docs/capacity.md explains it): requests/s per core of the app = 1 / app CPU per operation;
operations/s per PostgreSQL core = 1 / DB CPU; API cores a PostgreSQL core feeds = app CPU / DB CPU; the
write ceiling of one disk = its sustained WAL bandwidth / WAL bytes per operation.

    .venv/bin/python bench/capacity.py                     # ~3 min: 300 of each operation
    .venv/bin/python bench/capacity.py --ops 100 --only transfer_out,get_config --show-sql
    .venv/bin/python bench/capacity.py --json-out /tmp/capacity.json --disk-mb-s 200

CPU per operation holds on a loaded machine far better than rates do; the "other load" line says how much
CPU processes outside the measurement used meanwhile (cores). All traffic stays on 127.0.0.1; every process
started is stopped by its pid.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import re
import secrets
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))  # tests.e2e.pg_cluster, tests.factories

from _support import (  # noqa: E402
    BIN,
    bench_env,
    cpu_seconds,
    free_port,
    machine_summary,
    pg_cpu_delta,
    pg_cpu_snapshot,
    stop,
    system_busy_seconds,
    tree_cpu_seconds,
    wait_http,
    wait_until_quiet,
)

BASE_PATH = "/2025-10-13"
FUND = 100_000_000_000
DATABASE = "capacity"
ROLES = ("api", "worker")
# Figures of bench/retention_growth.py (PostgreSQL, bench/README.md): bytes a settled transfer leaves behind.
RETENTION_BEFORE_PRUNE_KB = 22.7
RETENTION_KEPT_KB = 14.5
OPERATIONS = (
    "transfer_out",
    "transfer_in",
    "fund",
    "quote_execute",
    "card_auth",
    "agent_transfer_out",
    "list_transactions",
    "get_config",
    "otp_login",
    "webhook_delivery",
)
CARD_INELIGIBLE = ("002", "003")  # the sandbox issuer refuses a funding account whose id ends so


# ---- the private cluster -----------------------------------------------------------------------------


class Cluster:
    """tests/e2e/pg_cluster.PrivateCluster with pg_stat_statements, fsync on, and the two roles."""

    def __init__(self) -> None:
        from tests.e2e.pg_cluster import PASSWORD, PrivateCluster

        self.password = PASSWORD
        self.private = PrivateCluster()
        self.private.start(
            shared_preload_libraries="pg_stat_statements",
            **{
                "pg_stat_statements.track": "all",
                "pg_stat_statements.track_utility": "on",
                "pg_stat_statements.track_planning": "on",
                "pg_stat_statements.max": "10000",
                "fsync": "on",
                "max_connections": "300",
            },
        )
        self.port = self.private.port
        self.admin(
            [f"CREATE ROLE {role} LOGIN SUPERUSER PASSWORD '{PASSWORD}'" for role in ROLES]
            + [f'CREATE DATABASE "{DATABASE}"', "CREATE EXTENSION pg_stat_statements"]
        )

    def url(self, role: str, database: str = DATABASE) -> str:
        return f"postgresql+asyncpg://{role}:{self.password}@127.0.0.1:{self.port}/{database}"

    def dsn(self, database: str = "postgres") -> str:
        return self.private.dsn(database)

    def admin(self, statements: list[str], database: str = "postgres") -> None:
        async def run() -> None:
            import asyncpg

            conn = await asyncpg.connect(self.dsn(database))
            try:
                for sql in statements:
                    await conn.execute(sql)
            finally:
                await conn.close()

        asyncio.run(run())

    def postmaster_pid(self) -> int:
        return int((self.private.data / "postmaster.pid").read_text().split()[0])

    def all_pids(self) -> set[int]:
        postmaster = self.postmaster_pid()
        pids = {postmaster}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == postmaster:
                        pids.add(int(entry.name))
        return pids

    def destroy(self) -> None:
        self.private.destroy()


# ---- measurement ------------------------------------------------------------------------------------


@dataclass
class Snapshot:
    at: float
    serve_cpu: float
    worker_cpu: float
    own_cpu: float
    busy: tuple[float, float] | None
    backends: dict[str, dict[int, float]]
    cluster: dict[int, float]
    statements: dict[str, int]
    wal: dict[str, float]
    rows: dict[str, int] = field(default_factory=dict)
    bytes: dict[str, int] = field(default_factory=dict)


@dataclass
class Figures:
    name: str
    ops: int
    seconds: float  # requests only
    drain_seconds: float
    serve_ms: float
    worker_ms: float
    db_api_ms: float
    db_worker_ms: float
    cluster_ms: float
    statements_api: float
    statements_worker: float
    nested: float
    wal_bytes: float
    wal_fpi: float
    wal_records: float
    rows: float
    table_bytes: float
    other_load: float
    connections: dict[str, int]
    rows_by_table: dict[str, float] = field(default_factory=dict)
    top_sql: list[tuple[str, float, float, float, float]] = field(default_factory=list)
    # round trips per operation by how a database distributed by tenant_id would route them (classify())
    routing: dict[str, float] = field(default_factory=dict)
    fan_out_sql: list[tuple[str, float]] = field(default_factory=list)
    note: str = ""
    retried_503: int = 0  # requests answered 503 (a statement timeout) and retried


class Meter:
    def __init__(self, cluster: Cluster, serve_pid: int, worker_pid: int, others: list[int]) -> None:
        self.cluster = cluster
        self.serve_pid = serve_pid
        self.worker_pid = worker_pid
        self.others = others  # receiver: counted as ours in the other-load figure
        self.idle: dict[str, float] = {}
        self.max_connections: dict[str, int] = dict.fromkeys(ROLES, 0)
        self.fan_out: dict[str, int] = {}  # statement -> calls, over the whole run
        self.idle_routing: dict[str, float] = {}  # calls per second of the idle processes, by kind

    async def _db(
        self, conn: Any, *, tables: bool
    ) -> tuple[dict[str, dict[int, float]], dict[str, int], dict[str, float], dict[str, int], dict[str, int]]:
        pids: dict[str, set[int]] = {role: set() for role in ROLES}
        for row in await conn.fetch(
            "SELECT pid, usename FROM pg_stat_activity WHERE datname = $1 AND usename = ANY($2::text[])",
            DATABASE,
            list(ROLES),
        ):
            pids[row["usename"]].add(int(row["pid"]))
        for role in ROLES:
            self.max_connections[role] = max(self.max_connections[role], len(pids[role]))
        backends = {role: pg_cpu_snapshot(pids[role]) for role in ROLES}
        # top level: what the client sent (round trips); nested: run inside them (foreign-key checks)
        statements: dict[str, int] = {}
        for row in await conn.fetch(
            "SELECT r.rolname, s.toplevel, sum(s.calls)::bigint AS calls FROM pg_stat_statements s "
            "JOIN pg_roles r ON r.oid = s.userid JOIN pg_database d ON d.oid = s.dbid "
            "WHERE d.datname = $1 GROUP BY r.rolname, s.toplevel",
            DATABASE,
        ):
            statements[row["rolname"] + ("" if row["toplevel"] else "_nested")] = int(row["calls"])
        wal_row = await conn.fetchrow("SELECT wal_records, wal_fpi, wal_bytes FROM pg_stat_wal")
        wal = {key: float(wal_row[key]) for key in ("wal_records", "wal_fpi", "wal_bytes")}
        rows: dict[str, int] = {}
        sizes: dict[str, int] = {}
        if tables:
            db = await _connect(self.cluster.dsn(DATABASE))
            try:
                names = [
                    r["tablename"]
                    for r in await db.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                ]
                for name in names:
                    rows[name] = int(await db.fetchval(f'SELECT count(*) FROM "{name}"'))
                    sizes[name] = int(await db.fetchval("SELECT pg_total_relation_size($1::regclass)", name))
            finally:
                await db.close()
        return backends, statements, wal, rows, sizes

    async def snapshot(self, *, tables: bool = False) -> Snapshot:
        conn = await _connect(self.cluster.dsn())
        try:
            backends, statements, wal, rows, sizes = await self._db(conn, tables=tables)
        finally:
            await conn.close()
        return Snapshot(
            at=time.monotonic(),
            serve_cpu=tree_cpu_seconds(self.serve_pid) or 0.0,
            worker_cpu=tree_cpu_seconds(self.worker_pid) or 0.0,
            own_cpu=time.process_time() + sum(cpu_seconds(pid) or 0.0 for pid in self.others),
            busy=system_busy_seconds(),
            backends=backends,
            cluster=pg_cpu_snapshot(self.cluster.all_pids()),
            statements=statements,
            wal=wal,
            rows=rows,
            bytes=sizes,
        )

    async def reset_statements(self) -> None:
        conn = await _connect(self.cluster.dsn())
        try:
            await conn.execute("SELECT pg_stat_statements_reset()")
        finally:
            await conn.close()

    async def measure_idle(self, seconds: float) -> None:
        """What the idle API and worker (and their backends) use per second: subtracted from every figure."""
        await self.reset_statements()
        before = await self.snapshot()
        await asyncio.sleep(seconds)
        after = await self.snapshot()
        span = after.at - before.at
        self.idle_routing = {kind: calls / span for kind, calls in (await self.routing(0)).items()}
        self.idle = {
            "serve": (after.serve_cpu - before.serve_cpu) / span,
            "worker": (after.worker_cpu - before.worker_cpu) / span,
            "db_api": pg_cpu_delta(before.backends["api"], after.backends["api"]) / span,
            "db_worker": pg_cpu_delta(before.backends["worker"], after.backends["worker"]) / span,
            "cluster": pg_cpu_delta(before.cluster, after.cluster) / span,
            "st_api": (after.statements.get("api", 0) - before.statements.get("api", 0)) / span,
            "st_worker": (after.statements.get("worker", 0) - before.statements.get("worker", 0)) / span,
            "wal": (after.wal["wal_bytes"] - before.wal["wal_bytes"]) / span,
        }

    async def routing(self, ops: int, span: float = 0.0) -> dict[str, float]:
        """The operation's top-level statements (API and worker) by classify(), calls per operation, net of
        the idle processes' (their polling, over `span` seconds); with `ops` 0: the raw counts."""
        conn = await _connect(self.cluster.dsn())
        try:
            rows = await conn.fetch(
                "SELECT s.query, sum(s.calls)::bigint AS calls FROM pg_stat_statements s "
                "JOIN pg_roles r ON r.oid = s.userid JOIN pg_database d ON d.oid = s.dbid "
                "WHERE d.datname = $1 AND s.toplevel AND r.rolname = ANY($2::text[]) GROUP BY s.query",
                DATABASE,
                list(ROLES),
            )
        finally:
            await conn.close()
        counts: dict[str, float] = {}
        for row in rows:
            kind = classify(row["query"])
            counts[kind] = counts.get(kind, 0.0) + row["calls"]
            if kind == FAN_OUT and ops:
                self.fan_out[row["query"]] = self.fan_out.get(row["query"], 0) + row["calls"]
        if not ops:
            return counts
        return {
            kind: max(0.0, calls - self.idle_routing.get(kind, 0.0) * span) / ops
            for kind, calls in counts.items()
        }

    async def top_sql(self, ops: int) -> list[tuple[str, float, float, float, float]]:
        conn = await _connect(self.cluster.dsn())
        try:
            rows = await conn.fetch(
                "SELECT r.rolname || CASE WHEN s.toplevel THEN ': ' ELSE ' (nested): ' END || regexp_replace(s.query, '\\s+', ' ', 'g') AS q, s.calls, "
                "s.total_exec_time, s.plans, s.total_plan_time FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid "
                "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 AND s.calls >= $2 "
                "AND r.rolname = ANY($3::text[]) ORDER BY r.rolname, s.calls DESC",
                DATABASE,
                max(1, ops // 4),
                list(ROLES),
            )
        finally:
            await conn.close()
        return [
            (
                row["q"],
                row["calls"] / ops,
                row["total_exec_time"] * 1000 / ops,
                row["plans"] / ops,
                row["total_plan_time"] * 1000 / ops,
            )
            for row in rows
        ]

    def figures(self, name: str, ops: int, before: Snapshot, done: Snapshot, after: Snapshot) -> Figures:
        span = after.at - before.at
        idle = self.idle

        def net(value: float, key: str) -> float:
            return max(0.0, value - idle.get(key, 0.0) * span) / ops

        ours = (
            (after.serve_cpu - before.serve_cpu)
            + (after.worker_cpu - before.worker_cpu)
            + (after.own_cpu - before.own_cpu)
            + pg_cpu_delta(before.cluster, after.cluster)
        )
        other = 0.0
        if before.busy and after.busy:
            other = max(0.0, (after.busy[0] - before.busy[0]) - ours) / (after.busy[1] - before.busy[1])
        rows_by_table = {
            table: (after.rows.get(table, 0) - before.rows.get(table, 0)) / ops
            for table in after.rows
            if after.rows.get(table, 0) != before.rows.get(table, 0)
        }
        return Figures(
            name=name,
            ops=ops,
            seconds=done.at - before.at,
            drain_seconds=after.at - done.at,
            serve_ms=net(after.serve_cpu - before.serve_cpu, "serve") * 1000,
            worker_ms=net(after.worker_cpu - before.worker_cpu, "worker") * 1000,
            db_api_ms=net(pg_cpu_delta(before.backends["api"], after.backends["api"]), "db_api") * 1000,
            db_worker_ms=net(pg_cpu_delta(before.backends["worker"], after.backends["worker"]), "db_worker")
            * 1000,
            cluster_ms=net(pg_cpu_delta(before.cluster, after.cluster), "cluster") * 1000,
            statements_api=net(after.statements.get("api", 0) - before.statements.get("api", 0), "st_api"),
            statements_worker=net(
                after.statements.get("worker", 0) - before.statements.get("worker", 0), "st_worker"
            ),
            # nested statements are counted under the referenced table's owner (the API's role, which ran the
            # migrations), whoever ran the statement: only their sum means something
            nested=sum(
                after.statements.get(f"{r}_nested", 0) - before.statements.get(f"{r}_nested", 0)
                for r in ROLES
            )
            / ops,
            wal_bytes=net(after.wal["wal_bytes"] - before.wal["wal_bytes"], "wal"),
            wal_fpi=(after.wal["wal_fpi"] - before.wal["wal_fpi"]) / ops,
            wal_records=(after.wal["wal_records"] - before.wal["wal_records"]) / ops,
            rows=sum(rows_by_table.values()),
            table_bytes=(sum(after.bytes.values()) - sum(before.bytes.values())) / ops,
            other_load=other,
            connections=dict(self.max_connections),
            rows_by_table=rows_by_table,
        )


async def _connect(dsn: str) -> Any:
    import asyncpg

    return await asyncpg.connect(dsn, timeout=10)


async def _due_jobs(dsn: str) -> int:
    conn = await _connect(dsn)
    try:
        return int(
            await conn.fetchval(
                "SELECT count(*) FROM jobs WHERE state IN ('QUEUED', 'RUNNING') "
                "AND run_at <= now() + interval '3 seconds'"
            )
        )
    finally:
        await conn.close()


async def drain(dsn: str, *, timeout: float = 600.0) -> None:
    """Until no job is running or due within 3 s, twice in a row (a settlement due in 1 s counts)."""
    deadline = time.monotonic() + timeout
    quiet = 0
    while quiet < 2:
        if time.monotonic() > deadline:
            raise RuntimeError(f"jobs still due after {timeout:.0f} s")
        quiet = quiet + 1 if await _due_jobs(dsn) == 0 else 0
        await asyncio.sleep(0.3)


# ---- distribution by tenant_id: statements and schema ------------------------------------------------

# Tables without tenant_id: small, read on every request, written rarely (reference tables, copied to every
# node of a distributed PostgreSQL) or process-local state (rate limits).
GLOBAL_TABLES = {"tenants", "platforms", "rate_limit_counters", "alembic_version"}
UTILITY, GLOBAL, ROUTED, FAN_OUT = "utility", "global", "routed", "fan-out"
_TABLE = re.compile(r'\b(?:FROM|JOIN|UPDATE|INTO)\s+(?:ONLY\s+)?"?(?:public"?\."?)?([a-z_]+)"?', re.I)
# tenant_id compared with a parameter (not a join's `tenant_id = tenants.id`)
_TENANT_FILTER = re.compile(r"\btenant_id\s*(?:=\s*\$|IN\s*\(\s*\$|=\s*ANY\s*\(\s*\$)", re.I)


def classify(query: str) -> str:
    """How a PostgreSQL distributed by tenant_id (every tenant table distributed by it, the global tables
    reference tables) would run one statement: `utility` (BEGIN, COMMIT, SET: no table), `global` (only
    reference tables), `routed` (to one tenant's node: an INSERT carries tenant_id's value, any other
    statement filters on tenant_id), `fan-out` (to every node: a tenant table read or changed by another key;
    and FOR UPDATE across nodes is refused). Read from the statement's text: a heuristic, it errs towards
    `routed` (a tenant_id = … anywhere counts)."""
    text = query.strip()
    tables = {name.lower() for name in _TABLE.findall(text)} - {"select"}
    if not tables:
        return UTILITY
    if tables <= GLOBAL_TABLES:
        return GLOBAL
    if text[:6].upper() == "INSERT":
        return ROUTED if re.search(r"\btenant_id\b", text, re.I) else FAN_OUT
    return ROUTED if _TENANT_FILTER.search(text) else FAN_OUT


async def schema_audit(dsn: str) -> list[str]:
    """What the migrated schema's catalog says about distributing it by tenant_id (Citus' rules: a
    distributed table's primary key and unique constraints include the distribution column; a foreign key
    between two distributed tables includes it on both sides; the column is never NULL)."""
    conn = await _connect(dsn)
    try:
        tables = [
            r["relname"]
            for r in await conn.fetch(
                "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1"
            )
        ]
        columns = {
            (r["table_name"], r["column_name"]): r["is_nullable"] == "YES"
            for r in await conn.fetch(
                "SELECT table_name, column_name, is_nullable FROM information_schema.columns "
                "WHERE table_schema = 'public' AND column_name = 'tenant_id'"
            )
        }
        keys = await conn.fetch(
            "SELECT i.indrelid::regclass::text AS tab, ic.relname AS name, i.indisprimary AS pk, "
            "array(SELECT a.attname FROM unnest(i.indkey) k JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = k) AS cols "
            "FROM pg_index i JOIN pg_class ic ON ic.oid = i.indexrelid JOIN pg_namespace n "
            "ON n.oid = ic.relnamespace WHERE n.nspname = 'public' AND i.indisunique ORDER BY 1, 2"
        )
        fks = await conn.fetch(
            "SELECT c.conrelid::regclass::text AS tab, c.confrelid::regclass::text AS ref, c.conname AS name, "
            "array(SELECT a.attname FROM unnest(c.conkey) k JOIN pg_attribute a "
            "ON a.attrelid = c.conrelid AND a.attnum = k) AS cols "
            "FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace "
            "WHERE n.nspname = 'public' AND c.contype = 'f' ORDER BY 1, 3"
        )
        sequences = await conn.fetchval("SELECT count(*) FROM pg_sequences WHERE schemaname = 'public'")
        triggers = await conn.fetchval("SELECT count(*) FROM pg_trigger WHERE NOT tgisinternal")
    finally:
        await conn.close()
    lines = [
        f"{len(tables)} tables; without tenant_id: {', '.join(t for t in tables if (t, 'tenant_id') not in columns)}",
        f"tenant_id nullable in: {', '.join(t for (t, _), nullable in columns.items() if nullable) or 'none'}",
        f"sequences: {sequences}, user triggers: {triggers}",
    ]
    for row in keys:
        if row["tab"] in GLOBAL_TABLES or "tenant_id" in row["cols"]:
            continue
        kind = "primary key" if row["pk"] else "unique"
        lines.append(f"{row['tab']}: {kind} ({', '.join(row['cols'])}) without tenant_id")
    for row in fks:
        if row["tab"] in GLOBAL_TABLES or row["ref"] in GLOBAL_TABLES:
            continue
        lines.append(
            f"{row['tab']}: foreign key ({', '.join(row['cols'])}) -> {row['ref']} without tenant_id"
        )
    return lines


# ---- processes --------------------------------------------------------------------------------------


def start_processes(cluster: Cluster, workdir: Path) -> dict[str, Any]:
    from http_config import start_platpay
    from wallet_auth import RAISED_LIMITS

    receiver_port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, str(HERE / "receiver.py"), "--port", str(receiver_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_http(f"http://127.0.0.1:{receiver_port}/count", proc=receiver)
    # the wallet rate limits raised as bench/wallet_auth.py does: the logins repeat on a few credentials
    limits = {key: value for key, value in RAISED_LIMITS.items() if key != "PLATPAY_LOG_LEVEL"}
    serve = start_platpay(
        "api", cluster.url("api"), workdir, {"PLATPAY_RUN_EMBEDDED_WORKER": "false", **limits}
    )
    log = (workdir / "worker.log").open("wb")
    worker = subprocess.Popen(
        [str(BIN / "platpay"), "worker"],
        cwd=workdir / "api",
        env=bench_env(
            PLATPAY_DATABASE_URL=cluster.url("worker"), PLATPAY_VAR_DIR=str(workdir / "api" / "var")
        ),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    return {
        "receiver": receiver,
        "receiver_url": f"http://127.0.0.1:{receiver_port}/hooks",
        "serve": serve,
        "worker": worker,
    }


# ---- seeding through the API ------------------------------------------------------------------------


@dataclass
class Holder:
    customer_id: str
    internal_id: str
    bank_id: str
    mxn_id: str
    card_id: str | None = None
    agent_token: str | None = None
    credential_id: str | None = None


async def _check(response: Any, *statuses: int) -> Any:
    if response.status_code not in statuses:
        raise RuntimeError(
            f"{response.request.method} {response.request.url}: {response.status_code} {response.text}"
        )
    return response.json()


async def seed(
    client: Any, auth: tuple[str, str], receiver_url: str, customers: int, dsn: str
) -> list[Holder]:
    from agent_transfer import POLICY
    from transfer_out import PERSON, _bank

    from tests.factories import clabe_ending

    await _check(await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver_url}), 200)
    limit = asyncio.Semaphore(4)
    clabe = clabe_ending("011")

    async def one(n: int) -> Holder:
        async with limit:
            person = await _check(
                await client.post(
                    "/customers",
                    auth=auth,
                    json={**PERSON, "platformCustomerId": f"cap-{n}", "email": f"cap{n}@example.com"},
                ),
                201,
            )
            await _check(
                await client.post(
                    f"/sandbox/customers/{person['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
                ),
                200,
                201,
                202,
                204,
            )
            accounts = (
                await _check(
                    await client.get(
                        "/customers/internal-accounts", auth=auth, params={"customerId": person["id"]}
                    ),
                    200,
                )
            )["data"]
            usd = next(
                a["id"]
                for a in accounts
                if a["balance"]["currency"]["code"] == "USD" and a["type"] != "EMBEDDED_WALLET"
            )
            wallet = next((a["id"] for a in accounts if a["type"] == "EMBEDDED_WALLET"), None)
            bank = await _check(
                await client.post(
                    "/customers/external-accounts", auth=auth, json=_bank(200_000 + n, person["id"])
                ),
                201,
            )
            mxn = await _check(
                await client.post(
                    "/customers/external-accounts",
                    auth=auth,
                    json={
                        "customerId": person["id"],
                        "currency": "MXN",
                        "accountInfo": {
                            "accountType": "MXN_ACCOUNT",
                            "clabeNumber": clabe,
                            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Juan Pérez"},
                        },
                    },
                ),
                201,
            )
            await _check(
                await client.post(f"/sandbox/internal-accounts/{usd}/fund", auth=auth, json={"amount": FUND}),
                200,
            )
            holder = Holder(person["id"], usd, bank["id"], mxn["id"])
            if not usd.endswith(CARD_INELIGIBLE):
                card = await _check(
                    await client.post(
                        "/cards",
                        auth=auth,
                        json={
                            "cardholderId": person["id"],
                            "form": "VIRTUAL",
                            "fundingSources": [usd],
                            "platformCardId": f"cap-{n}",
                        },
                    ),
                    201,
                )
                holder.card_id = card["id"]
            created = await _check(
                await client.post(
                    "/agents",
                    auth=auth,
                    json={"name": f"capacity {n}", "customerId": person["id"], "policy": POLICY},
                ),
                201,
            )
            redeemed = await _check(
                await client.post(f"/agents/device-codes/{created['deviceCode']['code']}/redeem"), 200, 201
            )
            holder.agent_token = redeemed["accessToken"]
            if wallet is not None:
                found = await _check(
                    await client.get("/auth/credentials", auth=auth, params={"accountId": wallet}), 200
                )
                if found["data"]:
                    holder.credential_id = found["data"][0]["id"]
            return holder

    holders = list(await asyncio.gather(*(one(n) for n in range(customers))))
    await drain(dsn)  # cards provisioned, KYC settled, the TEST webhook delivered
    return holders


# ---- the operations ---------------------------------------------------------------------------------


Op = Callable[[Any, int], Awaitable[None]]


def operations(auth: tuple[str, str], holders: list[Holder], run: str) -> dict[str, Op]:
    from wallet_auth import _login

    cards = [h for h in holders if h.card_id]
    agents = [h for h in holders if h.agent_token]
    wallets = [h for h in holders if h.credential_id]

    def pick(pool: list[Holder], i: int) -> Holder:
        return pool[i % len(pool)]

    async def transfer_out(client: Any, i: int) -> None:
        h = pick(holders, i)
        body = {
            "source": {"accountId": h.internal_id},
            "destination": {"accountId": h.bank_id},
            "amount": 1 + i % 900,
        }
        await _check(
            await client.post(
                "/transfer-out", auth=auth, json=body, headers={"Idempotency-Key": f"{run}-o-{i}"}
            ),
            201,
        )

    async def transfer_in(client: Any, i: int) -> None:
        h = pick(holders, i)
        body = {
            "source": {"accountId": h.bank_id},
            "destination": {"accountId": h.internal_id},
            "amount": 1 + i % 900,
        }
        await _check(
            await client.post(
                "/transfer-in", auth=auth, json=body, headers={"Idempotency-Key": f"{run}-i-{i}"}
            ),
            201,
        )

    async def fund(client: Any, i: int) -> None:
        h = pick(holders, i)
        await _check(
            await client.post(
                f"/sandbox/internal-accounts/{h.internal_id}/fund", auth=auth, json={"amount": 1 + i % 900}
            ),
            200,
        )

    async def quote_execute(client: Any, i: int) -> None:
        h = pick(holders, i)
        body = {
            "source": {"sourceType": "ACCOUNT", "accountId": h.internal_id},
            "destination": {"destinationType": "ACCOUNT", "accountId": h.mxn_id},
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": 10_000 + i % 900,
        }
        quote = await _check(
            await client.post("/quotes", auth=auth, json=body, headers={"Idempotency-Key": f"{run}-q-{i}"}),
            201,
        )
        await _check(await client.post(f"/quotes/{quote['id']}/execute", auth=auth), 200)

    async def card_auth(client: Any, i: int) -> None:
        h = pick(cards, i)
        body = {
            "amount": 1 + i % 900,
            "currency": {"code": "USD"},
            "merchant": {"descriptor": "CAPACITY BENCH"},
        }
        await _check(
            await client.post(f"/sandbox/cards/{h.card_id}/simulate/authorization", auth=auth, json=body),
            200,
            202,
        )

    async def agent_transfer_out(client: Any, i: int) -> None:
        h = pick(agents, i)
        body = {
            "source": {"accountId": h.internal_id},
            "destination": {"accountId": h.bank_id},
            "amount": 1 + i % 900,
        }
        headers = {"Authorization": f"Bearer {h.agent_token}", "Idempotency-Key": f"{run}-a-{i}"}
        await _check(await client.post("/agents/me/transfer-out", json=body, headers=headers), 201, 202)

    async def list_transactions(client: Any, i: int) -> None:
        await _check(await client.get("/transactions", auth=auth, params={"limit": 20}), 200)

    async def get_config(client: Any, i: int) -> None:
        await _check(await client.get("/config", auth=auth), 200)

    locks = {h.credential_id: asyncio.Lock() for h in wallets}

    async def otp_login(client: Any, i: int) -> None:
        # one login at a time per credential: a second challenge would replace the first one's target
        credential_id = pick(wallets, i).credential_id
        assert credential_id is not None  # (wallets: the holders that have one)
        async with locks[credential_id]:
            await _login(client, auth, credential_id)

    ops: dict[str, Op] = {
        "transfer_out": transfer_out,
        "transfer_in": transfer_in,
        "fund": fund,
        "quote_execute": quote_execute,
        "card_auth": card_auth,
        "agent_transfer_out": agent_transfer_out,
        "list_transactions": list_transactions,
        "get_config": get_config,
    }
    if wallets:
        ops["otp_login"] = otp_login
    return ops


RETRIES: dict[str, int] = {"503": 0}


async def run_ops(client: Any, op: Op, first: int, count: int, concurrency: int) -> None:
    """`count` operations, `concurrency` at a time. A 503 (the database did not answer in time: a statement
    timeout behind a lock) is retried as a client would, with the same Idempotency-Key, and counted."""
    queue = iter(range(first, first + count))

    async def lane() -> None:
        for i in queue:
            for attempt in range(5):
                try:
                    await op(client, i)
                    break
                except RuntimeError as error:
                    if ": 503 " not in str(error) or attempt == 4:
                        raise
                    RETRIES["503"] += 1
                    await asyncio.sleep(1.0)

    await asyncio.gather(*(lane() for _ in range(concurrency)))


async def emit_events(cluster: Cluster, client_id: str, count: int, workdir: Path) -> None:
    """`count` OUTGOING_PAYMENT.COMPLETED events through events.service.emit, 100 per transaction (as the
    money path writes them), connected as the bench's own role: only their delivery is the worker's."""
    from jobs_throughput import EVENT_TYPE, _payload

    from platpay import domains
    from platpay.config import Settings
    from platpay.db.database import Database
    from platpay.events import service as events_service

    settings = Settings(
        database_url=cluster.url("postgres"),
        var_dir=workdir / "emit",
        master_key=base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode(),
        log_level="WARNING",
    )
    domains.start(settings)
    conn = await _connect(cluster.dsn(DATABASE))
    try:
        tenant_id = await conn.fetchval("SELECT tenant_id FROM api_tokens WHERE client_id = $1", client_id)
    finally:
        await conn.close()
    db = Database(settings.database_url, pool_size=2)
    try:
        for first in range(0, count, 100):
            async with db.transaction() as session:
                for i in range(first, min(first + 100, count)):
                    await events_service.emit(
                        session, tenant_id=tenant_id, type=EVENT_TYPE, resource=_payload(i)
                    )
    finally:
        await db.dispose()


# ---- the run ----------------------------------------------------------------------------------------


async def bench(
    cluster: Cluster, procs: dict[str, Any], workdir: Path, args: argparse.Namespace
) -> list[Figures]:
    import httpx

    serve = procs["serve"]
    auth = serve.credentials
    meter = Meter(cluster, serve.proc.pid, procs["worker"].pid, [procs["receiver"].pid])
    dsn = cluster.dsn(DATABASE)
    limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
    results: list[Figures] = []
    async with httpx.AsyncClient(
        base_url=f"http://127.0.0.1:{serve.port}{BASE_PATH}", limits=limits, timeout=60, trust_env=False
    ) as client:
        started = time.monotonic()
        holders = await seed(client, auth, procs["receiver_url"], args.customers, dsn)
        print(
            f"seeded {len(holders)} customers ({sum(1 for h in holders if h.card_id)} cards, "
            f"{sum(1 for h in holders if h.credential_id)} wallet logins) in {time.monotonic() - started:.0f} s",
            flush=True,
        )
        ops = operations(auth, holders, secrets.token_hex(4))
        await meter.measure_idle(args.idle_seconds)
        print(
            "idle: serve {serve:.3f} cores, worker {worker:.3f} cores, their backends {db_api:.3f} + "
            "{db_worker:.3f}, worker statements {st_worker:.1f}/s".format(**meter.idle),
            flush=True,
        )
        wanted = [name for name in OPERATIONS if not args.only or name in args.only]
        counter = 0
        for name in wanted:
            if name != "webhook_delivery" and name not in ops:
                print(f"{name}: skipped (nothing to drive it: no embedded wallet credential)", flush=True)
                continue
            if args.wait_quiet:
                load = wait_until_quiet(
                    args.wait_quiet, threshold_cores=0.3, ours=[serve.proc.pid, procs["worker"].pid]
                )
                print(f"  (waited for quiet: other load {load or 0:.2f} cores)", flush=True)
            if name != "webhook_delivery":
                await run_ops(client, ops[name], counter, args.warmup, min(args.concurrency, args.warmup))
                counter += args.warmup
            await drain(dsn)
            await asyncio.to_thread(cluster.admin, ["CHECKPOINT"])
            await meter.reset_statements()
            before = await meter.snapshot(tables=True)
            retried_before = RETRIES["503"]
            if name == "webhook_delivery":
                # the events are written before `before` is taken: only the worker's delivery is measured
                await emit_events(cluster, auth[0], args.ops, workdir)
                await asyncio.to_thread(cluster.admin, ["CHECKPOINT"])
                await meter.reset_statements()
                before = await meter.snapshot(tables=True)
                done = before
            else:
                await run_ops(client, ops[name], counter, args.ops, args.concurrency)
                counter += args.ops
                done = await meter.snapshot()
            await drain(dsn)
            after = await meter.snapshot(tables=True)
            figures = meter.figures(name, args.ops, before, done, after)
            figures.routing = await meter.routing(args.ops, after.at - before.at)
            figures.retried_503 = RETRIES["503"] - retried_before
            if args.show_sql:
                figures.top_sql = await meter.top_sql(args.ops)
            results.append(figures)
            print_one(figures)
    procs["fan_out"] = meter.fan_out
    return results


def print_one(f: Figures) -> None:
    rate = f.ops / f.seconds if f.seconds > 0.01 else 0.0
    print(
        f"{f.name:<19} app {f.serve_ms:6.2f} ms  worker {f.worker_ms:6.2f} ms  DB {f.db_api_ms:5.2f}+{f.db_worker_ms:5.2f} ms "
        f"(cluster {f.cluster_ms:5.2f})  round trips {f.statements_api:5.1f}+{f.statements_worker:5.1f} "
        f"(+{f.nested:.0f} nested)  "
        f"WAL {f.wal_bytes / 1024:5.1f} KB ({f.wal_fpi:.1f} FPI)  rows {f.rows:4.1f} ({f.rows_by_table.get('webhook_deliveries', 0.0):.0f} webhooks)  table bytes {f.table_bytes / 1024:5.1f} KB  "
        f"| {rate:5.0f} ops/s, drain {f.drain_seconds:.1f} s, other load {f.other_load:.2f} cores"
        + (f", {f.retried_503} requests retried after a 503" if f.retried_503 else ""),
        flush=True,
    )
    for query, calls, exec_us, plans, plan_us in f.top_sql:
        print(
            f"      {calls:5.2f}/op {exec_us:7.0f} µs/op  planned {plans:5.2f}/op {plan_us:6.0f} µs/op  {query[:150]}"
        )


def report(results: list[Figures], args: argparse.Namespace, settings: dict[str, Any]) -> dict[str, Any]:
    print(
        "\n== the model (per operation; app = the API process, worker = platpay worker, DB = PostgreSQL) =="
    )
    print(
        "| operation | app CPU ms | worker CPU ms | DB CPU ms (backends) | DB CPU ms (cluster) | round trips API + worker "
        "| WAL KB | rows | app req/s per core | with its async work | ops/s per DB core | app cores per DB core "
        f"| ops/s at {args.disk_mb_s} MB/s of WAL |"
    )
    print("|---|" + "---|" * 12)
    model: dict[str, Any] = {}
    for f in results:
        app = f.serve_ms + f.worker_ms
        # the whole cluster's CPU (background writers too); never below its backends' (both are net of idle)
        db = max(f.cluster_ms, f.db_api_ms + f.db_worker_ms)
        row = {
            "app_req_s_per_core": 1000 / f.serve_ms if f.serve_ms and f.name != "webhook_delivery" else None,
            "app_ops_s_per_core_with_async": 1000 / app if app else None,
            "ops_s_per_db_core": 1000 / db if db else None,
            "app_cores_per_db_core": app / db if db else None,
            "wal_ceiling_ops_s": args.disk_mb_s * 1e6 / f.wal_bytes if f.wal_bytes > 1024 else None,
        }
        model[f.name] = row

        def fmt(value: float | None, spec: str = ",.0f") -> str:
            return "-" if value is None else format(value, spec)

        print(
            f"| {f.name} | {f.serve_ms:.2f} | {f.worker_ms:.2f} | {f.db_api_ms + f.db_worker_ms:.2f} | {db:.2f} "
            f"| {f.statements_api:.1f} + {f.statements_worker:.1f} | {f.wal_bytes / 1024:.1f} | {f.rows:.1f} "
            f"| {fmt(row['app_req_s_per_core'])} | {fmt(row['app_ops_s_per_core_with_async'])} "
            f"| {fmt(row['ops_s_per_db_core'])} | {fmt(row['app_cores_per_db_core'], '.1f')} "
            f"| {fmt(row['wal_ceiling_ops_s'])} |"
        )
    print("\n== round trips per operation by routing under distribution by tenant_id (classify()) ==")
    for f in results:
        total = sum(f.routing.values()) or 1.0
        parts = ", ".join(
            f"{kind} {f.routing.get(kind, 0.0):.1f}" for kind in (ROUTED, FAN_OUT, GLOBAL, UTILITY)
        )
        print(f"  {f.name:<19} {parts}  ({f.routing.get(FAN_OUT, 0.0) / total:.0%} fan out)")
    connections = max((f.connections for f in results), key=lambda c: sum(c.values()), default={})
    print(
        f"\nconnections seen at once: {connections} (concurrency {args.concurrency}); pool per process: "
        f"{settings['db_pool_size']} + {2 * settings['db_pool_size']} overflow + lean pools"
    )
    print(
        f"storage (bench/retention_growth.py, PostgreSQL): {RETENTION_BEFORE_PRUNE_KB} KB per transfer before "
        f"pruning, {RETENTION_KEPT_KB} KB kept forever: at 100 transfers/s "
        f"{RETENTION_KEPT_KB * 100 * 86400 / 1024 / 1024:.0f} GB/day kept"
    )
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=300, help="measured operations of each kind")
    parser.add_argument("--warmup", type=int, default=30, help="unmeasured operations before each kind")
    parser.add_argument("--concurrency", type=int, default=8, help="requests in flight")
    parser.add_argument("--customers", type=int, default=20)
    parser.add_argument("--idle-seconds", type=float, default=4.0)
    parser.add_argument(
        "--only", type=lambda s: s.split(","), default=None, help=f"of {','.join(OPERATIONS)}"
    )
    parser.add_argument(
        "--disk-mb-s", type=float, default=200.0, help="sustained WAL write bandwidth for the model"
    )
    parser.add_argument(
        "--wait-quiet", type=float, default=0.0, help="wait up to S s for a quiet machine before each"
    )
    parser.add_argument(
        "--show-sql",
        action="store_true",
        help="print each operation's statements (calls, execution and planning time per op)",
    )
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()

    from platpay.config import Settings

    commit = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"capacity: {machine_summary()}, commit {commit or '?'}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    settings = {"db_pool_size": Settings.model_fields["db_pool_size"].default}
    cluster = Cluster()
    procs: dict[str, Any] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="platpay-capacity-") as tmp:
            workdir = Path(tmp)
            procs = start_processes(cluster, workdir)
            results = asyncio.run(bench(cluster, procs, workdir, args))
            model = report(results, args, settings)
            if procs.get("fan_out"):
                print("\nstatements that would fan out (calls over the whole run, most first):")
                for query, calls in sorted(procs["fan_out"].items(), key=lambda item: -item[1])[:40]:
                    flat = " ".join(query.split())
                    print(f"  {calls:6d}  {flat[:170]}")
            print("\n== schema audit for distribution by tenant_id (catalog of the migrated database) ==")
            for line in asyncio.run(schema_audit(cluster.dsn(DATABASE))):
                print(f"  {line}")
            if args.json_out:
                args.json_out.write_text(
                    json.dumps(
                        {
                            "commit": commit,
                            "machine": machine_summary(),
                            "figures": [f.__dict__ for f in results],
                            "model": model,
                        },
                        indent=2,
                        default=str,
                    )
                )
    finally:
        for key in ("worker", "receiver"):
            if key in procs:
                stop(procs[key])
        if "serve" in procs:
            stop(procs["serve"].proc)
        cluster.destroy()


if __name__ == "__main__":
    main()
