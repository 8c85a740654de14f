"""A mixed campaign on PostgreSQL (issue 32, requirement 5): for a bounded time, clients move money in every
way platpay offers while a chaos thread SIGKILLs an API process, the worker, and crashes the database
(`pg_ctl stop -m immediate`, then start). Afterwards nothing was lost or doubled and nothing answered 500.

The deployment: a private PostgreSQL cluster (tests/e2e/pg_cluster.py: the test restarts it), two separate
`platpay serve --no-worker` processes on two ports (a client whose server is dead goes to the other), one
`platpay worker`, a webhook receiver. Client threads, each doing one kind of operation in a loop, every POST
with an Idempotency-Key and sent again with the same key until a definite answer (2xx, or the 4xx that is
that kind's business answer): a 503 (with Retry-After) or a dead connection is not an answer.

- transfer: POST /transfer-out (USD);
- fx: POST /quotes USD -> MXN, then POST /quotes/{id}/execute;
- card: a sandbox authorization on a USDB card, then (every other one) its clearing, for the full amount;
- agent (two threads, one agent): POST /agents/me/transfer-out; above the approval threshold it waits as
  PENDING_APPROVAL and the platform approves it (POST /agents/{id}/actions/{id}/approve: no key, so a lost
  answer is found again with GET /agents/me/actions/{id});
- wallet: a quote funded by an EMBEDDED_WALLET, executed with the wallet session's Svc-Wallet-Signature.

After the run and a drain (the worker runs every due job, every webhook is delivered):
1. no answer was a 5xx other than 503 SERVICE_UNAVAILABLE with Retry-After;
2. every acknowledged operation exists exactly once, and nothing else does: the transactions, quotes, card
   transactions and agent actions in the database are exactly the ones acknowledged answers named, each
   carrying exactly its ledger entries; every key replays its answer byte for byte;
3. every account's (available, total) and held bucket equal the client's sums over acknowledged answers
   (uncleared card authorizations held);
4. the agent's usage equals what it executed and never exceeded its limits;
5. every webhook was delivered and its signature verifies; every acknowledged resource had its events;
6. `platpay ledger verify` exits 0.
It prints what it measured: operations per kind, answers by status, retries, each fault's outage and the
time to the first success after it healed.
"""

from __future__ import annotations

