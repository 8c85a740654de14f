"""An agent's POST /agents/me/transfer-out (and transfer-in) runs in a `LeanTransaction` first (no ORM session),
as the platform's transfer-out does: every function it is passed to declares a `LeanSession`
(db/unit_of_work.py), never an `AsyncSession` it is not. Read from the calls themselves, on the paths a
lean attempt takes: executed at once, held for approval, refused by the policy (its refusal audited in the
same transaction), replayed; and a sandbox account that fails at once gives way to the ORM attempt."""

from __future__ import annotations

from tests.factories import external_account
from tests.support import agents
from tests.support.lean_typing import ON_BOTH, backend, lean_receivers, misdeclared  # noqa: F401 (backend: the fixture)
from tests.support.ledger import assert_ledger_verifies

pytestmark = ON_BOTH


async def test_every_function_given_a_lean_transaction_declares_a_lean_session(client, auth, db) -> None:
    funded = await agents.funded_customer(client, auth)
    agent = await agents.connect(client, auth, funded["customer"]["id"])
    account, bank = funded["account"]["id"], funded["bank"]["id"]
    failing = await external_account(client, auth, funded["customer"]["id"], account_number="55555002")
    with lean_receivers() as received:
        sent = await agents.transfer_out(client, agent["headers"], account, bank, 600, "lean-1")
        replayed = await agents.transfer_out(client, agent["headers"], account, bank, 600, "lean-1")
        held = await agents.transfer_out(client, agent["headers"], account, bank, 6_000, "lean-2")
        refused = await agents.transfer_out(client, agent["headers"], account, bank, 60_000, "lean-3")
        gave_way = await agents.transfer_out(client, agent["headers"], account, failing["id"], 700, "lean-4")
    assert (sent.status_code, replayed.status_code, held.status_code) == (201, 201, 201), held.text
    assert replayed.json() == sent.json() and sent.json()["status"] == "APPROVED", sent.text
    assert held.json()["status"] == "PENDING_APPROVAL", held.text
    assert refused.status_code == 403, refused.text
    assert gave_way.status_code == 201, gave_way.text
    assert gave_way.json()["transaction"]["status"] == "FAILED", gave_way.text  # decided by the ORM attempt
    assert received, "the agent's transfer-out never ran in a LeanTransaction"
    wrong = misdeclared(received)
    assert not wrong, "given a LeanTransaction, declared otherwise:\n" + "\n".join(wrong)
    trail = await client.get(f"/agents/{agent['agent']['id']}/audit", auth=auth, params={"limit": 100})
    kinds = [record["kind"] for record in trail.json()["data"]]
    assert kinds.count("MONEY_REFUSED") == 1 and kinds.count("MONEY_REQUESTED") == 3, (
        kinds
    )  # none for the replay
    await assert_ledger_verifies(db)
