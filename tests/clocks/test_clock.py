"""A sandbox tenant's own clock (docs/sandbox-control.md): the control API, every delayed job following it, and the same
end state whether time really passes or the clock is advanced."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from platpay.clocks import service as clocks_service
from platpay.jobs import repository as jobs_repository
from platpay.jobs import service as jobs_service
from platpay.jobs.models import JobRow
from platpay.jobs.registry import handler
from platpay.jobs.runner import JobRunner
from platpay.kit import clock
from platpay.payments.quotes.service import EXPIRE_JOB
from platpay.tenants import service as tenants_service
from tests.factories import (
    account_destination,
    account_source,
    balances,
    create_platform,
    customer,
    fund,
    internal_account,
    mxn_account,
    quote,
)
from tests.support.jobs import run_jobs_until
from tests.support.sandbox_values import SUCCESS_USD

START = 1_000_000


def _at(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


async def _sender(client, auth) -> dict[str, Any]:
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], START)
    return {"customer": person, "usd": usd}


async def _quote_to_mxn(client, auth, sender, suffix: str = "011") -> dict[str, Any]:
    payee = await mxn_account(client, auth, sender["customer"]["id"], suffix=suffix)
    response = await quote(
        client, auth, source=account_source(sender["usd"]["id"]), destination=account_destination(payee["id"])
    )
    assert response.status_code == 201, response.text
    return response.json()


async def _advance(client, auth, seconds: float) -> dict[str, Any]:
    response = await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": seconds})
    assert response.status_code == 200, response.text
    return response.json()


def _events(receiver, transaction_id: str) -> list[str]:
    return sorted(
        r.json["type"].removeprefix("OUTGOING_PAYMENT.")
        for r in receiver.received
        if r.json["type"].startswith("OUTGOING_PAYMENT") and r.json["data"]["id"] == transaction_id
    )


class TestControl:
    async def test_read_freeze_advance_unfreeze_reset(self, client, auth):
        clock.freeze(datetime(2026, 1, 1, tzinfo=UTC))  # the process clock: "real time" in this test
        real = clock.real_now()
        initial = (await client.get("/sandbox/clock", auth=auth)).json()
        assert _at(initial["now"]) == real and initial["frozen"] is False and initial["offsetSeconds"] == 0
        frozen = (await client.post("/sandbox/clock/freeze", auth=auth)).json()
        assert frozen["frozen"] is True and _at(frozen["now"]) == real
        clock.advance(timedelta(seconds=10))  # real time passes; the frozen clock does not
        assert _at((await client.get("/sandbox/clock", auth=auth)).json()["now"]) == real
        moved = await _advance(client, auth, 90)
        assert _at(moved["now"]) == real + timedelta(seconds=90) and moved["frozen"] is True
        assert moved["offsetSeconds"] == 80 and moved["jobsRun"] == 0
        target = real + timedelta(days=1)
        to = await client.post("/sandbox/clock/advance", auth=auth, json={"to": target.isoformat()})
        assert _at(to.json()["now"]) == target
        back = await client.post("/sandbox/clock/advance", auth=auth, json={"to": real.isoformat()})
        assert back.status_code == 400 and back.json()["details"]["fields"][0]["field"] == "to"
        running = (await client.post("/sandbox/clock/unfreeze", auth=auth)).json()
        assert running["frozen"] is False and _at(running["now"]) == target
        clock.advance(timedelta(seconds=5))
        assert _at((await client.get("/sandbox/clock", auth=auth)).json()["now"]) == target + timedelta(
            seconds=5
        )
        ahead = await client.post("/sandbox/clock/reset", auth=auth)
        assert ahead.status_code == 409 and ahead.json()["code"] == "CLOCK_AHEAD_OF_REAL_TIME"
        await client.post("/sandbox/clock/freeze", auth=auth)  # a running clock ahead stays ahead
        clock.advance(timedelta(days=2))  # real time catches up with the frozen one
        reset = (await client.post("/sandbox/clock/reset", auth=auth)).json()
        assert reset["offsetSeconds"] == 0 and _at(reset["now"]) == clock.real_now()

    async def test_bad_bodies_and_production_credentials(self, client, auth, platform):
        for body in ({}, {"seconds": 1, "to": "2031-01-01T00:00:00Z"}, {"seconds": -1}, {"to": "2031-01-01"}):
            response = await client.post("/sandbox/clock/advance", auth=auth, json=body)
            assert response.status_code == 400, (body, response.text)
        production = platform["production"]
        for method, path in (
            ("GET", "/sandbox/clock"),
            ("POST", "/sandbox/clock/freeze"),
            ("POST", "/sandbox/clock/reset"),
            ("POST", "/sandbox/reset"),
        ):
            response = await client.request(method, path, auth=production)
            assert response.status_code == 403, (path, response.text)
        advance = await client.post("/sandbox/clock/advance", auth=production, json={"seconds": 1})
        assert advance.status_code == 403

    async def test_resource_timestamps_follow_the_clock(self, client, auth):
        await _advance(client, auth, 86400)
        created = await customer(client, auth)
        assert _at(created["createdAt"]) >= clock.real_now() + timedelta(seconds=86399)


@pytest.fixture
def _real_time_stands_still() -> None:
    """Real time (the process clock) moves only when a test moves it. These tests stop one second short of a
    deadline on the tenant's clock, which runs on real time: a loaded machine once let that second pass between
    creating the quote and reading it back, and a quote asserted PENDING at 299 s was already EXPIRED."""
    clock.freeze()


@pytest.mark.usefixtures("_real_time_stands_still")
class TestJobsFollowTheClock:
    async def test_quote_expires_on_advance(self, client, auth, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        sender = await _sender(client, auth)
        created = await _quote_to_mxn(client, auth, sender)
        await _advance(client, auth, 299)
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "PENDING"
        moved = await _advance(client, auth, 2)
        assert moved["jobsRun"] >= 1
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "EXPIRED"
        transaction = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert transaction["status"] == "EXPIRED"
        await runner.run_until_idle()  # webhook deliveries run on real time, in the workers
        assert _events(receiver, created["transactionId"]) == ["EXPIRED"]
        expired = next(r.json for r in receiver.received if r.json["type"] == "OUTGOING_PAYMENT.EXPIRED")
        assert _at(expired["timestamp"]) >= clock.real_now() + timedelta(seconds=300)

    async def test_bank_return_after_three_days(self, client, auth, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        sender = await _sender(client, auth)
        created = await _quote_to_mxn(client, auth, sender, suffix="005")
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=auth)).status_code == 200
        await _advance(client, auth, 3 * 86400)
        returned = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert returned["status"] == "FAILED" and returned["failureReason"] == "COUNTERPARTY_POST_TX_FAILED"
        assert await balances(client, auth, sender["customer"]["id"]) == (START, START)
        await runner.run_until_idle()
        assert _events(receiver, created["transactionId"]) == sorted([
            "PENDING", "PROCESSING", "COMPLETED", "FAILED", "REFUND_PENDING", "REFUND_COMPLETED"
        ])  # fmt: skip

    async def test_a_frozen_clock_holds_jobs_until_it_moves(self, client, auth, runner):
        sender = await _sender(client, auth)
        await client.post("/sandbox/clock/freeze", auth=auth)
        created = await _quote_to_mxn(client, auth, sender)
        clock.advance(timedelta(seconds=600))  # real time passes: nothing is due on the frozen clock
        await runner.run_until_idle()
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "PENDING"
        await _advance(client, auth, 300)
        assert (await client.get(f"/quotes/{created['id']}", auth=auth)).json()["status"] == "EXPIRED"

    async def test_another_tenant_is_untouched(self, client, auth, db, settings, runner):
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        mine, theirs = await _sender(client, auth), await _sender(client, other)
        my_quote = await _quote_to_mxn(client, auth, mine)
        their_quote = await _quote_to_mxn(client, other, theirs)
        async with db.read() as session:
            before = {
                row.id: row.run_at for row in (await session.execute(_jobs_of_kind(EXPIRE_JOB))).scalars()
            }
        await _advance(client, auth, 400)
        assert (await client.get(f"/quotes/{my_quote['id']}", auth=auth)).json()["status"] == "EXPIRED"
        assert (await client.get(f"/quotes/{their_quote['id']}", auth=other)).json()["status"] == "PENDING"
        async with db.read() as session:
            after = {row.id: row for row in (await session.execute(_jobs_of_kind(EXPIRE_JOB))).scalars()}
        theirs_jobs = [row for row in after.values() if row.state == jobs_repository.QUEUED]
        assert len(theirs_jobs) == 1 and theirs_jobs[0].run_at == before[theirs_jobs[0].id]
        await runner.run_until_idle()
        assert (await client.get(f"/quotes/{their_quote['id']}", auth=other)).json()["status"] == "PENDING"
        assert (await client.get("/sandbox/clock", auth=other)).json()["offsetSeconds"] == 0


@pytest.mark.usefixtures("_real_time_stands_still")
class TestIncomingApproval:
    async def test_an_unanswered_202_times_out_on_the_tenants_clock(self, client, auth, runner, receiver):
        await _advance(client, auth, 3600)  # the clock well ahead before the payment arrives
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
        receiver.replies(202)  # the platform answers "I will decide" and never does
        person = await customer(client, auth)
        body = {
            "senderUmaAddress": SUCCESS_USD,
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": 1_000,
        }
        arrived = await client.post(
            "/sandbox/uma/receive", auth=auth, json={**body, "customerId": person["id"]}
        )
        assert arrived.status_code == 200, arrived.text
        transaction_id = arrived.json()["id"]
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.PENDING")) == 1)
        await runner.run_until_idle()
        await _advance(client, auth, 4)  # the approval window (5 s) is still open on the tenant's clock
        pending = (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()
        assert pending["status"] == "PENDING"
        await _advance(client, auth, 2)
        final = (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()
        assert final["status"] == "FAILED" and final["failureReason"] == "PAYMENT_APPROVAL_TIMED_OUT"
        await run_jobs_until(runner, lambda: len(receiver.of_type("INCOMING_PAYMENT.FAILED")) == 1)


def _jobs_of_kind(kind: str) -> Any:
    return select(JobRow).where(JobRow.kind == kind)


async def _scenario_005(client, auth, runner, step) -> dict[str, Any]:
    """A 005 payout (completes, then is returned and refunded) and a quote left to expire, with time
    moved by `step(seconds)`; what it came to."""
    sender = await _sender(client, auth)
    paid = await _quote_to_mxn(client, auth, sender, suffix="005")
    assert (await client.post(f"/quotes/{paid['id']}/execute", auth=auth)).status_code == 200
    left = await _quote_to_mxn(client, auth, sender)
    for seconds in (0, 1, 30, 1, 300):
        await step(seconds)
    transactions = [
        (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        for created in (paid, left)
    ]
    return {
        "statuses": [(t["status"], t.get("failureReason")) for t in transactions],
        "quotes": [
            (await client.get(f"/quotes/{q['id']}", auth=auth)).json()["status"] for q in (paid, left)
        ],
        "balances": await balances(client, auth, sender["customer"]["id"]),
    }


class TestSameAsRealWaiting:
    async def test_real_time_and_advance_end_the_same(self, client, auth, db, settings, runner):
        async def really_wait(seconds: float) -> None:
            clock.advance(timedelta(seconds=seconds))
            await runner.run_until_idle()

        waited = await _scenario_005(client, auth, runner, really_wait)
        other = (await create_platform(db, settings, name="Advanced"))["sandbox"]

        async def advance(seconds: float) -> None:
            await _advance(client, other, seconds)

        advanced = await _scenario_005(client, other, runner, advance)
        assert waited == advanced
        assert waited["statuses"] == [("FAILED", "COUNTERPARTY_POST_TX_FAILED"), ("EXPIRED", "QUOTE_EXPIRED")]
        assert waited["balances"] == (START, START)


async def test_no_job_twice_or_lost_while_clocks_move(db, settings, platform):
    """Jobs of a tenant due over its next hour, two workers running, the clock moved under them in steps:
    every job runs exactly once (PostgreSQL: SKIP LOCKED claims; SQLite: one writer)."""
    async with db.read() as session:
        tenant = await tenants_service.load_of_platform(
            session, platform_id=platform["platform_id"], environment="sandbox"
        )
    start = clock.real_now()
    async with db.transaction() as session:
        for index in range(60):
            await jobs_service.enqueue(
                session,
                COUNT_JOB,
                {"n": index},
                tenant_id=tenant.id,
                run_at=start + timedelta(seconds=60 * index),
            )
    fast = settings.model_copy(update={"job_poll_seconds": 0.01})
    runners = [JobRunner(db, fast, name=f"w{n}") for n in range(2)]
    tasks = [asyncio.create_task(r.run_forever()) for r in runners]
    try:
        for _ in range(6):
            await clocks_service.advance(db, fast, tenant_id=tenant.id, seconds=600)
            await clocks_service.freeze(db, tenant_id=tenant.id)
            await clocks_service.unfreeze(db, tenant_id=tenant.id)
        await clocks_service.advance(db, fast, tenant_id=tenant.id, seconds=60)
    finally:
        for r in runners:
            r.stop()
        await asyncio.gather(*tasks)
    assert sorted(RUNS) == list(range(60)), sorted(RUNS)
    RUNS.clear()


async def test_a_job_claimed_in_its_lane_carries_its_tenants_clock(db, settings, platform):
    """A lane's claim reads the clocks of the claimed jobs' tenants with them (PostgreSQL: in the claim's one
    statement, jobs/repository.py `claim_at_once`): a job of a tenant whose clock is frozen gets that clock,
    one of a tenant on real time none."""
    async with db.read() as session:
        tenant = await tenants_service.load_of_platform(
            session, platform_id=platform["platform_id"], environment="sandbox"
        )
    other = await create_platform(db, settings, name="Real time")
    async with db.read() as session:
        on_real_time = await tenants_service.load_of_platform(
            session, platform_id=other["platform_id"], environment="sandbox"
        )
    await clocks_service.freeze(db, tenant_id=tenant.id)
    async with db.transaction() as session:
        frozen_job = await jobs_service.enqueue(session, COUNT_JOB, {"n": 0}, tenant_id=tenant.id)
        real_job = await jobs_service.enqueue(session, COUNT_JOB, {"n": 1}, tenant_id=on_real_time.id)
        plain_job = await jobs_service.enqueue(session, COUNT_JOB, {"n": 2})
    async with db.read() as session:
        frozen_at = (await clocks_service.state_of(session, tenant_id=tenant.id)).frozen_at
    claimed = {job["id"]: job for job, _ in await JobRunner(db, settings, name="claims").claim(10)}
    assert set(claimed) == {frozen_job, real_job, plain_job}
    assert claimed[frozen_job]["clock"].frozen_at == frozen_at and claimed[frozen_job]["clock"].frozen
    assert claimed[real_job]["clock"] is None and claimed[plain_job]["clock"] is None


COUNT_JOB = "test.clock_count"
RUNS: list[int] = []


@handler(COUNT_JOB)
async def _count(ctx) -> None:
    async with ctx.transaction():
        pass
    RUNS.append(ctx.payload["n"])  # once its transaction committed
