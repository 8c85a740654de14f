"""PLATPAY_DATABASE_READ_URL with a real streaming standby (tests/e2e/pg_cluster.py): the GET lists and gets
go there, a tenant's read right after its own write, money, idempotent replays and authentication never do,
and a lagging or stopped standby sends reads back to the primary without one failed request.

Which server answered is proven two ways: the standby logs every statement it runs (`log_statement = all`
in its own configuration only), and with its replay paused (`pg_wal_replay_pause()`) the standby lacks what
the primary has, so a stale answer can only come from it, and a fresh one only from the primary.

Two API processes share the database and the machine (so their record of who wrote when), and accept a
standby up to 600 s behind: while replay is paused it serves them stale data (routing proven), except to a
tenant that wrote through either process. The lag bound and the choice itself are tested in-process
(`test_the_router_*`): there the read asks the server whether it is in recovery.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from platpay.db import replica
from platpay.db.database import Database
from tests.e2e.pg_cluster import PrivateCluster, find_binary, new_cluster
from tests.factories import FULL_PERSON
from tests.support.api_checks import api_client
from tests.support.money import fund, money_env, open_holder, transfer_out_body, verify_ledger
from tests.support.pg import PgProbe
from tests.support.processes import ProcessManager
from tests.support.server import create_platform, credentials, start_server

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(find_binary("pg_basebackup") is None, reason="needs PostgreSQL's server binaries"),
]


@pytest.fixture(scope="module")
def clusters() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    primary = new_cluster()
    standby: PrivateCluster | None = None
    try:
        primary.start()
        primary.create_database("platpay")
        standby = PrivateCluster.standby_of(primary)
        with open(standby.data / "postgresql.auto.conf", "a") as conf:
            conf.write("log_statement = 'all'\n")  # the standby's own log names every statement it ran
        standby.start()
        yield primary, standby
    finally:
        if standby is not None:
            standby.destroy()
        primary.destroy()


class StandbyLog:
    """The statements the standby ran, read from its server log."""

    def __init__(self, cluster: PrivateCluster, tables: list[str]) -> None:
        self.path = cluster.log
        # A statement on a table of platpay's (not the driver's catalog queries, connection set-up or the
        # router's freshness sample, `SELECT pg_last_wal_replay_lsn()`, which read none).
        self.data_statement = re.compile(rf"\b(FROM|JOIN|INTO|UPDATE)\s+\"?({'|'.join(tables)})\b")

    def mark(self) -> int:
        return self.path.stat().st_size

    def statements_since(self, mark: int) -> list[str]:
        with open(self.path, "rb") as log:
            log.seek(mark)
            text = log.read().decode(errors="replace")
        return [line for line in text.splitlines() if self.data_statement.search(line)]


def wait_for(what: str, check, *, timeout: float) -> float:  # type: ignore[no-untyped-def]
    """Seconds until `check()` held (polled); fails after `timeout` (generous: a loaded machine)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout} s"
        time.sleep(0.1)
    return time.monotonic() - started


def customer_name(client: httpx.Client, customer_id: str) -> str:
    response = client.get(f"/customers/{customer_id}")
    assert response.status_code == 200, response.text
    return str(response.json()["fullName"])