import random
import re
import secrets
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from platpay import BASE_PATH
from platpay.kit.crypto.webhook_signing import verify_header
from tests.e2e.pg_cluster import PrivateCluster, running_cluster
from tests.factories import CARD_INELIGIBLE_SUFFIXES, FULL_PERSON, clabe_ending
from tests.support.api_checks import api_client
from tests.support.money import (
    Holder,
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
from tests.support.receiver import WebhookReceiver
from tests.support.server import BANNER, wait_until
from tests.support.wallets import stamp, wallet_session_key

pytestmark = pytest.mark.e2e

RUN_SECONDS = 16.0  # the clients stop then (or 2 s after the last fault, if the chaos ran late)
# (seconds into the run, at the earliest; what). The database crashes first while every process runs; a killed
# process is started again in the background (seconds on a loaded machine: the run goes on meanwhile), and
# the second crash meets the restarted processes running or still starting, as the machine's speed has it.
FAULTS = ((2.0, "database"), (5.0, "api-0"), (6.0, "worker"), (10.0, "database"))
REPLAYED = 60  # keys replayed at the end, a random sample of every kind's
REQUEST_SECONDS = 120.0  # one request's retries until a definite answer: generous for a loaded 2-core machine
PAUSE = 0.25  # between one client's operations: a few hundred in all, a backlog a loaded worker drains
USD_FUNDS = 100_000_000
USDB_FUNDS = 10_000_000_000  # USDB has 6 decimals
AGENT_PER_TRANSACTION, AGENT_DAILY, AGENT_THRESHOLD = 1_500, 10_000, 900  # the limit is met mid-run


@pytest.fixture
def cluster() -> Iterator[PrivateCluster]:
    with running_cluster() as private:
        yield private


# ---- the deployment and its chaos ---------------------------------------------------------------------


@dataclass
class Fault:
    what: str
    started: float  # time.monotonic()
    healed: float = 0.0
    in_flight: int = 0  # requests the killed API process had in hand


@dataclass
class Deployment:
    processes: ProcessManager
    env: dict[str, str]
    cluster: PrivateCluster
    ports: list[int]
    tally: Tally
    servers: list[ManagedProcess | None] = field(default_factory=lambda: [None, None])
    worker: ManagedProcess | None = None
    faults: list[Fault] = field(default_factory=list)
    restarting: dict[str, threading.Thread] = field(default_factory=dict)  # victim -> its restart

    @property
    def urls(self) -> list[str]:
        return [f"http://127.0.0.1:{port}" for port in self.ports]

    def start_server(self, n: int) -> None:
        server = self.processes.start(
            f"serve-{n}", [PLATPAY, "serve", "--port", str(self.ports[n]), "--no-worker"], env=self.env
        )
        server.wait_http_ready(f"{self.urls[n]}/healthz", timeout=90)
        self.servers[n] = server

    def start_worker(self) -> None:
        worker = self.processes.start("worker", [PLATPAY, "worker"], env=self.env)
        worker.wait_for_output("jobs.runner_started", timeout=90)
        self.worker = worker

    def kill(self, process: ManagedProcess | None) -> None:
        assert process is not None and process.alive(), process and process.describe()
        process.kill()
        assert process.popen.returncode == -9

    def inject(self, what: str, failures: list[str]) -> None:
        """One fault. The database is started again before this returns; a killed process is started again
        in the background (a start takes seconds on a loaded machine: the run goes on meanwhile), but a
        process is killed only once its previous restart is done, and one API process is always up."""
        victims = what.split("+")
        for victim in victims:
            waits = [victim] + ([f"api-{1 - int(victim[-1])}"] if victim.startswith("api-") else [])
            for thread in filter(None, map(self.restarting.get, waits)):
                thread.join(timeout=120)
        fault = Fault(what, time.monotonic())
        self.faults.append(fault)
        if what == "database":
            self.cluster.crash()
            time.sleep(0.5)  # down a while: requests in flight and new ones meet no database
            self.cluster.start()
            fault.healed = time.monotonic()
            return
        for victim in victims:
            if victim.startswith("api-"):  # while it has requests in hand (up to a second): answers are lost
                deadline = time.monotonic() + 1.0
                while self.tally.in_flight[int(victim[-1])] < 2 and time.monotonic() < deadline:
                    time.sleep(0.002)
                fault.in_flight = self.tally.in_flight[int(victim[-1])]
            self.kill(self.worker if victim == "worker" else self.servers[int(victim[-1])])

        def restart() -> None:
            try:
                for victim in victims:
                    if victim == "worker":
                        self.start_worker()
                    else:
                        self.start_server(int(victim[-1]))
                fault.healed = time.monotonic()
            except BaseException as error:
                failures.append(f"restarting {what}: {error!r}")

        thread = threading.Thread(target=restart)
        thread.start()
        for victim in victims:
            self.restarting[victim] = thread

    def settle(self) -> None:
        """Every restart done."""
        for thread in self.restarting.values():
            thread.join(timeout=120)
        assert not any(thread.is_alive() for thread in self.restarting.values())


def run_chaos(deployment: Deployment, started: float, failures: list[str]) -> None:
    try:
        for offset, what in FAULTS:
            time.sleep(max(0.0, started + offset - time.monotonic()))
            deployment.inject(what, failures)
    except BaseException as error:  # reported by the test, with the processes' logs
        failures.append(f"chaos: {error!r}")


# ---- the clients ----------------------------------------------------------------------------------------


@dataclass
class Sent:
    """One keyed request and its definite answer (replayed at the end)."""

    method: str
    path: str
    body: Any
    key: str
    headers: dict[str, str]
    status: int
    content: bytes


@dataclass
class Tally:
    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter[int] = field(default_factory=Counter)  # every HTTP answer, definite or not
    transport_errors: list[tuple[float, int]] = field(default_factory=list)  # (when, which server)
    in_use: int = 0  # 409 IDEMPOTENCY_KEY_IN_USE, retried
    replayed: int = 0  # a retry found the first attempt committed
    problems: list[str] = field(default_factory=list)  # anything a correct service never answers
    successes: list[tuple[float, float]] = field(default_factory=list)  # (sent, answered) of each 2xx
    sent: list[Sent] = field(default_factory=list)
    done: Counter[str] = field(default_factory=Counter)  # operations per kind
    in_flight: list[int] = field(default_factory=lambda: [0, 0])  # requests awaiting an answer, per server

    def problem(self, text: str) -> None:
        with self.lock:
            self.problems.append(text)


class Caller:
    """One client's connections to both servers: a request is sent again (same key, same body) until a
    definite answer; a dead connection moves it to the other server."""

    def __init__(self, urls: list[str], tally: Tally, *, auth: Any = None, token: str | None = None) -> None:
        self.tally = tally
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.clients = [
            httpx.Client(base_url=url + BASE_PATH, auth=auth, headers=headers, timeout=20.0, trust_env=False)
            for url in urls
        ]
        self.at = 0

    def next_server(self) -> None:
        """Each operation starts on the other server than the last: both take traffic, a restarted one too."""
        self.at = (self.at + 1) % len(self.clients)

    def close(self) -> None:
        for client in self.clients:
            client.close()

    def call(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        key: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx.Response:
        tally, deadline = self.tally, time.monotonic() + REQUEST_SECONDS
        sent_headers = {**(headers or {}), **({"Idempotency-Key": key} if key else {})}
        while True:
            assert time.monotonic() < deadline, f"no definite answer to {method} {path} ({key})"
            sent = time.monotonic()
            server = self.at
            with tally.lock:
                tally.in_flight[server] += 1
            try:
                response = self.clients[server].request(method, path, json=body, headers=sent_headers)
            except httpx.TransportError:
                with tally.lock:
                    tally.transport_errors.append((time.monotonic(), server))
                self.at = (self.at + 1) % len(self.clients)
                time.sleep(0.05)
                continue
            finally:
                with tally.lock:
                    tally.in_flight[server] -= 1
            status = response.status_code
            with tally.lock:
                tally.statuses[status] += 1
            if status >= 500:
                code = (
                    response.json().get("code")
                    if "json" in response.headers.get("content-type", "")
                    else None
                )
                if status != 503 or code != "SERVICE_UNAVAILABLE" or "retry-after" not in response.headers:
                    tally.problem(f"{method} {path}: {status} {response.text[:300]}")
                time.sleep(0.1)  # sooner than Retry-After: this test measures recovery
                continue
            if status == 409 and response.json().get("code") == "IDEMPOTENCY_KEY_IN_USE":
                with tally.lock:
                    tally.in_use += 1
                time.sleep(0.1)
                continue
            with tally.lock:
                if status < 300:
                    tally.successes.append((sent, time.monotonic()))
                if response.headers.get("idempotent-replayed") == "true":
                    tally.replayed += 1
                if key is not None:
                    tally.sent.append(Sent(method, path, body, key, headers or {}, status, response.content))
            return response


def business(response: httpx.Response, tally: Tally, allowed: dict[int, set[str]], what: str) -> bool:
    """True for a 2xx; False for an allowed refusal; a problem for anything else."""
    if response.status_code < 300:
        return True
    code = response.json().get("code")
    if code not in allowed.get(response.status_code, set()):
        tally.problem(f"{what}: unexpected {response.status_code} {response.text[:300]}")
    return False


INSUFFICIENT = {400: {"INSUFFICIENT_BALANCE"}}


@dataclass
class Books:
    """What the clients were told: the client's own records, by kind."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    transfers: dict[str, int] = field(default_factory=dict)  # transaction id -> amount
    quotes: dict[str, dict[str, Any]] = field(default_factory=dict)  # quote id -> {transaction, amount, ...}
    executed: set[str] = field(default_factory=set)  # quote ids executed
    authorizations: dict[str, int] = field(default_factory=dict)  # card transaction id -> authorized
    declined: set[str] = field(default_factory=set)
    cleared: dict[str, int] = field(default_factory=dict)  # card transaction id -> cleared amount
    actions: dict[str, int] = field(default_factory=dict)  # agent action id -> amount
    held: set[str] = field(default_factory=set)  # agent actions that waited for approval
    refused: Counter[str] = field(default_factory=Counter)  # kind -> legitimate refusals


@dataclass
class World:
    urls: list[str]
    auth: tuple[str, str]
    transfer_holder: Holder
    fx_holder: Holder
    fx_payee: str
    card_id: str
    card_account: str
    agent_id: str
    agent_token: str
    agent_holder: Holder
    wallet_id: str
    wallet_payee: str
    wallet_key: Any


def quote_body(source: str, destination: str, amount: int) -> dict[str, Any]:
    return {
        "source": {"sourceType": "ACCOUNT", "accountId": source},
        "destination": {"destinationType": "ACCOUNT", "accountId": destination},
        "lockedCurrencySide": "SENDING",
        "lockedCurrencyAmount": amount,
    }


def do_transfer(world: World, caller: Caller, books: Books, rng: random.Random) -> None:
    holder = world.transfer_holder
    body: dict[str, Any] = {
        "source": {"accountId": holder.account_id},
        "destination": {"accountId": next(iter(holder.banks.values()))},
        "amount": rng.randint(100, 900),
    }
    answer = caller.call("POST", "/transfer-out", body=body, key=f"transfer-{uuid.uuid4()}")
    if business(answer, caller.tally, INSUFFICIENT, "transfer-out"):
        assert answer.status_code == 201, answer.text
        with books.lock:
            books.transfers[answer.json()["id"]] = body["amount"]
    else:
        books.refused["transfer"] += 1


def quote_and_execute(
    caller: Caller, books: Books, kind: str, source: str, payee: str, amount: int, sign: Any = None
) -> None:
    key = f"{kind}-{uuid.uuid4()}"
    created = caller.call("POST", "/quotes", body=quote_body(source, payee, amount), key=f"{key}-create")
    if not business(created, caller.tally, {}, f"{kind} quote"):
        return
    quote = created.json()
    assert created.status_code == 201 and quote["totalSendingAmount"] == amount, created.text
    with books.lock:
        books.quotes[quote["id"]] = {
            "transaction": quote["transactionId"],
            "amount": amount,
            "source": source,
        }
    headers = {}
    if sign is not None:
        [payload] = [
            item["accountOrWalletInfo"]["payloadToSign"]
            for item in quote["paymentInstructions"]
            if item["accountOrWalletInfo"].get("accountType") == "EMBEDDED_WALLET"
        ]
        headers["Svc-Wallet-Signature"] = stamp(sign, payload)
    executed = caller.call("POST", f"/quotes/{quote['id']}/execute", key=f"{key}-execute", headers=headers)
    if business(executed, caller.tally, INSUFFICIENT, f"{kind} execute"):
        assert executed.status_code == 200 and executed.json()["status"] == "PROCESSING", executed.text
        with books.lock:
            books.executed.add(quote["id"])
    else:
        books.refused[kind] += 1


def do_fx(world: World, caller: Caller, books: Books, rng: random.Random) -> None:
    quote_and_execute(
        caller, books, "fx", world.fx_holder.account_id, world.fx_payee, rng.randint(1_000, 3_000)
    )


def do_wallet(world: World, caller: Caller, books: Books, rng: random.Random) -> None:
    amount = rng.randint(5_000_000, 9_000_000)
    quote_and_execute(caller, books, "wallet", world.wallet_id, world.wallet_payee, amount, world.wallet_key)


def do_card(world: World, caller: Caller, books: Books, rng: random.Random) -> None:
    amount = rng.randint(100, 900)
    body = {"amount": amount, "currency": {"code": "USDB"}, "merchant": {"descriptor": "CAMPAIGN CAFE"}}
    simulated = caller.call(
        "POST",
        f"/sandbox/cards/{world.card_id}/simulate/authorization",
        body=body,
        key=f"card-{uuid.uuid4()}",
    )
    if not business(simulated, caller.tally, {}, "card authorization"):
        return
    token = simulated.json()["issuerTransactionToken"]
    # The card transaction is committed with the 202 (newest first in the card's list).
    listed = caller.call("GET", f"/cards/{world.card_id}/transactions", headers={}, body=None)
    found = [t for t in listed.json()["data"] if t["issuerTransactionToken"] == token]
    assert len(found) == 1, (token, listed.text)
    transaction = found[0]
    if transaction["status"] == "DECLINED":
        with books.lock:
            books.declined.add(transaction["id"])
        books.refused["card"] += 1
        return
    assert transaction["status"] == "AUTHORIZED" and transaction["authorizedAmount"]["amount"] == amount
    with books.lock:
        books.authorizations[transaction["id"]] = amount
    if len(books.authorizations) % 2 == 1:  # every other one, the first included: the rest stay held
        clearing = {"cardTransactionId": transaction["id"], "amount": amount}
        cleared = caller.call(
            "POST",
            f"/sandbox/cards/{world.card_id}/simulate/clearing",
            body=clearing,
            key=f"clearing-{uuid.uuid4()}",
        )
        if business(cleared, caller.tally, {}, "card clearing"):
            with books.lock:
                books.cleared[transaction["id"]] = amount


def do_agent(world: World, caller: Caller, books: Books, rng: random.Random, platform: Caller) -> None:
    holder = world.agent_holder
    body: dict[str, Any] = {
        "source": {"accountId": holder.account_id},
        "destination": {"accountId": next(iter(holder.banks.values()))},
        "amount": rng.randint(300, AGENT_PER_TRANSACTION),
    }
    answer = caller.call("POST", "/agents/me/transfer-out", body=body, key=f"agent-{uuid.uuid4()}")
    if not business(answer, caller.tally, {403: {"FORBIDDEN"}}, "agent transfer-out"):
        rule = answer.json()["details"].get("rule", "")
        if not rule.startswith("spendingLimits."):
            caller.tally.problem(f"agent refused by {rule!r}: {answer.text[:300]}")
        books.refused["agent"] += 1
        return
    action = answer.json()
    with books.lock:
        books.actions[action["id"]] = body["amount"]
    if action["status"] == "PENDING_APPROVAL":
        with books.lock:
            books.held.add(action["id"])
        approved = platform.call("POST", f"/agents/{world.agent_id}/actions/{action['id']}/approve")
        if approved.status_code == 409 and approved.json()["code"] == "CONFLICT":
            # its first attempt committed but the answer was lost: the action says how it ended
            status = caller.call("GET", f"/agents/me/actions/{action['id']}").json()["status"]
        else:
            assert approved.status_code == 200, approved.text
            status = approved.json()["status"]
        if status not in ("APPROVED", "FAILED"):
            caller.tally.problem(f"approved action {action['id']} is {status}")
    elif action["status"] != "APPROVED":
        caller.tally.problem(f"agent action answered {action['status']}: {answer.text[:300]}")


def client_loop(
    kind: str, world: World, tally: Tally, books: Books, stop: threading.Event, seed: int
) -> None:
    rng = random.Random(seed)
    token = world.agent_token if kind == "agent" else None
    caller = Caller(world.urls, tally, auth=None if token else world.auth, token=token)
    platform = Caller(world.urls, tally, auth=world.auth)
    try:
        while not stop.is_set():
            caller.next_server()
            platform.next_server()
            if kind == "agent":
                do_agent(world, caller, books, rng, platform)
            else:
                {"transfer": do_transfer, "fx": do_fx, "card": do_card, "wallet": do_wallet}[kind](
                    world, caller, books, rng
                )
            with tally.lock:
                tally.done[kind] += 1
            time.sleep(PAUSE)
    except BaseException as error:
        tally.problem(f"{kind} client: {error!r}")
    finally:
        caller.close()
        platform.close()


# ---- the setup over HTTP ----------------------------------------------------------------------------------


def mxn_payee(client: httpx.Client, customer_id: str, serial: int) -> str:
    body = {
        "customerId": customer_id,
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


def cardholder(client: httpx.Client) -> tuple[str, dict[str, str]]:
    """An approved customer whose USDB accounts a card may draw on: (id, {account type: account id})."""
    for attempt in range(20):
        created = client.post(
            "/customers", json={**FULL_PERSON, "platformCustomerId": f"cardholder-{attempt}"}
        )
        assert created.status_code == 201, created.text
        customer_id = created.json()["id"]
        accounts = client.get(
            "/customers/internal-accounts", params={"customerId": customer_id, "currency": "USDB"}
        ).json()["data"]
        if not any(a["id"].endswith(CARD_INELIGIBLE_SUFFIXES) for a in accounts):
            break
    else:
        raise AssertionError("20 customers in a row had an account id the card issuer refuses")
    kyc = client.post(f"/sandbox/customers/{customer_id}/kyc", json={"kycStatus": "APPROVED"})
    assert kyc.status_code == 200, kyc.text
    return customer_id, {a["type"]: a["id"] for a in accounts}


def set_up(client: httpx.Client, urls: list[str], auth: tuple[str, str]) -> World:
    transfer_holder, fx_holder, agent_holder = (open_holder(client, serial=n) for n in range(3))
    for holder in (transfer_holder, fx_holder, agent_holder):
        assert fund(client, holder.account_id, USD_FUNDS).status_code == 200
    fx_payee = mxn_payee(client, fx_holder.customer_id, 1)

    holder_id, accounts = cardholder(client)
    card_account, wallet_id = accounts["INTERNAL_CRYPTO"], accounts["EMBEDDED_WALLET"]
    for account_id in (card_account, wallet_id):
        assert fund(client, account_id, USDB_FUNDS).status_code == 200
    issued = client.post(
        "/cards",
        json={"cardholderId": holder_id, "form": "VIRTUAL", "fundingSources": [card_account]},
        headers={"Idempotency-Key": "campaign-card"},
    )
    assert issued.status_code == 201, issued.text
    card_id = issued.json()["id"]
    wallet_payee = mxn_payee(client, holder_id, 2)
    wallet_key = wallet_session_key(client, wallet_id)

    policy = {
        "permissions": ["CREATE_TRANSFERS"],
        "defaultExecutionMode": "AUTO",
        "spendingLimits": {
            "currency": "USD",
            "perTransactionLimit": AGENT_PER_TRANSACTION,
            "dailyLimit": AGENT_DAILY,
        },
        "approvalThresholds": {"currency": "USD", "amount": AGENT_THRESHOLD},
    }
    created = client.post(
        "/agents", json={"name": "campaign", "customerId": agent_holder.customer_id, "policy": policy}
    )
    assert created.status_code == 201, created.text
    redeemed = httpx.post(
        f"{urls[0]}{BASE_PATH}/agents/device-codes/{created.json()['deviceCode']['code']}/redeem",
        trust_env=False,
        timeout=15.0,
    )
    assert redeemed.status_code == 200, redeemed.text
    wait_until(  # the worker provisions the card
        lambda: client.get(f"/cards/{card_id}").json()["state"] == "ACTIVE",
        timeout=60,
        message=lambda: f"card not active: {client.get(f'/cards/{card_id}').text}",
    )
    return World(
        urls=urls,
        auth=auth,
        transfer_holder=transfer_holder,
        fx_holder=fx_holder,
        fx_payee=fx_payee,
        card_id=card_id,
        card_account=card_account,
        agent_id=created.json()["agent"]["id"],
        agent_token=redeemed.json()["accessToken"],
        agent_holder=agent_holder,
        wallet_id=wallet_id,
        wallet_payee=wallet_payee,
        wallet_key=wallet_key,
    )


def balances(client: httpx.Client, customer_id: str) -> dict[str, tuple[int, int]]:
    listed = client.get("/customers/internal-accounts", params={"customerId": customer_id, "limit": 100})
    assert listed.status_code == 200, listed.text
    return {a["id"]: (a["balance"]["amount"], a["totalBalance"]["amount"]) for a in listed.json()["data"]}


# ---- the test ---------------------------------------------------------------------------------------------


KINDS = ("transfer", "fx", "card", "agent", "agent", "wallet")


def test_mixed_campaign_under_process_kills_and_database_crashes_loses_nothing_doubles_nothing(
    cluster: PrivateCluster, processes: ProcessManager, master_key: str, tmp_path: Path
) -> None:
    t0 = time.monotonic()
    database = f"campaign_{secrets.token_hex(4)}"
    cluster.create_database(database)
    env = money_env(
        cluster.url(database),
        master_key,
        tmp_path,
        PLATPAY_JOB_LEASE_SECONDS="2",  # a killed worker's jobs are taken over 2 s later
        PLATPAY_DB_POOL_SIZE="8",
        PLATPAY_JOB_CONCURRENCY="4",  # below the pool (config.py); a loaded machine runs no more at once
        PLATPAY_WEBHOOK_CONCURRENCY="4",
        PLATPAY_WEBHOOK_RETRY_BASE_SECONDS="0.1",
    )
    tally, books, chaos_failures = Tally(), Books(), list[str]()
    deployment = Deployment(processes, env, cluster, [free_port(), free_port()], tally)
    deployment.start_server(0)  # migrates the empty database and bootstraps a platform
    printed = re.search(BANNER, deployment.servers[0].stdout())  # type: ignore[union-attr]
    assert printed, processes.describe_all()
    sandbox = (printed[1], printed[2])
    print(f"\nfirst server up in {time.monotonic() - t0:.1f} s")
    second = threading.Thread(target=deployment.start_server, args=(1,))
    second.start()
    deployment.start_worker()
    second.join(timeout=120)
    assert deployment.servers[1] is not None, processes.describe_all()
    print(f"processes up at {time.monotonic() - t0:.1f} s")
    receiver = WebhookReceiver().start()
    try:
        with api_client(deployment.urls[0], sandbox) as client:
            public_key = client.get("/config").json()["webhookPublicKey"]
            assert client.patch("/config", json={"webhookEndpoint": receiver.url}).status_code == 200
            world = set_up(client, deployment.urls, sandbox)

        print(f"\nset up in {time.monotonic() - t0:.1f} s")
        started, stop = time.monotonic(), threading.Event()
        clients = [
            threading.Thread(target=client_loop, args=(kind, world, tally, books, stop, n))
            for n, kind in enumerate(KINDS)
        ]
        chaos = threading.Thread(target=run_chaos, args=(deployment, started, chaos_failures))
        chaos.start()
        for thread in clients:
            thread.start()
        chaos.join(timeout=300)
        # RUN_SECONDS at least, and the clients meet the last fault (the chaos waits for restarts)
        last = deployment.faults[-1].started if deployment.faults else started
        time.sleep(max(0.0, started + RUN_SECONDS - time.monotonic(), last + 2.0 - time.monotonic()))
        stop.set()
        for thread in clients:
            thread.join(timeout=REQUEST_SECONDS + 30)
        run_seconds = time.monotonic() - started
        deployment.settle()
        assert not chaos.is_alive() and not any(t.is_alive() for t in clients)
        assert not chaos_failures, chaos_failures

        outages = []
        for fault in deployment.faults:
            # the first success of a request sent after the fault (the other API process may answer it)
            first = min((a for s, a in tally.successes if s >= fault.started), default=float("inf"))
            held = f" ({fault.in_flight} requests in flight)" if fault.what.startswith("api-") else ""
            outages.append(
                f"{fault.what} at {fault.started - started:.1f} s{held}: healed in "
                f"{fault.healed - fault.started:.2f} s, first success after {first - fault.started:.2f} s"
            )
        non_2xx = {s: n for s, n in tally.statuses.items() if s >= 300}
        print(
            f"\ncampaign of {run_seconds:.1f} s: operations {dict(tally.done)}; refused (business) "
            f"{dict(books.refused)}; answers {dict(sorted(tally.statuses.items()))}; non-2xx {non_2xx}; "
            f"retries {tally.statuses[503] + len(tally.transport_errors) + tally.in_use} (transport errors "
            f"{len(tally.transport_errors)}); 409 in use {tally.in_use}; replayed {tally.replayed}"
            f"\nfaults: " + "; ".join(outages)
        )
        assert not tally.problems, tally.problems  # no 500, no unexpected answer
        assert [f.what for f in deployment.faults] == [what for _, what in FAULTS]
        assert all(tally.done[kind] > 0 for kind in set(KINDS)), tally.done
        assert books.executed and books.cleared and books.transfers and books.actions
        assert tally.statuses[503] > 0 and tally.transport_errors  # the faults were met
        # A connection failed only on a server that had been killed (none died of its own accord).
        killed = {int(f.what[-1]): f.started for f in deployment.faults if f.what.startswith("api-")}
        assert all(n in killed and at >= killed[n] for at, n in tally.transport_errors), (
            tally.transport_errors
        )
        running = [deployment.worker, *deployment.servers]
        assert all(p is not None and p.alive() for p in running), processes.describe_all()

        probe = PgProbe(cluster.dsn(database))
        try:
            check_the_books(probe, deployment, world, books, tally, receiver, public_key)
        finally:
            probe.close()
        verify_ledger(processes, env)
        print(f"total {time.monotonic() - t0:.1f} s")
    finally:
        receiver.stop()


def check_the_books(
    probe: PgProbe,
    deployment: Deployment,
    world: World,
    books: Books,
    tally: Tally,
    receiver: WebhookReceiver,
    public_key: str,
) -> None:
    # Every acknowledged operation exists once, and nothing else does.
    actions = {
        row["id"]: row
        for row in probe.fetch(
            "SELECT id, status, amount, transaction_id FROM agent_actions WHERE agent_id = $1", world.agent_id
        )
    }
    assert set(actions) == set(books.actions)
    assert {a: actions[a]["amount"] for a in actions} == books.actions
    quote_transactions = {q["transaction"] for q in books.quotes.values()}
    acknowledged = set(books.transfers) | quote_transactions | {a["transaction_id"] for a in actions.values()}
    assert len(acknowledged) == len(books.transfers) + len(books.quotes) + len(actions)
    assert set(transaction_statuses(probe)) == acknowledged
    assert {r["id"] for r in probe.fetch("SELECT id FROM quotes")} == set(books.quotes)
    card_transactions = {
        r["id"]: r["status"] for r in probe.fetch("SELECT id, status FROM card_transactions")
    }
    assert set(card_transactions) == set(books.authorizations) | books.declined

    # Drained: every due job run, every transaction where its outcome leads, every webhook delivered.
    approved = {a for a, row in actions.items() if row["status"] == "APPROVED"}
    expected = {t: "COMPLETED" for t in books.transfers}
    for quote_id, quote in books.quotes.items():
        expected[quote["transaction"]] = "COMPLETED" if quote_id in books.executed else "PENDING"
    for action_id, row in actions.items():
        expected[row["transaction_id"]] = "COMPLETED" if action_id in approved else "FAILED"
    expected_cards = {c: "SETTLED" if c in books.cleared else "AUTHORIZED" for c in books.authorizations}

    def drained() -> bool:
        return (
            due_jobs(probe) == 0
            and transaction_statuses(probe) == expected
            and {r["id"]: r["status"] for r in probe.fetch("SELECT id, status FROM card_transactions")}
            == {**expected_cards, **{c: "DECLINED" for c in books.declined}}
            and probe.fetchval("SELECT count(*) FROM webhook_deliveries WHERE status <> 'DELIVERED'") == 0
        )

    drain_started = time.monotonic()
    wait_until(
        drained,
        timeout=180,
        message=lambda: (
            f"not drained: {due_jobs(probe)} jobs due; transactions "
            f"{Counter((expected.get(t), s) for t, s in transaction_statuses(probe).items())}; deliveries "
            f"{probe.fetch('SELECT status, count(*) FROM webhook_deliveries GROUP BY status')}"
        ),
    )
    print(f"drained in {time.monotonic() - drain_started:.1f} s")
    assert probe.fetchval("SELECT count(*) FROM jobs WHERE state = 'DEAD'") == 0

    # Each operation carries exactly its ledger entries.
    entries: dict[str, list[str]] = defaultdict(list)
    for row in probe.fetch("SELECT reference, kind FROM journal_entries ORDER BY id"):
        entries[row["reference"]].append(row["kind"])
    for transaction_id in books.transfers:
        assert entries[transaction_id] == ["TRANSFER_OUT_HOLD", "TRANSFER_OUT_SETTLE"], transaction_id
    for quote_id, quote in books.quotes.items():
        want = ["QUOTE_EXECUTE"] if quote_id in books.executed else []
        assert entries[quote["transaction"]] == want, (quote_id, entries[quote["transaction"]])
    for card_transaction in books.authorizations:
        kinds = Counter(entries[card_transaction])
        assert kinds["CARD_AUTHORIZATION_HOLD"] == 1, (card_transaction, kinds)
        assert kinds["CARD_CLEARING_CAPTURE"] == (card_transaction in books.cleared), (
            card_transaction,
            kinds,
        )

    # Every key replays its answer byte for byte (the operation is found by its key, once).
    replay_started = time.monotonic()
    clients = {
        key: httpx.Client(
            base_url=deployment.urls[0] + BASE_PATH, auth=auth, headers=headers, timeout=20.0, trust_env=False
        )
        for key, auth, headers in (
            ("platform", world.auth, {}),
            ("agent", None, {"Authorization": f"Bearer {world.agent_token}"}),
        )
    }
    try:
        for sent in random.sample(tally.sent, min(REPLAYED, len(tally.sent))):
            client = clients["agent" if sent.path.startswith("/agents/me/") else "platform"]
            again = client.request(
                sent.method, sent.path, json=sent.body, headers={**sent.headers, "Idempotency-Key": sent.key}
            )
            assert (again.status_code, again.content) == (sent.status, sent.content), (sent.path, sent.key)
            assert again.headers.get("idempotent-replayed") == "true", (sent.path, again.headers)
    finally:
        for client in clients.values():
            client.close()

    print(
        f"{min(REPLAYED, len(tally.sent))} of {len(tally.sent)} keys replayed in {time.monotonic() - replay_started:.1f} s"
    )

    # Balances: the clients' sums over acknowledged answers (uncleared authorizations held).
    spent_by_agent = sum(books.actions[a] for a in approved)
    quoted: dict[str, int] = defaultdict(int)
    for quote_id in books.executed:
        quoted[books.quotes[quote_id]["source"]] += books.quotes[quote_id]["amount"]
    held_by_cards = sum(books.authorizations.values()) - sum(books.cleared.values())
    want_accounts = {
        world.transfer_holder.account_id: (USD_FUNDS - sum(books.transfers.values()), 0),
        world.fx_holder.account_id: (USD_FUNDS - quoted[world.fx_holder.account_id], 0),
        world.agent_holder.account_id: (USD_FUNDS - spent_by_agent, 0),
        world.wallet_id: (USDB_FUNDS - quoted[world.wallet_id], 0),
        world.card_account: (USDB_FUNDS - sum(books.authorizations.values()), held_by_cards),
    }
    for account_id, (available, held) in want_accounts.items():
        assert ledger_buckets(probe, account_id) == (available, held), account_id
    with api_client(deployment.urls[1], world.auth) as client:
        shown: dict[str, tuple[int, int]] = {}
        for holder in (world.transfer_holder, world.fx_holder, world.agent_holder):
            shown |= balances(client, holder.customer_id)
        shown |= balances(client, client.get(f"/cards/{world.card_id}").json()["cardholderId"])
        for account_id, (available, held) in want_accounts.items():
            assert shown[account_id] == (available, available + held), account_id

        # The agent's usage: what it executed, never above its limits.
        agent = client.get(f"/agents/{world.agent_id}").json()
    assert agent["usage"]["dailySpend"] == spent_by_agent <= AGENT_DAILY, (agent["usage"], spent_by_agent)
    assert agent["usage"]["dailyTransactionCount"] == len(approved), agent["usage"]
    assert all(books.actions[a] <= AGENT_PER_TRANSACTION for a in approved)

    # Every webhook delivered and signed; every acknowledged resource announced.
    deliveries = {r["id"] for r in probe.fetch("SELECT id FROM webhook_deliveries")}
    with receiver._lock:
        received = list(receiver.received)
    assert {r.json["id"] for r in received} >= deliveries
    assert all(verify_header(public_key, r.headers["x-svc-signature"], r.body) for r in received)
    announced = {r["resource_id"] for r in probe.fetch("SELECT DISTINCT resource_id FROM events")}
    # (an action executed at once is announced by its transaction's webhooks, one held by its own)
    resources = acknowledged | set(books.authorizations) | books.held
    assert resources <= announced, resources - announced
    print(
        f"acknowledged: {len(books.transfers)} transfers, {len(books.executed)} of {len(books.quotes)} quotes "
        f"executed, {len(books.authorizations)} card authorizations ({len(books.cleared)} cleared, "
        f"{len(books.declined)} declined), {len(books.actions)} agent actions ({len(approved)} executed, {len(books.held)} of them on approval, agent "
        f"usage {spent_by_agent} of {AGENT_DAILY}); {len(received)} webhooks received for {len(deliveries)} "
        f"deliveries"
    )
