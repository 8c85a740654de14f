"""Cards under concurrency on PostgreSQL (real parallel transactions: authorizations decided in concurrent
simulation requests, the messages on their card transactions applied by several job runners at once): holds
never overdraw, a freeze is respected by every
authorization decided after it commits, a clearing racing the authorization's expiry captures or releases
the hold exactly once, and a source spent between an authorization's decision and its hold is decided again."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime

import httpx
import pytest
from sqlalchemy import text

from platpay.kit import clock
from platpay.ledger import service as ledger_service
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    balance,
    funded_account,
    open_holds,
    opening_body,
    patch,
    run_jobs,
    simulate,
)
from tests.support.ledger import assert_ledger_verifies

pytestmark = pytest.mark.parametrize("backend", ["postgresql"], indirect=True)


@pytest.fixture
def backend(request, pg_database):
    if pg_database is None:
        pytest.skip("PostgreSQL concurrency: set PLATPAY_TEST_DATABASE_URL")
    return request.param


async def _card(client, auth, runner, amount: int) -> dict:
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], amount)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    return {"customer": person["id"], "account": account["id"], "card": card["id"]}


async def _runners(client, count: int = 3) -> None:
    """`count` job runners of the app, each running what is due until idle, at the same time (each runs up
    to PLATPAY_JOB_CONCURRENCY jobs at once): the card network's messages applied in parallel."""
    await asyncio.gather(*(run_jobs(client, name=f"race-{n}") for n in range(count)))


async def _transactions(client, auth, card_id: str) -> list[dict]:
    return (await client.get(f"/cards/{card_id}/transactions", auth=auth, params={"limit": 100})).json()[
        "data"
    ]


async def test_fifty_authorizations_against_funds_for_ten(client, auth, runner, db) -> None:
    setup = await _card(client, auth, runner, 10 * 700)
    accepted = await asyncio.gather(
        *(simulate(client, auth, setup["card"], "authorization", opening_body(700)) for _ in range(50))
    )
    assert all(r.status_code == 202 for r in accepted), [r.text for r in accepted if r.status_code != 202]
    transactions = await _transactions(client, auth, setup["card"])
    assert len(transactions) == 50
    statuses = [t["status"] for t in transactions]
    assert statuses.count("AUTHORIZED") == 10
    assert [t["declineReason"] for t in transactions if t["status"] == "DECLINED"] == [
        "INSUFFICIENT_FUNDS"
    ] * 40
    assert await balance(client, auth, setup["customer"]) == (0, 7_000)
    assert await open_holds(db, setup["account"]) == 7_000
    await assert_ledger_verifies(db)


async def test_no_authorization_is_approved_after_a_freeze_commits(client, auth, runner, db) -> None:
    """Authorizations keep arriving, each decided in its request, while the card is frozen: every one
    decided after the freeze committed (its authorizedAt, the time of its decision) is declined
    CARD_PAUSED, and the approved ones were all decided before it."""
    setup = await _card(client, auth, runner, 1_000_000)
    frozen_at: list[datetime] = []
    start_freeze = asyncio.Event()

    async def send() -> None:
        for n in range(50):
            if n == 20:
                start_freeze.set()
            if n == 40:  # each sender's last ten are sent once the freeze committed: decided after it
                while not frozen_at:
                    await asyncio.sleep(0.01)
            response = await simulate(client, auth, setup["card"], "authorization", opening_body(100))
            assert response.status_code == 202, response.text

    async def freeze() -> None:
        await start_freeze.wait()
        response = await patch(client, auth, setup["card"], state="FROZEN")
        assert response.status_code == 200, response.text
        frozen_at.append(clock.real_now())  # its transaction committed before it answered

    await asyncio.gather(send(), send(), freeze())
    transactions = await _transactions(client, auth, setup["card"])
    assert len(transactions) == 100
    decided = [(datetime.fromisoformat(t["authorizedAt"].replace("Z", "+00:00")), t) for t in transactions]
    after = [t for at, t in decided if at > frozen_at[0]]
    assert after, "some authorizations were decided after the freeze committed"
    assert all(t["status"] == "DECLINED" and t["declineReason"] == "CARD_PAUSED" for t in after)
    approved_ones = [at for at, t in decided if t["status"] == "AUTHORIZED"]
    assert approved_ones and max(approved_ones) < frozen_at[0]
    available, total = await balance(client, auth, setup["customer"])
    assert total - available == len(approved_ones) * 100 == await open_holds(db, setup["account"])
    await assert_ledger_verifies(db)


