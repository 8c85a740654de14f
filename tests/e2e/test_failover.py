"""Failover to a standby (issue 32): PostgreSQL's primary crashes under load, its streaming standby is
promoted, and platpay carries on by itself; then the old primary comes back as a second writable server
(an operator's mistake) and receives no writes.

Two private clusters (tests/e2e/pg_cluster.py): a primary and a synchronous streaming standby (a commit is
acknowledged once the standby has it: what "every acknowledged operation survives a failover" requires).
Every platpay process (`serve --workers 2`, a separate `worker`, the CLI) has the multi-host URL
[primary, standby] with target_session_attrs=read-write. Eight clients send POST /transfer-out with an
Idempotency-Key, retrying the same request until a definite answer; the primary is stopped with
`-m immediate` (a crash) and the standby promoted. Checked: no 500, every failure a 503 with Retry-After,
no transport error (the API processes stay up), money moving within 2 s of the promotion, every
acknowledged transfer exactly once on the new primary, settled, its webhook delivered and signed, the
ledger verified there.

Then the old primary is started again as a writable server, first in every process's host list. A
connection platpay opens compares the writable hosts' WAL timelines (platpay.db.hosts) and refuses the
older one: the running processes (whose connections are all ended, so that every pool opens new ones)
and a freshly started command write only to the new primary; the old one's rows do not change.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from platpay.kit.crypto.webhook_signing import verify_header
from tests.e2e.pg_cluster import PASSWORD, USER, PrivateCluster, new_cluster
from tests.support.api_checks import api_client, assert_error
from tests.support.money import (
    due_jobs,
    fund,
    money_env,
    open_holder,
    transaction_statuses,
    transfer_out_body,
    verify_ledger,
)
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager
from tests.support.receiver import WebhookReceiver
from tests.support.server import create_platform, credentials, start_server, wait_until

pytestmark = pytest.mark.e2e

DATABASE = "platpay_failover"
CLIENTS = 8
HOLDERS = 4
STEADY_SECONDS = 2.0  # traffic before the crash
DETECTION_SECONDS = 0.5  # crash -> promotion: what a failover manager takes to decide (seconds in real life)
AFTER_PROMOTION_SECONDS = 3.0  # traffic after the promotion
PAUSE_SECONDS = 0.25  # between one client's transfers
RECOVERY_BOUND_SECONDS = 2.0  # the bound: money moves within 2 s of the promotion
AFTER_RETURN_TRANSFERS = 12  # transfers sent once the old primary is back


@dataclass
class Answer:
    key: str
    status: int
    sent_at: float  # time.monotonic() of this attempt
    answered_at: float


@dataclass
class Tally:
    answers: list[Answer] = field(default_factory=list)
    acknowledged: dict[str, str] = field(default_factory=dict)  # key -> transaction id
    unanswered: int = 0
    failures: list[str] = field(default_factory=list)  # a client thread's failed assertion
    lock: threading.Lock = field(default_factory=threading.Lock)


def send_until_definite(client: httpx.Client, body: dict, tally: Tally, *, give_up_at: float) -> str:
    """POST /transfer-out with one Idempotency-Key until a definite answer (201); its transaction id."""
    key = f"failover-{uuid.uuid4()}"
    while True:
        assert time.monotonic() < give_up_at, f"no definite answer for {key}"
        sent = time.monotonic()
        try:
            response = client.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
        except httpx.TransportError:
            with tally.lock:
                tally.unanswered += 1
            time.sleep(0.05)
            continue
        answer = Answer(key, response.status_code, sent, time.monotonic())
        with tally.lock:
            tally.answers.append(answer)
        if response.status_code == 503:
            assert_error(response, 503, "SERVICE_UNAVAILABLE")
            assert response.headers["retry-after"] == "1"
            time.sleep(0.05)  # sooner than Retry-After: this test measures recovery
            continue
        if response.status_code == 409 and response.json()["code"] == "IDEMPOTENCY_KEY_IN_USE":
            time.sleep(0.05)
            continue
        assert response.status_code == 201, response.text
        transaction_id: str = response.json()["id"]
        with tally.lock:
            tally.acknowledged[key] = transaction_id
        return transaction_id


def client_loop(
    base_url: str, auth: tuple[str, str], holders: list, tally: Tally, stop: threading.Event
) -> None:
    rng = random.Random()
    try:
        with api_client(base_url, auth) as client:
            while not stop.is_set():
                body = transfer_out_body(rng.choice(holders), rng.randint(100, 900))
                send_until_definite(client, body, tally, give_up_at=time.monotonic() + 60)
                time.sleep(PAUSE_SECONDS)
    except BaseException as error:  # the main thread reports it
        with tally.lock:
            tally.failures.append(repr(error))


def multi_host_url(*clusters: PrivateCluster) -> str:
    hosts = "&".join(f"host=127.0.0.1:{cluster.port}" for cluster in clusters)
    return f"postgresql+asyncpg://{USER}:{PASSWORD}@/{DATABASE}?{hosts}&target_session_attrs=read-write"


def probe(cluster: PrivateCluster) -> PgProbe:
    return PgProbe(cluster.dsn(DATABASE))


def rows(cluster: PrivateCluster) -> dict[str, set[str]]:
    """The ids of the platforms and transactions on a cluster."""
    connection = probe(cluster)
    try:
        return {
            table: {row["id"] for row in connection.fetch(f"SELECT id FROM {table}")}
            for table in ("platforms", "transactions")
        }
    finally:
        connection.close()


def terminate_backends(cluster: PrivateCluster) -> None:
    connection = probe(cluster)
    try:
        connection.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        connection.close()


def logged(process: ManagedProcess, event: str) -> list[dict]:
    found = []
    for line in (process.stdout() + process.stderr()).splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if record.get("event") == event:
                found.append(record)
    return found


@pytest.fixture
def clusters() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    """A running primary with the test's database and a synchronous streaming standby of it."""
    primary = new_cluster()
    standby: PrivateCluster | None = None
    try:
        primary.start()
        primary.create_database(DATABASE)
        standby = PrivateCluster.standby_of(primary)
        standby.start()
        # Synchronous replication, set on the primary after the base backup (so the standby, once promoted,
        # does not wait for a standby of its own): a COMMIT returns once the standby has flushed it.
        admin = PgProbe(primary.dsn())
        try:
            admin.execute("ALTER SYSTEM SET synchronous_standby_names = '*'")
            admin.execute("SELECT pg_reload_conf()")
            wait_until(
                lambda: (
                    admin.fetchval("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") == 1
                ),
                timeout=30,
                message=lambda: f"the standby is not synchronous\n{standby.server_log() if standby else ''}",
            )
        finally:
            admin.close()
        yield primary, standby
    finally:
        for cluster in (standby, primary):
            if cluster is not None:
                cluster.destroy()


