"""POST /transfer-out under load, next to the database running the same SQL transaction on its own.

Requirement measured: on PostgreSQL, transfer-outs with Idempotency-Keys between random funded accounts at
8 and 32 concurrent connections against one `platpay serve` process: transfers/s and p50/p99, next to
pgbench running the statements one transfer-out executes, in the same run. Also the hot-account case (every
transfer from the platform's one USD account), and the same on SQLite (next to Python's sqlite3 running the
same statements in one thread: SQLite has one writer, so that is its limit). Issue 33's targets, printed as
met / MISSED beside the median round (`TARGETS`): PostgreSQL >= 0.45 of pgbench with random accounts and
>= 0.5 with the hot account, SQLite >= 0.3 of sqlite3. A benchmark, not a test: it prints figures and never
fails on them.

What one transfer-out executes (read from the SQL platpay emits for one request; `--show-sql` prints the
baseline scripts), every statement mirrored in the baseline with the same tables, indexes and payload
sizes, 2 round trips on PostgreSQL (3 while the credential was read on every request, 7 before its writes
went as one statement, 8 before the key's lookup rode with the read), all in autocommit. No token lookup
on PostgreSQL: the process keeps the credential it authenticated with (platpay/db/watch.py), so neither
side sends one (on SQLite every transfer's commit moves the file's change counter, so both sides read it).
One statement of the advisory lock on the key with the idempotency key lookup, carrying the joined read of
the internal account, the external account and the owner (db/lean.py's `ahead`; on SQLite the lookup and the read are two statements); then every
write as one statement of data-modifying CTEs, which is its own transaction (db/lean.py's LeanTransaction:
no BEGIN or COMMIT): the transaction's INSERT, the conditional balance UPDATE … RETURNING (the overdraft
check; the BALANCE_UPDATED event takes the balance it returns), the journal entry's and its 2 postings'
INSERTs, the expectation that the tenant's webhook endpoint is the one the request's authentication read,
the events OUTGOING_PAYMENT.PENDING and INTERNAL_ACCOUNT.BALANCE_UPDATED, the settlement job, and the
idempotency key's INSERT (with the sealed ~1.4 KB response), ending in `platpay_expect(...)`, which fails
the whole statement if the UPDATE found no row or the endpoint changed (migration 0027_expect). No webhook
endpoint is configured (with one, each event's delivery row and delivery job ride along the same way on
both sides).

Setup, all on 127.0.0.1 in a temporary directory: a fresh database `platpay_bench_money_<random>` (dropped
afterwards) and a fresh SQLite file; one `platpay serve` process each, embedded job runner OFF (the
settlement jobs queue up; the request path is what is measured, and pgbench's job rows must not be run);
N customers seeded through the API, each with a USD internal account funded with $1B and an external USD
account; the platform's USD account funded likewise. wrk (Lua) sends every request with a fresh
Idempotency-Key and a random customer's (internal, external) pair and amount; pgbench (-M prepared, the way
asyncpg runs statements) picks a random customer the same way. Each configuration runs pgbench then wrk
back to back, each after a warm-up. At the end `platpay ledger verify` checks the whole database (the
baseline's postings and balances are real ones too).

    .venv/bin/python bench/transfer_out.py                        # PostgreSQL + SQLite, 10 s per run
    .venv/bin/python bench/transfer_out.py --backends postgres --duration 20 --rounds 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    BIN,
    DEFAULT_PG_ADMIN,
    ROOT,
    bench_env,
    child_setup,
    children_cpu_seconds,
    machine_summary,
    pg_cpu_seconds,
    pg_database,
    pg_reachable,
    set_child_niceness,
    stop,
    system_busy_seconds,
    tree_cpu_seconds,
    wait_until_quiet,
)
from http_config import Target, basic, ensure_wrk, parse_wrk, run_wrk, start_platpay

BASE_PATH = "/2025-10-13"
# Issue 33's targets (ratios to the baseline, median round): PostgreSQL with random accounts and with one hot
# account (one server process per core), SQLite (one process)
TARGETS = {
    ("postgres", "spread"): 0.45,
    ("postgres", "hot"): 0.5,
    ("sqlite", "spread"): 0.3,
    ("sqlite", "hot"): 0.3,
}
FUND = 100_000_000_000  # minor units per account: $1B, never exhausted by a run
SCENARIOS = ("spread", "hot")


@dataclass
class Pair:
    """One sender: an internal USD account and the external account it pays out to."""

    internal_id: str
    external_id: str
    customer_id: str | None  # None: the platform's own account
    platform_customer_id: str | None


@dataclass
class Seeded:
    tenant_id: str
    client_id: str
    pairs: list[Pair]
    platform: Pair


@dataclass
class Rate:
    rps: float
    p50_ms: float
    p99_ms: float
    count: int
    errors: int = 0
    server_cpu_us: float | None = None  # platpay process CPU per transfer
    db_cpu_us: float | None = None  # all postgres processes' CPU per transfer
    other_cores: float | None = None  # load from processes outside the measurement


@dataclass
class Row:
    backend: str
    scenario: str
    connections: int
    processes: int = 1  # platpay server processes (`serve --workers N`)
    variant: str = ""  # --variant: the same server with other settings, measured in the same rounds
    baseline: list[Rate] = field(default_factory=list)
    platpay: list[Rate] = field(default_factory=list)


# ---- seeding through the API ------------------------------------------------------------------------

PERSON = {
    "customerType": "INDIVIDUAL",
    "fullName": "Jane Doe",
    "birthDate": "1990-04-12",
    "email": "jane@example.com",
    "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
}


def _bank(number: int, customer_id: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "currency": "USD",
        "accountInfo": {
            "accountType": "USD_ACCOUNT",
            "accountNumber": f"{number:06d}900",  # "900": no sandbox magic (rejections, failures)
            "routingNumber": "011000015",
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
        },
    }
    if customer_id:
        body["customerId"] = customer_id
    return body


async def _seed(
    base_url: str, credentials: tuple[str, str], customers: int, transport: Any = None
) -> list[Pair]:
    """`customers` funded customers with an external account each, and the platform's own pair last;
    `transport`: an httpx transport (an in-process app) instead of the network."""
    import httpx

    limit = asyncio.Semaphore(8)

    async def check(response: httpx.Response, status: int) -> dict[str, Any]:
        if response.status_code != status:
            raise RuntimeError(
                f"seeding: {response.request.url} answered {response.status_code}: {response.text}"
            )
        return response.json()

    async with httpx.AsyncClient(
        base_url=base_url + BASE_PATH, auth=credentials, timeout=60, trust_env=False, transport=transport
    ) as client:

        async def open_one(n: int) -> Pair:
            async with limit:
                person = await check(
                    await client.post("/customers", json={**PERSON, "platformCustomerId": f"bench-{n}"}), 201
                )
                accounts = await check(
                    await client.get(
                        "/customers/internal-accounts", params={"customerId": person["id"], "currency": "USD"}
                    ),
                    200,
                )
                internal = accounts["data"][0]["id"]
                bank = await check(
                    await client.post("/customers/external-accounts", json=_bank(100_000 + n, person["id"])),
                    201,
                )
                await check(
                    await client.post(f"/sandbox/internal-accounts/{internal}/fund", json={"amount": FUND}),
                    200,
                )
                return Pair(internal, bank["id"], person["id"], person["platformCustomerId"])

        pairs = list(await asyncio.gather(*(open_one(n) for n in range(customers))))
        platform_usd = (
            await check(await client.get("/platform/internal-accounts", params={"currency": "USD"}), 200)
        )["data"][0]["id"]
        bank = await check(await client.post("/platform/external-accounts", json=_bank(99, None)), 201)
        await check(
            await client.post(f"/sandbox/internal-accounts/{platform_usd}/fund", json={"amount": FUND}), 200
        )
        # One real transfer-out first: the baseline copies its payload sizes from the rows it wrote.
        body = {
            "source": {"accountId": pairs[0].internal_id},
            "destination": {"accountId": pairs[0].external_id},
            "amount": 1,
        }
        await check(
            await client.post("/transfer-out", json=body, headers={"Idempotency-Key": "bench-sample"}), 201
        )
    return [*pairs, Pair(platform_usd, bank["id"], None, None)]


def seed(target: Target, customers: int) -> list[Pair]:
    assert target.credentials is not None
    started = time.monotonic()
    pairs = asyncio.run(_seed(f"http://127.0.0.1:{target.port}", target.credentials, customers))
    print(
        f"  seeded {customers} customers + the platform account in {time.monotonic() - started:.1f} s",
        flush=True,
    )
    return pairs


# ---- what one transfer-out wrote: payload sizes for the baseline -------------------------------------

SAMPLE_SQL = {
    "event_payment": "SELECT data FROM events WHERE type = 'OUTGOING_PAYMENT.PENDING' ORDER BY id DESC LIMIT 1",
    "event_balance": "SELECT data FROM events WHERE type = 'INTERNAL_ACCOUNT.BALANCE_UPDATED' ORDER BY id DESC LIMIT 1",
    "sealed_response": "SELECT response_body FROM idempotency_keys WHERE key = 'bench-sample'",
    "tenant_id": "SELECT tenant_id FROM idempotency_keys WHERE key = 'bench-sample'",
}


# Whether the schema has transactions.direction (migration 0021_txn: NOT NULL once migrated), so the baseline's INSERT
# writes it as platpay does; a tree from before it (a baseline measured with this script) has no such column.
DIRECTION_SQL = {
    "postgres": "SELECT count(*) FROM information_schema.columns WHERE table_name = 'transactions' "
    "AND column_name = 'direction'",
    "sqlite": "SELECT count(*) FROM pragma_table_info('transactions') WHERE name = 'direction'",
}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


async def _pg_samples(dsn: str) -> dict[str, str]:
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        samples = {name: _text(await conn.fetchval(sql)) for name, sql in SAMPLE_SQL.items()}
        samples["direction"] = str(await conn.fetchval(DIRECTION_SQL["postgres"]))
        return samples
    finally:
        await conn.close()


def sqlite_samples(path: Path) -> dict[str, str]:
    with sqlite3.connect(path) as conn:
        samples = {name: _text(conn.execute(sql).fetchone()[0]) for name, sql in SAMPLE_SQL.items()}
        samples["direction"] = str(conn.execute(DIRECTION_SQL["sqlite"]).fetchone()[0])
        return samples


# ---- the baseline on PostgreSQL: pgbench --------------------------------------------------------------

AUTH_COLUMNS = (
    "api_tokens.id, api_tokens.permissions, api_tokens.secret_sha256, tenants.id AS id_1, tenants.platform_id, "
    "tenants.environment, platforms.is_regulated, tenants.config_id, tenants.uma_domain, tenants.webhook_endpoint, "
    "tenants.supported_currencies, tenants.webhook_public_key_pem, tenants.created_at, tenants.updated_at"
)
INTERNAL_COLUMNS = (
    "id, tenant_id, customer_id, currency, type, status, private_enabled, created_at, updated_at"
)
EXTERNAL_COLUMNS = (
    "id, tenant_id, customer_id, owner_key, identity_key, currency, account_type, account_info, status, "
    "platform_account_id, default_uma_deposit_account, beneficiary_verification_status, "
    "beneficiary_verified_name, created_at, updated_at, deleted_at"
)
CUSTOMER_COLUMNS = (
    "id, tenant_id, customer_type, platform_customer_id, uma_address, kyc_status, region, currencies, email, "
    "full_name, birth_date, nationality, address, business_info, created_at, updated_at, deleted_at"
)
TRANSACTION_COLUMNS = (
    "id, tenant_id, type, kind, status, customer_id, platform_customer_id, source, destination, sender_account_id, "
    "receiver_account_id, sent_amount, sent_currency, received_amount, received_currency, fee_amount, "
    "exchange_rate, rail, reference, outcome, quote_id, agent_id, description, failure_reason, extra, settled_at, "
    "receipt_delivery_confirmed_at, created_at, updated_at"
)
JOB_COLUMNS = (
    "id, kind, lane, concurrency_key, tenant_id, payload, state, run_at, attempts, max_attempts, lease_until, "
    "lease_token, dedupe_key, last_error, created_at, updated_at, finished_at"
)


def _parties_select(internal: str, external: str, tenant: str) -> str:
    """platpay's one read of a transfer's internal account, live external account and owner."""
    columns = ", ".join(
        [f"internal_accounts.{c}" for c in INTERNAL_COLUMNS.split(", ")]
        + [f"external_accounts.{c}" for c in EXTERNAL_COLUMNS.split(", ")]
        + [f"customers.{c}" for c in CUSTOMER_COLUMNS.split(", ")]
    )
    return (
        f"SELECT {columns} FROM internal_accounts LEFT OUTER JOIN external_accounts "
        f"ON external_accounts.id = {external} AND external_accounts.tenant_id = internal_accounts.tenant_id "
        "AND external_accounts.deleted_at IS NULL LEFT OUTER JOIN customers "
        "ON customers.id = internal_accounts.customer_id AND customers.tenant_id = internal_accounts.tenant_id "
        f"WHERE internal_accounts.id = {internal} AND internal_accounts.tenant_id = {tenant}"
    )


PARTIES_SELECT = _parties_select("b.internal_id", "b.external_id", ":tenant")
# Each event's INSERT returns its tenant's webhook endpoint (where to deliver it), in the same statement.
EVENT_RETURNING = "RETURNING (SELECT tenants.webhook_endpoint FROM tenants WHERE tenants.id = {tenant})"
SQLITE_PARTIES = _parties_select("?", "?", "?")  # parameters: external id, internal id, tenant


def _pg_id(prefix: str, n: int = 0) -> str:
    """A time-ordered id like platpay's UUIDv7 ones: the same within a transaction (now() is its start)."""
    return f"'{prefix}:' || to_hex((extract(epoch from now()) * 1000000)::bigint) || '-{n}-' || to_hex(:r::bigint)"


