"""No wait without a bound: a connection that goes silent mid-transaction (its packets dropped, not refused:
half-open) holds no request, job or lease forever (platpay.db.connect, docs/operations.md "When the
database goes away").

The app reaches PostgreSQL through a TCP proxy (tests/support/tcp_proxy.py) that stops forwarding an open
connection, in both directions, the moment a marker passes (an Idempotency-Key, a token's client id, a job
id: each travels as a statement parameter), leaving both its sockets open: the client waits for an answer
that never comes, and the server's session stays idle inside its transaction, holding its locks, until the
server's own idle-in-transaction timeout ends it. New connections are forwarded as usual (the network
healed, or only that flow died), unless the test blackholes them too.

The policy here is small so that the tests take seconds: a statement timeout of 1 s and a client command
timeout 0.5 s longer. Each bound is asserted with a generous margin for a loaded 2-core machine, and every
measured time is printed. Without the policy (no command timeout), each silent wait below hangs until the
test's own limit: the tests fail rather than hang.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Awaitable
from pathlib import Path
from typing import Any, TypeVar

import pytest
from sqlalchemy import literal, select
from sqlalchemy.engine import make_url

from platpay.db.connect import ConnectionPolicy
from platpay.db.database import Database
from platpay.db.faults import DatabaseUnavailable
from platpay.db.lean import Lean
from platpay.db.lean import first as lean_first
from platpay.jobs import service as jobs_service
from platpay.jobs.models import JobRow
from platpay.jobs.runner import JobRunner
from platpay.payments.models import TransactionRow
from tests.db.test_database_faults import _Apps, _transfer_out, assert_unavailable
from tests.support.tcp_proxy import TcpProxy

T = TypeVar("T")

POLICY = ConnectionPolicy(
    timeout=1.0,
    statement_timeout=1.0,
    client_grace=1.0,  # the client gives up 2 s after sending a statement
    idle_in_transaction_timeout=2.5,  # the server ends a session left idle in a transaction after 2.5 s
)
COMMAND_TIMEOUT = POLICY.command_timeout() or 0.0
IDLE_TIMEOUT = POLICY.idle_in_transaction_timeout or 0.0
# A request on a silent connection answers within one command timeout and this margin, for a loaded 2-core
# machine: less than a second wait (which a retry on another connection, a ROLLBACK waiting for the
# cancelled statement or SQLAlchemy's graceful close of the dead connection each added).
MARGIN = 1.75
BOUND = COMMAND_TIMEOUT + MARGIN


async def within(limit: float, what: str, awaitable: Awaitable[T], proxy: TcpProxy) -> T:
    """`awaitable`'s result, printing how long it took; past `limit` seconds the test fails (instead of
    hanging: the proxy's connections are then cut, so that everything waiting on them unwinds)."""
    started = time.monotonic()
    task = asyncio.ensure_future(awaitable)
    await asyncio.wait({task}, timeout=limit)
    if not task.done():
        proxy.blackhole = False
        proxy.speak()
        proxy.cut_all()
        await asyncio.wait({task}, timeout=30)
        task.cancel()
        pytest.fail(f"{what}: still waiting after {limit:g} s (a wait without a bound)")
    print(f"{what}: {time.monotonic() - started:.2f} s (bound {limit:g} s)")
    return task.result()


def _behind(settings: Any, proxy: TcpProxy, **options: Any) -> Database:
    url = make_url(settings.database_url).set(host="127.0.0.1", port=proxy.port)
    return Database(url.render_as_string(hide_password=False), **options)


@pytest.fixture
async def silent_apps(settings: Any, db: Database, proxy: TcpProxy) -> AsyncIterator[_Apps]:
    apps = _Apps(settings, _behind(settings, proxy, pool_size=5, policy=POLICY))
    try:
        yield apps
    finally:
        await apps.close()


async def _transactions(db: Database) -> list[TransactionRow]:
    async with db.read() as session:
        return list((await session.scalars(select(TransactionRow))).all())


