"""Retention (issue 32, requirement 7): webhook delivery attempts, sent messages' bodies and finished jobs
are pruned by the runner's maintenance past their settings' days, in bounded batches; the ledger,
transactions, events, deliveries and audit trails stay, and the ledger still verifies.

Rows are made at the wall clock's time (ids are time-ordered on it, jobs finish on the process clock), so the
tests take an instant `mid` between the "old" rows and the "young" ones and run the pass at `mid` plus the
retention: what was made before `mid` is past it, what was made after is not.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from platpay.events import service as events_service
from platpay.jobs import registry
from platpay.jobs import service as jobs_service
from platpay.jobs.runner import JobContext, JobRunner
from platpay.kit import ids
from platpay.messages import service as messages_service
from tests.factories import customer, external_account, fund, internal_account
from tests.support.console import console_client, signed_in
from tests.support.jobs import run_jobs_until
from tests.support.ledger import assert_ledger_verifies

DAYS = 30


@registry.handler("test.retention_noop")
async def _noop(ctx: JobContext) -> None:
    async with ctx.transaction():
        pass


@registry.handler("test.retention_dies")
async def _dies(ctx: JobContext) -> None:
    raise RuntimeError("given up")


@pytest.fixture
def retention(settings):
    settings.webhook_attempt_retention_days = DAYS
    settings.message_body_retention_days = DAYS
    settings.job_retention_days = DAYS
    settings.dead_job_retention_days = DAYS
    return settings


async def _count(db, sql: str, **params) -> int:
    async with db.read() as session:
        return int(await session.scalar(text(sql), params) or 0)


async def _sandbox_tenant(db, client, auth):
    from platpay.auth import service as auth_service

    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=auth[0], client_secret=auth[1])
    assert principal is not None
    return principal.tenant


async def _transfer(client, auth, account_id: str, bank_id: str, amount: int) -> str:
    body = {"source": {"accountId": account_id}, "destination": {"accountId": bank_id}, "amount": amount}
    response = await client.post("/transfer-out", auth=auth, json=body)
    assert response.status_code == 201, response.text
    return response.json()["id"]


async def _email(db, tenant, text_: str) -> str:
    async with db.transaction() as session:
        return await messages_service.send_email(
            session, tenant=tenant, to="jane@example.com", subject="Code", text=text_, category="wallet.otp"
        )


async def _money_and_messages(client, auth, db, tenant, account, bank, runner, receiver, *, amount, text_):
    """One transfer out, settled, with every webhook delivered, and one sandbox email sent."""
    transaction_id = await _transfer(client, auth, account, bank, amount)
    message_id = await _email(db, tenant, text_)

    def completed() -> bool:
        return any(
            r.json["type"] == "OUTGOING_PAYMENT.COMPLETED" and r.json["data"]["id"] == transaction_id
            for r in receiver.received
        )

    await run_jobs_until(runner, completed)
    await runner.run_until_idle()
    return transaction_id, message_id


_KEPT_FOREVER = {
    "events": "SELECT count(*) FROM events",
    "webhook_deliveries": "SELECT count(*) FROM webhook_deliveries",
    "transactions": "SELECT count(*) FROM transactions",
    "journal_entries": "SELECT count(*) FROM journal_entries",
    "postings": "SELECT count(*) FROM postings",
    "messages": "SELECT count(*) FROM messages",
}


async def test_a_pass_prunes_what_is_past_its_retention_and_keeps_the_rest(
    db, client, auth, app, runner, receiver, retention
):
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    tenant = await _sandbox_tenant(db, client, auth)
    person = await customer(client, auth)
    account = (await internal_account(client, auth, person["id"]))["id"]
    await fund(client, auth, account, 10_000)
    bank = (await external_account(client, auth, person["id"]))["id"]
    old_tx, old_message = await _money_and_messages(
        client, auth, db, tenant, account, bank, runner, receiver, amount=1_000, text_="111111"
    )
    # A job given up (DEAD) before `mid`, and one queued for long after it: never pruned while queued.
    async with db.transaction() as session:
        dead_id = await jobs_service.enqueue(session, "test.retention_dies", {}, max_attempts=1)
        later_id = await jobs_service.enqueue(
            session,
            "test.retention_noop",
            {},
            run_at=datetime.now(UTC) + timedelta(days=365),
        )
    await runner.run_until_idle()
    assert await _count(db, "SELECT count(*) FROM jobs WHERE id = :i AND state = 'DEAD'", i=dead_id) == 1

    await asyncio.sleep(0.01)
    mid = datetime.now(UTC)
    await asyncio.sleep(0.01)
    young_tx, young_message = await _money_and_messages(
        client, auth, db, tenant, account, bank, runner, receiver, amount=2_000, text_="222222"
    )

    old_delivery = (
        await client.get("/webhooks/deliveries", auth=auth, params={"type": "OUTGOING_PAYMENT.COMPLETED"})
    ).json()["data"][-1]
    assert old_delivery["createdAt"] < mid.isoformat()
    before = {name: await _count(db, sql) for name, sql in _KEPT_FOREVER.items()}
    attempts_before = await _count(db, "SELECT count(*) FROM webhook_attempts")
    old_attempts = await _count(
        db, "SELECT count(*) FROM webhook_attempts WHERE id < :b", b=ids.first_at("WebhookAttempt", mid)
    )
    done_before = await _count(db, "SELECT count(*) FROM jobs WHERE state = 'DONE'")
    old_done = await _count(db, "SELECT count(*) FROM jobs WHERE state = 'DONE' AND finished_at < :m", m=mid)
    assert 0 < old_attempts < attempts_before and 0 < old_done < done_before
    print(
        f"\nbefore the pass: {before}, attempts {attempts_before} ({old_attempts} old), DONE jobs "
        f"{done_before} ({old_done} old)"
    )

    pruned = await JobRunner(db, retention, name="pruner").maintain(now=mid + timedelta(days=DAYS))
    print(f"pruned: {pruned}")

    assert pruned["webhook_attempts"] == old_attempts
    assert pruned["jobs_done"] == old_done and pruned["jobs_dead"] == 1
    assert pruned["message_bodies"] == 1
    # What is kept forever is all there; the young rows are untouched.
    assert {name: await _count(db, sql) for name, sql in _KEPT_FOREVER.items()} == before
    assert await _count(db, "SELECT count(*) FROM webhook_attempts") == attempts_before - old_attempts
    assert await _count(db, "SELECT count(*) FROM jobs WHERE state = 'DONE'") == done_before - old_done
    assert await _count(db, "SELECT count(*) FROM jobs WHERE id = :i", i=dead_id) == 0
    assert await _count(db, "SELECT count(*) FROM jobs WHERE id = :i AND state = 'QUEUED'", i=later_id) == 1

    # The messages: the old one's record stays without its body, and leaves the mailbox.
    async with db.read() as session:
        old = await messages_service.get(session, tenant_id=tenant.id, message_id=old_message)
        young = await messages_service.get(session, tenant_id=tenant.id, message_id=young_message)
    assert old is not None and old.status == "SENT" and old.sent_at is not None and not old.body_stored
    assert young is not None and young.body_stored
    mailbox = (await client.get("/sandbox/mailbox", auth=auth)).json()["data"]
    assert [(m["id"], m["text"]) for m in mailbox] == [(young_message, "222222")]

    # The API and the console still answer for the old delivery and the old transaction.
    detail = (await client.get(f"/webhooks/deliveries/{old_delivery['id']}", auth=auth)).json()
    assert detail["status"] == "DELIVERED" and detail["attemptCount"] >= 1 and detail["attempts"] == []
    assert detail["data"]["id"] == old_tx
    for tx in (old_tx, young_tx):
        assert (await client.get(f"/transactions/{tx}", auth=auth)).json()["status"] == "COMPLETED"
    async with db.read() as session:
        timeline = await events_service.timeline_for_resource(
            session, tenant_id=tenant.id, resource_id=old_tx
        )
    assert timeline and all(d.attempts == () and d.attempt_count for e in timeline for d in e.deliveries)
    async with console_client(app) as browser:
        await signed_in(browser, auth)
        page = await browser.get(f"/console/webhooks/deliveries/{old_delivery['id']}")
        assert page.status_code == 200 and "records were pruned" in page.text
        page = await browser.get(f"/console/transactions/{old_tx}")
        assert page.status_code == 200 and "records pruned" in page.text

    # A second pass at the same instant finds nothing more; the money still verifies.
    assert set((await JobRunner(db, retention).prune(now=mid + timedelta(days=DAYS))).values()) == {0}
    await assert_ledger_verifies(db)


async def test_a_pass_runs_a_bounded_number_of_batches_and_the_next_pass_takes_the_rest(
    db, client, auth, runner, retention
):
    retention.retention_batch_size = 4
    retention.retention_batches_per_pass = 2
    tenant = await _sandbox_tenant(db, client, auth)
    async with db.transaction() as session:
        for _ in range(19):
            await jobs_service.enqueue(session, "test.retention_noop", {})
    for serial in range(11):
        await _email(db, tenant, f"{serial:06d}")
    await runner.run_until_idle()
    done = await _count(db, "SELECT count(*) FROM jobs WHERE state = 'DONE'")  # ours and the send jobs
    assert done == 30
    later = datetime.now(UTC) + timedelta(days=DAYS, seconds=1)

    passes = []
    while True:
        pruned = await JobRunner(db, retention).prune(now=later)
        passes.append((pruned["jobs_done"], pruned["message_bodies"]))
        if pruned["jobs_done"] == 0 and pruned["message_bodies"] == 0:
            break
        assert len(passes) < 10
    print(f"\n(jobs, message bodies) pruned per pass: {passes}")
    # 8 rows a pass at most (2 batches of 4): 30 jobs in 4 passes, 11 bodies in 2.
    assert passes == [(8, 8), (8, 3), (8, 0), (6, 0), (0, 0)]
    assert await _count(db, "SELECT count(*) FROM jobs") == 0
    assert await _count(db, "SELECT count(*) FROM messages WHERE content IS NOT NULL") == 0
    assert await _count(db, "SELECT count(*) FROM messages") == 11


async def test_zero_days_keeps_rows_forever(db, client, auth, runner, receiver, retention):
    retention.webhook_attempt_retention_days = 0
    retention.job_retention_days = 0
    await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    await run_jobs_until(runner, lambda: len(receiver.received) == 1)  # the TEST event
    attempts = await _count(db, "SELECT count(*) FROM webhook_attempts")
    jobs = await _count(db, "SELECT count(*) FROM jobs")
    pruned = await JobRunner(db, retention).prune(now=datetime.now(UTC) + timedelta(days=3650))
    assert "webhook_attempts" not in pruned and "jobs_done" not in pruned
    assert attempts == 1 and await _count(db, "SELECT count(*) FROM webhook_attempts") == attempts
    assert jobs >= 1 and await _count(db, "SELECT count(*) FROM jobs") == jobs


async def test_runners_pruning_at_once_share_the_work(db, client, auth, runner, retention):
    retention.retention_batch_size = 10
    retention.retention_batches_per_pass = 100
    async with db.transaction() as session:
        for _ in range(120):
            await jobs_service.enqueue(session, "test.retention_noop", {})
    await runner.run_until_idle()
    later = datetime.now(UTC) + timedelta(days=DAYS, seconds=1)
    results = await asyncio.gather(
        *(JobRunner(db, retention, name=f"r{i}").prune(now=later) for i in range(3))
    )
    print(f"\nthree runners at once pruned {[r['jobs_done'] for r in results]} jobs")
    assert sum(r["jobs_done"] for r in results) == 120
    assert await _count(db, "SELECT count(*) FROM jobs") == 0


def test_first_at_bounds_the_ids_made_from_an_instant_on():
    at = datetime.now(UTC)
    first = ids.first_at("Thing", at)
    made = ids.new_id("Thing")
    assert first <= made < ids.first_at("Thing", at + timedelta(seconds=1))
    assert ids.first_at("Thing", at - timedelta(milliseconds=1)) < first


async def test_the_running_worker_prunes_in_a_maintenance_pass_of_its_own(db, runner, retention):
    """`run_forever` starts a maintenance pass as a task beside its claims; finished jobs past their days go."""
    retention.job_retention_days = 7
    async with db.transaction() as session:
        for _ in range(5):
            await jobs_service.enqueue(session, "test.retention_noop", {})
    await runner.run_until_idle()
    async with db.transaction() as session:  # finished eight days ago, as far as the runner can tell
        await session.execute(
            text("UPDATE jobs SET finished_at = :at"), {"at": datetime.now(UTC) - timedelta(days=8)}
        )
    worker = JobRunner(db, retention, name="worker")
    running = asyncio.create_task(worker.run_forever())
    try:
        for _ in range(200):
            if await _count(db, "SELECT count(*) FROM jobs") == 0:
                break
            await asyncio.sleep(0.05)
        assert await _count(db, "SELECT count(*) FROM jobs") == 0
    finally:
        worker.stop()
        await asyncio.wait_for(running, timeout=30)
