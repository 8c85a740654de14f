"""The durable job runner: leases, exactly-once finishes, retries, dead jobs."""

from __future__ import annotations

import asyncio
import json
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

    async def test_a_crashed_workers_job_is_claimed_before_jobs_queued_since_and_no_more_than_asked(
        self, db, settings, effects
    ):
        """A lane's claim takes jobs whose lease expired first (they were due before anything queued
        since), then the oldest queued ones, `limit` in all."""
        (crashed_job,) = await _enqueue(db, "test.effect")
        crashed = JobRunner(db, settings, name="crashed")
        assert [job["id"] for job, _ in await crashed.claim(1)] == [crashed_job]
        clock.advance(timedelta(seconds=1))
        queued = await _enqueue(db, "test.effect", n=3)
        clock.advance(timedelta(seconds=settings.job_lease_seconds + 1))
        survivor = JobRunner(db, settings, name="survivor")
        claimed = [job["id"] for job, _ in await survivor.claim(2)]
        assert claimed[0] == crashed_job and len(claimed) == 2 and claimed[1] in queued
        assert len(await survivor.claim(10)) == 2  # the two left; nothing claimed twice
        assert await survivor.claim(10) == []

    async def test_concurrent_claims_take_every_job_once(self, db, settings, effects):
        """Eight runners claiming a few jobs at a time, all at once, until the lane is empty, crashed jobs
        among the queued ones: every job is leased to exactly one claim (PostgreSQL: each claim one statement,
        its reads SKIP LOCKED; SQLite: one writer)."""
        crashed_jobs = await _enqueue(db, "test.effect", n=6)
        assert len(await JobRunner(db, settings, name="crashed").claim(6)) == 6
        clock.advance(timedelta(seconds=settings.job_lease_seconds + 1))
        queued = await _enqueue(db, "test.effect", n=90)
        runners = [JobRunner(db, settings, name=f"r{n}") for n in range(8)]
        taken: list[str] = []

        async def claim_until_empty(runner: JobRunner) -> None:
            while claimed := await runner.claim(4):
                taken.extend(job["id"] for job, _ in claimed)

        await asyncio.gather(*(claim_until_empty(runner) for runner in runners))
        assert sorted(taken) == sorted(crashed_jobs + queued)  # each once, none left out
        for job_id in crashed_jobs:
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


