"""Many workers, one truth: the per-endpoint webhook cap (`webhook_endpoint_max_in_flight`) and the fair
claiming of the `webhooks` lane hold across separate `platpay worker` processes on PostgreSQL.

One API server (`serve --no-worker`) and three worker processes, each with ONE webhook slot
(`PLATPAY_WEBHOOK_CONCURRENCY=1`): three deliveries can be in flight at once in all, one per process, and
the cap is 2. Tenant A's endpoint is a real receiver on 127.0.0.1 that takes 0.3 s per request; a burst of
sandbox fundings (one INTERNAL_ACCOUNT.BALANCE_UPDATED each) gives it a backlog. Tenant B's endpoint
answers at once; B's own burst arrives while A's backlog waits.

Measured at the receivers (a request is counted from its arrival until just before its answer, inside the
sender's own time in flight): A never has more than 2 requests in flight, and has exactly 2 at some instant
(with one slot per process, that is two processes sending to it at once: the test can fail both ways); B's
deliveries all arrive while A still has undelivered events; every delivery arrives, once, signed.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from platpay.db import migrate
from platpay.kit.crypto.webhook_signing import verify_header
from tests.support.api_checks import api_client
from tests.support.money import fund, money_env, open_holder, verify_ledger
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager
from tests.support.receiver import Received, Reply, WebhookReceiver
from tests.support.server import credentials, start_server, wait_until

pytestmark = pytest.mark.e2e

WORKERS = 3
CAP = 2
SLOW_SECONDS = 0.3  # each request to A's endpoint
A_EVENTS = 36  # A's burst: about 36 x 0.3 s / 2 = 5.4 s of backlog at the cap
B_EVENTS = 12


def delivery_ids(probe: PgProbe, url: str) -> set[str]:
    """The deliveries platpay scheduled to `url` (the envelope `id` a receiver sees)."""
    return {row["id"] for row in probe.fetch("SELECT id FROM webhook_deliveries WHERE url = $1", url)}


def created_platform(process: ManagedProcess) -> dict:
    """What `platpay platform create --json` printed, once it exited."""
    assert process.popen.wait(timeout=60) == 0, process.describe()
    return json.loads(process.stdout())


def arrivals(receiver: WebhookReceiver) -> list[Received]:
    return list(receiver.received)


def test_the_per_endpoint_cap_holds_across_worker_processes_and_a_fast_endpoint_is_not_starved(
    processes: ProcessManager, pg_database: str, pg_probe: PgProbe, master_key: str, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    env = money_env(
        pg_database,
        master_key,
        tmp_path,
        PLATPAY_WEBHOOK_ENDPOINT_MAX_IN_FLIGHT=str(CAP),
        PLATPAY_WEBHOOK_CONCURRENCY="1",  # one slot per process: two requests at once are two processes
        PLATPAY_WEBHOOK_TIMEOUT_SECONDS="10",  # no attempt times out (the receiver would still count it)
        PLATPAY_DB_POOL_SIZE="4",
    )
    migrate.upgrade(pg_database)  # once, here: every process below starts at once on a current schema
    creating = [
        processes.start(
            f"platform-{name}", [PLATPAY, "platform", "create", "--name", name, "--json"], env=env
        )
        for name in ("A", "B")
    ]
    workers = [processes.start(f"worker-{n}", [PLATPAY, "worker"], env=env) for n in range(1, WORKERS + 1)]
    _, base_url = start_server(processes, env, "--no-worker")
    platform_a, platform_b = (credentials(created_platform(process), "sandbox") for process in creating)
    for worker in workers:
        worker.wait_for_output("jobs.runner_started", timeout=60)
    print(f"\nstarted in {time.monotonic() - t0:.1f} s")
    slow = WebhookReceiver(default=Reply(delay=SLOW_SECONDS)).start()
    fast = WebhookReceiver().start()
    try:
        with api_client(base_url, platform_a) as a, api_client(base_url, platform_b) as b:
            keys = {}
            for client, receiver in ((a, slow), (b, fast)):
                response = client.patch("/config", json={"webhookEndpoint": receiver.url})
                assert response.status_code == 200, response.text
                keys[receiver.url] = response.json()["webhookPublicKey"]
            holder_a, holder_b = open_holder(a), open_holder(b, serial=1)
            # The setup's own webhooks (TEST, the new customer's...) are delivered before the bursts.
            for receiver in (slow, fast):
                wait_until(
                    lambda receiver=receiver: (
                        {r.json["id"] for r in arrivals(receiver)} >= delivery_ids(pg_probe, receiver.url)
                    ),
                    timeout=30,
                    message=lambda: processes.describe_all(),
                )
            slow.in_flight_peak = fast.in_flight_peak = 0  # (the setup's webhooks came one by one)
            before_a, before_b = len(slow.received), len(fast.received)
            setup_a = delivery_ids(pg_probe, slow.url)

            def fund_a(_: int) -> int:
                return fund(a, holder_a.account_id, 1_000).status_code

            with ThreadPoolExecutor(4) as pool:  # httpx.Client is thread-safe
                assert set(pool.map(fund_a, range(A_EVENTS))) == {200}
            burst_a = delivery_ids(pg_probe, slow.url) - setup_a
            assert len(burst_a) == A_EVENTS
            # A is backlogged: the workers have started on it and most of it waits.
            wait_until(
                lambda: len(slow.received) - before_a >= CAP,
                timeout=30,
                message=lambda: (
                    f"A's endpoint got {len(slow.received) - before_a}\n{processes.describe_all()}"
                ),
            )
            b_sent = time.monotonic()
            for _ in range(B_EVENTS):
                assert fund(b, holder_b.account_id, 1_000).status_code == 200
            expected_b = delivery_ids(pg_probe, fast.url)
            wait_until(
                lambda: {r.json["id"] for r in arrivals(fast)} >= expected_b,
                timeout=30,
                message=lambda: (
                    f"B got {len(fast.received) - before_b} of {B_EVENTS}\n{processes.describe_all()}"
                ),
            )
            b_done = time.monotonic()
            a_delivered_when_b_done = len({r.json["id"] for r in arrivals(slow)} & burst_a)
            a_in_burst = len(burst_a)

            wait_until(
                lambda: {r.json["id"] for r in arrivals(slow)} >= burst_a,
                timeout=60,
                message=lambda: (
                    f"A got {len({r.json['id'] for r in arrivals(slow)} & burst_a)} of {len(burst_a)}\n"
                    f"{processes.describe_all()}"
                ),
            )
            a_received = arrivals(slow)[before_a:]
            a_seconds = max(r.at for r in a_received) - min(r.at for r in a_received)

        wait_until(  # the workers record what the receivers answered
            lambda: (
                pg_probe.fetchval("SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING'") == 0
            ),
            timeout=30,
            message=lambda: processes.describe_all(),
        )
        pending = pg_probe.fetchval("SELECT count(*) FROM webhook_deliveries WHERE status <> 'DELIVERED'")
        retried = pg_probe.fetchval("SELECT count(*) FROM webhook_deliveries WHERE attempt_count <> 1")
        duplicates = {
            receiver.url: sum(n - 1 for n in Counter(r.json["id"] for r in receiver.received).values())
            for receiver in (slow, fast)
        }
        print(
            f"\n{WORKERS} worker processes x 1 webhook slot, cap {CAP}: A (slow, {SLOW_SECONDS:g} s/request) "
            f"peaked at {slow.in_flight_peak} in flight, B (fast) at {fast.in_flight_peak}; "
            f"A's burst of {a_in_burst} delivered in {a_seconds:.2f} s ({a_in_burst / a_seconds:.1f}/s, "
            f"the cap allows {CAP / SLOW_SECONDS:.1f}/s); B's {B_EVENTS} delivered {b_done - b_sent:.2f} s "
            f"after its first funding, while A had {a_in_burst - a_delivered_when_b_done} still to deliver; "
            f"duplicates A {duplicates[slow.url]}, B {duplicates[fast.url]}; not delivered {pending}, "
            f"attempted more than once {retried}"
        )
        assert slow.in_flight_peak == CAP  # never more than the cap, and the cap was reached
        assert fast.in_flight_peak <= CAP
        assert a_delivered_when_b_done < a_in_burst  # B was not starved behind A's backlog
        assert {r.json["id"] for r in slow.received} == delivery_ids(pg_probe, slow.url)
        assert {r.json["id"] for r in fast.received} == delivery_ids(pg_probe, fast.url)
        assert duplicates == {slow.url: 0, fast.url: 0}  # no failure here: no delivery is sent twice
        assert pending == 0 and retried == 0
        for receiver in (slow, fast):
            assert all(
                verify_header(keys[receiver.url], r.headers["x-svc-signature"], r.body)
                for r in receiver.received
            )
        for worker in workers:
            assert worker.alive(), worker.describe()
        verify_ledger(processes, env)
        print(f"ledger verified at {time.monotonic() - t0:.1f} s")
    finally:
        slow.stop()
        fast.stop()
