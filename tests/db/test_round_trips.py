"""Round trips to PostgreSQL per request on the money path (issue 33): each statement a request sends costs a
network round trip and driver CPU in the API process, so their number is a budget that a change must not
grow unnoticed.

Counted by the server itself: a private cluster logs every statement it executes (`log_statement=all`),
and the lines a request adds to the log are its round trips (BEGIN and COMMIT included; the deferred writes
of db/lean.py ride in a later statement, so they add none). A statement new to a connection also costs a
Parse that is not logged: each operation runs twice first, and the pools are small, so what is counted is
the steady state.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from platpay.config import get_settings
from platpay.db import migrate
from platpay.db.database import Database
from platpay.jobs.runner import JobRunner
from tests.db.test_database_faults import _Apps
from tests.e2e.pg_cluster import PrivateCluster, new_cluster
from tests.factories import create_platform, customer, external_account, fund, internal_account
from tests.support import agents, cards
from tests.support.ledger import assert_ledger_verifies

pytestmark = pytest.mark.e2e

DATABASE = "platpay"
# The budget of each request (statements from the first to the answer). The credential is not read: the
# process keeps it from the warm-up's requests (platpay/db/watch.py), as a served process does.
BUDGET = {
    "GET /config": 0,
    # the Idempotency-Key's lookup with the accounts read (db/lean.py `ahead`); every write as one
    # statement, which is its own transaction (no BEGIN, no COMMIT: db/lean.py LeanTransaction)
    "POST /transfer-out": 2,
    # the key's claim with the agent, its usage and audit head (no lock) and the accounts (db/lean.py
    # `prefetch`); every write as one statement, the usage and the head moved only from where they were read
    "POST /agents/me/transfer-out": 2,
    # the card with its sources' accounts and balances (no lock); every write as one statement, the card
    # expected unchanged in it (db/lean.py; cards/repository.py card_at_once)
    "POST /sandbox/cards/{id}/simulate/authorization": 2,
}


@pytest.fixture(scope="module")
def logging_cluster() -> Iterator[PrivateCluster]:
    """A private cluster logging every statement, with a migrated database `platpay`."""
    cluster = new_cluster()
    try:
        cluster.start(log_statement="all", log_line_prefix="%d:")
        cluster.create_database(DATABASE)
        migrate.upgrade(cluster.url(DATABASE))
        yield cluster
    finally:
        cluster.destroy()


class _Counter:
    def __init__(self, log: Path) -> None:
        self.log = log

    async def round_trips(self, request: Any) -> tuple[httpx.Response, list[str]]:
        """The response to `request()` and the statements the server executed for it."""
        start = self.log.stat().st_size
        response = await request()
        with self.log.open(errors="replace") as text:
            text.seek(start)
            added = text.read().splitlines()
        marks = (f"{DATABASE}:LOG:  statement: ", f"{DATABASE}:LOG:  execute ")
        statements: list[str] = []
        inside = False  # the lines of a statement of several follow its first, each indented by a tab
        for line in added:
            if line.startswith(marks):
                statements.append(line.split("LOG:  ", 1)[1])
                inside = True
            elif inside and line.startswith("\t"):
                statements[-1] += "\n" + line[1:]
            else:
                inside = False
        return response, statements


@pytest.fixture
async def apps(logging_cluster: PrivateCluster, tmp_path: Path) -> AsyncIterator[tuple[_Apps, Any]]:
    url = logging_cluster.url(DATABASE)
    settings = get_settings().model_copy(
        update={"database_url": url, "var_dir": tmp_path / "var", "run_embedded_worker": False}
    )
    setup = Database(url, pool_size=2)
    try:
        auth = (await create_platform(setup, settings))["sandbox"]
    finally:
        await setup.dispose()
    # a credential is kept up to a minute here (2 s by default): the warm-up's read still answers the measured
    # request on a loaded machine (CI once took longer than 2 s between them and counted the read)
    served = _Apps(settings, Database(url, pool_size=2, watch_max_age=60.0))
    try:
        yield served, auth
        await assert_ledger_verifies(served.database)
    finally:
        await served.close()


async def _funded(api: httpx.AsyncClient, auth: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A customer with a well-funded internal account and an external account to send to."""
    person = await customer(api, auth)
    account = await internal_account(api, auth, person["id"])
    await fund(api, auth, account["id"], 10_000_000)
    return person, account, await external_account(api, auth, person["id"])