class TestRequests:
    async def test_a_transfer_out_whose_connection_goes_silent_answers_503_and_its_retry_runs_once(
        self, silent_apps: _Apps, proxy: TcpProxy, auth: Any, payer: dict[str, str], db: Database
    ) -> None:
        """The lean transaction's path (`Database.lean_transaction()`): silent right after the key's
        lock-and-lookup statement (with the accounts read it rides with) ran on the server."""
        api = silent_apps.api
        assert (await api.get("/config", auth=auth)).status_code == 200
        key = f"silent-{uuid.uuid4()}"
        silence = proxy.silence(key)
        response = await within(
            BOUND, "POST /transfer-out on a silent connection", _transfer_out(api, auth, payer, key), proxy
        )
        assert_unavailable(response)
        assert silence.count == 1
        proxy.speak()  # new connections are forwarded; the silent one stays silent
        assert await _transactions(db) == []  # nothing half-written: it never committed

        # The server's session is still idle in its transaction, holding the key's lock, until its
        # idle-in-transaction timeout ends it: a retry meanwhile is told the request is in progress (409).
        started, conflicts = time.monotonic(), 0
        while (retried := await _transfer_out(api, auth, payer, key)).status_code == 409:
            conflicts += 1
            assert time.monotonic() - started < IDLE_TIMEOUT + MARGIN
            await asyncio.sleep(0.1)
        print(
            f"retry: {conflicts} answer(s) 409 in progress, then {retried.status_code} after {time.monotonic() - started:.2f} s"
        )
        assert retried.status_code == 201, retried.text
        assert "idempotent-replayed" not in retried.headers  # it ran now, once
        again = await _transfer_out(api, auth, payer, key)
        assert again.headers["idempotent-replayed"] == "true" and again.content == retried.content
        assert [row.id for row in await _transactions(db)] == [retried.json()["id"]]
        # (the db fixture verifies the ledger: the amount was held once)

    async def test_authentication_whose_connection_goes_silent_answers_503_once_not_twice(
        self, silent_apps: _Apps, proxy: TcpProxy, auth: Any
    ) -> None:
        """A lean read (`fetch_first`, the token lookup of GET /config): answered 503 after one command
        timeout, not tried again on a second connection (which would double the wait)."""
        api = silent_apps.api
        assert (await api.get("/config", auth=auth)).status_code == 200
        silence = proxy.silence(auth[0])  # the token's client id: a parameter of the lookup
        response = await within(
            BOUND, "GET /config on a silent connection", api.get("/config", auth=auth), proxy
        )
        assert_unavailable(response)
        assert silence.count == 1  # one connection waited on, not two
        proxy.speak()
        assert (await api.get("/config", auth=auth)).status_code == 200  # a working connection next

    @pytest.mark.parametrize("path", ["lean_transaction", "read"])
    async def test_every_path_gives_up_on_a_silent_connection_within_the_bound(
        self, silent_apps: _Apps, proxy: TcpProxy, path: str
    ) -> None:
        """The lean transactions' pool (no ORM session: card authorizations) and the ORM's read sessions."""
        database = silent_apps.database
        marker = f"silent-{uuid.uuid4().hex}"
        query = Lean(select(literal(marker)))

        async def run() -> Any:
            if path == "lean_transaction":
                async with database.lean_transaction() as lean:
                    return (await lean_first(lean, query, {}) or (None,))[0]
            async with database.read() as session:
                return (await session.execute(select(literal(marker)))).scalar()

        assert await run() == marker
        silence = proxy.silence(marker)

        async def refused() -> DatabaseUnavailable:
            with pytest.raises(DatabaseUnavailable, match="did not answer in time") as raised:
                await run()
            return raised.value

        await within(BOUND, f"{path} on a silent connection", refused(), proxy)
        assert silence.count == 1
        proxy.speak()
        assert await run() == marker  # the pool hands out a working connection next

    async def test_waiting_for_a_pooled_connection_is_bounded_when_every_one_is_stuck(
        self, settings: Any, db: Database, proxy: TcpProxy, auth: Any, payer: dict[str, str]
    ) -> None:
        """No statement timeout here: the stuck requests wait as long as the test lets them. The next
        request still answers 503 within the database timeout (1 s), whichever pool it waits for."""
        database = _behind(settings, proxy, pool_size=1, policy=ConnectionPolicy(timeout=1.0))
        apps = _Apps(settings, database)
        api = apps.api
        try:
            assert (await api.get("/config", auth=auth)).status_code == 200
            # The lean transactions' pool (a keyed transfer-out's: as large as the ORM's pool, 1 connection),
            # held by a transfer-out gone silent.
            proxy.silence("stuck-")
            stuck = [asyncio.create_task(_transfer_out(api, auth, payer, f"stuck-{uuid.uuid4()}"))]
            while proxy.silent_links < 1:
                await asyncio.sleep(0.02)
            response = await within(
                POLICY.timeout + MARGIN,
                "POST /transfer-out while every lean transaction's connection is stuck",
                _transfer_out(api, auth, payer, f"free-{uuid.uuid4()}"),
                proxy,
            )
            assert_unavailable(response)
            # The lean reads' pool (2 connections): two token lookups gone silent, a third waits.
            proxy.silence(auth[0])
            lookups = [asyncio.create_task(api.get("/config", auth=auth)) for _ in range(2)]
            while proxy.silent_links < 3:
                await asyncio.sleep(0.02)
            response = await within(
                POLICY.timeout + MARGIN,
                "GET /config while every lean connection is stuck",
                api.get("/config", auth=auth),
                proxy,
            )
            assert_unavailable(response)
            proxy.speak()
            proxy.cut_all()  # the stuck ones end (connection lost)
            # The stuck transfer was at its lean transaction's first statement, a read before any BEGIN (the
            # key's claim with the accounts: db/lean.py): it found its connection dead and ran again on a new
            # one, as the token lookups did, and the transfer went through, once.
            [moved] = [answered.json() for answered in await asyncio.gather(*stuck)]
            for answered in await asyncio.gather(*lookups):  # an autocommit read found its connection
                assert answered.status_code == 200  # dead and ran again on a new one
            assert [row.id for row in await _transactions(db)] == [moved["id"]]
            assert (await api.get("/config", auth=auth)).status_code == 200
            assert (await _transfer_out(api, auth, payer, f"after-{uuid.uuid4()}")).status_code == 201
        finally:
            await apps.close()