def pgbench_script(*, hot: bool, direction: bool = True) -> str:
    tx = _pg_id("Transaction")
    columns = TRANSACTION_COLUMNS + (", direction" if direction else "")
    lines = [
        "-- one POST /transfer-out, statement for statement (bench/transfer_out.py)",
        r"\set n 0" if hot else r"\set n random(1, :naccounts)",
        r"\set amount random(1, 1000)",
        r"\set r random(1, 4611686018427387903)",
        r"\set lock random(-2305843009213693951, 2305843009213693951)",
        # (no credential read: a platpay process on PostgreSQL keeps the credential it authenticated with while
        # PostgreSQL notifies it of changes, platpay/db/watch.py, so a request of a known token sends none)
        # platpay reads the internal account, the external account and the owner in one joined SELECT,
        # which carries the idempotency key's advisory lock and lookup (db/lean.py's `ahead`: the key's
        # row, then the read's rows, in one statement), in autocommit: no BEGIN (db/lean.py's
        # LeanTransaction sends one only before a statement that writes or locks, and this one has none);
        # the bench map (n -> ids) rides along in the read.
        "SELECT * FROM (SELECT pg_try_advisory_xact_lock(:lock::bigint) AS locked, k.fingerprint, "
        "k.response_status, k.response_body, k.expires_at FROM (SELECT 1 AS one) AS s "
        "LEFT OUTER JOIN idempotency_keys k ON k.tenant_id = :tenant AND k.key = 'pgbench-' || :r) AS ahead "
        "LEFT OUTER JOIN LATERAL (SELECT true AS ahead_main, main.* FROM ("
        "SELECT b.internal_id, b.external_id, coalesce(b.customer_id, '') AS customer_id, "
        "coalesce(b.platform_customer_id, '') AS platform_customer_id, "
        f"(SELECT row(p.*)::text FROM ({PARTIES_SELECT}) p) AS parties "
        r"FROM bench_accounts b WHERE b.n = :n) AS main) AS main ON true \gset",
        # Every write is deferred (db/lean.py's write buffer) and sent as one statement of data-modifying
        # CTEs, which is its own transaction: the transaction's row, the balance's conditional UPDATE (its
        # RETURNING feeds the BALANCE_UPDATED event's balance, and must find its row), the journal entry and
        # its postings, the expectation that the tenant's webhook endpoint is the one the request read (none
        # here), the events, the settlement job and the idempotency key; platpay_expect fails the whole
        # statement if a condition does not hold (migration 0027_expect).
        f"WITH w0 AS (INSERT INTO transactions ({columns}) VALUES ({tx}, :tenant, 'OUTGOING', 'TRANSFER_OUT', "
        "'PENDING', NULLIF(:customer_id::text, ''), NULLIF(:platform_customer_id::text, ''), "
        "jsonb_build_object('sourceType', 'ACCOUNT', 'accountId', :internal_id::text, 'currency', 'USD'), "
        "jsonb_build_object('destinationType', 'ACCOUNT', 'accountId', :external_id::text, 'currency', 'USD', "
        "'paymentRail', 'ACH'), :internal_id, :external_id, :amount, 'USD', :amount, 'USD', 0, NULL, 'ACH', NULL, "
        "'SUCCESS', NULL, NULL, NULL, NULL, '{}'::jsonb, NULL, NULL, now(), now()"
        + (", 'DEBIT')), " if direction else ")), ")
        + "w1 AS (UPDATE ledger_accounts SET available = available - :amount, held = held + :amount, "
        "updated_at = now() WHERE id = :internal_id AND tenant_id = :tenant AND currency = 'USD' "
        "AND (allow_negative OR (available - :amount >= 0 AND held + :amount >= 0)) RETURNING available, held), "
        "w2 AS (INSERT INTO journal_entries (id, tenant_id, kind, reference, reverses_id, created_at) "
        f"VALUES ({_pg_id('JournalEntry')}, :tenant, 'TRANSFER_OUT_HOLD', {tx}, NULL, now())), "
        "w3 AS (INSERT INTO postings (id, entry_id, account_id, tenant_id, currency, bucket, amount, created_at) VALUES "
        f"({_pg_id('Posting', 1)}, {_pg_id('JournalEntry')}, :internal_id, :tenant, 'USD', 'AVAILABLE', -(:amount::bigint), now())), "
        "w4 AS (INSERT INTO postings (id, entry_id, account_id, tenant_id, currency, bucket, amount, created_at) VALUES "
        f"({_pg_id('Posting', 2)}, {_pg_id('JournalEntry')}, :internal_id, :tenant, 'USD', 'HELD', :amount, now())), "
        "w5 AS (SELECT (SELECT tenants.webhook_endpoint FROM tenants WHERE tenants.id = :tenant) "
        "IS NOT DISTINCT FROM NULL AS endpoint_unchanged), "
        "w6 AS (INSERT INTO events (id, tenant_id, type, data, created_at) VALUES "
        f"({_pg_id('Event', 1)}, :tenant, 'OUTGOING_PAYMENT.PENDING', :event_payment::jsonb, now())), "
        f"w7 AS (INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({_pg_id('Task')}, 'payments.transfer_step', 'default', NULL, :tenant, "
        f"jsonb_build_object('transactionId', {tx}, 'step', 'process'), 'QUEUED', now(), 0, 25, NULL, NULL, NULL, "
        "NULL, now(), now(), NULL)), "
        "w8 AS (INSERT INTO events (id, tenant_id, type, data, created_at) SELECT "
        f"{_pg_id('Event', 2)}, :tenant, 'INTERNAL_ACCOUNT.BALANCE_UPDATED', "
        "jsonb_set(jsonb_set(:event_balance::jsonb, '{balance,amount}'::text[], to_jsonb(w1.available)), "
        "'{totalBalance,amount}'::text[], to_jsonb(w1.available + w1.held)), now() FROM w1), "
        "w9 AS (INSERT INTO idempotency_keys (tenant_id, key, fingerprint, response_status, response_body, created_at, "
        "expires_at) VALUES (:tenant, 'pgbench-' || :r, md5(:r::text) || md5(:lock::text), 201, :sealed_response, "
        "now(), now() + interval '48 hours')) "
        "SELECT platpay_expect((SELECT count(*) FROM w1) = 1 AND (SELECT endpoint_unchanged FROM w5));",
    ]
    return "\n".join(lines) + "\n"