async def _measured(counter: _Counter, name: str, request: Any, status: int) -> list[str]:
    for _ in range(2):  # every statement prepared on the pools' connections
        warm = await request()
        assert warm.status_code == status, warm.text
    response, statements = await counter.round_trips(request)
    assert response.status_code == status, response.text
    assert len(statements) <= BUDGET[name], f"{name}: {len(statements)} round trips:\n" + "\n".join(
        statement[:160] for statement in statements
    )
    return statements


async def test_money_requests_stay_within_their_round_trips(
    apps: tuple[_Apps, Any], logging_cluster: PrivateCluster, tmp_path: Path
) -> None:
    served, auth = apps
    api = served.api
    counter = _Counter(logging_cluster.log)
    person, account, bank = await _funded(api, auth)

    await _measured(counter, "GET /config", lambda: api.get("/config", auth=auth), 200)

    def transfer() -> Any:
        body = {
            "source": {"accountId": account["id"]},
            "destination": {"accountId": bank["id"]},
            "amount": 100,
        }
        return api.post(
            "/transfer-out", auth=auth, json=body, headers={"Idempotency-Key": secrets.token_hex(8)}
        )

    statements = await _measured(counter, "POST /transfer-out", transfer, 201)
    assert "statement: BEGIN;" not in statements and "statement: COMMIT;" not in statements, statements
    assert "pg_try_advisory_xact_lock" in statements[0], statements  # the key's claim, with the accounts
    written = statements[1]
    for table in ("transactions", "ledger_accounts", "journal_entries", "postings", "events", "jobs"):
        assert table in written, (table, written)
    assert "INSERT INTO idempotency_keys" in written and "platpay_expect(" in written, written

    agent = await agents.connect(api, auth, person["id"], approvalThresholds=None)
    statements = await _measured(
        counter,
        "POST /agents/me/transfer-out",
        lambda: agents.transfer_out(
            api, agent["headers"], account["id"], bank["id"], 100, secrets.token_hex(8)
        ),
        201,
    )
    assert not any("FOR UPDATE" in statement for statement in statements), statements
    read = statements[0]  # the key's claim, the agent with its usage and audit head, and the accounts
    for table in ("pg_try_advisory_xact_lock", "agent_usage", "internal_accounts", "external_accounts"):
        assert table in read, (table, read)
    for table in ("UPDATE agent_usage", "UPDATE agent_audit_heads", "ledger_accounts", "platpay_expect("):
        assert table in statements[-1], (table, statements[-1])

    holder = await cards.approved_cardholder(api, auth)
    source = await cards.funded_account(api, auth, holder["id"], 1_000_000)
    runner = JobRunner(served.database, served.app.state.settings, name="round-trips", listen=False)
    card = await cards.active_card(api, auth, runner, holder["id"], [source["id"]])
    statements = await _measured(
        counter,
        "POST /sandbox/cards/{id}/simulate/authorization",
        lambda: cards.simulate(api, auth, card["id"], "authorization", cards.opening_body(500)),
        202,
    )
    assert "FOR UPDATE" not in statements[0] and "ledger_accounts" in statements[0], statements[0]
    for table in ("card_transactions", "ledger_accounts", "ledger_holds", "events", "platpay_expect("):
        assert table in statements[1], (table, statements[1])


# A transfer's steps in the worker (payments/jobs.py): each job's statements from its start to its finish,
# its claim apart. Its first attempt runs in a lean transaction (payments/transfers.py `step`).
STEP_BUDGET = {
    # the transfer's row with its internal account and the tenant's webhook endpoint (no lock); PROCESSING,
    # its event and the settle job with the job's finish, as one statement
    "process": 2,
    # the same read; the entry, both balances, COMPLETED, the two events and the job's finish, as one statement
    "settle": 2,
}


def _without_introspection(statements: list[str]) -> list[str]:
    """`statements` less asyncpg's type introspection (its query of pg_type between two set_config('jit')
    calls), which it sends once per connection for a type new to it."""
    found = next((n for n, statement in enumerate(statements) if "typeinfo_tree" in statement), None)
    if found is None:
        return statements
    assert "jit" in statements[found - 1] and "jit" in statements[found + 1], statements
    return statements[: found - 1] + statements[found + 2 :]