# ---- jobs -----------------------------------------------------------------------------------------------


async def _job(db: Database, job_id: str) -> JobRow:
    async with db.read() as session:
        row = await session.get(JobRow, job_id)
        assert row is not None
        return row


async def _until_done(db: Database, job_id: str, runner: JobRunner | None = None) -> JobRow:
    """Poll (running `runner`'s claims if given) until the job is DONE."""
    while (row := await _job(db, job_id)).state != "DONE":
        if runner is not None:
            await runner.run_once()
        await asyncio.sleep(0.05)
    return row


class TestJobs:
    async def test_a_job_whose_connection_goes_silent_is_retried_without_spending_an_attempt(
        self, silent_apps: _Apps, proxy: TcpProxy, settings: Any, db: Database
    ) -> None:
        """Only the job's connection dies; its heartbeat's still work (and would renew the lease of a job
        stuck forever): the job's statement is given up on after the command timeout, and the job is put
        back as for any outage, this attempt not counted, and runs again."""
        runner = JobRunner(silent_apps.database, settings)
        async with db.transaction() as session:
            job_id = await jobs_service.enqueue(session, "system.noop", {})
        [(job, token)] = await runner.claim(1)
        silence = proxy.silence(job_id)  # the statement finishing the job carries its id
        attempt = asyncio.create_task(runner.execute(job, token))
        await within(BOUND, "the job's connection goes silent", silence.fell.wait(), proxy)
        proxy.speak()  # new connections work: the job can be put back
        # (putting the job back waits for the silent session's lock on the job's row: until the server's
        # idle-in-transaction timeout ends that session)
        await within(IDLE_TIMEOUT + MARGIN, "the attempt on a silent connection ends", attempt, proxy)
        row = await _job(db, job_id)
        print(f"  put back: state {row.state}, attempts {row.attempts}, last error {row.last_error!r}")
        assert row.state == "QUEUED" and row.lease_token is None
        assert row.attempts == 0 and "database unavailable" in (row.last_error or "")  # attempt refunded
        row = await within(BOUND, "the job runs again", _until_done(db, job_id, runner), proxy)
        assert row.attempts == 1

    async def test_a_partitioned_runners_lease_expires_and_another_runner_takes_the_job(
        self, settings: Any, db: Database, proxy: TcpProxy
    ) -> None:
        """The runner loses the database entirely mid-job (its connections silent, new ones unanswered): it
        can neither finish, nor put the job back, nor renew the lease. Its attempt ends within the bound,
        the lease expires, and a runner that can reach the database takes the job (as after a crash: the
        attempt is spent). The silent session's row lock on the job is gone by then (idle timeout)."""
        settings = settings.model_copy(update={"job_lease_seconds": 3.0})
        partitioned_db = _behind(settings, proxy, pool_size=2, policy=POLICY)
        partitioned = JobRunner(partitioned_db, settings, name="partitioned")
        healthy = JobRunner(db, settings, name="healthy")
        try:
            async with db.transaction() as session:
                job_id = await jobs_service.enqueue(session, "system.noop", {})
            [(job, token)] = await partitioned.claim(1)
            silence = proxy.silence(job_id)  # the statement finishing the job carries its id
            attempt = asyncio.create_task(partitioned.execute(job, token))
            await within(BOUND, "the job's connection goes silent", silence.fell.wait(), proxy)
            proxy.speak()
            proxy.blackhole = True  # new connections are accepted and never answered
            proxy.silence_all()
            claimed_at = time.monotonic()
            row = await within(
                settings.job_lease_seconds + IDLE_TIMEOUT + MARGIN,
                "another runner takes the job",
                _until_done(db, job_id, healthy),
                proxy,
            )
            print(f"  done by the healthy runner {time.monotonic() - claimed_at:.2f} s after the partition")
            assert row.attempts == 2  # the partitioned attempt counted, as a crashed worker's would
            # the partitioned runner's attempt ended too (nothing it could write), within its own bounds
            await within(3 * BOUND, "the partitioned attempt ends", attempt, proxy)
        finally:
            proxy.blackhole = False
            await partitioned_db.dispose()