async def _pg_prepare(dsn: str, pairs: list[Pair]) -> None:
    """The bench map n -> ids (n = 0 is the platform's account), plus fresh planner statistics."""
    import asyncpg

    conn = await asyncpg.connect(dsn)
    try:
        await conn.execute(
            "CREATE TABLE bench_accounts (n integer PRIMARY KEY, internal_id text NOT NULL, "
            "external_id text NOT NULL, customer_id text, platform_customer_id text)"
        )
        rows = [(0, pairs[-1].internal_id, pairs[-1].external_id, None, None)] + [
            (n, p.internal_id, p.external_id, p.customer_id, p.platform_customer_id)
            for n, p in enumerate(pairs[:-1], 1)
        ]
        await conn.executemany("INSERT INTO bench_accounts VALUES ($1, $2, $3, $4, $5)", rows)
        await conn.execute("VACUUM ANALYZE")
    finally:
        await conn.close()


def _percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(q * (len(sorted_values) - 1))))
    return sorted_values[index]


def run_pgbench(
    dsn: str, script: Path, defines: dict[str, str], *, clients: int, seconds: float, workdir: Path, log: bool
) -> Rate:
    logdir = Path(tempfile.mkdtemp(prefix="pgbench-log-", dir=workdir))
    cmd = [
        "pgbench",
        "-n",
        "-M",
        "prepared",
        "-f",
        str(script),
        "-c",
        str(clients),
        "-j",
        "2" if clients >= 2 else "1",
        "-T",
        str(max(1, round(seconds))),
        *[arg for name, value in defines.items() for arg in ("-D", f"{name}={value}")],
    ]
    if log:
        cmd += ["-l", "--log-prefix", str(logdir / "tx")]
    cmd.append(dsn.rsplit("/", 1)[1])
    env = {**os.environ, "PGHOST": "127.0.0.1", "PGUSER": _pg_user(dsn), "PGPORT": _pg_port(dsn)}
    result = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=seconds + 120,
        check=False,
        env=env,
        cwd=logdir,
        preexec_fn=child_setup,
    )
    if result.returncode != 0:
        raise RuntimeError(f"pgbench failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    tps = _pgbench_value(result.stdout, r"^tps = ([\d.]+)")
    count = int(_pgbench_value(result.stdout, r"^number of transactions actually processed: (\d+)"))
    failed = _pgbench_value(result.stdout, r"^number of failed transactions: (\d+)", default=0)
    latencies: list[float] = []
    for path in logdir.glob("tx*"):
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 3 and parts[2].isdigit():
                latencies.append(int(parts[2]) / 1000)
    latencies.sort()
    shutil.rmtree(logdir, ignore_errors=True)
    return Rate(tps, _percentile(latencies, 0.5), _percentile(latencies, 0.99), count, int(failed))


def _pgbench_value(text: str, pattern: str, default: float | None = None) -> float:
    import re

    match = re.search(pattern, text, re.M)
    if match is None:
        if default is not None:
            return default
        raise RuntimeError(f"unexpected pgbench output:\n{text}")
    return float(match.group(1))


def _pg_user(dsn: str) -> str:
    from urllib.parse import urlparse

    return urlparse(dsn).username or "postgres"


def _pg_port(dsn: str) -> str:
    from urllib.parse import urlparse

    return str(urlparse(dsn).port or 5432)


# ---- the baseline on SQLite: the same statements from one thread ------------------------------------


def sqlite_baseline(
    path: Path, seeded: Seeded, samples: dict[str, str], *, hot: bool, seconds: float
) -> Rate:
    """The statements of one transfer-out through Python's sqlite3, back to back in one thread (SQLite
    runs one writer at a time, so more threads add nothing but lock waits), with platpay's pragmas."""
    import random

    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    for pragma in ("journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL", "busy_timeout=30000"):
        conn.execute(f"PRAGMA {pragma}")
    pairs = [seeded.platform] if hot else seeded.pairs
    tenant = seeded.tenant_id
    direction = samples["direction"] == "1"
    columns = TRANSACTION_COLUMNS + (", direction" if direction else "")
    rng = random.Random(7)
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    count = 0
    while time.perf_counter() < deadline:
        started = time.perf_counter()
        pair = rng.choice(pairs)
        amount = rng.randint(1, 1000)
        stamp = time.strftime("%Y-%m-%d %H:%M:%S") + f".{int(time.time() * 1e6) % 1_000_000:06d}"
        unique = secrets.token_hex(12)
        tx, entry, key = f"Transaction:{unique}", f"JournalEntry:{unique}", f"sqlite-{unique}"
        execute = conn.execute
        execute(
            f"SELECT {AUTH_COLUMNS} FROM api_tokens JOIN tenants ON tenants.id = api_tokens.tenant_id "
            "JOIN platforms ON platforms.id = tenants.platform_id "
            "WHERE api_tokens.client_id = ? AND api_tokens.deleted_at IS NULL",
            (seeded.client_id,),
        ).fetchall()
        execute("BEGIN IMMEDIATE")
        execute(
            "SELECT fingerprint, response_status, response_body, expires_at "
            'FROM idempotency_keys WHERE tenant_id = ? AND "key" = ?',
            (tenant, key),
        ).fetchall()
        execute(SQLITE_PARTIES, (pair.external_id, pair.internal_id, tenant)).fetchall()
        source = json.dumps({"sourceType": "ACCOUNT", "accountId": pair.internal_id, "currency": "USD"})
        destination = json.dumps(
            {
                "destinationType": "ACCOUNT",
                "accountId": pair.external_id,
                "currency": "USD",
                "paymentRail": "ACH",
            }
        )
        execute(
            f"INSERT INTO transactions ({columns}) VALUES ({', '.join('?' * (29 + direction))})",
            (
                tx,
                tenant,
                "OUTGOING",
                "TRANSFER_OUT",
                "PENDING",
                pair.customer_id,
                pair.platform_customer_id,
                source,
                destination,
                pair.internal_id,
                pair.external_id,
                amount,
                "USD",
                amount,
                "USD",
                0,
                None,
                "ACH",
                None,
                "SUCCESS",
                None,
                None,
                None,
                None,
                "{}",
                None,
                None,
                stamp,
                stamp,
                *(("DEBIT",) if direction else ()),
            ),
        )
        updated = execute(
            "UPDATE ledger_accounts SET available = available + ?, held = held + ?, updated_at = ? "
            "WHERE id = ? AND tenant_id = ? AND currency = ? AND (allow_negative = 1 OR available + ? >= ? "
            "AND held + ? >= ?) RETURNING available, held",
            (-amount, amount, stamp, pair.internal_id, tenant, "USD", -amount, 0, amount, 0),
        ).fetchall()
        assert len(updated) == 1
        execute(
            "INSERT INTO journal_entries (id, tenant_id, kind, reference, reverses_id, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            (entry, tenant, "TRANSFER_OUT_HOLD", tx, None, stamp),
        )
        conn.executemany(
            "INSERT INTO postings (id, entry_id, account_id, tenant_id, currency, bucket, amount, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (f"Posting:{unique}-1", entry, pair.internal_id, tenant, "USD", "AVAILABLE", -amount, stamp),
                (f"Posting:{unique}-2", entry, pair.internal_id, tenant, "USD", "HELD", amount, stamp),
            ],
        )
        insert_event = (
            "INSERT INTO events (id, tenant_id, type, data, created_at) VALUES (?, ?, ?, ?, ?) "
            + (EVENT_RETURNING.format(tenant="?"))
        )
        execute(
            insert_event,
            (
                f"Event:{unique}-1",
                tenant,
                "OUTGOING_PAYMENT.PENDING",
                samples["event_payment"],
                stamp,
                tenant,
            ),
        ).fetchall()
        execute(
            f"INSERT INTO jobs ({JOB_COLUMNS}) VALUES ({', '.join('?' * 17)})",
            (
                f"Task:{unique}",
                "payments.transfer_step",
                "default",
                None,
                tenant,
                json.dumps({"transactionId": tx, "step": "process"}),
                "QUEUED",
                stamp,
                0,
                25,
                None,
                None,
                None,
                None,
                stamp,
                stamp,
                None,
            ),
        )
        execute(
            insert_event,
            (
                f"Event:{unique}-2",
                tenant,
                "INTERNAL_ACCOUNT.BALANCE_UPDATED",
                samples["event_balance"],
                stamp,
                tenant,
            ),
        ).fetchall()
        execute(
            'INSERT INTO idempotency_keys (tenant_id, "key", fingerprint, response_status, response_body, '
            "created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (tenant, key, secrets.token_hex(32), 201, samples["sealed_response"], stamp, stamp),
        )
        execute("COMMIT")
        latencies.append((time.perf_counter() - started) * 1000)
        count += 1
    conn.close()
    latencies.sort()
    return Rate(count / seconds, _percentile(latencies, 0.5), _percentile(latencies, 0.99), count)