async def test_a_transfers_settlement_steps_stay_within_their_round_trips(
    apps: tuple[_Apps, Any], logging_cluster: PrivateCluster
) -> None:
    from platpay.payments.jobs import SETTLES_TOGETHER
    from platpay.payments.transfers import STEP_JOB

    served, auth = apps
    api = served.api
    counter = _Counter(logging_cluster.log)
    _, account, bank = await _funded(api, auth)
    settings = served.app.state.settings.model_copy(update={"sandbox_settlement_seconds": 0})
    runner = JobRunner(served.database, settings, name="round-trips", listen=False)
    await runner.run_until_idle()

    async def transfer() -> str:
        body = {
            "source": {"accountId": account["id"]},
            "destination": {"accountId": bank["id"]},
            "amount": 100,
        }
        response = await api.post(
            "/transfer-out", auth=auth, json=body, headers={"Idempotency-Key": secrets.token_hex(8)}
        )
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    async def steps(transaction_id: str) -> dict[str, list[str]]:
        """Each of the transfer's steps run by the runner, with the statements it sent (other jobs, such as
        the earlier test's transfers' steps, are run uncounted)."""
        counted: dict[str, list[str]] = {}
        while len(counted) < 2:
            claimed = await runner.claim(16)
            assert claimed, f"the transfer's steps stopped after {sorted(counted)}"
            for job, token in claimed:
                if job["kind"] != STEP_JOB or job["payload"]["transactionId"] != transaction_id:
                    await runner.execute(job, token)
                    continue

                async def execute(job: dict[str, Any] = job, token: str = token) -> httpx.Response:
                    await runner.execute(job, token)
                    return httpx.Response(200)

                _, statements = await counter.round_trips(execute)
                # (a connection new to the pool introspects a type once: not the step's, as in `batch` below)
                counted[job["payload"]["step"]] = _without_introspection(statements)
        return counted

    for _ in range(2):  # the statements prepared, the tenant and its clearing account known to the process
        await steps(await transfer())
    transaction_id = await transfer()
    for step, statements in (await steps(transaction_id)).items():
        assert len(statements) <= STEP_BUDGET[step], f"{step}: {len(statements)} round trips:\n" + "\n".join(
            statement[:160] for statement in statements
        )
        assert "statement: BEGIN;" not in statements, (step, statements)
        assert "platpay_expect(" in statements[-1] and "UPDATE jobs" in statements[-1], statements[-1]
    done = await api.get(f"/transactions/{transaction_id}", auth=auth)
    assert done.json()["status"] == "COMPLETED", done.text

    # A claim of the lane is one statement, its own transaction (jobs/repository.py `claim_at_once`).
    transaction_id = await transfer()
    claimed: list[Any] = []

    async def claim() -> httpx.Response:
        claimed.extend(await runner.claim(16))
        return httpx.Response(200)

    _, statements = await counter.round_trips(claim)
    assert [job["payload"]["transactionId"] for job, _ in claimed] == [transaction_id], claimed
    assert len(statements) == 1 and "UPDATE jobs" in statements[0], statements
    for job, token in claimed:
        await runner.execute(job, token)

    # A tenant's steps claimed together cost the round trips of one (payments/transfers.py `steps`): one read
    # of every transfer, one statement of every write and every job's finish: its process steps all at once,
    # its settle steps SETTLES_TOGETHER at a time. (Twice: the first batch prepares the read, whose array
    # parameter asyncpg also introspects once per connection.)
    async def batch(count: int) -> dict[str, list[str]]:
        await runner.run_until_idle()
        ids = [await transfer() for _ in range(count)]
        counted: dict[str, list[str]] = {}
        for step, status in (("process", "PROCESSING"), ("settle", "COMPLETED")):
            claimed = await runner.claim(16)
            assert sorted(job["payload"]["transactionId"] for job, _ in claimed) == sorted(ids), claimed
            assert {job["payload"]["step"] for job, _ in claimed} == {step}

            async def run_batch(claimed: list[Any] = claimed) -> httpx.Response:
                await runner.execute_chain(claimed)
                return httpx.Response(200)

            _, statements = await counter.round_trips(run_batch)
            # (asyncpg introspects a type the first time a connection of the pool meets it: three statements
            # of its own, once per connection, not the batch's)
            counted[step] = _without_introspection(statements)
            for transaction_id in ids:
                moved = await api.get(f"/transactions/{transaction_id}", auth=auth)
                assert moved.json()["status"] == status, moved.text
        return counted

    await batch(SETTLES_TOGETHER)
    for step, statements in (await batch(SETTLES_TOGETHER)).items():
        assert len(statements) <= STEP_BUDGET[step], f"{step}: {len(statements)} round trips:\n" + "\n".join(
            statement[:160] for statement in statements
        )
        assert "statement: BEGIN;" not in statements, statements
        assert "UPDATE jobs" in statements[-1] and "platpay_expect(" in statements[-1], statements[-1]
    assert STEP_BUDGET["process"] >= len((await batch(5))["process"])
    await runner.run_until_idle()