def test_primary_crashes_standby_promoted_money_moves_again_old_primary_back_gets_no_writes(
    processes: ProcessManager,
    clusters: tuple[PrivateCluster, PrivateCluster],
    master_key: str,
    tmp_path: Path,
) -> None:
    began = time.monotonic()
    primary, standby = clusters
    env = money_env(multi_host_url(primary, standby), master_key, tmp_path, PLATPAY_DB_POOL_SIZE="8")
    processes.run([PLATPAY, "migrate"], env=env, timeout=120)
    sandbox = credentials(create_platform(processes, env), "sandbox")
    server, base_url = start_server(processes, env, "--workers", "2", "--no-worker")
    worker = processes.start("worker", [PLATPAY, "worker"], env=env)
    worker.wait_for_output("jobs.runner_started", timeout=60)
    receiver = WebhookReceiver().start()
    try:
        with api_client(base_url, sandbox) as client:
            public_key = client.get("/config").json()["webhookPublicKey"]
            assert client.patch("/config", json={"webhookEndpoint": receiver.url}).status_code == 200
            holders = [open_holder(client, serial=n) for n in range(HOLDERS)]
            for holder in holders:
                assert fund(client, holder.account_id, 100_000_000).status_code == 200

        print(f"\nprocesses ready, platform and customers set up in {time.monotonic() - began:.1f} s")
        # --- The failover, under load ---
        tally, stop = Tally(), threading.Event()
        threads = [
            threading.Thread(target=client_loop, args=(base_url, sandbox, holders, tally, stop))
            for _ in range(CLIENTS)
        ]
        for thread in threads:
            thread.start()
        time.sleep(STEADY_SECONDS)
        crashed_at = time.monotonic()
        primary.stop(mode="immediate")
        time.sleep(DETECTION_SECONDS)
        standby.promote()
        promoted_at = time.monotonic()
        assert not standby.in_recovery()
        time.sleep(AFTER_PROMOTION_SECONDS)
        stop.set()
        for thread in threads:
            thread.join(timeout=90)
        assert not any(thread.is_alive() for thread in threads)
        assert not tally.failures, tally.failures

        statuses = Counter(answer.status for answer in tally.answers)
        recovery = min(
            (
                a.answered_at - promoted_at
                for a in tally.answers
                if a.status == 201 and a.sent_at >= promoted_at
            ),
            default=float("inf"),
        )
        window = [a for a in tally.answers if crashed_at <= a.sent_at <= promoted_at + recovery]
        window_503 = sum(1 for a in window if a.status == 503)
        print(
            f"{len(tally.acknowledged)} transfers acknowledged; answers {dict(statuses)}; "
            f"crash -> promotion {promoted_at - crashed_at:.2f} s (promote() itself included); "
            f"first 201 sent after the promotion answered {recovery:.3f} s after promote() returned; "
            f"failover window {promoted_at + recovery - crashed_at:.2f} s: {len(window)} answers, "
            f"503 share {window_503 / max(1, len(window)):.1%}; 503 share over the run "
            f"{statuses[503] / len(tally.answers):.1%}; transport errors {tally.unanswered}"
        )
        assert 500 not in statuses and set(statuses) <= {201, 503, 409}, statuses
        assert tally.unanswered == 0  # the API processes stayed up and answered every request
        assert server.alive() and worker.alive()
        assert recovery <= RECOVERY_BOUND_SECONDS, recovery

        # Every acknowledged transfer exists exactly once on the new primary; nothing else does.
        acknowledged = set(tally.acknowledged.values())
        assert len(acknowledged) == len(tally.acknowledged)
        new_primary = probe(standby)
        try:
            assert set(transaction_statuses(new_primary)) == acknowledged
            wait_until(
                lambda: (
                    due_jobs(new_primary) == 0
                    and set(transaction_statuses(new_primary).values()) == {"COMPLETED"}
                    and {r.json["data"]["id"] for r in receiver.of_type("OUTGOING_PAYMENT.COMPLETED")}
                    >= acknowledged
                ),
                timeout=90,
                message=lambda: (
                    f"{due_jobs(new_primary)} jobs due, {Counter(transaction_statuses(new_primary).values())}, "
                    f"{len(receiver.of_type('OUTGOING_PAYMENT.COMPLETED'))} of {len(acknowledged)} webhooks"
                ),
            )
            assert new_primary.fetchval("SELECT count(*) FROM jobs WHERE state = 'DEAD'") == 0
        finally:
            new_primary.close()
        completed = receiver.of_type("OUTGOING_PAYMENT.COMPLETED")
        assert {r.json["data"]["id"] for r in completed} == acknowledged
        assert all(verify_header(public_key, r.headers["x-svc-signature"], r.body) for r in completed)

        # --- The old primary comes back as a second writable server (an operator's mistake) ---
        # Without the synchronous standby it had: a write platpay sent it would commit, and be counted.
        primary.start(synchronous_standby_names="''")
        assert not primary.in_recovery()
        on_old = rows(primary)
        on_new = rows(standby)
        # Every connection of the running processes ends (as a restart would end them): each pool opens new
        # ones, with the old primary first in the URL's host list.
        terminate_backends(standby)
        created = create_platform(processes, env)  # a command started now: a process that saw no failover
        back = Tally()
        with api_client(base_url, sandbox) as client:
            after = {
                send_until_definite(
                    client,
                    transfer_out_body(holders[n % HOLDERS], 100 + n),
                    back,
                    give_up_at=time.monotonic() + 30,
                )
                for n in range(AFTER_RETURN_TRANSFERS)
            }
        on_old_now = rows(primary)
        assert on_old_now == on_old, (  # the old primary received nothing
            f"split brain: the old primary received {len(on_old_now['platforms'] - on_old['platforms'])} "
            f"platforms and {len(on_old_now['transactions'] - on_old['transactions'])} transactions"
        )
        new_primary = probe(standby)
        try:
            wait_until(
                lambda: (
                    due_jobs(new_primary) == 0
                    and {transaction_statuses(new_primary).get(t) for t in after} == {"COMPLETED"}
                ),
                timeout=60,
                message=lambda: f"{due_jobs(new_primary)} jobs due on the new primary",
            )
        finally:
            new_primary.close()
        now_new = rows(standby)
        assert now_new["platforms"] == on_new["platforms"] | {created["platformId"]}
        assert after <= now_new["transactions"] and len(now_new["transactions"]) == len(
            on_new["transactions"]
        ) + len(after)
        stale = {process.name: logged(process, "database.stale_primary") for process in (server, worker)}
        assert all(stale.values()), stale  # the API processes and the worker each said so, loudly
        assert all(
            (record["level"], record["timeline"], record["newest_timeline"]) == ("error", 1, 2)
            for records in stale.values()
            for record in records
        ), stale
        verify_ledger(processes, {**env, "PLATPAY_DATABASE_URL": standby.url(DATABASE)})  # the new primary's
        print(
            f"old primary back as a writable server: {len(after)} transfers and 1 platform written to the new "
            f"primary, 0 rows to the old one; {sum(map(len, stale.values()))} database.stale_primary errors logged; answers "
            f"{dict(Counter(a.status for a in back.answers))}"
        )

        # --- The new primary goes away: the old one is still refused by every process that saw the newer ---
        standby.stop(mode="immediate")
        with api_client(base_url, sandbox) as client:
            for n in range(4):
                refused = client.post(
                    "/transfer-out",
                    json=transfer_out_body(holders[n], 100),
                    headers={"Idempotency-Key": f"refused-{n}"},
                )
                assert_error(refused, 503, "SERVICE_UNAVAILABLE")
        assert rows(primary) == on_old
        print(f"test body {time.monotonic() - began:.1f} s")
    finally:
        receiver.stop()
