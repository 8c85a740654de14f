"""Crash safety of money movement on PostgreSQL: `kill -9` the server and the worker at random moments
during a run of a few hundred mixed money operations (sandbox fundings, transfer-outs, transfer-ins, quote
creations + executions, all with Idempotency-Keys), restart them, let the client retry every request whose
answer it did not get (same key, same body; 409 IDEMPOTENCY_KEY_IN_USE is retried after a pause), and
check that every request took effect exactly once.

What proves "exactly once" (the client keeps its own books; nothing below trusts the server's answers
beyond the ids it handed out):
1. Every request ends with an answer allowed for its kind, and a replay of its key returns that answer
   byte for byte (so the client's books hold what the server committed, lost answers included).
2. The transactions in the database are exactly the ones named by accepted answers (201 transfer, 201
   quote): a retry never created a second one, a lost answer never left one the client does not know, a
   refused transfer-out (400 INSUFFICIENT_BALANCE) left none; one quote per quote key.
3. Each transaction carries exactly the ledger entries its outcome calls for (transfer-out: hold, then
   settle or release; transfer-in: one settlement entry if the pull succeeded; quote: one QUOTE_EXECUTE if
   its execution was accepted, none if refused), and each account exactly one SANDBOX_FUNDING entry per
   funding key, for the funded amount.
4. Once the worker has run every due job, every transaction is in the state its kind and sandbox magic
   suffix dictate: terminal, or PENDING for a quote whose execution was refused (it expires minutes later).
   Every account's balance equals the client's arithmetic over accepted answers only: fundings + settled
   pulls - settled transfer-outs - executed quotes, nothing held. A double effect would show as an extra
   transaction or entry even where amounts happened to cancel out.
5. `platpay ledger verify` exits 0.

The mix is a table of operation kinds (KINDS): each plans its requests, sends them through the generic
retrying client, says which answers are allowed and what an accepted answer obliges the server to have done.
A new money operation joins the test as one more Kind.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.factories import clabe_ending
from tests.support.api_checks import api_client, assert_error
from tests.support.money import (
    BANK_REJECTS,
    FAILS_AT_ONCE,
    SETTLES,
    SLOW_FAILURE,
    TERMINAL,
    Holder,
    api_balance,
    due_jobs,
    fund,
    ledger_buckets,
    money_env,
    open_holder,
    transaction_statuses,
    verify_ledger,
)
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager, free_port
from tests.support.server import create_platform, credentials, wait_until

pytestmark = pytest.mark.e2e

SEED = 20251013
REQUESTS = 300
CLIENT_THREADS = 8
HOLDERS = 6
SUFFIXES = (SETTLES, BANK_REJECTS, SLOW_FAILURE, FAILS_AT_ONCE)


# ---- the client: sends one request until it has an answer ----------------------------------------


@dataclass
class ClientLog:
    answers: dict[str, list[httpx.Response]] = field(default_factory=dict)  # planned key -> its answers
    attempts: int = 0
    unanswered_attempts: int = 0  # connection refused or dropped: retried
    in_use: int = 0  # 409 IDEMPOTENCY_KEY_IN_USE: retried after a pause
    replayed: int = 0  # a retry found the first attempt committed (its answer had been lost)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def done(self) -> int:
        return len(self.answers)


class Retrier:
    """One client connection that sends a request again (same Idempotency-Key, same body) until it gets an
    answer: a dropped or refused connection and 409 IDEMPOTENCY_KEY_IN_USE are not answers."""

    def __init__(self, base_url: str, auth: tuple[str, str], log: ClientLog, deadline: float) -> None:
        self.base_url, self.auth, self.log, self.deadline = base_url, auth, log, deadline
        self.client = api_client(base_url, auth)

    def post(self, path: str, body: dict[str, Any] | None, key: str) -> httpx.Response:
        while True:
            assert time.monotonic() < self.deadline, f"no answer for {key} in time"
            with self.log.lock:
                self.log.attempts += 1
            try:
                response = self.client.post(path, json=body, headers={"Idempotency-Key": key})
            except httpx.TransportError:
                with self.log.lock:
                    self.log.unanswered_attempts += 1
                self.client.close()  # the server died: start again from a fresh connection
                self.client = api_client(self.base_url, self.auth)
                time.sleep(0.2)
                continue
            if response.status_code == 409 and response.json().get("code") == "IDEMPOTENCY_KEY_IN_USE":
                with self.log.lock:
                    self.log.in_use += 1
                time.sleep(0.2)
                continue
            if response.headers.get("idempotent-replayed") == "true":
                with self.log.lock:
                    self.log.replayed += 1
            return response

    def close(self) -> None:
        self.client.close()


# ---- the request mix -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """One client operation (one or more requests, each with its own key derived from `key`)."""

    key: str
    kind: str
    path: str
    body: dict[str, Any]
    account_id: str
    amount: int
    suffix: str | None = None  # the external account's magic suffix: how its transaction must end


@dataclass(frozen=True)
class Expected:
    status: str | None  # its transaction's final status (None: it has no transaction)
    entries: list[str]  # the ledger entries its transaction carries, in order
    change: int  # to the account's available balance once everything has settled


class Kind:
    """A kind of client operation: how it is planned and sent, which answers are allowed, and what an
    answer obliges the server to have done. The default is one POST."""

    name = ""
    weight = 1

    def plan(self, rng: random.Random, holder: Holder, key: str, payees: dict[str, str]) -> Planned:
        raise NotImplementedError

    def send(self, retrier: Retrier, planned: Planned) -> list[httpx.Response]:
        return [retrier.post(planned.path, planned.body, planned.key)]

    def check(self, planned: Planned, answers: list[httpx.Response]) -> None:
        raise NotImplementedError

    def transaction_id(self, answers: list[httpx.Response]) -> str | None:
        return answers[0].json()["id"] if answers[0].status_code == 201 else None

    def expected(self, planned: Planned, answers: list[httpx.Response]) -> Expected:
        raise NotImplementedError


class Funding(Kind):
    """Sandbox funding: 200 with the account; one SANDBOX_FUNDING entry; adds its amount."""

    name, weight = "fund", 3

    def plan(self, rng: random.Random, holder: Holder, key: str, payees: dict[str, str]) -> Planned:
        amount = rng.randint(500, 5_000)
        path = f"/sandbox/internal-accounts/{holder.account_id}/fund"
        return Planned(key, self.name, path, {"amount": amount}, holder.account_id, amount)

    def check(self, planned: Planned, answers: list[httpx.Response]) -> None:
        assert answers[0].status_code == 200, answers[0].text
        assert answers[0].json()["id"] == planned.account_id

    def transaction_id(self, answers: list[httpx.Response]) -> str | None:
        return None

    def expected(self, planned: Planned, answers: list[httpx.Response]) -> Expected:
        return Expected(None, [], planned.amount)


class TransferOut(Kind):
    """Accepted (201, funds held) or refused (400 INSUFFICIENT_BALANCE, nothing happens). Accepted: the
    hold is settled (money leaves) or released (back to available) as its suffix dictates."""

    name, weight = "transfer-out", 5
    outcomes = {
        SETTLES: ("COMPLETED", ["TRANSFER_OUT_HOLD", "TRANSFER_OUT_SETTLE"]),
        BANK_REJECTS: ("FAILED", ["TRANSFER_OUT_HOLD", "TRANSFER_OUT_RELEASE"]),
        SLOW_FAILURE: ("FAILED", ["TRANSFER_OUT_HOLD", "TRANSFER_OUT_RELEASE"]),
        FAILS_AT_ONCE: ("FAILED", ["TRANSFER_OUT_HOLD", "TRANSFER_OUT_RELEASE"]),
    }

    def plan(self, rng: random.Random, holder: Holder, key: str, payees: dict[str, str]) -> Planned:
        suffix = rng.choices(SUFFIXES, weights=(6, 1, 1, 1))[0]
        amount = rng.randint(100, 3_000)
        body = {
            "source": {"accountId": holder.account_id},
            "destination": {"accountId": holder.banks[suffix]},
            "amount": amount,
        }
        return Planned(key, self.name, "/transfer-out", body, holder.account_id, amount, suffix)

    def check(self, planned: Planned, answers: list[httpx.Response]) -> None:
        [answer] = answers
        if answer.status_code == 400:
            error = assert_error(answer, 400, "INSUFFICIENT_BALANCE")
            # (details.available is read after the refusal: a funding committed in between may show.)
            assert error["details"]["required"] == planned.amount, error
            return
        assert answer.status_code == 201, answer.text
        transaction = answer.json()
        assert transaction["sentAmount"]["amount"] == planned.amount
        assert transaction["status"] == ("FAILED" if planned.suffix == FAILS_AT_ONCE else "PENDING")

    def expected(self, planned: Planned, answers: list[httpx.Response]) -> Expected:
        status, entries = self.outcomes[planned.suffix or SETTLES]
        return Expected(status, entries, -planned.amount if status == "COMPLETED" else 0)


class TransferIn(Kind):
    """Accepted (201); credits the account once, when a pull that succeeds settles."""

    name, weight = "transfer-in", 2

    def plan(self, rng: random.Random, holder: Holder, key: str, payees: dict[str, str]) -> Planned:
        suffix = rng.choices((SETTLES, BANK_REJECTS), weights=(4, 1))[0]
        amount = rng.randint(100, 3_000)
        body = {
            "source": {"accountId": holder.banks[suffix]},
            "destination": {"accountId": holder.account_id},
            "amount": amount,
        }
        return Planned(key, self.name, "/transfer-in", body, holder.account_id, amount, suffix)

    def check(self, planned: Planned, answers: list[httpx.Response]) -> None:
        assert answers[0].status_code == 201, answers[0].text
        assert answers[0].json()["receivedAmount"]["amount"] == planned.amount

    def expected(self, planned: Planned, answers: list[httpx.Response]) -> Expected:
        if planned.suffix == SETTLES:
            return Expected("COMPLETED", ["TRANSFER_IN_SETTLE"], planned.amount)
        return Expected("FAILED", [], 0)


class QuoteExecution(Kind):
    """POST /quotes (USD -> MXN, to the holder's own MXN bank account; its transaction exists from
    creation), then POST /quotes/{id}/execute, each with its own key. Executed: the sending amount leaves
    once and the payout completes; refused (400 INSUFFICIENT_BALANCE): nothing moves and the quote stays
    PENDING until it expires (minutes later: a legitimately pending transaction)."""

    name, weight = "quote", 2

    def plan(self, rng: random.Random, holder: Holder, key: str, payees: dict[str, str]) -> Planned:
        amount = rng.randint(1_000, 3_000)
        body = {
            "source": {"sourceType": "ACCOUNT", "accountId": holder.account_id},
            "destination": {"destinationType": "ACCOUNT", "accountId": payees[holder.account_id]},
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": amount,
        }
        return Planned(key, self.name, "/quotes", body, holder.account_id, amount)

    def send(self, retrier: Retrier, planned: Planned) -> list[httpx.Response]:
        created = retrier.post(planned.path, planned.body, f"{planned.key}-create")
        if created.status_code != 201:
            return [created]
        executed = retrier.post(f"/quotes/{created.json()['id']}/execute", None, f"{planned.key}-execute")
        return [created, executed]

    def check(self, planned: Planned, answers: list[httpx.Response]) -> None:
        assert len(answers) == 2 and answers[0].status_code == 201, answers[0].text
        quote = answers[0].json()
        assert quote["totalSendingAmount"] == planned.amount and quote["status"] == "PENDING"
        executed = answers[1]
        if executed.status_code == 400:
            assert_error(executed, 400, "INSUFFICIENT_BALANCE")
        else:
            assert executed.status_code == 200, executed.text
            assert executed.json()["id"] == quote["id"] and executed.json()["status"] == "PROCESSING"

    def transaction_id(self, answers: list[httpx.Response]) -> str | None:
        return answers[0].json()["transactionId"] if answers[0].status_code == 201 else None

    def expected(self, planned: Planned, answers: list[httpx.Response]) -> Expected:
        if answers[1].status_code == 200:
            return Expected("COMPLETED", ["QUOTE_EXECUTE"], -planned.amount)
        return Expected("PENDING", [], 0)


KINDS: dict[str, Kind] = {
    kind.name: kind for kind in (Funding(), TransferOut(), TransferIn(), QuoteExecution())
}


def plan_requests(
    rng: random.Random, holders: list[Holder], payees: dict[str, str], count: int
) -> list[Planned]:
    names = list(KINDS)
    weights = [KINDS[name].weight for name in names]
    return [
        KINDS[rng.choices(names, weights)[0]].plan(
            rng, rng.choice(holders), f"crash-{n}-{uuid.uuid4()}", payees
        )
        for n in range(count)
    ]


def send_until_answered(base_url: str, auth: tuple[str, str], plans: list[Planned], log: ClientLog) -> None:
    retrier = Retrier(base_url, auth, log, deadline=time.monotonic() + 150)
    try:
        for planned in plans:
            answers = KINDS[planned.kind].send(retrier, planned)
            with log.lock:
                log.answers[planned.key] = answers
    finally:
        retrier.close()


def replay(client: httpx.Client, planned: Planned, answers: list[httpx.Response]) -> None:
    """Every request of the operation once more, with its key: the stored answer, byte for byte."""
    if planned.kind == "quote":
        requests = [(planned.path, planned.body, f"{planned.key}-create")]
        if len(answers) == 2:
            requests.append((f"/quotes/{answers[0].json()['id']}/execute", None, f"{planned.key}-execute"))
    else:
        requests = [(planned.path, planned.body, planned.key)]
    for (path, body, key), answer in zip(requests, answers, strict=True):
        again = client.post(path, json=body, headers={"Idempotency-Key": key})
        assert (again.status_code, again.content) == (answer.status_code, answer.content), planned
        assert again.headers.get("idempotent-replayed") == "true"


# ---- the chaos: kill -9 by pid, restart ------------------------------------------------------------


@dataclass
class Cluster:
    processes: ProcessManager
    env: dict[str, str]
    port: int
    server: ManagedProcess | None = None
    worker: ManagedProcess | None = None
    kills: list[str] = field(default_factory=list)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start_server(self) -> None:
        self.server = self.processes.start(
            "serve", [PLATPAY, "serve", "--port", str(self.port), "--no-worker"], env=self.env
        )
        self.server.wait_http_ready(f"{self.base_url}/readyz", timeout=60)

    def start_worker(self) -> None:
        self.worker = self.processes.start("worker", [PLATPAY, "worker"], env=self.env)
        self.worker.wait_for_output("jobs.runner_started", timeout=60)

    def crash(self, rng: random.Random) -> None:
        """SIGKILL the server, the worker or both (no shutdown code runs), then start them again."""
        victims = rng.choice((("server",), ("worker",), ("server", "worker")))
        for victim in victims:
            process = self.server if victim == "server" else self.worker
            assert process is not None and process.alive(), process and process.describe()
            process.kill()
            assert process.popen.returncode == -9
        self.kills.append("+".join(victims))
        time.sleep(rng.uniform(0.0, 0.5))
        if "worker" in victims:
            self.start_worker()
        if "server" in victims:
            self.start_server()


def run_chaos(cluster: Cluster, log: ClientLog, rng: random.Random, stop: threading.Event) -> None:
    """3-5 crashes, each at a random point of the run (after a random number of answers, plus a random
    few milliseconds, so requests and jobs are in flight)."""
    moments = sorted(rng.sample(range(REQUESTS // 10, REQUESTS * 9 // 10), rng.randint(3, 5)))
    for moment in moments:
        while log.done < moment:
            if stop.is_set():
                return
            time.sleep(0.005)
        time.sleep(rng.uniform(0.0, 0.05))
        cluster.crash(rng)


# ---- the test ---------------------------------------------------------------------------------------


def test_kill_9_of_server_and_worker_mid_run_every_request_takes_effect_exactly_once(
    processes: ProcessManager, pg_database: str, pg_probe: PgProbe, master_key: str, tmp_path: Path
) -> None:
    rng = random.Random(SEED)
    env = money_env(
        pg_database,
        master_key,
        tmp_path,
        PLATPAY_JOB_LEASE_SECONDS="2",  # a killed worker's jobs are taken over 2 s later
        PLATPAY_DB_POOL_SIZE="4",
    )
    sandbox = credentials(create_platform(processes, env), "sandbox")  # migrates the database too
    cluster = Cluster(processes, env, free_port())
    cluster.start_server()
    cluster.start_worker()
    with api_client(cluster.base_url, sandbox) as client:
        holders = [open_holder(client, suffixes=SUFFIXES, serial=n) for n in range(HOLDERS)]
        payees = {h.account_id: open_mxn_payee(client, h, n) for n, h in enumerate(holders)}
        for holder in holders:  # a starting balance, so early transfer-outs are not all refused
            assert fund(client, holder.account_id, 3_000, key=f"seed-{holder.account_id}").status_code == 200
    plans = plan_requests(rng, holders, payees, REQUESTS)

    log = ClientLog()
    stop = threading.Event()
    chaos = threading.Thread(target=run_chaos, args=(cluster, log, random.Random(rng.random()), stop))
    clients = [
        threading.Thread(
            target=send_until_answered, args=(cluster.base_url, sandbox, plans[n::CLIENT_THREADS], log)
        )
        for n in range(CLIENT_THREADS)
    ]
    started = time.monotonic()
    chaos.start()
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(timeout=180)
    stop.set()
    chaos.join(timeout=120)
    assert not chaos.is_alive() and not any(t.is_alive() for t in clients)
    print(
        f"\n{REQUESTS} operations ({Counter(p.kind for p in plans)}) in {time.monotonic() - started:.1f} s; "
        f"kills: {cluster.kills}; HTTP attempts {log.attempts}, unanswered {log.unanswered_attempts}, "
        f"409 in-use {log.in_use}, answers lost then replayed {log.replayed}"
    )
    assert len(cluster.kills) >= 3, cluster.kills
    assert log.done == REQUESTS

    # 1. Every answer is allowed for its kind, and is what its key replays, byte for byte.
    with api_client(cluster.base_url, sandbox) as client:
        for planned in plans:
            KINDS[planned.kind].check(planned, log.answers[planned.key])
            replay(client, planned, log.answers[planned.key])

    # 2. Exactly the transactions named by accepted answers exist (one per key).
    accepted = {
        transaction_id: planned
        for planned in plans
        if (transaction_id := KINDS[planned.kind].transaction_id(log.answers[planned.key]))
    }
    assert len(accepted) == sum(1 for p in plans if KINDS[p.kind].transaction_id(log.answers[p.key]))
    assert set(transaction_statuses(pg_probe)) == set(accepted)
    assert pg_probe.fetchval("SELECT count(*) FROM quotes") == sum(1 for p in plans if p.kind == "quote")

    # 4a. Everything drains: the worker runs every due step, and every transaction reaches the state its
    # kind and suffix dictate (terminal, or PENDING for a quote whose execution was refused).
    expected = {
        transaction_id: KINDS[planned.kind].expected(planned, log.answers[planned.key])
        for transaction_id, planned in accepted.items()
    }
    assert {e.status for e in expected.values()} <= TERMINAL | {"PENDING"}

    def settled() -> bool:
        statuses = transaction_statuses(pg_probe)
        return due_jobs(pg_probe) == 0 and all(statuses[t] == e.status for t, e in expected.items())

    wait_until(
        settled,
        timeout=60,
        message=lambda: (
            f"not drained: {due_jobs(pg_probe)} jobs due, {Counter(transaction_statuses(pg_probe).values())}"
        ),
    )
    assert pg_probe.fetchval("SELECT count(*) FROM jobs WHERE state = 'DEAD'") == 0

    # 3 + 4b. Each transaction carries exactly its entries; each account's balance is the client's sum.
    entries: dict[str, list[str]] = defaultdict(list)
    for row in pg_probe.fetch("SELECT reference, kind FROM journal_entries ORDER BY id"):
        entries[row["reference"]].append(row["kind"])
    for transaction_id, want in expected.items():
        assert entries[transaction_id] == want.entries, (accepted[transaction_id], entries[transaction_id])
    expected_available = {h.account_id: 3_000 for h in holders}
    for planned in plans:
        answers = log.answers[planned.key]
        if KINDS[planned.kind].transaction_id(answers) is None and planned.kind != "fund":
            continue  # refused: no transaction (checked above), no effect
        expected_available[planned.account_id] += KINDS[planned.kind].expected(planned, answers).change
    for holder in holders:
        funded = pg_probe.fetch(
            "SELECT count(*) AS n, coalesce(sum(p.amount), 0) AS total FROM journal_entries e "
            "JOIN postings p ON p.entry_id = e.id AND p.account_id = $1 "
            "WHERE e.kind = 'SANDBOX_FUNDING' AND e.reference = $1",
            holder.account_id,
        )[0]
        fundings = [p.amount for p in plans if p.kind == "fund" and p.account_id == holder.account_id]
        assert (funded["n"], funded["total"]) == (1 + len(fundings), 3_000 + sum(fundings))
        assert ledger_buckets(pg_probe, holder.account_id) == (expected_available[holder.account_id], 0)
    with api_client(cluster.base_url, sandbox) as client:
        for holder in holders:
            assert api_balance(client, holder) == (expected_available[holder.account_id],) * 2
    refused = sum(1 for answers in log.answers.values() if answers[-1].status_code == 400)
    print(
        f"accepted transactions {len(accepted)}, refused (insufficient balance) {refused}, "
        f"{Counter(transaction_statuses(pg_probe).values())}"
    )

    # 5. The ledger as a whole.
    verify_ledger(processes, env)


def open_mxn_payee(client: httpx.Client, holder: Holder, serial: int) -> str:
    """The holder's own MXN bank account (a CLABE without sandbox magic: payouts to it succeed)."""
    body = {
        "customerId": holder.customer_id,
        "currency": "MXN",
        "accountInfo": {
            "accountType": "MXN_ACCOUNT",
            "clabeNumber": clabe_ending(f"{serial:02d}9"),
            "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
        },
    }
    created = client.post("/customers/external-accounts", json=body)
    assert created.status_code == 201, created.text
    return created.json()["id"]
