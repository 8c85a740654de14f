"""The database goes away and comes back: requests answer 503 SERVICE_UNAVAILABLE with Retry-After (never
500), nothing a fault touched is handed out again, an unknown COMMIT outcome is settled by the client's
retry with the same Idempotency-Key, and the job runner resumes by itself.

PostgreSQL faults are real network faults: the app under test reaches PostgreSQL through a TCP proxy
(tests/support/tcp_proxy.py) that refuses, blackholes or cuts its connections, or cuts one at its COMMIT.
SQLite's fault is real lock contention from a second connection.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import exc as sa_exc
from sqlalchemy import select, text
from sqlalchemy.engine import make_url

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.db.database import Database
from platpay.db.faults import DatabaseUnavailable, connection_lost, unavailable_reason
from platpay.jobs import service as jobs_service
from platpay.jobs.models import JobRow
from platpay.jobs.runner import JobRunner
from platpay.payments.models import TransactionRow
from tests.support.cards import (
    active_card,
    approved_cardholder,
    balance,
    funded_account,
    open_holds,
    opening_body,
    simulate,
)
from tests.support.tcp_proxy import TcpProxy


def assert_unavailable(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 503, response.text
    body = response.json()
    assert set(body) == {"status", "code", "message", "details"}
    assert body["status"] == 503 and body["code"] == "SERVICE_UNAVAILABLE"
    assert body["details"]["dependency"] == "database"
    assert response.headers["retry-after"] == "1"
    assert "Traceback" not in response.text
    return body


class _Apps:
    """An app (and a plain HTTP client at the root, for /readyz and /healthz) on a given Database."""

    def __init__(self, settings: Any, database: Database) -> None:
        self.database = database
        self.app = create_app(settings, database=database, embedded_worker=False)
        transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=False)
        self.api = httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}")
        self.root = httpx.AsyncClient(transport=transport, base_url="http://testserver")

    async def close(self) -> None:
        await self.api.aclose()
        await self.root.aclose()
        await self.database.dispose()


# ---- classification ----------------------------------------------------------------------------------


class TestWhatCountsAsAnOutage:
    @pytest.mark.parametrize(
        "error",
        [
            sqlite3.OperationalError("database is locked"),
            asyncpg.exceptions.ConnectionDoesNotExistError(
                "connection was closed in the middle of operation"
            ),
            asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command"),
            asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
            asyncpg.exceptions.TooManyConnectionsError("sorry, too many clients already"),
            asyncpg.exceptions.DeadlockDetectedError("deadlock detected"),
            asyncpg.exceptions.SerializationError("could not serialize access"),
            asyncpg.exceptions.InterfaceError("connection is closed"),
            asyncpg.exceptions.CannotConnectNowError("the database system is shutting down"),
            ConnectionRefusedError(111, "Connect call failed"),
            ConnectionResetError(104, "Connection reset by peer"),
            TimeoutError(),
            sa_exc.TimeoutError("QueuePool limit of size 5 overflow 10 reached"),
            sa_exc.OperationalError("SELECT 1", {}, sqlite3.OperationalError("database is locked")),
        ],
        ids=repr,
    )
    def test_outages(self, error: Exception) -> None:
        assert unavailable_reason(error)
        wrapped = RuntimeError("while handling")
        wrapped.__cause__ = error
        assert unavailable_reason(wrapped)  # found through the chain too

    @pytest.mark.parametrize(
        "error",
        [
            asyncpg.exceptions.UniqueViolationError("duplicate key"),
            asyncpg.exceptions.DivisionByZeroError("division by zero"),
            asyncpg.exceptions.InterfaceError("cannot perform operation: another operation is in progress"),
            sqlite3.OperationalError("no such table: customers"),
            # Configuration mistakes: a starting command fails at once on these instead of waiting.
            asyncpg.exceptions.InvalidPasswordError('password authentication failed for user "platpay"'),
            asyncpg.exceptions.InvalidAuthorizationSpecificationError('role "nobody" does not exist'),
            asyncpg.exceptions.InvalidCatalogNameError('database "nope" does not exist'),
            asyncpg.exceptions.DuplicateTableError('relation "platforms" already exists'),
            sa_exc.IntegrityError("INSERT", {}, sqlite3.IntegrityError("UNIQUE constraint failed")),
            ValueError("a bug"),
        ],
        ids=repr,
    )
    def test_not_outages(self, error: Exception) -> None:
        assert unavailable_reason(error) is None

    def test_no_writable_server_among_the_listed_hosts_says_so(self) -> None:
        """Between a primary's death and its standby's promotion, a multi-host URL finds no writable server."""
        error = asyncpg.exceptions.TargetServerAttributeNotMatched("None of the hosts match")
        assert (
            unavailable_reason(error) == "no listed database server accepts writes (a failover in progress?)"
        )

    def test_a_refusal_is_never_reclassified_by_what_it_was_raised_during(self) -> None:
        from platpay.errors import InvalidInput

        refusal = InvalidInput("bad")
        refusal.__context__ = ConnectionRefusedError()
        assert unavailable_reason(refusal) is None

    def test_which_errors_end_a_connection(self) -> None:
        assert connection_lost(asyncpg.exceptions.AdminShutdownError("terminated"))
        assert connection_lost(asyncpg.exceptions.ConnectionDoesNotExistError("closed"))
        assert not connection_lost(asyncpg.exceptions.UniqueViolationError("duplicate key"))
        assert not connection_lost(asyncpg.exceptions.TooManyConnectionsError("too many"))


# ---- PostgreSQL behind a proxy --------------------------------------------------------------------------


@pytest.fixture
async def behind_proxy(settings: Any, db: Database, proxy: TcpProxy) -> AsyncIterator[_Apps]:
    url = make_url(settings.database_url).set(host="127.0.0.1", port=proxy.port)
    apps = _Apps(settings, Database(url.render_as_string(hide_password=False), pool_size=5, timeout=1.0))
    try:
        yield apps
    finally:
        await apps.close()


async def _transfer_out(api: httpx.AsyncClient, auth: Any, payer: dict[str, str], key: str) -> httpx.Response:
    body = {
        "source": {"accountId": payer["account"]},
        "destination": {"accountId": payer["bank"]},
        "amount": 100,
    }
    return await api.post("/transfer-out", auth=auth, json=body, headers={"Idempotency-Key": key})


async def _transactions(db: Database) -> list[TransactionRow]:
    async with db.read() as session:
        return list((await session.scalars(select(TransactionRow))).all())


class TestPostgresUnreachable:
    async def test_requests_answer_503_with_retry_after_until_it_is_back_then_succeed_without_restart(
        self, behind_proxy: _Apps, proxy: TcpProxy, auth: Any, payer: dict[str, str], db: Database, capsys
    ) -> None:
        api, root = behind_proxy.api, behind_proxy.root
        assert (await api.get("/config", auth=auth)).status_code == 200
        await proxy.stop()  # PostgreSQL is down: its port refuses connections

        key = f"down-{uuid.uuid4()}"
        for _attempt in range(3):
            started = time.monotonic()
            assert_unavailable(await api.get("/config", auth=auth))
            assert_unavailable(await _transfer_out(api, auth, payer, key))
            assert time.monotonic() - started < 2.5  # refused at once, not after a long wait
        ready = await root.get("/readyz")
        assert "database" in assert_unavailable(ready)["message"]
        assert (await root.get("/healthz")).status_code == 200
        assert await _transactions(db) == []  # nothing half-done

        await proxy.start()  # back, on the same address
        assert (await api.get("/config", auth=auth)).status_code == 200
        created = await _transfer_out(api, auth, payer, key)
        assert created.status_code == 201, created.text
        assert (await root.get("/readyz")).status_code == 200
        assert [row.id for row in await _transactions(db)] == [created.json()["id"]]

        events = [
            json.loads(line)["event"] for line in capsys.readouterr().out.splitlines() if '"event"' in line
        ]
        assert Counter(e for e in events if e.startswith("database.")) == {
            "database.unavailable": 1,  # once per outage, not once per failed request
            "database.recovered": 1,
        }

    async def test_a_database_that_never_answers_is_given_up_on_within_the_timeout(
        self, behind_proxy: _Apps, proxy: TcpProxy, auth: Any
    ) -> None:
        proxy.blackhole = True  # connections are accepted and never answered
        proxy.cut_all()
        started = time.monotonic()
        assert_unavailable(await behind_proxy.api.get("/config", auth=auth))
        assert time.monotonic() - started < 1.0 + 1.5  # the database timeout is 1 s here
        assert_unavailable(await behind_proxy.root.get("/readyz"))
        proxy.blackhole = False
        assert (await behind_proxy.api.get("/config", auth=auth)).status_code == 200

    async def test_every_connection_cut_at_once_no_500_and_no_dead_connection_handed_out_twice(
        self, behind_proxy: _Apps, proxy: TcpProxy, auth: Any, payer: dict[str, str], db: Database
    ) -> None:
        api = behind_proxy.api
        statuses: Counter[int] = Counter()
        created: set[str] = set()

        async def one(n: int, key: str) -> None:
            deadline = time.monotonic() + 10
            while True:  # a correct client: same key until a definite answer
                assert time.monotonic() < deadline, f"no definite answer in 10 s: {statuses}"
                response = await (
                    _transfer_out(api, auth, payer, key) if n % 2 else api.get("/config", auth=auth)
                )
                statuses[response.status_code] += 1
                if response.status_code == 503:
                    assert_unavailable(response)
                    continue
                assert response.status_code in (200, 201), response.text
                if n % 2:
                    created.add(response.json()["id"])
                return

        keys = [f"cut-{uuid.uuid4()}" for _ in range(60)]
        await asyncio.gather(*(one(n, keys[n]) for n in range(20)))  # every pooled connection in use
        for round_start in (20, 40):
            proxy.cut_all()  # a restart: every connection dies, idle and busy alike
            await asyncio.gather(*(one(n, keys[n]) for n in range(round_start, round_start + 20)))
        assert 500 not in statuses, statuses
        assert len(created) == 30
        assert {row.id for row in await _transactions(db)} == created  # each acknowledged once


class TestCardAuthorizationsThroughCuts:
    """A card authorization is decided and applied in its request's lean transaction (its own asyncpg pool,
    no ORM session): the same promises through a restart — 202 or 503, never 500, nothing half-written, and
    served again after; every accepted authorization is applied once."""

    async def test_every_connection_cut_twice_under_authorizations(
        self, behind_proxy: _Apps, proxy: TcpProxy, client: Any, auth: Any, runner: Any, db: Database
    ) -> None:
        holder = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, holder["id"], 1_000_000)
        card = await active_card(client, auth, runner, holder["id"], [account["id"]])
        api = behind_proxy.api
        statuses: Counter[int] = Counter()
        accepted: set[str] = set()

        async def one() -> None:
            response = await simulate(api, auth, card["id"], "authorization", opening_body(100))
            statuses[response.status_code] += 1
            if response.status_code == 503:  # outcome unknown when the cut came at COMMIT
                assert_unavailable(response)
                return
            assert response.status_code == 202, response.text
            accepted.add(response.json()["issuerTransactionToken"])

        await asyncio.gather(*(one() for _ in range(20)))
        for cut_after in (0.0, 0.005, 0.02):  # between requests, then with authorizations in flight
            in_flight = asyncio.gather(*(one() for _ in range(20)))
            await asyncio.sleep(cut_after)
            proxy.cut_all()  # a restart: every connection dies, idle and busy alike
            await in_flight
        await one()  # served again once the database is back
        assert 500 not in statuses and statuses[202] >= 21, statuses
        listed = (
            await client.get(f"/cards/{card['id']}/transactions", auth=auth, params={"limit": 100})
        ).json()["data"]
        recorded = {t["issuerTransactionToken"] for t in listed}
        assert accepted <= recorded and all(t["status"] == "AUTHORIZED" for t in listed)
        # each recorded authorization holds its 100 exactly once; nothing else moved
        assert await open_holds(db, account["id"]) == 100 * len(recorded)
        assert await balance(client, auth, holder["id"]) == (1_000_000 - 100 * len(recorded), 1_000_000)


class TestCommitOutcomeUnknown:
    """The connection is lost at COMMIT: the request answers 503 and the same key's retry settles it."""

    async def test_a_commit_that_never_reached_the_database_runs_once_on_retry(
        self, behind_proxy: _Apps, proxy: TcpProxy, auth: Any, payer: dict[str, str], db: Database
    ) -> None:
        key = f"commit-lost-{uuid.uuid4()}"
        sprung = proxy.trap_commit(key, forward=False)
        assert_unavailable(await _transfer_out(behind_proxy.api, auth, payer, key))
        assert sprung.is_set()
        assert await _transactions(db) == []  # it never committed
        retried = await _transfer_out(behind_proxy.api, auth, payer, key)
        assert retried.status_code == 201 and "idempotent-replayed" not in retried.headers
        again = await _transfer_out(behind_proxy.api, auth, payer, key)
        assert again.headers["idempotent-replayed"] == "true" and again.content == retried.content
        assert [row.id for row in await _transactions(db)] == [retried.json()["id"]]

    async def test_a_commit_whose_answer_was_lost_is_replayed_on_retry(
        self, behind_proxy: _Apps, proxy: TcpProxy, auth: Any, payer: dict[str, str], db: Database
    ) -> None:
        key = f"answer-lost-{uuid.uuid4()}"
        sprung = proxy.trap_commit(key, forward=True)
        assert_unavailable(await _transfer_out(behind_proxy.api, auth, payer, key))
        assert sprung.is_set()
        [committed] = await _transactions(db)  # it did commit; the client could not know
        retried = await _transfer_out(behind_proxy.api, auth, payer, key)
        assert retried.status_code == 201 and retried.headers["idempotent-replayed"] == "true"
        assert retried.json()["id"] == committed.id
        assert [row.id for row in await _transactions(db)] == [committed.id]


