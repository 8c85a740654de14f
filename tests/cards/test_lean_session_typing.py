"""A card authorization's lean attempt runs in a `LeanTransaction` (no ORM session): every function
it is passed to says so, declaring a `LeanSession` (db/unit_of_work.py), never an `AsyncSession` it is not.
Read from the calls themselves: a profiler records each platpay function that receives the transaction."""

from __future__ import annotations

from tests.support.cards import active_card, approved_cardholder, funded_account, opening_body, simulate
from tests.support.lean_typing import ON_BOTH, backend, lean_receivers, misdeclared  # noqa: F401 (backend: the fixture)

pytestmark = ON_BOTH


async def test_every_function_given_a_lean_transaction_declares_a_lean_session(client, auth, runner) -> None:
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 1_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    with lean_receivers() as received:
        approved = await simulate(client, auth, card["id"], "authorization", opening_body(600))
        declined = await simulate(client, auth, card["id"], "authorization", opening_body(5_000))
    assert (approved.status_code, declined.status_code) == (202, 202), (approved.text, declined.text)
    assert received, "the authorization never ran in a LeanTransaction"
    wrong = misdeclared(received)
    assert not wrong, "given a LeanTransaction, declared otherwise:\n" + "\n".join(wrong)
