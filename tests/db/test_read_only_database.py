"""A database that reads but refuses writes: read-only (PostgreSQL's `default_transaction_read_only`, a hot
standby not yet promoted, SQLite on a file it may not write) or out of disk. Writes answer 503 naming the
database and the reason, reads go on answering, nothing is half-written (the ledger verifies, the
Idempotency-Key stores nothing), `/readyz` says "degraded", the job runner waits without spending an
attempt, and once the database takes writes again the same running process writes again, at the first
attempt (no connection that was read-only serves a write).

Every fault is real: PostgreSQL made read-only for new sessions by `ALTER DATABASE` (this test's own
database only: the server is shared), a SQLite file made unwritable for this process (chmod 0444, or, run
as root, whom permissions do not stop, `chattr +i`), a SQLite file on a small tmpfs filled to the last
byte (run as root where mounting is allowed; skipped otherwise).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import tempfile
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from platpay.config import get_settings
from platpay.db import migrate
from platpay.db.database import Database
from platpay.db.faults import DISK_FULL, READ_ONLY, DatabaseUnavailable, OutageLog, unavailable_reason
from platpay.jobs import service as jobs_service
from platpay.jobs.models import JobRow
from platpay.jobs.runner import JobRunner
from platpay.kit.idempotency import IdempotencyKeyRow
from platpay.payments.models import TransactionRow
from tests.db.test_database_faults import _Apps, _transfer_out, assert_unavailable
from tests.e2e.pg_cluster import PrivateCluster, new_cluster
from tests.factories import FULL_PERSON, create_platform, customer, external_account, fund, internal_account
from tests.support.ledger import assert_ledger_verifies
from tests.support.pg import PgProbe

# ---- what counts as a refused write ---------------------------------------------------------------------


class TestRefusedWrites:
    @pytest.mark.parametrize(
        ("error", "reason"),
        [
            # default_transaction_read_only, and a hot standby (a failover to a server not yet promoted)
            (asyncpg.exceptions.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"), READ_ONLY),
            (asyncpg.exceptions.ReadOnlySQLTransactionError("cannot execute UPDATE in a read-only transaction"), READ_ONLY),
            (asyncpg.exceptions.DiskFullError('could not extend file "base/16384/16385": No space left on device'), DISK_FULL),
            (sqlite3.OperationalError("attempt to write a readonly database"), READ_ONLY),
            (sqlite3.OperationalError("database or disk is full"), DISK_FULL),
        ],
        ids=repr,
    )  # fmt: skip
    def test_reasons(self, error: Exception, reason: str) -> None:
        assert unavailable_reason(error) == reason
        wrapped = RuntimeError("while handling")
        wrapped.__cause__ = error
        assert unavailable_reason(wrapped) == reason

    def test_a_read_does_not_end_an_outage_that_refuses_writes_only(self) -> None:
        outage = OutageLog()
        outage.failed(RuntimeError(), READ_ONLY)
        outage.succeeded(write=False)
        assert outage.writes_refused == READ_ONLY  # reads kept working throughout: still refusing writes
        outage.succeeded(write=True)
        assert outage.down_since is None and outage.writes_refused is None
        outage.failed(RuntimeError(), "the connection to the database was lost")
        outage.succeeded(write=False)  # an outage of reads too ends at the first success
        assert outage.down_since is None


# ---- helpers --------------------------------------------------------------------------------------------


def assert_refused(response: httpx.Response, reason: str) -> None:
    body = assert_unavailable(response)
    assert body["details"]["reason"] == reason, body
    assert reason in body["message"], body


async def _rows(db: Database, model: Any, *where: Any) -> int:
    async with db.read() as session:
        return int(await session.scalar(select(func.count()).select_from(model).where(*where)) or 0)


async def _refused_then_served(
    apps: _Apps, auth: Any, payer: dict[str, str], db: Database, reason: str, writable: Any
) -> None:
    """Against a database refusing writes for `reason`, until `writable()` is awaited: the whole story."""
    api, root = apps.api, apps.root
    key = f"refused-{uuid.uuid4()}"
    before = await _rows(db, TransactionRow)
    # Reads open connections (pooled, and SQLite's inline reader) while writes are refused: several at once.
    reads = await asyncio.gather(
        *(
            api.get(path, auth=auth)
            for path in ["/config", f"/internal-accounts/{payer['account']}/entries"] * 4
        )
    )
    assert {r.status_code for r in reads} == {200}, [r.text for r in reads]
    for _ in range(3):
        assert_refused(await _transfer_out(api, auth, payer, key), reason)
        keyed = {
            "Idempotency-Key": f"customer-{uuid.uuid4()}"
        }  # a key: PostgreSQL's disk test fills its table
        assert_refused(await api.post("/customers", auth=auth, json=FULL_PERSON, headers=keyed), reason)
        assert (await api.get("/config", auth=auth)).status_code == 200  # reads go on
    reads = await asyncio.gather(
        *(api.get(f"/internal-accounts/{payer['account']}/entries", auth=auth) for _ in range(8))
    )
    assert {r.status_code for r in reads} == {200}
    entries = await api.get(f"/internal-accounts/{payer['account']}/entries", auth=auth)
    assert entries.status_code == 200, entries.text
    ready = await root.get("/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["status"] == "degraded" and ready.json()["details"]["reason"] == reason
    # nothing half-written: no transaction, no stored answer under the key, the ledger verifies
    assert await _rows(db, TransactionRow) == before
    assert await _rows(db, IdempotencyKeyRow, IdempotencyKeyRow.key == key) == 0
    await assert_ledger_verifies(db)

    await writable()
    created = await _transfer_out(api, auth, payer, key)  # the client's retry, same key: at the first attempt
    assert created.status_code == 201, created.text
    assert "idempotent-replayed" not in created.headers
    again = await _transfer_out(api, auth, payer, key)
    assert again.headers["idempotent-replayed"] == "true" and again.content == created.content
    assert await _rows(db, TransactionRow) == before + 1  # ran once
    after = await api.get(f"/internal-accounts/{payer['account']}/entries", auth=auth)
    assert len(after.json()["data"]) > len(entries.json()["data"])  # its hold
    # Every pooled connection serves writes again (those opened for reads while the database was read-only
    # included): a few writes in a row, each at its first attempt.
    for serial in range(8):
        person = {**FULL_PERSON, "platformCustomerId": f"after-{serial}-{uuid.uuid4()}"}
        created = await api.post("/customers", auth=auth, json=person)
        assert created.status_code == 201, created.text
    assert (await root.get("/readyz")).json()["status"] == "ready"
    await assert_ledger_verifies(db)


def _outage_events(out: str) -> Counter[str]:
    events = (json.loads(line)["event"] for line in out.splitlines() if '"event"' in line)
    return Counter(e for e in events if e.startswith("database.") or e.startswith("jobs.claim"))


# ---- PostgreSQL -----------------------------------------------------------------------------------------


@pytest.fixture
async def pg_read_only(backend: str, database_url: str) -> AsyncIterator[Any]:
    """Turns `default_transaction_read_only` on for new sessions of this test's database (ALTER DATABASE:
    only this test's database, never the shared server's other ones); yields the coroutine that turns it
    off again. Always off after the test."""
    if backend != "postgresql":
        pytest.skip("PostgreSQL's default_transaction_read_only")
    url = make_url(database_url)
    admin_dsn = url.set(drivername="postgresql", database="postgres").render_as_string(hide_password=False)
    name = url.database
    admin = await asyncpg.connect(admin_dsn)

    async def writable() -> None:
        await admin.execute(f'ALTER DATABASE "{name}" RESET default_transaction_read_only')

    try:
        await admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
        yield writable
    finally:
        await writable()
        await admin.close()


class TestPostgresReadOnly:
    async def test_writes_answer_503_reads_go_on_and_writes_resume_without_restart(
        self, settings: Any, db: Database, auth: Any, payer: dict[str, str], pg_read_only: Any, capsys: Any
    ) -> None:
        # A process whose connections open while the database is read-only (a restart into it, a failover).
        apps = _Apps(settings, Database(settings.database_url, pool_size=5, timeout=2.0))
        try:
            await _refused_then_served(apps, auth, payer, db, READ_ONLY, pg_read_only)
        finally:
            await apps.close()
        assert _outage_events(capsys.readouterr().out) == {"database.unavailable": 1, "database.recovered": 1}

    async def test_the_job_runner_waits_without_spending_an_attempt(
        self, settings: Any, db: Database, pg_read_only: Any, capsys: Any
    ) -> None:
        async with db.transaction() as session:  # this connection opened before: it still writes
            queued = [await jobs_service.enqueue(session, "system.noop", {}) for _ in range(3)]
        database = Database(settings.database_url, pool_size=5, timeout=2.0)
        runner = JobRunner(database, settings.model_copy(update={"job_poll_seconds": 0.05}), name="ro")
        task = asyncio.create_task(runner.run_forever())
        try:
            await asyncio.sleep(1.5)  # the runner polls a database that refuses its claims
            assert not task.done()
            assert await _job_states(db, queued) == {"QUEUED"}
            await pg_read_only()
            await _wait_for_states(db, queued, {"DONE"})
        finally:
            runner.stop()
            await asyncio.wait_for(task, timeout=10)
            await database.dispose()
        async with db.read() as session:
            attempts = (await session.scalars(select(JobRow.attempts).where(JobRow.id.in_(queued)))).all()
        assert set(attempts) == {1}
        events = _outage_events(capsys.readouterr().out)
        assert events["jobs.claim_failed"] == 0, events  # an outage, not an error per poll
        assert events["database.unavailable"] == 1, events


async def _job_states(db: Database, ids: list[str]) -> set[str]:
    async with db.read() as session:
        return set((await session.scalars(select(JobRow.state).where(JobRow.id.in_(ids)))).all())


async def _connected(db: Database, timeout: float = 30.0) -> None:
    """Set-up only: wait until a freshly started private cluster takes connections within the Database's
    short bound (2 s, which the faults below need); a loaded CI machine once took longer for the first one."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        try:
            async with db.read() as session:
                await session.execute(select(1))
            return
        except DatabaseUnavailable:
            if asyncio.get_running_loop().time() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _wait_for_states(db: Database, ids: list[str], expected: set[str], timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while (found := await _job_states(db, ids)) != expected:
        assert asyncio.get_running_loop().time() < deadline, found
        await asyncio.sleep(0.05)


# ---- SQLite ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _unwritable(path: Path) -> Iterator[None]:
    """`path` may not be written by this process while inside: chmod 0444, or, for root (whom permissions
    do not stop), the immutable attribute. SQLite then opens it read-only."""
    if os.geteuid() != 0:
        mode = path.stat().st_mode
        path.chmod(0o444)
        undo = lambda: path.chmod(mode)  # noqa: E731
    else:
        done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"cannot make a file read-only for root here: chattr: {done.stderr.strip()}")
        undo = lambda: subprocess.run(["chattr", "-i", str(path)], check=True)  # noqa: E731
    assert not os.access(path, os.W_OK)
    try:
        yield
    finally:
        undo()