class TestJobsThroughAnOutage:
    async def test_the_runner_resumes_by_itself_and_an_outage_spends_no_attempt(
        self, behind_proxy: _Apps, proxy: TcpProxy, settings: Any, db: Database
    ) -> None:
        runner = JobRunner(behind_proxy.database, settings.model_copy(update={"job_poll_seconds": 0.05}))
        async with db.transaction() as session:
            first = await jobs_service.enqueue(session, "system.noop", {})
        task = asyncio.create_task(runner.run_forever())
        try:
            await _wait_for(lambda: _job_states(db, [first]), {"DONE"})
            await proxy.stop()
            async with db.transaction() as session:
                queued = [await jobs_service.enqueue(session, "system.noop", {}) for _ in range(5)]
            await asyncio.sleep(1.0)  # the runner polls a database it cannot reach
            assert not task.done()
            await proxy.start()
            await _wait_for(lambda: _job_states(db, queued), {"DONE"}, timeout=5.0)
        finally:
            runner.stop()
            await asyncio.wait_for(task, timeout=10)
        async with db.read() as session:
            attempts = (await session.scalars(select(JobRow.attempts).where(JobRow.id.in_(queued)))).all()
        assert set(attempts) == {1}


async def _job_states(db: Database, ids: list[str]) -> set[str]:
    async with db.read() as session:
        return set((await session.scalars(select(JobRow.state).where(JobRow.id.in_(ids)))).all())