# ---- platpay under wrk ------------------------------------------------------------------------------


def write_wrk_lua(path: Path, credentials: tuple[str, str], pairs: list[Pair], run_token: str) -> None:
    """Every request: a fresh Idempotency-Key (run token, thread, counter), a random sender's pair, a
    random amount of 1-1000 minor units."""
    table = ",\n".join(f'  {{"{p.internal_id}", "{p.external_id}"}}' for p in pairs)
    path.write_text(
        f"""-- POST /transfer-out with a fresh Idempotency-Key per request (bench/transfer_out.py)
local pairs = {{
{table}
}}
local auth = "{basic(credentials)}"
local run = "{run_token}"
local thread_counter = 0
local counter = 0
local prefix = run

function setup(thread)
  thread_counter = thread_counter + 1
  thread:set("thread_no", thread_counter)
end

function init(args)
  prefix = run .. "-" .. tostring(thread_no or 0)
  math.randomseed(os.time() + (thread_no or 0) * 7919)
end

function request()
  counter = counter + 1
  local pair = pairs[math.random(#pairs)]
  local body = '{{"source":{{"accountId":"' .. pair[1] .. '"}},"destination":{{"accountId":"' .. pair[2]
    .. '"}},"amount":' .. math.random(1, 1000) .. '}}'
  return wrk.format("POST", "{BASE_PATH}/transfer-out", {{
    ["Authorization"] = auth,
    ["Content-Type"] = "application/json",
    ["Idempotency-Key"] = prefix .. "-" .. counter,
  }}, body)
end
""",
        "utf-8",
    )


