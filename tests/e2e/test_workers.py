"""Real `platpay worker` processes on PostgreSQL: a worker killed mid-job loses its lease and another one
finishes the job exactly once; two workers sharing a queue never run the same job twice."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from platpay.db import migrate
from platpay.db.database import Database
from platpay.jobs import service as jobs_service
from tests.e2e.slow_jobs import CREATE_TABLES, KIND
from tests.support.pg import PgProbe
from tests.support.processes import PLATPAY, ManagedProcess, ProcessManager, process_env
from tests.support.server import wait_until

pytestmark = pytest.mark.e2e


@pytest.fixture
def jobs_database(pg_database: str, pg_probe: PgProbe) -> str:
    """A migrated database plus the test-owned tables the `e2e.effect` handler writes to."""
    migrate.upgrade(pg_database)
    for statement in CREATE_TABLES:
        pg_probe.execute(statement)
    return pg_database


def worker_env(database_url: str, master_key: str, tmp_path: Path, **settings: str) -> dict[str, str]:
    return process_env(
        PLATPAY_DATABASE_URL=database_url,
        PLATPAY_MASTER_KEY=master_key,
        PLATPAY_VAR_DIR=str(tmp_path / "var"),
        PLATPAY_JOB_PLUGINS="tests.e2e.slow_jobs",  # importable: the repository root is on PYTHONPATH
        PLATPAY_JOB_POLL_SECONDS="0.05",
        **settings,
    )


def start_worker(processes: ProcessManager, name: str, env: dict[str, str]) -> ManagedProcess:
    worker = processes.start(name, [PLATPAY, "worker"], env=env)
    worker.wait_for_output("jobs.runner_started")
    return worker


def enqueue(database_url: str, count: int, payload: dict[str, Any]) -> list[str]:
    """`count` jobs committed in one transaction, the way a business transaction writes them."""

    async def write() -> list[str]:
        db = Database(database_url, null_pool=True)
        try:
            async with db.transaction() as session:
                return [await jobs_service.enqueue(session, KIND, payload) for _ in range(count)]
        finally:
            await db.dispose()

    return asyncio.run(write())


def max_running_at_once(pg_probe: PgProbe, pid: int) -> int:
    """The most handler runs of worker `pid` that overlapped (first log row to effect row, which lies
    inside the time the job held one of the worker's slots)."""
    rows = pg_probe.fetch(
        "SELECT a.started_at, e.done_at FROM e2e_job_attempts a JOIN e2e_job_effects e USING (job_id) "
        "WHERE a.pid = $1",
        pid,
    )
    edges = sorted([(row["started_at"], 1) for row in rows] + [(row["done_at"], -1) for row in rows])
    running = peak = 0
    for _, change in edges:
        running += change
        peak = max(peak, running)
    return peak


class TestWorkerProcesses:
    def test_a_job_whose_worker_is_killed_mid_run_is_finished_once_by_another_worker(
        self,
        processes: ProcessManager,
        jobs_database: str,
        pg_probe: PgProbe,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        env = worker_env(jobs_database, master_key, tmp_path, PLATPAY_JOB_LEASE_SECONDS="2")
        [job_id] = enqueue(jobs_database, 1, {"sleep": 3})

        def job() -> Any:
            return pg_probe.fetch("SELECT state, attempts FROM jobs WHERE id = $1", job_id)[0]

        def attempt_pids() -> list[int]:
            rows = pg_probe.fetch("SELECT pid FROM e2e_job_attempts WHERE job_id = $1 ORDER BY id", job_id)
            return [row["pid"] for row in rows]

        def effect_pids() -> list[int]:
            rows = pg_probe.fetch("SELECT pid FROM e2e_job_effects WHERE job_id = $1", job_id)
            return [row["pid"] for row in rows]

        first = start_worker(processes, "worker-1", env)
        wait_until(
            lambda: job()["state"] == "RUNNING" and attempt_pids() == [first.pid],
            timeout=20,
            message=lambda: f"worker 1 never started the job: {dict(job())}\n{first.describe()}",
        )
        first.kill()
        assert first.popen.returncode == -9
        assert job()["state"] == "RUNNING"  # its lease is held by a dead process until it expires
        assert effect_pids() == []

        second = start_worker(processes, "worker-2", env)
        wait_until(
            lambda: job()["state"] == "DONE",
            timeout=30,
            message=lambda: f"job not DONE: {dict(job())}\n{processes.describe_all()}",
        )
        assert effect_pids() == [second.pid]
        assert attempt_pids() == [first.pid, second.pid]
        assert job()["attempts"] == 2
        assert second.stop(), second.describe()

    def test_two_workers_sharing_a_queue_run_every_job_exactly_once(
        self,
        processes: ProcessManager,
        jobs_database: str,
        pg_probe: PgProbe,
        master_key: str,
        tmp_path: Path,
    ) -> None:
        # Small claims and slots so both workers keep coming back to the queue while it drains.
        concurrency = 8
        env = worker_env(
            jobs_database,
            master_key,
            tmp_path,
            PLATPAY_JOB_BATCH_SIZE="4",
            PLATPAY_JOB_CONCURRENCY=str(concurrency),
        )
        workers = [processes.start(f"worker-{n}", [PLATPAY, "worker"], env=env) for n in (1, 2)]
        for worker in workers:
            worker.wait_for_output("jobs.runner_started")
        job_ids = enqueue(jobs_database, 200, {"sleep": 0.02})

        def done() -> int:
            return pg_probe.fetchval("SELECT count(*) FROM jobs WHERE kind = $1 AND state = 'DONE'", KIND)

        wait_until(
            lambda: done() == len(job_ids),
            timeout=60,
            message=lambda: f"{done()} of {len(job_ids)} jobs DONE\n{processes.describe_all()}",
        )
        invocations = Counter(row["job_id"] for row in pg_probe.fetch("SELECT job_id FROM e2e_job_attempts"))
        effects = Counter(row["job_id"] for row in pg_probe.fetch("SELECT job_id FROM e2e_job_effects"))
        assert set(invocations) == set(job_ids)
        assert set(effects) == set(job_ids)
        assert [job for job, count in invocations.items() if count != 1] == []
        assert [job for job, count in effects.items() if count != 1] == []
        attempts = pg_probe.fetch("SELECT DISTINCT attempts FROM jobs WHERE kind = $1", KIND)
        assert [row["attempts"] for row in attempts] == [1]

        by_worker = Counter(row["pid"] for row in pg_probe.fetch("SELECT pid FROM e2e_job_effects"))
        assert set(by_worker) == {worker.pid for worker in workers}, by_worker  # both took a share
        for worker in workers:
            assert max_running_at_once(pg_probe, worker.pid) <= concurrency
        for worker in workers:
            assert worker.stop(), worker.describe()
            assert worker.popen.returncode == 0
