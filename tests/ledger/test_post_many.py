"""Several entries posted together (`ledger.post_many`, a batch of a tenant's settlements): each account's
balance moves once, by the sum of the entries' changes, and only if every entry would have been allowed in
turn; each entry's balances are those after it. In an ORM session and in a lean transaction (on PostgreSQL
deferred to one statement), on both databases; every test ends by verifying the ledger."""

from __future__ import annotations

from typing import Any

import pytest

from platpay.db.unit_of_work import Raced
from platpay.ledger import service as ledger
from tests.ledger.support import fund


def _move(accounts: dict[str, Any], source: str, destination: str, amount: int) -> ledger.EntrySpec:
    legs = [ledger.Leg(accounts[source], "USD", -amount), ledger.Leg(accounts[destination], "USD", amount)]
    return ledger.EntrySpec("TEST", f"{source}->{destination}:{amount}", legs)


async def _post_many(
    db: Any, accounts: dict[str, Any], specs: list[ledger.EntrySpec], *, lean: bool
) -> list[Any]:
    unit = db.lean_transaction() if lean else db.transaction()
    async with unit as session:
        return await ledger.post_many(
            session, tenant_id=accounts["tenant"], entries=specs, reported=[accounts["a"], accounts["b"]]
        )


async def _balances(db: Any, accounts: dict[str, Any]) -> tuple[ledger.Balance, ledger.Balance]:
    async with db.read() as session:
        found = await ledger.balances(session, [accounts["a"], accounts["b"]])
    return found[accounts["a"]], found[accounts["b"]]


async def _verify(db: Any, entries: int) -> None:
    async with db.read() as session:
        report = await ledger.verify(session)
    assert report.ok, "\n".join(report.lines())
    assert report.counts["entries"] == entries


@pytest.mark.parametrize("lean", [False, True], ids=["orm", "lean"])
async def test_each_entry_has_the_balances_it_left_and_each_account_moves_once(db, accounts, lean):
    await fund(db, accounts, 1_000)
    specs = [_move(accounts, "a", "b", 100), _move(accounts, "a", "b", 200), _move(accounts, "b", "a", 50)]
    posted = await _post_many(db, accounts, specs, lean=lean)
    expected = [
        {accounts["a"]: 900, accounts["b"]: 100},
        {accounts["a"]: 700, accounts["b"]: 300},
        {accounts["a"]: 750, accounts["b"]: 250},
    ]
    for entry, after in zip(posted, expected, strict=True):
        assert set(entry.balances) == set(after)
        for account_id, available in after.items():
            balance = entry.balances[account_id]
            if isinstance(
                balance, ledger.Balance
            ):  # known now (else in the deferred statement: PostgreSQL lean)
                assert balance == ledger.Balance(available, 0), (account_id, balance)
    assert await _balances(db, accounts) == (ledger.Balance(750, 0), ledger.Balance(250, 0))
    await _verify(db, entries=4)


@pytest.mark.parametrize("lean", [False, True], ids=["orm", "lean"])
async def test_entries_are_refused_together_when_one_could_not_pay_in_turn(db, accounts, lean):
    """a holds 50: paying 100 first cannot be allowed, although the entries together change a by nothing."""
    await fund(db, accounts, 50)
    with pytest.raises(Raced):
        await _post_many(
            db, accounts, [_move(accounts, "a", "b", 100), _move(accounts, "b", "a", 100)], lean=lean
        )
    assert await _balances(db, accounts) == (ledger.Balance(50, 0), ledger.Balance(0, 0))
    await _verify(db, entries=1)


@pytest.mark.parametrize("lean", [False, True], ids=["orm", "lean"])
async def test_entries_that_can_pay_in_turn_are_allowed_together(db, accounts, lean):
    """a holds 50 and pays it all twice, b paying it back between: each entry in turn leaves a and b at zero
    or above (a's lowest point is 0), though together they take 100 from a."""
    await fund(db, accounts, 50)
    specs = [_move(accounts, "a", "b", 50), _move(accounts, "b", "a", 50), _move(accounts, "a", "b", 50)]
    posted = await _post_many(db, accounts, specs, lean=lean)
    assert len(posted) == 3
    assert await _balances(db, accounts) == (ledger.Balance(0, 0), ledger.Balance(50, 0))
    await _verify(db, entries=4)