class LoadMeter:
    """CPU of the server and of PostgreSQL per transfer, and foreign load, around one measured run."""

    def __init__(self, server_pid: int | None, *, postgres: bool, ours: list[int]) -> None:
        self.server_pid, self.postgres, self.ours = server_pid, postgres, ours

    def __enter__(self) -> LoadMeter:
        self.server = tree_cpu_seconds(self.server_pid) if self.server_pid else None
        self.pg = pg_cpu_seconds() if self.postgres else None
        self.own = sum(tree_cpu_seconds(pid) or 0.0 for pid in self.ours) + children_cpu_seconds()
        self.busy = system_busy_seconds()
        self.self_cpu = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.busy_after = system_busy_seconds()
        self.server_after = tree_cpu_seconds(self.server_pid) if self.server_pid else None
        self.pg_after = pg_cpu_seconds() if self.postgres else None
        self.own_after = sum(tree_cpu_seconds(pid) or 0.0 for pid in self.ours) + children_cpu_seconds()
        self.self_cpu_after = time.process_time()

    def fill(self, rate: Rate) -> Rate:
        if rate.count:
            if self.server is not None and self.server_after is not None:
                rate.server_cpu_us = (self.server_after - self.server) * 1e6 / rate.count
            if self.pg is not None and self.pg_after is not None:
                rate.db_cpu_us = (self.pg_after - self.pg) * 1e6 / rate.count
        if self.busy and self.busy_after:
            ours = (self.own_after - self.own) + (self.self_cpu_after - self.self_cpu)
            if self.pg is not None and self.pg_after is not None:
                ours += self.pg_after - self.pg
            rate.other_cores = max(0.0, (self.busy_after[0] - self.busy[0]) - ours) / (
                self.busy_after[1] - self.busy[1]
            )
        return rate


def measure_wrk(
    wrk: str,
    target: Target,
    connections: int,
    args: argparse.Namespace,
    *,
    senders: list[Pair],
    workdir: Path,
) -> Rate:
    """Warm up, then one measured run; each wrk run gets its own script, so no Idempotency-Key repeats."""
    credentials = target.credentials
    assert credentials is not None
    url = f"http://127.0.0.1:{target.port}{BASE_PATH}/transfer-out"

    def fresh_script() -> Path:
        lua = workdir / f"transfer_out_{secrets.token_hex(4)}.lua"
        write_wrk_lua(lua, credentials, senders, f"{target.name[:2]}{secrets.token_hex(6)}")
        return lua

    if args.warmup > 0:
        run_wrk(wrk, url, fresh_script(), connections=connections, threads=1, seconds=args.warmup)
    lua = fresh_script()
    quiet(args, [target.proc.pid])
    # (a variant's server is "postgres-<name>": its PostgreSQL CPU is its own, not foreign load)
    on_postgres = target.name == "postgres" or target.name.startswith("postgres-")
    with LoadMeter(target.proc.pid, postgres=on_postgres, ours=[target.proc.pid]) as meter:
        result = parse_wrk(run_wrk(wrk, url, lua, connections=connections, threads=1, seconds=args.duration))
    if target.proc.poll() is not None:
        raise RuntimeError(f"{target.name} exited during the run; see {target.log}")
    errors = result.non_2xx + sum(result.socket_errors.values())
    return meter.fill(Rate(result.rps, result.p50_ms, result.p99_ms, result.requests, errors))


def quiet(args: argparse.Namespace, ours: list[int]) -> None:
    """With --wait-quiet: wait (bounded) for a moment when other people's work leaves the machine idle."""
    if args.wait_quiet > 0:
        wait_until_quiet(args.wait_quiet, threshold_cores=args.quiet_threshold, ours=ours)


# ---- where the server's CPU goes (py-spy) ------------------------------------------------------------

