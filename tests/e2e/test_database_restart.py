"""PostgreSQL ends every connection three times while money moves: the service answers 503 (never 500)
while a connection it held is found dead, is back within a second of each termination, and every
acknowledged transfer exists exactly once, settles, and reaches the webhook receiver, signed.

Two API processes (`serve --workers 2`) and a separate worker, eight clients sending POST /transfer-out
with an Idempotency-Key and retrying until they get a definite answer, as a correct client does.
`pg_terminate_backend` of every backend of the test's database is what a restart or a managed failover
does to platpay's connections (the database itself stays up, so it is back at once).
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from platpay.kit.crypto.webhook_signing import verify_header
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
from tests.support.processes import PLATPAY, ProcessManager
from tests.support.receiver import WebhookReceiver
from tests.support.server import create_platform, credentials, start_server, wait_until

pytestmark = pytest.mark.e2e

CLIENTS = 8
HOLDERS = 4
RUN_SECONDS = 9.0
TERMINATE_AT = (2.0, 5.0, 8.0)  # seconds into the run
PAUSE_SECONDS = 0.25  # between one client's transfers: steady load, and a backlog the worker drains fast


@dataclass
class Answer:
    key: str
    status: int
    sent_at: float  # time.monotonic() of this attempt
    answered_at: float
    body: dict


@dataclass
class Tally:
    answers: list[Answer] = field(default_factory=list)
    acknowledged: dict[str, str] = field(default_factory=dict)  # key -> transaction id
    unanswered: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def client_loop(base_url: str, auth: tuple[str, str], holders: list, tally: Tally, stop_at: float) -> None:
    rng = random.Random()
    with api_client(base_url, auth) as client:
        while time.monotonic() < stop_at:
            key = f"restart-{uuid.uuid4()}"
            body = transfer_out_body(rng.choice(holders), rng.randint(100, 900))
            while True:  # the same request until a definite answer
                assert time.monotonic() < stop_at + 20, f"no definite answer for {key}"
                sent = time.monotonic()
                try:
                    response = client.post("/transfer-out", json=body, headers={"Idempotency-Key": key})
                except httpx.TransportError:
                    with tally.lock:
                        tally.unanswered += 1
                    time.sleep(0.05)
                    continue
                answer = Answer(key, response.status_code, sent, time.monotonic(), response.json())
                with tally.lock:
                    tally.answers.append(answer)
                if response.status_code == 503:
                    assert_error(response, 503, "SERVICE_UNAVAILABLE")
                    assert response.headers["retry-after"] == "1"
                    time.sleep(0.05)  # sooner than Retry-After: this test measures recovery
                    continue
                if response.status_code == 409 and answer.body["code"] == "IDEMPOTENCY_KEY_IN_USE":
                    time.sleep(0.05)
                    continue
                assert response.status_code == 201, response.text
                with tally.lock:
                    tally.acknowledged[key] = answer.body["id"]
                break
            time.sleep(PAUSE_SECONDS)


def test_every_backend_terminated_three_times_under_load_no_500_back_within_a_second_nothing_lost(
    processes: ProcessManager, pg_database: str, pg_probe: PgProbe, master_key: str, tmp_path: Path
) -> None:
    env = money_env(pg_database, master_key, tmp_path, PLATPAY_DB_POOL_SIZE="8")
    sandbox = credentials(create_platform(processes, env), "sandbox")
    _, base_url = start_server(processes, env, "--workers", "2", "--no-worker")
    processes.start("worker", [PLATPAY, "worker"], env=env).wait_for_output("jobs.runner_started", timeout=60)
    receiver = WebhookReceiver().start()
    try:
        with api_client(base_url, sandbox) as client:
            public_key = client.get("/config").json()["webhookPublicKey"]
            assert client.patch("/config", json={"webhookEndpoint": receiver.url}).status_code == 200
            holders = [open_holder(client, serial=n) for n in range(HOLDERS)]
            for holder in holders:
                assert fund(client, holder.account_id, 100_000_000).status_code == 200

        tally = Tally()
        started = time.monotonic()
        stop_at = started + RUN_SECONDS
        threads = [
            threading.Thread(target=client_loop, args=(base_url, sandbox, holders, tally, stop_at))
            for _ in range(CLIENTS)
        ]
        for thread in threads:
            thread.start()
        terminations = []
        for offset in TERMINATE_AT:
            time.sleep(max(0.0, started + offset - time.monotonic()))
            ended = pg_probe.fetchval(
                "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()) AS terminated"
            )
            terminations.append((time.monotonic(), ended))
        for thread in threads:
            thread.join(timeout=60)
        assert not any(thread.is_alive() for thread in threads)

        statuses = Counter(answer.status for answer in tally.answers)
        recovery = [
            min(
                (a.answered_at - at for a in tally.answers if a.status == 201 and a.sent_at >= at),
                default=float("inf"),
            )
            for at, _ in terminations
        ]
        print(
            f"\n{len(tally.acknowledged)} transfers acknowledged in {RUN_SECONDS:g} s; answers {dict(statuses)}; "
            f"503 share {statuses[503] / len(tally.answers):.2%}; connections ended per termination "
            f"{[n for _, n in terminations]}; first success after each termination (s) "
            f"{[round(r, 3) for r in recovery]}; transport errors {tally.unanswered}"
        )
        assert 500 not in statuses and set(statuses) <= {201, 503, 409}, statuses
        assert all(ended >= 3 for _, ended in terminations), terminations  # both servers and the worker
        assert all(seconds <= 1.0 for seconds in recovery), recovery
        assert tally.unanswered == 0

        # Every acknowledged transfer exists exactly once; nothing else does.
        acknowledged = set(tally.acknowledged.values())
        assert len(acknowledged) == len(tally.acknowledged)
        assert set(transaction_statuses(pg_probe)) == acknowledged

        drain_started = time.monotonic()
        wait_until(
            lambda: (
                due_jobs(pg_probe) == 0
                and set(transaction_statuses(pg_probe).values()) == {"COMPLETED"}
                and {r.json["data"]["id"] for r in receiver.of_type("OUTGOING_PAYMENT.COMPLETED")}
                >= acknowledged
            ),
            timeout=90,
            message=lambda: (
                f"{due_jobs(pg_probe)} jobs due, {Counter(transaction_statuses(pg_probe).values())}, "
                f"{len(receiver.of_type('OUTGOING_PAYMENT.COMPLETED'))} of {len(acknowledged)} webhooks"
            ),
        )
        print(f"settled and delivered in {time.monotonic() - drain_started:.1f} s")
        assert pg_probe.fetchval("SELECT count(*) FROM jobs WHERE state = 'DEAD'") == 0
        completed = receiver.of_type("OUTGOING_PAYMENT.COMPLETED")
        assert {r.json["data"]["id"] for r in completed} == acknowledged
        assert all(verify_header(public_key, r.headers["x-svc-signature"], r.body) for r in completed)
        verify_ledger(processes, env)
    finally:
        receiver.stop()
