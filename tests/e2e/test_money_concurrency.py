"""Money under real concurrency on PostgreSQL: parallel HTTP requests against real `platpay serve`
processes, and parallel ledger entries on their own connections.

- 50 simultaneous transfer-outs from an account funded for exactly 10: exactly 10 are accepted, the other
  40 are refused with INSUFFICIENT_BALANCE, the balance never goes negative (polled during the burst), and
  `platpay ledger verify` exits 0.
- Two accounts moving money to each other in parallel never deadlock: hundreds of opposing ledger entries
  A→B and B→A (and three-account entries in every order) on many connections at once, then the same while
  the API holds, settles and releases transfers on both accounts and funds them; final balances are exact.
  There is no same-currency internal→internal endpoint; the API-level version is cross-currency: quotes
  USD→USDC and USDC→USD between two customers' internal accounts, executed from 16 threads at once.
"""

from __future__ import annotations

import asyncio
import random
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
from sqlalchemy import text

from platpay.db.database import Database
from platpay.ledger import service as ledger
from platpay.ledger.errors import InsufficientFunds
from tests.support.api_checks import api_client, assert_error
from tests.support.money import (
    BANK_REJECTS,
    SETTLES,
    TERMINAL,
    api_balance,
    due_jobs,
    fund,
    ledger_buckets,
    money_env,
    open_holder,
    sandbox_tenant,
    transaction_statuses,
    transfer_in_body,
    transfer_out_body,
    verify_ledger,
)
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ProcessManager
from tests.support.server import create_platform, credentials, start_two_server_processes, wait_until

pytestmark = pytest.mark.e2e

AMOUNT = 1_000  # $10.00 per transfer