def test_reads_move_to_the_standby_and_back_to_the_primary_when_it_lags_dies_or_misses_a_write(
    clusters: tuple[PrivateCluster, PrivateCluster],
    processes: ProcessManager,
    master_key: str,
    tmp_path: Path,
) -> None:
    primary, standby = clusters
    replay = PgProbe(standby.dsn("platpay"))
    writer = PgProbe(primary.dsn("platpay"))
    env = money_env(primary.url("platpay"), master_key, tmp_path, PLATPAY_DB_POOL_SIZE="4")
    env["PLATPAY_DATABASE_READ_URL"] = standby.url("platpay")
    began = time.monotonic()
    platform = create_platform(processes, env)
    print(f"\nplatform created in {time.monotonic() - began:.1f} s")
    log = StandbyLog(
        standby,
        [r["tablename"] for r in writer.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")],
    )
    payer, reader = credentials(platform, "sandbox"), credentials(platform, "production")
    # Two processes of one machine (one PLATPAY_VAR_DIR) that accept a standby up to 600 s behind: with
    # replay paused, it serves them stale data (routing proven) unless a tenant wrote through either.
    env["PLATPAY_DATABASE_READ_MAX_LAG_SECONDS"] = "600"
    tolerant_server, tolerant_url = start_server(processes, env)
    _, other_url = start_server(processes, env, "--no-worker")
    try:
        print(f"servers ready at {time.monotonic() - began:.1f} s")
        with (
            api_client(tolerant_url, reader) as tolerant,
            api_client(other_url, reader) as other,
            api_client(tolerant_url, payer) as money,
            api_client(other_url, payer) as money_elsewhere,
        ):
            # The production tenant's customer, written through the API: its reads stay on the primary until
            # the standby has replayed past that write, then move there.
            created = tolerant.post(
                "/customers",
                json={**FULL_PERSON, "platformCustomerId": "reader-1", "fullName": "Ada Before"},
            )
            assert created.status_code == 201, created.text
            customer_id = created.json()["id"]

            def read_on_standby() -> bool:
                mark = log.mark()
                assert customer_name(tolerant, customer_id) == "Ada Before"
                return any("customers" in line for line in log.statements_since(mark))

            moved = wait_for("the production tenant's reads reach the standby", read_on_standby, timeout=20)
            print(f"\nreads moved to the standby {moved:.2f} s after the tenant's write")
            wait_for(
                "the other process reads the standby too",
                reads_on_standby(other, log, customer_id, "Ada Before"),
                timeout=20,
            )

            # Replay paused: the standby keeps the old name; a write the API did not make (another machine's)
            # goes to the primary. Both processes still read the standby: stale, so routing is proven.
            replay.fetchval("SELECT pg_wal_replay_pause()")
            wait_for(
                "replay paused",
                lambda: replay.fetchval("SELECT pg_get_wal_replay_pause_state()") == "paused",
                timeout=10,
            )
            writer.execute("UPDATE customers SET full_name = 'Ada After' WHERE id = $1", customer_id)
            assert customer_name(tolerant, customer_id) == "Ada Before"  # only the standby has that
            assert customer_name(other, customer_id) == "Ada Before"

            # Money, idempotent replays and every read right after a write, through the same process or the
            # other one: the primary only (the paused standby has none of it: a read there would be a 404).
            mark = log.mark()
            holder = open_holder(money)  # POST /customers, then GET its internal accounts at once
            assert fund(money, holder.account_id, 50_000).status_code == 200
            key = f"replica-{uuid.uuid4()}"
            body = transfer_out_body(holder, 1_234)
            first = money.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
            assert first.status_code == 201, first.text
            replayed = money.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
            assert replayed.status_code == 201 and replayed.json()["id"] == first.json()["id"]
            for client in (money, money_elsewhere):
                transaction = client.get(f"/transactions/{first.json()['id']}")
                assert transaction.status_code == 200, transaction.text
                assert client.get(f"/customers/{holder.customer_id}").status_code == 200
                listed = client.get("/transactions").json()["data"]
                assert [t["id"] for t in listed] == [first.json()["id"]]
            assert log.statements_since(mark) == [], "the standby ran a statement of a writing tenant"

            # Replay resumed: the standby catches up; the writing tenant's reads move there too.
            replay.fetchval("SELECT pg_wal_replay_resume()")
            wait_for(
                "the standby caught up",
                lambda: customer_name(tolerant, customer_id) == "Ada After",
                timeout=20,
            )

            def money_reads_on_standby() -> bool:
                mark = log.mark()
                assert money.get(f"/transactions/{first.json()['id']}").status_code == 200
                return any("transactions" in line for line in log.statements_since(mark))

            wait_for(
                "the writing tenant's reads reach the standby once it has its write",
                money_reads_on_standby,
                timeout=20,
            )

            # The standby stops: every read is answered by the primary, none fails; it comes back: reads return.
            standby.stop()
            statuses = [tolerant.get(f"/customers/{customer_id}").status_code for _ in range(20)]
            statuses += [tolerant.get("/customers").status_code for _ in range(5)]
            assert set(statuses) == {200}, statuses
            standby.start()
            back = wait_for(
                "reads return to the restarted standby",
                reads_on_standby(tolerant, log, customer_id),
                timeout=30,
            )
            print(f"standby restarted: reads back on it after {back:.2f} s")
            assert tolerant_server.stdout().count("db.replica_unavailable") == 1, "an outage is logged once"
            scraped = httpx.get(f"{tolerant_url}/metrics", timeout=15).text
            moved = re.search(
                r'^platpay_db_replica_reads_total\{choice="replica"\} (\S+)$', scraped, re.MULTILINE
            )
            assert moved is not None and float(moved.group(1)) > 0, scraped[-3000:]
            print(
                "\n".join(
                    line for line in scraped.splitlines() if line.startswith("platpay_db_replica_reads")
                )
            )
        print(f"scenario done at {time.monotonic() - began:.1f} s")
        verify_ledger(processes, env)
    finally:
        replay.close()
        writer.close()


def reads_on_standby(client: httpx.Client, log: StandbyLog, customer_id: str, name: str = "Ada After"):  # type: ignore[no-untyped-def]
    def check() -> bool:
        mark = log.mark()
        assert customer_name(client, customer_id) == name
        return any("customers" in line for line in log.statements_since(mark))

    return check


# -- the router in-process: each read asks the server that answers it whether it is a standby -----------------


@pytest.fixture(scope="module")
def probe_database(clusters: tuple[PrivateCluster, PrivateCluster]) -> tuple[str, str]:
    primary, standby = clusters
    primary.create_database("probe")
    writer = PgProbe(primary.dsn("probe"))
    try:
        writer.execute("CREATE TABLE marks (n int)")
    finally:
        writer.close()

    def standby_has_it() -> bool:
        try:
            probe = PgProbe(standby.dsn("probe"))
        except Exception:
            return False
        try:
            return bool(probe.fetchval("SELECT to_regclass('marks') IS NOT NULL"))
        finally:
            probe.close()

    wait_for("the standby has the probe database", standby_has_it, timeout=30)
    return primary.url("probe"), standby.url("probe")


async def served_by(db: Database, tenant_id: str | None) -> str:
    async def work(session: AsyncSession) -> bool:
        return bool(await session.scalar(text("SELECT pg_is_in_recovery()")))

    return "standby" if await db.replica_read(work, tenant_id=tenant_id) else "primary"


async def until(what: str, db: Database, tenant_id: str | None, server: str, *, timeout: float = 20) -> float:
    started = time.monotonic()
    while (answered := await served_by(db, tenant_id)) != server:
        assert time.monotonic() - started < timeout, (
            f"{what}: still {answered} after {timeout} s ({db.replica})"
        )
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def write_as(db: Database, tenant_id: str) -> None:
    token = replica.acting_for(tenant_id)
    try:
        async with db.transaction() as session:
            await session.execute(text("INSERT INTO marks VALUES (1)"))
    finally:
        replica.restore(token)


async def test_the_router_reads_the_standby_unless_the_tenant_just_wrote_or_it_lags_beyond_the_bound(
    clusters: tuple[PrivateCluster, PrivateCluster], probe_database: tuple[str, str]
) -> None:
    primary_url, standby_url = probe_database
    replay = await asyncpg.connect(clusters[1].dsn("probe"))
    db = Database(primary_url, pool_size=2, read_url=standby_url, read_max_lag_seconds=1.0)
    try:
        assert await served_by(db, None) == "primary"  # nothing sampled yet: the standby's lag is unknown
        print(f"\nfirst sample: reads on the standby after {await until('fresh', db, None, 'standby'):.2f} s")

        # A statement the standby refuses (it cannot assign a transaction id) runs again on the primary; the
        # standby is not given up for it.
        async def refused_by_a_standby(session: AsyncSession) -> bool:
            row = (await session.execute(text("SELECT pg_is_in_recovery(), txid_current()"))).one()
            return bool(row[0])

        assert await db.replica_read(refused_by_a_standby, tenant_id=None) is False
        assert (
            db.replica is not None and db.replica.counts.get("failed") == 1 and db.replica.down_since is None
        )
        assert await served_by(db, None) == "standby"

        # A tenant that wrote reads the primary until the standby replayed past its commit; others don't.
        await write_as(db, "tenant-writer")
        assert await served_by(db, "tenant-writer") == "primary"
        assert await served_by(db, "tenant-other") == "standby"
        caught_up = await until("the writer's reads move", db, "tenant-writer", "standby")
        print(f"a tenant's reads return to the standby {caught_up:.2f} s after its write")

        # Replay paused while the primary moves on: past 1 s behind, every read goes to the primary.
        await replay.fetchval("SELECT pg_wal_replay_pause()")
        async with db.transaction() as session:  # a write of no tenant: it only moves the primary's WAL
            await session.execute(text("INSERT INTO marks VALUES (2)"))
        lagged = await until("a lagging standby is left", db, "tenant-other", "primary")
        print(
            f"replay paused: reads left the standby {lagged:.2f} s after the primary moved on (max lag 1 s)"
        )
        assert db.replica is not None and db.replica.counts.get("lagging", 0) > 0, db.replica.counts
        await replay.fetchval("SELECT pg_wal_replay_resume()")
        await until("the standby caught up", db, "tenant-other", "standby")
    finally:
        await replay.fetchval("SELECT pg_wal_replay_resume()")
        await replay.close()
        await db.dispose()


async def test_the_router_falls_back_to_the_primary_while_the_standby_is_down_and_returns_to_it(
    clusters: tuple[PrivateCluster, PrivateCluster], probe_database: tuple[str, str]
) -> None:
    primary_url, standby_url = probe_database
    standby = clusters[1]
    db = Database(primary_url, pool_size=2, read_url=standby_url, read_max_lag_seconds=5.0)
    try:
        await until("fresh", db, None, "standby")
        standby.stop()
        answers = [await served_by(db, None) for _ in range(20)]  # never an exception: the primary answers
        assert set(answers) == {"primary"}, answers
        assert db.replica is not None and db.replica.down_since is not None
        print(f"\nstandby stopped: {db.replica.counts}")
        standby.start()
        back = await until("the standby is used again", db, None, "standby")
        print(f"standby restarted: reads back on it after {back:.2f} s")
    finally:
        if not standby.running():
            standby.start()
        await db.dispose()