class TestLanes:
    """Lanes have capacity of their own; a keyed lane caps each key in flight and serves keys in turn."""

    async def test_a_keyed_claim_leases_for_the_full_lease_while_others_of_the_lane_run(self, db, runner):
        clock.freeze()
        [first, second] = await _enqueue(db, "system.noop", n=2, lane="webhooks", concurrency_key="K")
        [(claimed, _)] = await runner.claim(1, lane="webhooks")
        assert claimed["id"] == first
        clock.advance(timedelta(seconds=4))  # the first is still leased (5 s)
        [(claimed, _)] = await runner.claim(1, lane="webhooks")
        assert claimed["id"] == second
        assert (await _job(db, second)).lease_until == clock.now() + runner.lease
        clock.advance(timedelta(seconds=2))  # the first's lease has run out: a crashed worker's job
        [(claimed, _)] = await runner.claim(5, lane="webhooks")
        assert claimed["id"] == first  # the second, leased 2 s ago, is not taken again

    async def test_a_keyed_claim_that_waited_for_the_lane_leases_from_when_it_got_it(
        self, db, runner, settings, backend
    ):
        """Keyed claims take turns across workers (repository.lock_lane). One that waited its turn longer
        than a lease must not hand out a lease already run out: another worker would take the job again
        while the first still runs it (a webhook sent twice at once, past the endpoint's cap)."""
        if backend != "postgresql":
            pytest.skip("SQLite has one writer: a claim never waits for another worker's turn")
        settings.job_lease_seconds = 0.5
        [job_id] = await _enqueue(db, "system.noop", lane="webhooks", concurrency_key="K")
        holding, release = asyncio.Event(), asyncio.Event()

        async def another_workers_claim() -> None:
            async with db.transaction() as session:
                await repository.lock_lane(session, lane="webhooks")
                holding.set()
                await release.wait()

        other = asyncio.create_task(another_workers_claim())
        await holding.wait()
        claiming = asyncio.create_task(runner.claim(1, lane="webhooks"))
        await asyncio.sleep(1.0)  # two leases' worth of waiting for the lane
        assert not claiming.done()
        release.set()
        await other
        [(claimed, _)] = await claiming
        got_it = clock.real_now()
        assert claimed["id"] == job_id
        assert (await _job(db, job_id)).lease_until > got_it  # a live lease, not one that ran out waiting
        second = JobRunner(db, settings, name="second", listen=False)
        assert await second.claim(1, lane="webhooks") == []  # nobody takes it while it is leased

    async def test_a_keyed_claims_reads_stay_ranges_of_the_key_index_however_long_the_backlog(
        self, db, backend
    ):
        """A keyed claim's reads (the due keys, then each key's oldest due jobs) cost a few index pages
        whatever a key's backlog, even on statistics taken while the lane was empty (a fresh database under
        load). Before, PostgreSQL answered the first due key with every due job of the lane, and a key's
        oldest jobs (ORDER BY run_at, id) by sorting all of its backlog: ~25,000 buffers per read with
        45,000 deliveries waiting (bench/README.md)."""
        if backend != "postgresql":
            pytest.skip("the plans are PostgreSQL's")
        async with db.transaction() as session:
            await session.execute(text("ANALYZE jobs"))  # the planner's view: no webhook job queued
            now = clock.real_now()
            await session.execute(
                text(
                    "INSERT INTO jobs (id, kind, lane, concurrency_key, payload, state, run_at, attempts, "
                    "max_attempts, created_at, updated_at) SELECT 'Task:backlog-' || n, 'system.noop', 'webhooks', "
                    "'K', '{}', 'QUEUED', CAST(:now AS timestamptz) - interval '10 millisecond' * (20000 - n), 0, 5, :now, :now "
                    "FROM generate_series(1, 20000) AS n"
                ),
                {"now": now},
            )
        reads = {
            "due keys": repository._DUE_KEYS.bindparams(lane="webhooks", now=now, most=256),
            "a key's oldest": repository._heads_of_key(lane="webhooks", key="K", now=now, room=64),
        }
        async with db.transaction() as session:
            await repository.lock_lane(session, lane="webhooks")  # as a claim reads: holding the lane
            for name, read in reads.items():
                sql = read.compile(dialect=session.bind.dialect, compile_kwargs={"literal_binds": True})
                [plan] = (
                    await session.execute(text(f"EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {sql}"))
                ).scalar()
                top = plan["Plan"]
                pages = top["Shared Hit Blocks"] + top["Shared Read Blocks"]
                assert pages < 50, (
                    f"{name}: {pages} pages for a backlog of 20,000 jobs:\n{json.dumps(plan, indent=1)}"
                )
        async with db.read() as session:
            assert (await session.execute(reads["due keys"])).scalars().all() == ["K"]

    async def test_at_most_the_cap_of_one_key_in_flight_and_every_key_served_first(
        self, db, runner, settings
    ):
        cap = settings.webhook_endpoint_max_in_flight
        crowd = await _enqueue(db, "system.noop", n=cap * 3, lane="webhooks", concurrency_key="crowd")
        lone = await _enqueue(db, "system.noop", n=1, lane="webhooks", concurrency_key="lone")
        claimed = [job["id"] for job, _ in await runner.claim(100, lane="webhooks")]
        assert set(claimed) == set(crowd[:cap]) | set(lone)
        assert [job for job, _ in await runner.claim(100, lane="webhooks")] == []  # the crowd is at its cap

    async def test_chains_count_against_the_cap_not_their_jobs(self, db, runner, settings):
        """A keyed lane's chain: up to `chain` jobs of one key under one token, run one after the other;
        the cap counts a key's chains (its jobs running at once), so a key never has more than the cap."""
        cap = settings.webhook_endpoint_max_in_flight
        crowd = await _enqueue(db, "system.noop", n=cap * 3, lane="webhooks", concurrency_key="crowd")
        lone = await _enqueue(db, "system.noop", n=1, lane="webhooks", concurrency_key="lone")
        claimed = await runner.claim(100, lane="webhooks", chain=2)
        by_token: dict[str, list[str]] = {}
        for job, token in claimed:
            by_token.setdefault(token, []).append(job["id"])
        crowd_chains = [ids for ids in by_token.values() if set(ids) <= set(crowd)]
        assert len(crowd_chains) == cap and all(len(ids) == 2 for ids in crowd_chains)
        assert [ids for ids in by_token.values() if ids == lone] == [lone]
        for job_id in {job_id for ids in crowd_chains for job_id in ids}:
            assert (await _job(db, job_id)).state == "RUNNING"
        other = JobRunner(db, settings, name="other", listen=False)
        assert await other.claim(100, lane="webhooks", chain=2) == []  # the crowd is at its cap
        chains: dict[str, list] = {}
        for job, token in claimed:
            chains.setdefault(token, []).append((job, token))
        for chain in chains.values():  # one after the other, under the chain's lease
            await runner.execute_chain(chain)
        await runner.run_until_idle()  # the rest, in chains of `webhook_batch_size`
        for job_id in crowd + lone:
            assert (await _job(db, job_id)).state == "DONE"

    async def test_lanes_do_not_share_capacity(self, db, runner, settings):
        webhooks = await _enqueue(db, "system.noop", n=3, lane="webhooks")
        default = await _enqueue(db, "system.noop", n=3)
        settings.job_concurrency = 1
        started = await runner.run_once()
        assert started == 1 + 3  # one in the default lane (its whole capacity), every webhook one
        await runner.run_until_idle()
        for job_id in webhooks + default:
            assert (await _job(db, job_id)).state == "DONE"