# Request phases, matched against py-spy frames ("function (file:line)"); a sample counts for the deepest
# frame that matches, so nested phases (a lookup inside the service call) are split out of their parent.
PHASES = [
    ("HTTP + FastAPI (parsing, routing, validation, middleware, response)", "uvicorn/"),
    ("HTTP + FastAPI (parsing, routing, validation, middleware, response)", "starlette/"),
    ("HTTP + FastAPI (parsing, routing, validation, middleware, response)", "fastapi/"),
    ("HTTP + FastAPI (parsing, routing, validation, middleware, response)", "platpay/middleware.py"),
    ("authentication (token lookup, secret hash)", "authenticate_request (platpay/auth/service.py"),
    ("idempotency: advisory lock + key lookup, key insert, seal, COMMIT", "platpay/kit/idempotency.py"),
    ("transfer_out: other (rails, amount checks)", "transfer_out (platpay/payments/transfers.py"),
    ("lookup: internal + external account + owner", "_accounts (platpay/payments/transfers.py"),
    ("owner checks (KYC / required info)", "_customer_checks (platpay/payments/transfers.py"),
    ("INSERT transaction", "_create_transfer (platpay/payments/transfers.py"),
    ("ledger.post: conditional UPDATE, journal entry, postings", "post (platpay/ledger/service.py"),
    ("OUTGOING_PAYMENT.PENDING: render, event", "emit_status (platpay/payments/service.py"),
    ("BALANCE_UPDATED: render, event", "emit_balance_update (platpay/accounts/service.py"),
    ("settlement job row", "enqueue (platpay/jobs/service.py"),
]


OUTSIDE = "outside a request phase: event loop, GC, other"
SQL_LAYER = "SQLAlchemy + asyncpg / aiosqlite executing statements (phase not visible: greenlet stacks)"


def profile_server(
    target: Target, wrk: str, args: argparse.Namespace, senders: list[Pair], workdir: Path
) -> None:
    """Sample the server with py-spy (on-CPU samples only: --gil) during one more wrk run, and print the
    server's CPU per transfer split by request phase. py-spy is a profiling aid, not a dependency:
    `.venv/bin/pip install py-spy`."""
    py_spy = shutil.which("py-spy") or str(BIN / "py-spy")
    if not Path(py_spy).exists():
        print("  --profile: py-spy not found (pip install py-spy into the venv)")
        return
    assert target.credentials is not None
    lua = workdir / "profile.lua"
    write_wrk_lua(lua, target.credentials, senders, f"pf{secrets.token_hex(6)}")
    url = f"http://127.0.0.1:{target.port}{BASE_PATH}/transfer-out"
    seconds = args.profile
    raw = workdir / "profile.txt"
    load = subprocess.Popen(
        [
            wrk,
            "-t1",
            f"-c{args.connections[0]}",
            f"-d{round(seconds) + 2}s",
            "--latency",
            "-s",
            str(lua),
            url,
        ],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=child_setup,
    )
    cpu_before = tree_cpu_seconds(target.proc.pid) or 0.0
    subprocess.run(
        [
            py_spy,
            "record",
            "-p",
            str(target.proc.pid),
            "-d",
            str(round(seconds)),
            "-r",
            "250",
            "--gil",
            "--nonblocking",
            "--subprocesses",
            "-f",
            "raw",
            "-o",
            str(raw),
        ],
        capture_output=True,
        check=False,
        timeout=seconds + 60,
    )
    cpu_after = tree_cpu_seconds(target.proc.pid) or 0.0
    out, _ = load.communicate(timeout=seconds + 60)
    result = parse_wrk(out)
    if not raw.exists() or not result.requests:
        print("  --profile: no samples")
        return
    if args.profile_raw is not None:
        shutil.copyfile(raw, args.profile_raw)
    totals: dict[str, int] = {}
    unphased: dict[str, int] = {}  # leaf frames of samples outside every phase
    samples = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples += int(count)
        label = OUTSIDE
        frames = stack.split(";")
        for frame in frames:
            for name, pattern in PHASES:
                if pattern in frame:
                    label = name
        if label == OUTSIDE:
            # py-spy cannot follow a greenlet's stack back to the coroutine that started it: SQLAlchemy's
            # synchronous half of every statement (compiling, executing, loading rows, flushing the unit of
            # work) runs in a greenlet, so those samples show no platpay frame.
            if any(part in frame for frame in frames for part in ("sqlalchemy/", "asyncpg/", "aiosqlite/")):
                label = SQL_LAYER
            leaf = re.sub(r"\(/\S*/(site-packages|python3\.11)/", "(", frames[-1])
            unphased[leaf] = unphased.get(leaf, 0) + int(count)
        totals[label] = totals.get(label, 0) + int(count)
    per_request = (cpu_after - cpu_before) * 1e6 / (result.rps * seconds)
    print(
        f"\nprofile (py-spy --gil, {samples} samples, {seconds:g} s at c={args.connections[0]}, "
        f"{result.rps:.0f} transfers/s): server CPU {per_request:.0f} µs per transfer, by phase:"
    )
    for label, share in sorted(totals.items(), key=lambda item: -item[1]):
        print(f"  {100 * share / samples:5.1f}%  {per_request * share / samples:7.0f} µs  {label}")
    print("  samples without a platpay phase, by innermost frame:")
    for leaf, share in sorted(unphased.items(), key=lambda item: -item[1])[:8]:
        print(f"    {100 * share / samples:5.1f}%  {leaf}")


# ---- runs -------------------------------------------------------------------------------------------


def run_postgres(
    args: argparse.Namespace, wrk: str, workdir: Path, rows: list[Row], extra_env: dict[str, str]
) -> None:
    with pg_database(args.pg_admin_url, prefix="platpay_bench_money") as url:
        dsn = url.replace("postgresql+asyncpg://", "postgresql://", 1)
        env = {"PLATPAY_RUN_EMBEDDED_WORKER": "false", **extra_env}
        target = start_platpay("postgres", url, workdir, env, workers=args.server_processes[0])
        variants: dict[str, Target] = {}
        try:
            print(
                f"postgres: platpay serve pid {target.proc.pid}, database {dsn.rsplit('/', 1)[1]}", flush=True
            )
            pairs = seed(target, args.customers)
            asyncio.run(_pg_prepare(dsn, pairs))
            samples = asyncio.run(_pg_samples(dsn))
            assert target.credentials is not None
            defines = {
                "naccounts": str(len(pairs) - 1),
                "token_client": target.credentials[0],
                "tenant": samples["tenant_id"],
                "event_payment": samples["event_payment"],
                "event_balance": samples["event_balance"],
                "sealed_response": samples["sealed_response"],
            }
            for processes in args.server_processes:
                if target.workers != processes:  # the same database, served by N processes
                    stop(target.proc)
                    target = start_platpay(
                        "postgres", url, workdir, env, workers=processes, credentials=target.credentials
                    )
                    print(f"postgres: platpay serve --workers {processes}, pid {target.proc.pid}", flush=True)
                for variant in variants.values():
                    stop(variant.proc)
                variants = {
                    name: start_platpay(
                        f"postgres-{name}",
                        url,
                        workdir,
                        # ("{database}" in a value: this run's database, e.g. a URL over a Unix socket)
                        {
                            **env,
                            **{
                                k: v.replace("{database}", dsn.rsplit("/", 1)[1])
                                for k, v in variant_env.items()
                            },
                        },
                        workers=processes,
                        credentials=target.credentials,
                    )
                    for name, variant_env in args.variants.items()
                }
                for name, variant in variants.items():
                    print(f"postgres: variant {name}: platpay serve pid {variant.proc.pid}", flush=True)
                for scenario in args.scenarios:
                    hot = scenario == "hot"
                    script = workdir / f"transfer_out_{scenario}.sql"
                    script.write_text(pgbench_script(hot=hot, direction=samples["direction"] == "1"), "utf-8")
                    if args.show_sql and processes == args.server_processes[0]:
                        print(script.read_text())
                    senders = [pairs[-1]] if hot else pairs[:-1]
                    for connections in args.connections:
                        row = Row("postgres", scenario, connections, processes)
                        rows.append(row)
                        variant_rows = {
                            name: Row("postgres", scenario, connections, processes, variant=name)
                            for name in variants
                        }
                        rows.extend(variant_rows.values())
                        for round_no in range(1, args.rounds + 1):
                            if args.warmup > 0:
                                run_pgbench(
                                    dsn,
                                    script,
                                    defines,
                                    clients=connections,
                                    seconds=args.warmup,
                                    workdir=workdir,
                                    log=False,
                                )
                            quiet(args, [target.proc.pid])
                            with LoadMeter(None, postgres=True, ours=[target.proc.pid]) as meter:
                                base = run_pgbench(
                                    dsn,
                                    script,
                                    defines,
                                    clients=connections,
                                    seconds=args.duration,
                                    workdir=workdir,
                                    log=True,
                                )
                            row.baseline.append(meter.fill(base))
                            # The server and its variants one after the other, in an order rotating by round
                            # (drift in the machine's speed favours none of them).
                            runs = [(row, target), *((variant_rows[n], v) for n, v in variants.items())]
                            shift = (round_no - 1) % len(runs)
                            for measured_row, measured in runs[shift:] + runs[:shift]:
                                if measured_row is not row:
                                    measured_row.baseline.append(row.baseline[-1])
                                measured_row.platpay.append(
                                    measure_wrk(
                                        wrk, measured, connections, args, senders=senders, workdir=workdir
                                    )
                                )
                            for measured_row, _ in runs:
                                _progress(measured_row, round_no)
            if args.profile > 0:
                profile_server(target, wrk, args, pairs[:-1], workdir)
            for variant in variants.values():
                stop(variant.proc)
            verify(url)
        finally:
            stop(target.proc)
            for variant in variants.values():
                stop(variant.proc)