async def _wait_for(read: Any, expected: Any, *, timeout: float = 3.0) -> None:
    deadline = time.monotonic() + timeout
    while (found := await read()) != expected:
        assert time.monotonic() < deadline, found
        await asyncio.sleep(0.05)


# ---- SQLite -------------------------------------------------------------------------------------------


@pytest.fixture
async def busy_sqlite(settings: Any, db: Database, backend: str) -> AsyncIterator[_Apps]:
    if backend != "sqlite":
        pytest.skip("SQLite's lock")
    apps = _Apps(settings, Database(settings.database_url, pool_size=5, timeout=0.3))
    try:
        yield apps
    finally:
        await apps.close()


class TestSqliteBusy:
    async def test_a_write_locked_beyond_the_busy_timeout_answers_503_and_reads_go_on(
        self, busy_sqlite: _Apps, auth: Any, settings: Any
    ) -> None:
        path = make_url(settings.database_url).database
        other = sqlite3.connect(path, isolation_level=None)  # another process's writer
        try:
            other.execute("BEGIN IMMEDIATE")
            body = {"name": "ci", "permissions": ["VIEW"]}
            refused = await busy_sqlite.api.post(
                "/tokens", auth=auth, json=body, headers={"Idempotency-Key": "t1"}
            )
            assert "busy" in assert_unavailable(refused)["message"]
            assert (await busy_sqlite.api.get("/config", auth=auth)).status_code == 200  # WAL: reads go on
        finally:
            other.execute("ROLLBACK")
            other.close()
        created = await busy_sqlite.api.post(
            "/tokens", auth=auth, json=body, headers={"Idempotency-Key": "t1"}
        )
        assert created.status_code == 201, created.text

    async def test_waiting_in_the_process_own_write_queue_is_bounded_too(
        self, busy_sqlite: _Apps, auth: Any
    ) -> None:
        async with busy_sqlite.database.transaction() as session:  # holds the write slot
            await session.execute(text("SELECT 1"))
            body = {"name": "ci", "permissions": ["VIEW"]}
            response = await busy_sqlite.api.post("/tokens", auth=auth, json=body)
        assert_unavailable(response)

    async def test_database_unavailable_is_the_one_error_raised(self, busy_sqlite: _Apps) -> None:
        async with busy_sqlite.database.transaction():
            with pytest.raises(DatabaseUnavailable):
                async with busy_sqlite.database.transaction():
                    pass
