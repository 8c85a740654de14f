"""PLATPAY_DATABASE_READ_URL with a real streaming standby (tests/e2e/pg_cluster.py): the GET lists and gets
go there, a tenant's read right after its own write, money, idempotent replays and authentication never do,
and a lagging or stopped standby sends reads back to the primary without one failed request.

Which server answered is proven two ways: the standby logs every statement it runs (`log_statement = all`
in its own configuration only), and with its replay paused (`pg_wal_replay_pause()`) the standby lacks what
the primary has, so a stale answer can only come from it, and a fresh one only from the primary.

Two API processes share the database and the machine (so their record of who wrote when): one accepts a
standby up to 600 s behind (it serves stale data while replay is paused: routing proven), the other at most
1 s behind (it falls back to the primary: lag proven).
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.pg_cluster import PrivateCluster, find_binary
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


@pytest.fixture
def clusters() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    primary = PrivateCluster()
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
    platform = create_platform(processes, env)
    log = StandbyLog(
        standby,
        [r["tablename"] for r in writer.fetch("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")],
    )
    payer, reader = credentials(platform, "sandbox"), credentials(platform, "production")
    tolerant_server, tolerant_url = start_server(
        processes, {**env, "PLATPAY_DATABASE_READ_MAX_LAG_SECONDS": "600"}
    )
    _, strict_url = start_server(
        processes, {**env, "PLATPAY_DATABASE_READ_MAX_LAG_SECONDS": "1"}, "--no-worker"
    )
    try:
        with (
            api_client(tolerant_url, reader) as tolerant,
            api_client(strict_url, reader) as strict,
            api_client(tolerant_url, payer) as money,
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
                "the strict process reads the standby too",
                reads_on_standby(strict, log, customer_id, "Ada Before"),
                timeout=20,
            )

            # Replay paused: the standby keeps the old name; a write the API did not make (another machine's)
            # goes to the primary. The tolerant process still reads the standby (stale: routing proven), the
            # strict one gives up on it once it is more than 1 s behind.
            replay.fetchval("SELECT pg_wal_replay_pause()")
            wait_for(
                "replay paused",
                lambda: replay.fetchval("SELECT pg_get_wal_replay_pause_state()") == "paused",
                timeout=10,
            )
            writer.execute("UPDATE customers SET full_name = 'Ada After' WHERE id = $1", customer_id)
            assert customer_name(tolerant, customer_id) == "Ada Before"  # only the standby has that
            lagged = wait_for(
                "the strict process falls back to the primary",
                lambda: customer_name(strict, customer_id) == "Ada After",
                timeout=20,
            )
            print(f"a standby over 1 s behind: the primary answered {lagged:.2f} s after the write")
            assert customer_name(tolerant, customer_id) == "Ada Before"

            # Money, idempotent replays and every read right after a write: the primary only (the paused
            # standby has none of it, so a read there would be a 404 or a stale balance).
            mark = log.mark()
            holder = open_holder(money)  # POST /customers, then GET its internal accounts at once
            assert fund(money, holder.account_id, 50_000).status_code == 200
            key = f"replica-{uuid.uuid4()}"
            body = transfer_out_body(holder, 1_234)
            first = money.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
            assert first.status_code == 201, first.text
            replayed = money.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
            assert replayed.status_code == 201 and replayed.json()["id"] == first.json()["id"]
            transaction = money.get(f"/transactions/{first.json()['id']}")
            assert transaction.status_code == 200, transaction.text
            assert money.get(f"/customers/{holder.customer_id}").status_code == 200
            listed = money.get("/transactions").json()["data"]
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