def run_sqlite(
    args: argparse.Namespace, wrk: str, workdir: Path, rows: list[Row], extra_env: dict[str, str]
) -> None:
    path = workdir / "sqlite" / "bench.db"
    target = start_platpay(
        "sqlite",
        f"sqlite+aiosqlite:///{path}",
        workdir,
        {"PLATPAY_RUN_EMBEDDED_WORKER": "false", **extra_env},
    )
    try:
        print(f"sqlite: platpay serve pid {target.proc.pid}, {path}", flush=True)
        pairs = seed(target, args.customers)
        samples = sqlite_samples(path)
        assert target.credentials is not None
        seeded = Seeded(samples["tenant_id"], target.credentials[0], pairs[:-1], pairs[-1])
        for scenario in args.scenarios:
            hot = scenario == "hot"
            senders = [pairs[-1]] if hot else pairs[:-1]
            # The baseline writes into the same file the server uses (the server idles meanwhile).
            baseline: list[Rate] = []
            for connections in args.connections:
                row = Row("sqlite", scenario, connections)
                rows.append(row)
                for round_no in range(1, args.rounds + 1):
                    if (
                        len(baseline) < round_no
                    ):  # one thread whatever the connections: measured once per round
                        if args.warmup > 0:
                            sqlite_baseline(path, seeded, samples, hot=hot, seconds=args.warmup)
                        quiet(args, [target.proc.pid])
                        with LoadMeter(None, postgres=False, ours=[target.proc.pid]) as meter:
                            base = sqlite_baseline(path, seeded, samples, hot=hot, seconds=args.duration)
                        baseline.append(meter.fill(base))
                    row.baseline.append(baseline[round_no - 1])
                    row.platpay.append(
                        measure_wrk(wrk, target, connections, args, senders=senders, workdir=workdir)
                    )
                    _progress(row, round_no)
        if args.profile > 0:
            profile_server(target, wrk, args, pairs[:-1], workdir)
        verify(f"sqlite+aiosqlite:///{path}")
    finally:
        stop(target.proc)