class TestSqliteReadOnlyFile:
    async def test_writes_answer_503_reads_go_on_and_writes_resume_without_restart(
        self, settings: Any, db: Database, backend: str, auth: Any, payer: dict[str, str], capsys: Any
    ) -> None:
        if backend != "sqlite":
            pytest.skip("SQLite's file")
        path = Path(make_url(settings.database_url).database or "")
        with contextlib.ExitStack() as stack:
            stack.enter_context(_unwritable(path))
            # A process that opens its connections on the read-only file (a restart, a read-only volume).
            apps = _Apps(settings, Database(settings.database_url, pool_size=5, timeout=2.0))
            try:
                await _refused_then_served(apps, auth, payer, db, READ_ONLY, _as_coroutine(stack.close))
            finally:
                await apps.close()
        assert _outage_events(capsys.readouterr().out) == {"database.unavailable": 1, "database.recovered": 1}


def _as_coroutine(call: Any) -> Any:
    async def run() -> None:
        call()

    return run


@pytest.fixture
def small_disk() -> Iterator[Path]:
    """A 4 MiB tmpfs of its own (root, where mounting is allowed)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mount_point = Path(tempfile.mkdtemp(prefix="platpay-full-"))
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        mount_point.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)
        shutil.rmtree(mount_point, ignore_errors=True)


def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    with filler.open("wb", buffering=0) as out, contextlib.suppress(OSError):
        while True:
            out.write(b"\0" * 4096)
    return filler


class TestSqliteDiskFull:
    async def test_writes_answer_503_reads_go_on_and_writes_resume_once_space_is_freed(
        self,
        settings: Any,
        db: Database,
        backend: str,
        auth: Any,
        payer: dict[str, str],
        small_disk: Path,
        capsys: Any,
    ) -> None:
        if backend != "sqlite":
            pytest.skip("SQLite's file")
        # The test's database, moved onto the small disk (SQLite's backup: a consistent copy).
        target = small_disk / "platpay.db"
        source = sqlite3.connect(make_url(settings.database_url).database or "")
        copy = sqlite3.connect(target)
        source.backup(copy)
        copy.close()
        source.close()
        url = f"sqlite+aiosqlite:///{target}"
        moved = settings.model_copy(update={"database_url": url})
        on_disk = Database(url, pool_size=5)
        apps = _Apps(moved, Database(url, pool_size=5, timeout=2.0))
        try:
            # warm: the connections and the WAL exist before the disk fills
            assert (await apps.api.get("/config", auth=auth)).status_code == 200
            filler = _fill(small_disk)

            async def free_space() -> None:
                filler.unlink()

            await _refused_then_served(apps, auth, payer, on_disk, DISK_FULL, free_space)
        finally:
            await apps.close()
            await on_disk.dispose()
        assert _outage_events(capsys.readouterr().out) == {"database.unavailable": 1, "database.recovered": 1}


# ---- a failover to a hot standby not yet promoted ---------------------------------------------------------


@pytest.fixture(scope="module")
def standby_pair() -> Iterator[tuple[PrivateCluster, PrivateCluster]]:
    """A private primary with a migrated database `platpay`, and its hot standby, both running."""
    primary = new_cluster()
    standby = None
    try:
        primary.start()
        primary.create_database("platpay")
        migrate.upgrade(primary.url("platpay"))
        standby = PrivateCluster.standby_of(primary)
        standby.start()
        yield primary, standby
    finally:
        if standby is not None:
            standby.destroy()
        primary.destroy()


async def _replayed(primary: str, standby: str, timeout: float = 30.0) -> None:
    """Until the standby has replayed everything the primary wrote so far."""
    source = await asyncpg.connect(primary)
    replica = await asyncpg.connect(standby)
    try:
        written = await source.fetchval("SELECT pg_current_wal_lsn()")
        deadline = asyncio.get_running_loop().time() + timeout
        while await replica.fetchval("SELECT pg_last_wal_replay_lsn() < $1::pg_lsn", written):
            assert asyncio.get_running_loop().time() < deadline, "the standby did not catch up"
            await asyncio.sleep(0.05)
    finally:
        await source.close()
        await replica.close()


@pytest.mark.e2e
class TestHotStandby:
    async def test_writes_answer_503_until_it_is_promoted_then_succeed_without_restart(
        self, standby_pair: tuple[PrivateCluster, PrivateCluster], tmp_path: Path, capsys: Any
    ) -> None:
        primary, standby = standby_pair
        settings = get_settings().model_copy(
            update={
                "database_url": primary.url("platpay"),
                "var_dir": tmp_path / "var",
                "run_embedded_worker": False,
            }
        )
        on_primary = Database(primary.url("platpay"), pool_size=2)
        try:
            auth = (await create_platform(on_primary, settings))["sandbox"]
        finally:
            await on_primary.dispose()
        await _replayed(primary.dsn("platpay"), standby.dsn("platpay"))
        primary.stop()  # the primary is lost; the standby is not promoted yet

        on_standby = settings.model_copy(update={"database_url": standby.url("platpay")})
        apps = _Apps(on_standby, Database(standby.url("platpay"), pool_size=5, timeout=2.0))
        api = apps.api
        try:
            reads = await asyncio.gather(*(api.get("/config", auth=auth) for _ in range(6)))
            assert {r.status_code for r in reads} == {200}
            assert (await api.get("/customers", auth=auth)).status_code == 200
            for _ in range(2):
                refused = await api.post(
                    "/customers", auth=auth, json=FULL_PERSON, headers={"Idempotency-Key": "k1"}
                )
                assert_refused(refused, READ_ONLY)
            ready = await apps.root.get("/readyz")
            assert ready.status_code == 200 and ready.json()["status"] == "degraded", ready.text

            standby.promote()
            created = await api.post(
                "/customers", auth=auth, json=FULL_PERSON, headers={"Idempotency-Key": "k1"}
            )
            assert created.status_code == 201, created.text  # the client's retry, at its first attempt
            for serial in range(6):  # every pooled connection writes (those opened before the promotion too)
                person = {**FULL_PERSON, "platformCustomerId": f"after-{serial}"}
                assert (await api.post("/customers", auth=auth, json=person)).status_code == 201
            assert (await apps.root.get("/readyz")).json()["status"] == "ready"
            listed = (await api.get("/customers", auth=auth, params={"limit": 100})).json()["data"]
            assert len(listed) == 7  # the refused request left nothing; its retry ran once
            await assert_ledger_verifies(apps.database)
        finally:
            await apps.close()
        assert _outage_events(capsys.readouterr().out) == {"database.unavailable": 1, "database.recovered": 1}


# ---- PostgreSQL out of disk ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster_with_small_disk() -> Iterator[tuple[PrivateCluster, Path]]:
    """A private cluster with a migrated database `platpay` whose idempotency keys live on a tablespace of
    their own, on a 256 KiB tmpfs (root, where mounting is allowed). Filling the tmpfs fills that disk."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    try:
        cluster = PrivateCluster()
    except FileNotFoundError as missing:
        pytest.skip(str(missing))
    mount_point = cluster.root / "small"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k,uid=postgres,mode=0700", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
        cluster.start()
        cluster.create_database("platpay")
        migrate.upgrade(cluster.url("platpay"))
        probe = PgProbe(cluster.dsn("platpay"))
        try:
            probe.execute(f"CREATE TABLESPACE small LOCATION '{mount_point}'")
            probe.execute(
                "ALTER TABLE idempotency_keys SET TABLESPACE small"
            )  # empty: its next row extends it
        finally:
            probe.close()
        yield cluster, mount_point
    finally:
        cluster.destroy()
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.mark.e2e
class TestPostgresDiskFull:
    async def test_a_write_that_needs_space_answers_503_disk_full_and_runs_once_when_there_is_room(
        self, cluster_with_small_disk: tuple[PrivateCluster, Path], tmp_path: Path, capsys: Any
    ) -> None:
        cluster, small = cluster_with_small_disk
        settings = get_settings().model_copy(
            update={
                "database_url": cluster.url("platpay"),
                "var_dir": tmp_path / "var",
                "run_embedded_worker": False,
            }
        )
        apps = _Apps(settings, Database(cluster.url("platpay"), pool_size=5, timeout=2.0))
        try:
            await _connected(apps.database)
            auth = (await create_platform(apps.database, settings))["sandbox"]
            person = await customer(apps.api, auth)
            account = await internal_account(apps.api, auth, person["id"])
            await fund(apps.api, auth, account["id"], 1_000_000)
            bank = await external_account(apps.api, auth, person["id"])
            payer = {"account": account["id"], "bank": bank["id"]}
            filler = _fill(small)
            await _refused_then_served(
                apps, auth, payer, apps.database, DISK_FULL, _as_coroutine(filler.unlink)
            )
        finally:
            await apps.close()
        out = capsys.readouterr().out
        assert "No space left on device" in out  # the database's own words, in the one outage line
        assert _outage_events(out) == {"database.unavailable": 1, "database.recovered": 1}
