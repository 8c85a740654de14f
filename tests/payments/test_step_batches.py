"""A tenant's steps claimed together run in batches (payments/jobs.py `transfer_steps`): its `process`
steps in one transaction, their jobs finished in it; first lean, and in one ORM transaction when a step needs
the careful attempt (a tenant this process has not read yet). A lease lost to another worker rolls the batch
back, and each step then runs on its own. Its `settle` steps a few at a time (`SETTLES_TOGETHER`), their
entries posted together (each account moved once, each BALANCE_UPDATED with the balance its own entry left);
one that does not settle, or a race, leaves them to run one by one. Every test ends with the ledger verified
(the `db` fixture's check, and here explicitly)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select, update

from platpay.events.models import EventRow
from platpay.jobs.models import JobRow
from platpay.kit import clock
from platpay.ledger import service as ledger
from platpay.payments.jobs import SETTLES_TOGETHER
from platpay.payments.transfers import STEP_JOB
from tests.factories import balances, customer, external_account, fund, internal_account


async def _setup(client, auth):
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    bank = await external_account(client, auth, person["id"])
    return person["id"], account["id"], bank["id"]


async def _transfers(client, auth, account: str, bank: str, count: int) -> list[str]:
    ids = []
    for _ in range(count):
        body = {"source": {"accountId": account}, "destination": {"accountId": bank}, "amount": 100}
        response = await client.post("/transfer-out", auth=auth, json=body)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


async def _step_jobs(db, step: str, ids: list[str]) -> list[JobRow]:
    async with db.read() as session:
        rows = (await session.scalars(select(JobRow).where(JobRow.kind == STEP_JOB))).all()
    return [row for row in rows if row.payload["step"] == step and row.payload["transactionId"] in ids]


async def _status(client, auth, transaction_id: str) -> str:
    return (await client.get(f"/transactions/{transaction_id}", auth=auth)).json()["status"]


async def _ledger_ok(db) -> None:
    async with db.read() as session:
        report = await ledger.verify(session)
    assert report.ok, report.lines()


async def _settle_all(client, auth, db, runner, ids: list[str], *, settle_transactions: int) -> None:
    await runner.run_until_idle()
    processed = await _step_jobs(db, "process", ids)
    assert len(processed) == len(ids) and {job.state for job in processed} == {"DONE"}
    # one transaction finished them all: one instant (each on its own would have its own)
    assert len({job.finished_at for job in processed}) == 1
    assert {await _status(client, auth, tx) for tx in ids} == {"PROCESSING"}
    clock.advance(timedelta(seconds=2))
    await runner.run_until_idle()
    settled = await _step_jobs(db, "settle", ids)
    assert len(settled) == len(ids) and {job.state for job in settled} == {"DONE"}
    assert len({job.finished_at for job in settled}) == settle_transactions
    assert {await _status(client, auth, tx) for tx in ids} == {"COMPLETED"}


def _groups(count: int) -> int:
    """The transactions `count` settle steps claimed together commit in: groups of SETTLES_TOGETHER, and a
    group of one on its own."""
    return -(-count // SETTLES_TOGETHER)


async def test_a_tenants_due_process_steps_commit_together(client, auth, db, runner):
    """The lean batch: the tenant is known to this process (an earlier transfer of it ran its steps)."""
    person, account, bank = await _setup(client, auth)
    await _settle_all(
        client, auth, db, runner, await _transfers(client, auth, account, bank, 1), settle_transactions=1
    )
    await _settle_all(
        client,
        auth,
        db,
        runner,
        await _transfers(client, auth, account, bank, 5),
        settle_transactions=_groups(5),
    )
    assert await balances(client, auth, person) == (9_400, 9_400)
    await _ledger_ok(db)


async def test_a_tenant_not_read_yet_takes_the_batch_to_one_careful_transaction(client, auth, db, runner):
    """Its clearing account is not known to this process either: the settle batches race, and the steps
    run one by one (the first one's careful attempt reads it)."""
    person, account, bank = await _setup(client, auth)
    await _settle_all(
        client, auth, db, runner, await _transfers(client, auth, account, bank, 4), settle_transactions=4
    )
    assert await balances(client, auth, person) == (9_600, 9_600)
    await _ledger_ok(db)


async def _balance_events(db, account: str) -> list[dict]:
    async with db.read() as session:
        rows = (
            await session.scalars(
                select(EventRow)
                .where(EventRow.type == "INTERNAL_ACCOUNT.BALANCE_UPDATED", EventRow.resource_id == account)
                .order_by(EventRow.id)
            )
        ).all()
    return [row.data for row in rows]


async def test_settlements_of_one_account_posted_together_announce_the_balance_each_left(
    client, auth, db, runner, receiver
):
    """Transfers from one account settle in one transaction (its balance row and the clearing row each
    changed once), with a webhook endpoint (each event's delivery rides along: the batch's writes still fit
    one statement): each BALANCE_UPDATED carries the total balance its own entry left, as one by one."""
    person, account, bank = await _setup(client, auth)
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text
    await _settle_all(
        client, auth, db, runner, await _transfers(client, auth, account, bank, 1), settle_transactions=1
    )
    amounts = [100, 200, 300][:SETTLES_TOGETHER]
    ids = []
    for amount in amounts:
        body = {"source": {"accountId": account}, "destination": {"accountId": bank}, "amount": amount}
        response = await client.post("/transfer-out", auth=auth, json=body)
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    before = len(await _balance_events(db, account))
    await _settle_all(client, auth, db, runner, ids, settle_transactions=1)
    settled = (await _balance_events(db, account))[before:]
    # the process steps announce nothing; each settlement one BALANCE_UPDATED, in entry order
    totals = [event["totalBalance"]["amount"] for event in settled]
    available = {event["balance"]["amount"] for event in settled}
    start = 10_000 - 100
    expected, left = [], start
    for amount in amounts:
        left -= amount
        expected.append(left)
    assert totals == expected, settled
    assert available == {start - sum(amounts)}
    assert await balances(client, auth, person) == (start - sum(amounts),) * 2
    await _ledger_ok(db)


async def test_a_transfer_that_fails_among_settling_ones_sends_the_batch_one_by_one(client, auth, db, runner):
    """One transfer's bank rejects it (the sandbox's 004): its settle step fails it, which the lean batch
    cannot do; the batch rolls back and every step runs on its own: that one FAILED (its hold released), the
    others COMPLETED."""
    person, account, bank = await _setup(client, auth)
    await _settle_all(
        client, auth, db, runner, await _transfers(client, auth, account, bank, 1), settle_transactions=1
    )
    rejecting = await external_account(client, auth, person, account_number="987654004")
    ids = await _transfers(client, auth, account, bank, SETTLES_TOGETHER - 1)
    body = {"source": {"accountId": account}, "destination": {"accountId": rejecting["id"]}, "amount": 100}
    response = await client.post("/transfer-out", auth=auth, json=body)
    assert response.status_code == 201, response.text
    failing = response.json()["id"]
    await runner.run_until_idle()
    clock.advance(timedelta(seconds=2))
    await runner.run_until_idle()
    settled = await _step_jobs(db, "settle", [*ids, failing])
    assert {job.state for job in settled} == {"DONE"}
    assert len({job.finished_at for job in settled}) == len(settled)  # one by one
    assert {await _status(client, auth, tx) for tx in ids} == {"COMPLETED"}
    assert await _status(client, auth, failing) == "FAILED"
    spent = 100 * (1 + len(ids))
    assert await balances(client, auth, person) == (10_000 - spent,) * 2
    await _ledger_ok(db)


async def test_a_lease_lost_in_a_batch_writes_nothing_for_that_step(client, auth, db, runner):
    """One of the claimed steps is leased to another worker meanwhile: the batch rolls back, the others run
    on their own, and that one's transfer is left to the worker that holds it."""
    _, account, bank = await _setup(client, auth)
    ids = await _transfers(client, auth, account, bank, 4)
    claimed = await runner.claim(16)
    assert len(claimed) == 4 and len({token for _, token in claimed}) == 1
    stolen = claimed[0][0]
    async with db.transaction() as session:
        await session.execute(update(JobRow).where(JobRow.id == stolen["id"]).values(lease_token="another"))
    await runner.execute_chain(claimed)
    by_transfer = {job["payload"]["transactionId"]: job for job, _ in claimed}
    for tx in ids:
        expected = "PENDING" if by_transfer[tx]["id"] == stolen["id"] else "PROCESSING"
        assert await _status(client, auth, tx) == expected
    async with db.read() as session:
        row = await session.get(JobRow, stolen["id"])
    assert row.state == "RUNNING" and row.lease_token == "another"
    await _ledger_ok(db)
