"""A keyed POST /transfer-out's lean attempt runs in a `LeanTransaction` (no ORM session), the
Idempotency-Key claimed and stored in it: every function it is passed to says so, declaring a `LeanSession`
(db/unit_of_work.py), never an `AsyncSession` it is not. Read from the calls themselves."""

from __future__ import annotations

from tests.factories import customer, external_account, fund, internal_account
from tests.support.lean_typing import ON_BOTH, backend, lean_receivers, misdeclared  # noqa: F401 (backend: the fixture)

pytestmark = ON_BOTH


async def test_every_function_given_a_lean_transaction_declares_a_lean_session(client, auth) -> None:
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    bank = await external_account(client, auth, person["id"])
    body = {"source": {"accountId": account["id"]}, "destination": {"accountId": bank["id"]}, "amount": 600}
    with lean_receivers() as received:
        sent = await client.post("/transfer-out", auth=auth, json=body, headers={"Idempotency-Key": "lean-1"})
        replayed = await client.post(
            "/transfer-out", auth=auth, json=body, headers={"Idempotency-Key": "lean-1"}
        )
        refused = await client.post(
            "/transfer-out", auth=auth, json={**body, "amount": 50_000}, headers={"Idempotency-Key": "lean-2"}
        )
    assert (sent.status_code, replayed.status_code) == (201, 201), (sent.text, replayed.text)
    assert replayed.json() == sent.json() and refused.status_code == 400, refused.text
    assert received, "the transfer-out never ran in a LeanTransaction"
    wrong = misdeclared(received)
    assert not wrong, "given a LeanTransaction, declared otherwise:\n" + "\n".join(wrong)


async def test_the_settlement_steps_lean_attempts_declare_a_lean_session(client, auth, runner) -> None:
    """A transfer's steps in the worker (payments/transfers.py `step`): their lean attempts, after one transfer
    settled first (the tenant and its clearing account then known to the process)."""
    from datetime import timedelta

    from platpay.kit import clock

    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    bank = await external_account(client, auth, person["id"])
    body = {"source": {"accountId": account["id"]}, "destination": {"accountId": bank["id"]}, "amount": 600}

    async def settled() -> str:
        sent = await client.post("/transfer-out", auth=auth, json=body)
        assert sent.status_code == 201, sent.text
        await runner.run_until_idle()
        clock.advance(timedelta(minutes=1))
        await runner.run_until_idle()
        return str((await client.get(f"/transactions/{sent.json()['id']}", auth=auth)).json()["status"])

    assert await settled() == "COMPLETED"
    with lean_receivers() as received:
        assert await settled() == "COMPLETED"
    steps = {name for _, _, name, _ in received}
    assert {"step", "_settle", "write_move"} <= steps, steps
    wrong = misdeclared(received)
    assert not wrong, "given a LeanTransaction, declared otherwise:\n" + "\n".join(wrong)