class TestSimultaneousTransferOuts:
    def test_fifty_at_once_from_an_account_funded_for_ten_accept_exactly_ten(
        self,
        processes: ProcessManager,
        pg_database: str,
        pg_probe: PgProbe,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(pg_database, master_key, tmp_path, PLATPAY_DB_POOL_SIZE="8")
        sandbox = credentials(create_platform(processes, env), "sandbox")  # migrates the database too
        _server, base_url = start_two_server_processes(processes, env)  # two processes, no job runner
        with api_client(base_url, sandbox) as client:
            holder = open_holder(client)
            assert fund(client, holder.account_id, 10 * AMOUNT).status_code == 200
        parallel = 50
        body = transfer_out_body(holder, AMOUNT)
        keys = [f"burst-{n}-{uuid.uuid4()}" for n in range(parallel)]

        observed = Observed()
        stop_polling = threading.Event()
        poller = threading.Thread(
            target=poll_balances, args=(base_url, sandbox, pg_database, holder, observed, stop_polling)
        )
        poller.start()
        try:
            first = fire_at_once(base_url, sandbox, "/transfer-out", [(key, body) for key in keys])
            # The same 50 requests again, all at once: every one replays its own first answer.
            again = fire_at_once(base_url, sandbox, "/transfer-out", [(key, body) for key in keys])
        finally:
            stop_polling.set()
            poller.join(timeout=30)

        assert Counter(r.status_code for r in first) == {201: 10, 400: 40}, [r.text for r in first]
        accepted = [r.json() for r in first if r.status_code == 201]
        assert {t["status"] for t in accepted} == {"PENDING"}
        for refused in (r for r in first if r.status_code == 400):
            error = assert_error(refused, 400, "INSUFFICIENT_BALANCE")
            # Only debits ran, in whole transfers: a refusal saw the account emptied by the ten.
            assert error["details"]["available"] == 0 and error["details"]["required"] == AMOUNT, error
        assert [r.content for r in again] == [r.content for r in first]
        assert all(r.headers.get("idempotent-replayed") == "true" for r in again)

        assert observed.samples > 10 and not observed.problems, observed.problems
        assert set(transaction_statuses(pg_probe)) == {t["id"] for t in accepted}
        with api_client(base_url, sandbox) as client:
            assert api_balance(client, holder) == (0, 10 * AMOUNT)  # all ten held, none paid out yet
        assert ledger_buckets(pg_probe, holder.account_id) == (0, 10 * AMOUNT)
        verify_ledger(processes, env)

        # A worker settles the ten: the money leaves through the rail exactly once.
        processes.start("worker", [PLATPAY, "worker"], env=env).wait_for_output("jobs.runner_started")
        wait_until(
            lambda: set(transaction_statuses(pg_probe).values()) == {"COMPLETED"},
            timeout=60,
            message=lambda: f"transfers did not settle: {transaction_statuses(pg_probe)}",
        )
        with api_client(base_url, sandbox) as client:
            assert api_balance(client, holder) == (0, 0)
        verify_ledger(processes, env)


@dataclass
class Observed:
    samples: int = 0
    problems: list[str] = field(default_factory=list)


def poll_balances(
    base_url: str,
    auth: tuple[str, str],
    pg_database: str,
    holder,  # type: ignore[no-untyped-def]
    observed: Observed,
    stop: threading.Event,
) -> None:
    """During the burst: neither bucket is ever negative, available only falls in whole transfers, and the
    total stays what was funded (holds keep the money in the account until the rail settles)."""
    from sqlalchemy.engine import make_url

    probe = PgProbe(make_url(pg_database).set(drivername="postgresql").render_as_string(hide_password=False))
    try:
        with api_client(base_url, auth) as client:
            while not stop.is_set():
                for source, (available, total) in (
                    ("api", api_balance(client, holder)),
                    ("ledger", _as_total(ledger_buckets(probe, holder.account_id))),
                ):
                    observed.samples += 1
                    if available < 0 or total - available < 0 or total != 10 * AMOUNT or available % AMOUNT:
                        observed.problems.append(f"{source}: available {available}, total {total}")
    finally:
        probe.close()


def _as_total(buckets: tuple[int, int]) -> tuple[int, int]:
    available, held = buckets
    return available, available + held


def fire_at_once(
    base_url: str, auth: tuple[str, str], path: str, requests: list[tuple[str, dict]]
) -> list[httpx.Response]:
    """Each request on its own connection and thread; all released by one barrier (connected and
    authenticated beforehand, so they hit the server together)."""
    start = threading.Barrier(len(requests))

    def send(request: tuple[str, dict]) -> httpx.Response:
        key, body = request
        with api_client(base_url, auth) as client:
            assert client.get("/config").status_code == 200
            start.wait(timeout=60)
            return client.post(path, json=body, headers={"Idempotency-Key": key})

    with ThreadPoolExecutor(len(requests)) as pool:
        return list(pool.map(send, requests))


# ---- two accounts moving money to each other ------------------------------------------------------


@dataclass
class Swaps:
    """Opposing ledger entries between internal accounts, posted by many tasks on their own connections."""

    tenant_id: str
    accounts: list[str]
    applied: Counter[str] = field(default_factory=Counter)  # account -> net minor units moved in
    committed: int = 0
    refused: int = 0
    errors: list[str] = field(default_factory=list)


async def post_swaps(database_url: str, swaps: Swaps, *, entries: int, tasks: int, seed: int) -> None:
    """`entries` entries over `tasks` concurrent tasks, each task on its own pooled connection: two-account
    moves in both directions, and three-account entries whose legs are listed in random order."""
    rng = random.Random(seed)
    plans = []
    for _ in range(entries):
        if len(swaps.accounts) < 3 or rng.random() < 0.75:
            source, target = rng.sample(swaps.accounts[:2], 2)  # A→B or B→A
            amount = rng.randint(1, 300)
            plans.append([(source, -amount), (target, amount)])
        else:
            picked = rng.sample(swaps.accounts, 3)
            first, second = rng.randint(1, 150), rng.randint(1, 150)
            legs = [(picked[0], -(first + second)), (picked[1], first), (picked[2], second)]
            rng.shuffle(legs)
            plans.append(legs)
    queue: asyncio.Queue[list[tuple[str, int]]] = asyncio.Queue()
    for plan in plans:
        queue.put_nowait(plan)
    db = Database(database_url, pool_size=tasks)
    start = asyncio.Event()

    async def work() -> None:
        while not queue.empty():
            plan = queue.get_nowait()
            await start.wait()
            try:
                async with db.transaction() as session:
                    await ledger.post(
                        session,
                        tenant_id=swaps.tenant_id,
                        kind="E2E_SWAP",
                        reference="e2e-swap",
                        legs=[ledger.Leg(account, "USD", amount) for account, amount in plan],
                    )
            except InsufficientFunds:
                swaps.refused += 1
            except Exception as error:  # a deadlock (or anything else) is what this test exists to catch
                swaps.errors.append(repr(error))
            else:
                swaps.committed += 1
                for account, amount in plan:
                    swaps.applied[account] += amount

    try:
        workers = [asyncio.create_task(work()) for _ in range(tasks)]
        # The pool opens a connection per task before the first entry starts, so the entries overlap.
        await asyncio.gather(*(_warm(db) for _ in range(tasks)))
        start.set()
        await asyncio.gather(*workers)
    finally:
        await db.dispose()


async def _warm(db: Database) -> None:
    async with db.read() as session:
        await session.execute(text("SELECT pg_sleep(0.05)"))


class TestTwoAccountsTransferringToEachOther:
    def test_hundreds_of_opposing_ledger_entries_on_parallel_connections_never_deadlock(
        self,
        processes: ProcessManager,
        pg_database: str,
        pg_probe: PgProbe,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(pg_database, master_key, tmp_path)
        sandbox = credentials(create_platform(processes, env), "sandbox")
        _server, base_url = start_two_server_processes(processes, env)
        with api_client(base_url, sandbox) as client:
            holders = [open_holder(client, serial=n) for n in range(3)]
            funded = {h.account_id: 5_000 for h in holders}  # small: many entries are refused on the way
            for holder in holders:
                assert fund(client, holder.account_id, funded[holder.account_id]).status_code == 200
        swaps = Swaps(sandbox_tenant(pg_probe), [h.account_id for h in holders])

        asyncio.run(post_swaps(pg_database, swaps, entries=600, tasks=16, seed=7))

        assert not swaps.errors, swaps.errors[:5]
        assert swaps.committed + swaps.refused == 600 and swaps.committed > 300, swaps
        for holder in holders:
            expected = funded[holder.account_id] + swaps.applied[holder.account_id]
            assert ledger_buckets(pg_probe, holder.account_id) == (expected, 0)
        assert sum(ledger_buckets(pg_probe, h.account_id)[0] for h in holders) == sum(funded.values())
        assert pg_probe.fetchval("SELECT count(*) FROM journal_entries WHERE kind = 'E2E_SWAP'") == (
            swaps.committed
        )
        verify_ledger(processes, env)

    def test_holds_settlements_fundings_and_opposing_entries_on_both_accounts_never_deadlock(
        self,
        processes: ProcessManager,
        pg_database: str,
        pg_probe: PgProbe,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = money_env(pg_database, master_key, tmp_path, PLATPAY_DB_POOL_SIZE="8")
        sandbox = credentials(create_platform(processes, env), "sandbox")
        _server, base_url = start_two_server_processes(processes, env)
        processes.start("worker", [PLATPAY, "worker"], env=env).wait_for_output("jobs.runner_started")
        with api_client(base_url, sandbox) as client:
            a, b = (open_holder(client, suffixes=(SETTLES, BANK_REJECTS), serial=n) for n in range(2))
            for holder in (a, b):
                assert fund(client, holder.account_id, 50_000).status_code == 200
        swaps = Swaps(sandbox_tenant(pg_probe), [a.account_id, b.account_id])

        # API traffic on both accounts (holds; settlements and releases by the worker; pulls; fundings)
        # in 16 threads, while 16 tasks post A→B / B→A ledger entries on their own connections.
        rng = random.Random(11)
        kinds = ["out", "out", "out-rejected", "in", "fund"]
        requests = [(rng.choice(kinds), rng.choice((a, b)), rng.randint(1, 400)) for _ in range(240)]
        swapper = threading.Thread(
            target=lambda: asyncio.run(post_swaps(pg_database, swaps, entries=400, tasks=16, seed=3))
        )
        swapper.start()
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda r: send_money_request(base_url, sandbox, *r), requests))
        swapper.join(timeout=120)
        assert not swapper.is_alive()

        assert not swaps.errors, swaps.errors[:5]
        assert {status for _, status, _ in answers} <= {200, 201, 400}, answers
        wait_until(
            lambda: due_jobs(pg_probe) == 0 and set(transaction_statuses(pg_probe).values()) <= TERMINAL,
            timeout=90,
            message=lambda: (
                f"not drained: {due_jobs(pg_probe)} jobs, {Counter(transaction_statuses(pg_probe).values())}"
            ),
        )
        # Exact balances from what was accepted: fundings and settled pulls add, settled transfer-outs
        # leave, rejected ones come back, refused requests and refused entries changed nothing.
        statuses = transaction_statuses(pg_probe)
        expected = {a.account_id: 50_000, b.account_id: 50_000}
        for (kind, holder, amount), (body, status, transaction_id) in zip(requests, answers, strict=True):
            if status == 400:
                assert body["code"] == "INSUFFICIENT_BALANCE" and kind.startswith("out"), body
                continue
            if kind == "fund":
                expected[holder.account_id] += amount
            elif kind == "in":
                assert statuses[transaction_id] == "COMPLETED"
                expected[holder.account_id] += amount
            elif kind == "out":
                assert statuses[transaction_id] == "COMPLETED"
                expected[holder.account_id] -= amount
            else:
                assert statuses[transaction_id] == "FAILED"
        assert len(statuses) == sum(1 for _, status, _ in answers if status == 201)
        for account_id in expected:
            assert ledger_buckets(pg_probe, account_id) == (
                expected[account_id] + swaps.applied[account_id],
                0,
            )
        server_logs = "".join(p.stdout() + p.stderr() for p in processes.processes)
        assert "deadlock" not in server_logs.lower()
        verify_ledger(processes, env)


def send_money_request(
    base_url: str, auth: tuple[str, str], kind: str, holder, amount: int
) -> tuple[dict, int, str | None]:  # type: ignore[no-untyped-def]
    with api_client(base_url, auth) as client:
        key = f"{kind}-{uuid.uuid4()}"
        if kind == "fund":
            response = fund(client, holder.account_id, amount, key=key)
        elif kind == "in":
            response = client.post(
                "/transfer-in", json=transfer_in_body(holder, amount), headers={"Idempotency-Key": key}
            )
        else:
            suffix = BANK_REJECTS if kind == "out-rejected" else SETTLES
            response = client.post(
                "/transfer-out",
                json=transfer_out_body(holder, amount, suffix),
                headers={"Idempotency-Key": key},
            )
    body = response.json()
    return body, response.status_code, body.get("id") if response.status_code == 201 else None


class TestCrossCurrencyQuotesBetweenTwoInternalAccounts:
    def test_quotes_executed_in_both_directions_at_once_never_deadlock_and_credit_exactly(
        self,
        processes: ProcessManager,
        pg_database: str,
        pg_probe: PgProbe,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        """The API-level version: customer X's USD account and customer Y's USDC account pay each other
        through quotes (USD→USDC and USDC→USD, internal destinations), created and executed from 16 threads
        at once while a worker credits the destinations. Each execution locks the source, both FX accounts,
        the fee account and the clearing account; none may deadlock, and every balance ends exact."""
        env = money_env(pg_database, master_key, tmp_path, PLATPAY_DB_POOL_SIZE="8")
        sandbox = credentials(create_platform(processes, env), "sandbox")
        _server, base_url = start_two_server_processes(processes, env)
        processes.start("worker", [PLATPAY, "worker"], env=env).wait_for_output("jobs.runner_started")
        with api_client(base_url, sandbox) as client:
            x, y = (open_holder(client, serial=n) for n in range(2))
            usd = x.account_id
            usdc = client.get(
                "/customers/internal-accounts", params={"customerId": y.customer_id, "currency": "USDC"}
            ).json()["data"][0]["id"]
            funded = {usd: 10_000_000, usdc: 100_000_000_000}  # $100,000 each (USDC has 6 decimals)
            for account_id, amount in funded.items():
                assert fund(client, account_id, amount).status_code == 200

        rng = random.Random(5)
        orders = [(usd, usdc, rng.randint(5_000, 20_000)) for _ in range(60)]
        orders += [(usdc, usd, rng.randint(50_000_000, 200_000_000)) for _ in range(60)]
        rng.shuffle(orders)
        with ThreadPoolExecutor(16) as pool:
            results = list(pool.map(lambda order: quote_and_execute(base_url, sandbox, *order), orders))

        assert all(executed.status_code == 200 for _, executed in results), [
            executed.text for _, executed in results if executed.status_code != 200
        ][:3]
        quotes = [created.json() for created, _ in results]
        wait_until(
            lambda: due_jobs(pg_probe) == 0 and set(transaction_statuses(pg_probe).values()) == {"COMPLETED"},
            timeout=90,
            message=lambda: (
                f"not drained: {due_jobs(pg_probe)} jobs due, "
                f"{Counter(transaction_statuses(pg_probe).values())}"
            ),
        )
        expected = dict(funded)
        for (source, destination, _), quote in zip(orders, quotes, strict=True):
            expected[source] -= quote["totalSendingAmount"]
            expected[destination] += quote["totalReceivingAmount"]
        for account_id, amount in expected.items():
            assert ledger_buckets(pg_probe, account_id) == (amount, 0), account_id
        # each payment: the payer's OUTGOING transaction and the recipient's INCOMING record of it
        kinds = Counter(row["type"] for row in pg_probe.fetch("SELECT type FROM transactions"))
        assert kinds == {"OUTGOING": len(orders), "INCOMING": len(orders)}
        server_logs = "".join(p.stdout() + p.stderr() for p in processes.processes)
        assert "deadlock" not in server_logs.lower()
        verify_ledger(processes, env)


def quote_and_execute(
    base_url: str, auth: tuple[str, str], source: str, destination: str, amount: int
) -> tuple[httpx.Response, httpx.Response]:
    """POST /quotes (internal source and destination, sending amount locked), then execute it."""
    body = {
        "source": {"sourceType": "ACCOUNT", "accountId": source},
        "destination": {"destinationType": "ACCOUNT", "accountId": destination},
        "lockedCurrencySide": "SENDING",
        "lockedCurrencyAmount": amount,
    }
    key = str(uuid.uuid4())
    with api_client(base_url, auth) as client:
        created = client.post("/quotes", json=body, headers={"Idempotency-Key": f"quote-{key}"})
        assert created.status_code == 201, created.text
        executed = client.post(
            f"/quotes/{created.json()['id']}/execute", headers={"Idempotency-Key": f"execute-{key}"}
        )
    return created, executed