# ---- keepalives: the peer's kernel stops answering too ---------------------------------------------------


def _can_drop_packets() -> str | None:
    """Why packets cannot be dropped in a namespace of our own here (None: they can)."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0 or shutil.which("unshare") is None:
        return "needs Linux, root and unshare (a network namespace of its own)"
    probe = subprocess.run(
        ["unshare", "-n", "sh", "-c", "ip link set lo up && tc qdisc add dev lo root blackhole"],
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )
    return None if probe.returncode == 0 else f"no tc blackhole qdisc: {probe.stderr.strip()}"


async def _forward_unix_to_tcp(path: str, host: str, port: int) -> asyncio.Server:
    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(host, port)
        await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer))

    return await asyncio.start_unix_server(handle, path)


class TestKeepalives:
    async def test_a_pooled_idle_connection_whose_peer_went_silent_is_found_dead_and_not_handed_out(
        self, backend: str, database_url: str, tmp_path: Any
    ) -> None:
        """A user-space proxy cannot show this (its kernel keeps acknowledging): the probe runs in a network
        namespace of its own whose loopback drops every packet (tests/support/netns_probe.py). Keepalives of
        1 s + 1 x 1 s: the idle pooled connection is given up by the kernel within ~2 s and discarded, the
        next read gets a new connection; a read sent while packets are dropped is given up by
        TCP_USER_TIMEOUT (2 s), not by the 32 s command timeout."""
        if backend != "postgresql":
            pytest.skip("PostgreSQL connections")
        if (why := _can_drop_packets()) is not None:
            pytest.skip(why)
        url = make_url(database_url)
        path = str(tmp_path / "pg.sock")
        server = await _forward_unix_to_tcp(path, url.host or "127.0.0.1", url.port or 5432)
        try:
            child = await asyncio.create_subprocess_exec(
                "unshare",
                "-n",
                sys.executable,
                "-m",
                "tests.support.netns_probe",
                path,
                url.database or "",
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=str(Path(__file__).resolve().parents[2]),
            )
            out, err = await asyncio.wait_for(child.communicate(), timeout=90)
        finally:
            server.close()
        assert child.returncode == 0, err.decode()[-3000:]
        found = json.loads(out.decode().strip().splitlines()[-1])
        print(f"keepalive probe: {found}")
        dead_after = found["dead_after_s"]
        assert found["idle_closed"] and found["idle_found_dead_s"] < dead_after + MARGIN + 1
        assert found["next_read"] == [1] and found["next_read_s"] < MARGIN
        assert found["in_flight_s"] < dead_after + MARGIN + 1  # far below the 32 s command timeout
        assert "answered" not in found["in_flight"]