def verify(database_url: str) -> None:
    result = subprocess.run(
        [str(BIN / "platpay"), "ledger", "verify"],
        env=bench_env(PLATPAY_DATABASE_URL=database_url),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    last = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr[-500:]
    print(f"  platpay ledger verify: exit {result.returncode}: {last}", flush=True)


def _progress(row: Row, round_no: int) -> None:
    base, mine = row.baseline[-1], row.platpay[-1]
    print(
        f"  round {round_no} {row.backend:<8} {row.scenario:<6} c={row.connections:<3} procs={row.processes}"
        f"{' ' + row.variant if row.variant else ''} baseline {base.rps:>7.0f}/s "
        f"(p50 {base.p50_ms:.2f} p99 {base.p99_ms:.2f} ms)  platpay {mine.rps:>6.0f}/s (p50 {mine.p50_ms:.2f} "
        f"p99 {mine.p99_ms:.2f} ms, errors {mine.errors})  ratio {mine.rps / base.rps:.3f}  other load "
        f"{_fmt(mine.other_cores, '.2f')} cores",
        flush=True,
    )


def _fmt(value: float | None, spec: str) -> str:
    return "-" if value is None else format(value, spec)


def _median_round(row: Row) -> tuple[Rate, Rate]:
    """The (baseline, platpay) pair of the round whose ratio is the median: each round measures the two
    back to back, so their ratio is the figure that machine noise disturbs least."""
    rounds = sorted(zip(row.baseline, row.platpay, strict=True), key=lambda pair: pair[1].rps / pair[0].rps)
    return rounds[(len(rounds) - 1) // 2]


def report(rows: list[Row], args: argparse.Namespace) -> list[dict[str, Any]]:
    print()
    print(
        f"POST {BASE_PATH}/transfer-out with Idempotency-Key -- {args.duration:g} s per run, {args.rounds} round(s), "
        f"the round with the median ratio shown; baseline = pgbench -M prepared (PostgreSQL) / sqlite3 in one thread (SQLite)"
    )
    header = (
        f"{'backend':<9}{'accounts':<9}{'conns':>5}{'procs':>6} {'baseline/s':>10} {'p50':>6} {'p99':>6} {'platpay/s':>9} "
        f"{'p50':>7} {'p99':>7} {'ratio':>6} {'srv µs/tx':>9} {'pg µs/tx':>9} {'base pg':>8} {'other':>6} {'errors':>6}"
    )
    print(header)
    print(
        f"{'':<9}{'':<9}{'':>5}{'':>6} {'':>10} {'ms':>6} {'ms':>6} {'':>9} {'ms':>7} {'ms':>7} {'':>6} "
        f"{'':>9} {'':>9} {'µs/tx':>8} {'cores':>6}"
    )
    print("-" * len(header))
    summary = []
    for row in rows:
        base, mine = _median_round(row)
        ratio = mine.rps / base.rps if base.rps else float("nan")
        target = TARGETS.get((row.backend, row.scenario))
        verdict = "" if target is None else ("met" if ratio >= target else "MISSED")
        variant = (
            f"  variant {row.variant}: rounds {', '.join(f'{r.rps:.0f}' for r in row.platpay)}/s"
            if row.variant
            else ""
        )
        print(
            f"{row.backend:<9}{row.scenario:<9}{row.connections:>5}{row.processes:>6} {base.rps:>10.0f} {base.p50_ms:>6.2f} "
            f"{base.p99_ms:>6.2f} {mine.rps:>9.0f} {mine.p50_ms:>7.2f} {mine.p99_ms:>7.2f} {ratio:>6.3f} "
            f"{_fmt(mine.server_cpu_us, '.0f'):>9} {_fmt(mine.db_cpu_us, '.0f'):>9} {_fmt(base.db_cpu_us, '.0f'):>8} "
            f"{_fmt(mine.other_cores, '.2f'):>6} {mine.errors:>6}  {verdict}{variant}"
        )
        summary.append(
            {
                "backend": row.backend,
                "variant": row.variant,
                "accounts": row.scenario,
                "connections": row.connections,
                "server_processes": row.processes,
                "baseline_per_s": round(base.rps, 1),
                "baseline_p50_ms": round(base.p50_ms, 2),
                "baseline_p99_ms": round(base.p99_ms, 2),
                "platpay_per_s": round(mine.rps, 1),
                "platpay_p50_ms": mine.p50_ms,
                "platpay_p99_ms": mine.p99_ms,
                "ratio": round(ratio, 3),
                "platpay_server_cpu_us_per_transfer": round(mine.server_cpu_us, 1)
                if mine.server_cpu_us
                else None,
                "platpay_pg_cpu_us_per_transfer": round(mine.db_cpu_us, 1) if mine.db_cpu_us else None,
                "baseline_pg_cpu_us_per_transfer": round(base.db_cpu_us, 1) if base.db_cpu_us else None,
                "other_load_cores": round(mine.other_cores, 2) if mine.other_cores is not None else None,
                "platpay_errors": mine.errors,
                "rounds_platpay_per_s": [round(r.rps, 1) for r in row.platpay],
                "rounds_baseline_per_s": [round(r.rps, 1) for r in row.baseline],
            }
        )
    print(
        "\nTargets (issue 33): platpay >= "
        + ", ".join(
            f"{ratio} x the baseline ({backend}, {accounts})"
            for (backend, accounts), ratio in TARGETS.items()
        )
        + ". procs = platpay server processes (serve --workers N). "
        "srv/pg µs/tx = CPU time of the platpay processes / "
        "of all postgres processes per platpay transfer; base pg = all postgres processes' CPU per baseline transaction "
        "(pgbench's); other = CPU (cores) used meanwhile by processes outside the "
        "measurement (other people's work on a shared machine)."
    )
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    parser.add_argument(
        "--warmup", type=float, default=3.0, help="seconds of unmeasured load before each run"
    )
    parser.add_argument("--connections", default="8,32", help="comma-separated concurrent connections")
    parser.add_argument(
        "--server-processes",
        default="1,2",
        help="PostgreSQL: comma-separated platpay server process counts (serve --workers N) to measure; "
        "SQLite always runs one (a single writer)",
    )
    parser.add_argument(
        "--customers", type=int, default=300, help="funded customers to spread transfers over"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds per configuration; the median is reported"
    )
    parser.add_argument(
        "--backends", default="postgres,sqlite", help="comma-separated subset of postgres,sqlite"
    )
    parser.add_argument("--scenarios", default="spread,hot", help="comma-separated subset of spread,hot")
    parser.add_argument(
        "--pg-admin-url", default=DEFAULT_PG_ADMIN, help="PostgreSQL maintenance database URL"
    )
    parser.add_argument(
        "--server-env", action="append", default=[], metavar="KEY=VALUE", help="extra server settings"
    )
    parser.add_argument(
        "--nice", type=int, default=0, help="niceness delta for our children (negative: root)"
    )
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each measured run, wait up to this long for the machine to be idle apart from our processes",
    )
    parser.add_argument(
        "--quiet-threshold", type=float, default=0.15, help="cores of foreign load that count as idle"
    )
    parser.add_argument(
        "--profile",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="afterwards sample the server with py-spy for this long and split its CPU by phase",
    )
    parser.add_argument(
        "--profile-raw",
        type=Path,
        default=None,
        metavar="FILE",
        help="with --profile: also keep py-spy's raw stacks (collapsed, one per line) in FILE",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE[,KEY=VALUE...]",
        help="PostgreSQL: also serve the same database with these settings (a second server started beside "
        "the first) and measure it in the same rounds, e.g. the connection policy off: "
        "'no-timeouts:PLATPAY_DB_STATEMENT_TIMEOUT_SECONDS=0,PLATPAY_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS=0'; "
        "{database} in a value is the run's database: 'unix:PLATPAY_DATABASE_URL=postgresql+asyncpg://postgres@/"
        "{database}?host=/var/run/postgresql'",
    )
    parser.add_argument("--show-sql", action="store_true", help="print the pgbench scripts")
    parser.add_argument("--json-out", type=Path, help="also write the figures as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (server logs)")
    args = parser.parse_args()
    args.connections = [int(c) for c in args.connections.split(",") if c.strip()]
    args.server_processes = [int(c) for c in args.server_processes.split(",") if c.strip()]
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    if set(args.scenarios) - set(SCENARIOS) or set(backends) - {"postgres", "sqlite"}:
        sys.exit("unknown scenario or backend")
    extra_env = dict(item.split("=", 1) for item in args.server_env)
    args.variants = {}
    for spec in args.variant:
        name, _, settings = spec.partition(":")
        args.variants[name] = dict(item.split("=", 1) for item in settings.split(",") if item)
    set_child_niceness(args.nice)
    wrk = ensure_wrk()
    if "postgres" in backends:
        problem = pg_reachable(args.pg_admin_url)
        if problem:
            print(f"PostgreSQL unreachable at {args.pg_admin_url} ({problem}): skipping it")
            backends.remove("postgres")
        elif not shutil.which("pgbench"):
            sys.exit("pgbench is required (Debian package postgresql-client)")
    workdir = Path(tempfile.mkdtemp(prefix="platpay-bench-transfer-"))
    print(
        f"machine: {machine_summary()}; load average before: {Path('/proc/loadavg').read_text().split()[:3]}"
    )
    print(f"work dir: {workdir}", flush=True)
    rows: list[Row] = []
    try:
        if "postgres" in backends:
            run_postgres(args, wrk, workdir, rows, extra_env)
        if "sqlite" in backends:
            run_sqlite(args, wrk, workdir, rows, extra_env)
        summary = report(rows, args)
        print(f"load average after: {Path('/proc/loadavg').read_text().split()[:3]}")
        if args.json_out:
            args.json_out.write_text(json.dumps({"machine": machine_summary(), "rows": summary}, indent=2))
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    os.chdir(ROOT)
    main()
