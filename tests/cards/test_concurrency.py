"""Cards under concurrent requests on PostgreSQL (real parallel transactions through the app): holds never
overdraw, a freeze is respected by every authorization that starts after it commits, and a clearing racing
the authorization's expiry captures or releases the hold exactly once."""

from __future__ import annotations

import asyncio
import re

import httpx
import pytest
from sqlalchemy import text

from platpay.ledger import service as ledger_service
from tests.cards.support import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    balance,
    clear,
    funded_account,
    open_holds,
    patch,
)
from tests.conftest import assert_ledger_verifies

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


async def test_fifty_authorizations_against_funds_for_ten(client, auth, runner, db) -> None:
    setup = await _card(client, auth, runner, 10 * 700)
    responses = await asyncio.gather(*(authorize(client, auth, setup["card"], 700) for _ in range(50)))
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses if r.status_code != 200]
    statuses = [r.json()["status"] for r in responses]
    assert statuses.count("AUTHORIZED") == 10
    assert [r.json()["declineReason"] for r in responses if r.json()["status"] == "DECLINED"] == [
        "INSUFFICIENT_FUNDS"
    ] * 40
    assert await balance(client, auth, setup["customer"]) == (0, 7_000)
    assert await open_holds(db, setup["account"]) == 7_000
    await assert_ledger_verifies(db)


async def test_no_authorization_is_approved_after_a_freeze_commits(client, auth, runner, db) -> None:
    setup = await _card(client, auth, runner, 1_000_000)
    loop = asyncio.get_running_loop()
    frozen_at: list[float] = []
    results: list[tuple[float, dict]] = []

    async def authorizing() -> None:
        """Authorize again and again until two of its own began after the freeze committed."""
        began_after = 0
        for _ in range(60):
            started = loop.time()
            response = await authorize(client, auth, setup["card"], 100)
            assert response.status_code == 200, response.text
            results.append((started, response.json()))
            if frozen_at and started > frozen_at[0]:
                began_after += 1
                if began_after == 2:
                    return

    async def freeze() -> None:
        await asyncio.sleep(0.05)
        response = await patch(client, auth, setup["card"], state="FROZEN")
        assert response.status_code == 200, response.text
        frozen_at.append(loop.time())  # its transaction committed before it answered

    await asyncio.gather(freeze(), *(authorizing() for _ in range(8)))
    after = [t for started, t in results if started > frozen_at[0]]
    assert after, "some authorizations began after the freeze committed"
    assert all(t["status"] == "DECLINED" and t["declineReason"] == "CARD_PAUSED" for t in after)
    approved_count = sum(1 for _, t in results if t["status"] == "AUTHORIZED")
    available, total = await balance(client, auth, setup["customer"])
    assert total - available == approved_count * 100 == await open_holds(db, setup["account"])
    await assert_ledger_verifies(db)


async def test_a_clearing_racing_the_expiry_takes_the_hold_once(client, auth, runner, db) -> None:
    setup = await _card(client, auth, runner, 50_000)
    for _ in range(5):
        transaction = await approved(client, auth, setup["card"], 3_000)
        before, _ = await balance(client, auth, setup["customer"])
        clearing, expiry = await asyncio.gather(
            clear(client, auth, setup["card"], transaction["id"], 3_000),
            clear(client, auth, setup["card"], transaction["id"], 0),
        )
        assert clearing.status_code == 200, clearing.text
        final = (await client.get(f"/card-transactions/{transaction['id']}", auth=auth)).json()
        available, total = await balance(client, auth, setup["customer"])
        assert available == total  # nothing stays held
        assert await open_holds(db, setup["account"]) == 0
        if expiry.status_code == 200 and expiry.json()["status"] == "EXPIRED":
            # expired first: released, then the clearing was force-posted as a pull
            assert final["status"] == "SETTLED" and final["pullSummary"]["count"] == 2
        else:
            # cleared first: the expiry found nothing left to expire
            assert expiry.status_code == 409
        assert available == before and final["settledAmount"]["amount"] == 3_000
    await assert_ledger_verifies(db)


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
        pending = asyncio.create_task(authorize(client, auth, setup["card"], 600))
        for _ in range(200):  # until the authorization waits on the balance row this transaction holds
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
                break
            await asyncio.sleep(0.02)
        assert waiting, "the authorization never waited on the balance row"
    response = await pending
    assert response.status_code == 200, response.text
    declined = response.json()
    assert (declined["status"], declined["declineReason"]) == ("DECLINED", "INSUFFICIENT_FUNDS")
    assert await _raced(client) == raced_before + 1
    assert await balance(client, auth, setup["customer"]) == (0, 1_000)
    assert await open_holds(db, setup["account"]) == 1_000  # the competing hold only
    listed = (await client.get(f"/cards/{setup['card']}/transactions", auth=auth)).json()["data"]
    assert [t["status"] for t in listed] == ["DECLINED"]  # the rolled-back approval left no trace
    await assert_ledger_verifies(db)
