"""The durable job runner: leases, exactly-once finishes, retries, dead jobs."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import text

from platpay.jobs import registry, repository
from platpay.jobs import service as jobs_service
from platpay.jobs.runner import JobContext, JobRunner, LeaseLost, RetryLater
from platpay.kit import clock

CALLS: dict[str, int] = {}


@registry.handler("test.effect")
async def _effect(ctx: JobContext) -> None:
    CALLS[ctx.job_id] = CALLS.get(ctx.job_id, 0) + 1
    async with ctx.transaction() as session:
        await session.execute(text("INSERT INTO test_effects (job_id) VALUES (:j)"), {"j": ctx.job_id})


@registry.handler("test.fail")
async def _fail(ctx: JobContext) -> None:
    CALLS[ctx.job_id] = CALLS.get(ctx.job_id, 0) + 1
    raise RuntimeError("boom")


@registry.handler("test.retry_later")
async def _retry_later(ctx: JobContext) -> None:
    CALLS[ctx.job_id] = CALLS.get(ctx.job_id, 0) + 1
    if CALLS[ctx.job_id] == 1:
        raise RetryLater(clock.now() + timedelta(seconds=60), "not yet")


@pytest.fixture
async def effects(db):
    async with db.transaction() as session:
        await session.execute(text("DROP TABLE IF EXISTS test_effects"))
        await session.execute(text("CREATE TABLE test_effects (job_id VARCHAR(64) PRIMARY KEY)"))
    CALLS.clear()
    yield
    async with db.transaction() as session:
        await session.execute(text("DROP TABLE IF EXISTS test_effects"))


async def _enqueue(db, kind, n=1, **kwargs):
    ids = []
    async with db.transaction() as session:
        for _ in range(n):
            ids.append(await jobs_service.enqueue(session, kind, {}, **kwargs))
    return ids


async def _job(db, job_id):
    async with db.read() as session:
        return await repository.get(session, job_id)


async def _effect_count(db):
    async with db.read() as session:
        return await session.scalar(text("SELECT count(*) FROM test_effects"))


class TestRunner:
    async def test_jobs_run_once_and_finish(self, db, runner, effects):
        ids = await _enqueue(db, "test.effect", n=10)
        assert await runner.run_until_idle() == 10
        assert await _effect_count(db) == 10
        for job_id in ids:
            job = await _job(db, job_id)
            assert job.state == "DONE" and job.lease_token is None
            assert CALLS[job_id] == 1

    async def test_two_runners_never_run_the_same_job(self, db, settings, effects):
        await _enqueue(db, "test.effect", n=60)
        a, b = JobRunner(db, settings, name="a"), JobRunner(db, settings, name="b")
        await asyncio.gather(a.run_until_idle(), b.run_until_idle())
        assert await _effect_count(db) == 60
        assert set(CALLS.values()) == {1}
        assert a.processed + b.processed == 60

    async def test_a_job_whose_lease_expired_is_run_again_and_the_first_attempt_cannot_finish(
        self, db, settings, effects
    ):
        (job_id,) = await _enqueue(db, "test.effect")
        crashed = JobRunner(db, settings, name="crashed")
        [(job, token)] = await crashed.claim(1)  # claimed, then the worker "dies" holding the lease
        assert (await _job(db, job_id)).state == "RUNNING"
        survivor = JobRunner(db, settings, name="survivor")
        assert await survivor.run_until_idle() == 0  # lease still valid: nobody else may take it
        clock.advance(timedelta(seconds=settings.job_lease_seconds + 1))
        assert await survivor.run_until_idle() == 1
        assert await _effect_count(db) == 1
        late = JobContext(
            job_id=job_id,
            kind=job["kind"],
            payload={},
            tenant_id=None,
            attempt=1,
            db=db,
            settings=settings,
            _token=token,
        )
        with pytest.raises(LeaseLost):
            async with late.transaction() as session:
                await session.execute(text("INSERT INTO test_effects (job_id) VALUES ('late')"))
        assert await _effect_count(db) == 1  # the late attempt's effect was rolled back
        assert (await _job(db, job_id)).attempts == 2

    async def test_failing_handler_backs_off_then_dies_after_max_attempts(self, db, runner, effects):
        (job_id,) = await _enqueue(db, "test.fail", max_attempts=3)
        for attempt in range(1, 4):
            await runner.run_until_idle()
            job = await _job(db, job_id)
            assert job.attempts == attempt and "boom" in job.last_error
            if attempt < 3:
                assert job.state == "QUEUED" and job.run_at > clock.now()
                clock.advance(timedelta(minutes=10))
        assert job.state == "DEAD"
        clock.advance(timedelta(hours=1))
        assert await runner.run_until_idle() == 0
        assert CALLS[job_id] == 3

    async def test_a_job_that_keeps_killing_its_worker_is_buried(self, db, settings, effects):
        (job_id,) = await _enqueue(db, "test.effect", max_attempts=2)
        for _ in range(2):
            await JobRunner(db, settings).claim(1)
            clock.advance(timedelta(seconds=settings.job_lease_seconds + 1))
        await JobRunner(db, settings).run_until_idle()
        assert (await _job(db, job_id)).state == "DEAD"
        assert await _effect_count(db) == 0

    async def test_retry_later_reschedules_without_counting_a_failure(self, db, runner, effects):
        (job_id,) = await _enqueue(db, "test.retry_later")
        await runner.run_until_idle()
        job = await _job(db, job_id)
        assert job.state == "QUEUED" and job.attempts == 0 and job.last_error == "not yet"
        clock.advance(timedelta(seconds=61))
        await runner.run_until_idle()
        assert (await _job(db, job_id)).state == "DONE" and CALLS[job_id] == 2

    async def test_future_jobs_wait_until_due(self, db, runner, effects):
        (_job_id,) = await _enqueue(db, "test.effect", run_at=clock.now() + timedelta(minutes=5))
        assert await runner.run_until_idle() == 0
        clock.advance(timedelta(minutes=5))
        assert await runner.run_until_idle() == 1

    async def test_jobs_are_written_only_if_the_business_transaction_commits(self, db, runner, effects):
        with pytest.raises(RuntimeError):
            async with db.transaction() as session:
                await jobs_service.enqueue(session, "test.effect", {})
                raise RuntimeError("business rule failed")
        assert await runner.run_until_idle() == 0

    async def test_dedupe_key_keeps_one_job(self, db, runner, effects):
        await _enqueue(db, "test.effect", dedupe_key="once")
        await _enqueue(db, "test.effect", dedupe_key="once")
        assert await runner.run_until_idle() == 1

    async def test_unknown_kind_fails_visibly(self, db, runner):
        (job_id,) = await _enqueue(db, "no.such.kind", max_attempts=1)
        await runner.run_until_idle()
        job = await _job(db, job_id)
        assert job.state == "DEAD" and "no handler" in job.last_error

    async def test_run_forever_picks_up_new_jobs_promptly(self, db, settings, effects):
        background = JobRunner(db, settings, name="bg")
        task = asyncio.create_task(background.run_forever())
        try:
            await _enqueue(db, "test.effect", n=3)
            for _ in range(200):
                if await _effect_count(db) == 3:
                    break
                await asyncio.sleep(0.02)
            assert await _effect_count(db) == 3
        finally:
            background.stop()
            await asyncio.wait_for(task, 5)

    async def test_queue_stats(self, db, effects):
        await _enqueue(db, "test.effect", n=2)
        async with db.read() as session:
            stats = await repository.queue_stats(session, now=clock.now() + timedelta(seconds=3))
        assert stats["by_state"]["QUEUED"] == 2 and stats["oldest_due_age_seconds"] >= 2.9