class TestRunnerOfSomeLanes:
    """`JobRunner(lanes=...)` (`platpay worker --lanes`): a runner claims the jobs of its lanes only, and the
    runners of the other lanes do the rest."""

    async def test_it_runs_only_its_lanes_jobs_and_the_others_wait_for_their_runner(self, db, settings):
        webhooks = await _enqueue(db, "system.noop", n=3, lane="webhooks", concurrency_key="K")
        messages = await _enqueue(db, "system.noop", n=2, lane="messages")
        default = await _enqueue(db, "system.noop", n=2)
        delivering = JobRunner(db, settings, name="webhooks-only", listen=False, lanes=["webhooks"])
        assert [lane.name for lane in delivering.lanes()] == ["webhooks"]
        assert await delivering.run_until_idle() >= 1
        for job_id in webhooks:
            assert (await _job(db, job_id)).state == "DONE"
        for job_id in messages + default:
            assert (await _job(db, job_id)).state == "QUEUED"
        rest = JobRunner(db, settings, name="the-rest", listen=False, lanes=["default", "messages"])
        await rest.run_until_idle()
        for job_id in messages + default:
            assert (await _job(db, job_id)).state == "DONE"

    async def test_running_for_ever_it_claims_new_jobs_of_its_lanes_only(self, db, settings):
        delivering = JobRunner(db, settings, name="webhooks-only", lanes=["webhooks"])
        task = asyncio.create_task(delivering.run_forever())
        try:
            [webhook] = await _enqueue(db, "system.noop", lane="webhooks", concurrency_key="K")
            [settlement] = await _enqueue(db, "system.noop")
            for _ in range(200):
                if (await _job(db, webhook)).state == "DONE":
                    break
                await asyncio.sleep(0.02)
            assert (await _job(db, webhook)).state == "DONE"
            await asyncio.sleep(settings.job_poll_seconds * 4)  # several polls of every lane it claims
            assert (await _job(db, settlement)).state == "QUEUED"
        finally:
            delivering.stop()
            await task

    @pytest.mark.parametrize(
        ("names", "message"),
        [
            (["webhooks", "webhook"], "unknown lane 'webhook'; the lanes are: default, messages, webhooks"),
            (["Default", "x"], "unknown lanes 'Default', 'x'; the lanes are: default, messages, webhooks"),
            ([" "], "no lane named; the lanes are: default, messages, webhooks"),
        ],
    )
    async def test_a_lane_that_does_not_exist_is_refused_naming_those_that_do(
        self, db, settings, names, message
    ):
        with pytest.raises(registry.UnknownLane) as refused:
            JobRunner(db, settings, listen=False, lanes=names)
        assert str(refused.value) == message