async def test_a_clearing_racing_the_expiry_takes_the_hold_once(client, auth, runner, db) -> None:
    setup = await _card(client, auth, runner, 50_000)
    for _ in range(5):
        transaction = await approved(client, auth, setup["card"], 3_000)
        before, _ = await balance(client, auth, setup["customer"])
        body = {"cardTransactionId": transaction["id"]}
        clearing = await simulate(client, auth, setup["card"], "clearing", {**body, "amount": 3_000})
        expiry = await simulate(client, auth, setup["card"], "clearing", {**body, "amount": 0})
        assert clearing.status_code == expiry.status_code == 202, (clearing.text, expiry.text)
        await _runners(client, 2)  # the two messages applied at the same time
        final = (await client.get(f"/card-transactions/{transaction['id']}", auth=auth)).json()
        available, total = await balance(client, auth, setup["customer"])
        assert available == total  # nothing stays held
        assert await open_holds(db, setup["account"]) == 0
        assert final["status"] == "SETTLED" and final["settledAmount"]["amount"] == 3_000
        # expired first: released, then the clearing was force-posted as a pull (2 pulls); cleared first:
        # the expiry found nothing left to expire and changed nothing (1)
        assert final["pullSummary"]["count"] in (1, 2)
        assert available == before
    await assert_ledger_verifies(db)


async def _waits_on_a_lock(db, pending: asyncio.Task) -> bool:
    """Whether a statement of the database waits on a lock before `pending` is done (polled for ~4 s)."""
    for _ in range(200):
        async with db.read() as probe:
            waiting = (
                await probe.execute(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND datname = current_database()"
                    )
                )
            ).scalar_one()
        if waiting or pending.done():
            return bool(waiting)
        await asyncio.sleep(0.02)
    return False


async def _raced(client) -> float:
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as root:
        scraped = (await root.get("/metrics")).text
    found = re.search(r"^platpay_card_authorizations_raced_total (\S+)$", scraped, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


async def test_a_source_spent_between_decision_and_hold_is_decided_again(client, auth, runner, db) -> None:
    """The fast path decides on a snapshot and moves the balance last; a concurrent hold that commits in
    between makes its conditional UPDATE refuse: the authorization rolls back (nothing of it stays) and is
    decided again under the lock, here a decline."""
    setup = await _card(client, auth, runner, 1_000)
    raced_before = await _raced(client)
    async with db.transaction() as session:  # a competing hold on the whole balance, not yet committed
        tenant_id = (
            await session.execute(
                text("SELECT tenant_id FROM internal_accounts WHERE id = :id"), {"id": setup["account"]}
            )
        ).scalar_one()
        await ledger_service.place_hold(
            session, tenant_id=tenant_id, account_id=setup["account"], currency="USD", amount=1_000,
            reference="Test:competing-hold", kind="TEST_HOLD",
        )  # fmt: skip
        pending = asyncio.create_task(  # the authorization, decided in its request
            simulate(client, auth, setup["card"], "authorization", opening_body(600))
        )
        # until the authorization waits on the balance row this transaction holds
        assert await _waits_on_a_lock(db, pending), "the authorization never waited on the balance row"
    accepted = await pending
    assert accepted.status_code == 202, accepted.text
    [declined] = await _transactions(client, auth, setup["card"])  # the rolled-back approval left no trace
    assert (declined["status"], declined["declineReason"]) == ("DECLINED", "INSUFFICIENT_FUNDS")
    assert declined["issuerTransactionToken"] == accepted.json()["issuerTransactionToken"]
    assert await _raced(client) == raced_before + 1
    assert await balance(client, auth, setup["customer"]) == (0, 1_000)
    assert await open_holds(db, setup["account"]) == 1_000  # the competing hold only
    await assert_ledger_verifies(db)


async def test_a_card_frozen_between_decision_and_writes_is_decided_again(client, auth, runner, db) -> None:
    """The fast path reads the card without its lock and decides; its writes' statement locks the card to
    check its version and waits for a freeze in progress; the freeze commits, the version moved: the
    approval rolls back (nothing of it stays) and is decided again under the lock, here a decline."""
    setup = await _card(client, auth, runner, 1_000)
    raced_before = await _raced(client)
    async with db.transaction() as session:  # a freeze in progress, the card locked as the service locks it
        await session.execute(  # (what the service's freeze writes: cards/service.py `_move`)
            text("UPDATE cards SET state = 'FROZEN', version = version + 1 WHERE id = :id"),
            {"id": setup["card"]},
        )
        pending = asyncio.create_task(
            simulate(client, auth, setup["card"], "authorization", opening_body(600))
        )
        # until the authorization's writes wait on the card this transaction holds
        assert await _waits_on_a_lock(db, pending), "the authorization never waited on the card"
    accepted = await pending
    assert accepted.status_code == 202, accepted.text
    [declined] = await _transactions(client, auth, setup["card"])  # the rolled-back approval left no trace
    assert (declined["status"], declined["declineReason"]) == ("DECLINED", "CARD_PAUSED")
    assert await _raced(client) == raced_before + 1
    assert await balance(client, auth, setup["customer"]) == (1_000, 1_000)
    assert await open_holds(db, setup["account"]) == 0
    await assert_ledger_verifies(db)
