"""Property test: random sequences of authorize / clear (partial, full, over, zero) / return / fund /
freeze / unfreeze / close on one card, against a model the test keeps itself. After every step the API's
balance and totalBalance and every card transaction's status equal the model's, the held amount equals the
ledger's open holds and no customer balance is negative; after every sequence, expiring what is left leaves
nothing held, and the ledger verifies."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.cards.support import (
    active_card,
    approved_cardholder,
    authorize,
    balance,
    clear,
    funded_account,
    give_back,
    open_holds,
    patch,
)
from tests.conftest import assert_ledger_verifies
from tests.factories import create_platform, fund

actions = st.one_of(
    st.tuples(st.just("fund"), st.integers(1, 3_000)),
    st.tuples(st.just("auth"), st.integers(1, 4_000)),
    st.tuples(st.just("clear"), st.integers(0, 7), st.sampled_from(["partial", "full", "over", "zero"])),
    st.tuples(st.just("return"), st.integers(0, 7), st.integers(1, 4)),
    st.tuples(st.sampled_from(["freeze", "unfreeze", "close"])),
)
PENDING = ("AUTHORIZED", "PARTIALLY_SETTLED")


@dataclass
class Tracked:
    id: str
    authorized: int
    hold: int
    status: str
    settled: int = 0
    refunded: int = 0
    pulled: int = 0  # pullSummary.totalAmount: the hold's rest + what it captured + covered post-hoc pulls


class Model:
    def __init__(self, client: Any, auth: Any, db: Any, setup: dict[str, str], available: int) -> None:
        self.client, self.auth, self.db, self.setup = client, auth, db, setup
        self.available, self.held, self.state = available, 0, "ACTIVE"
        self.transactions: list[Tracked] = []

    def _release(self, t: Tracked) -> None:
        self.available += t.hold
        t.pulled -= t.hold
        self.held -= t.hold
        t.hold = 0

    async def step(self, action: tuple[Any, ...]) -> None:
        name, *args = action
        client, auth, card = self.client, self.auth, self.setup["card"]
        if name == "fund":
            await fund(client, auth, self.setup["account"], args[0])
            self.available += args[0]
        elif name == "auth":
            amount = args[0]
            body = (await authorize(client, auth, card, amount)).json()
            if self.state == "ACTIVE" and self.available >= amount:
                assert body["status"] == "AUTHORIZED", body
                self.available -= amount
                self.held += amount
                self.transactions.append(Tracked(body["id"], amount, amount, "AUTHORIZED", pulled=amount))
            else:
                assert body["status"] == "DECLINED", body
        elif name == "clear" and self.transactions:
            await self.clear(self.transactions[args[0] % len(self.transactions)], args[1])
        elif name == "return" and self.transactions:
            t = self.transactions[args[0] % len(self.transactions)]
            left = t.settled - t.refunded
            amount = max(1, left * args[1] // 4)
            response = await give_back(client, auth, card, t.id, amount)
            if t.status == "SETTLED" and amount <= left:
                assert response.status_code == 200, response.text
                self.available += amount
                t.refunded += amount
                t.status = "REFUNDED" if t.refunded == t.settled else "SETTLED"
            else:
                assert response.status_code in (400, 409), response.text
        elif name in ("freeze", "unfreeze", "close"):
            target = {"freeze": "FROZEN", "unfreeze": "ACTIVE", "close": "CLOSED"}[name]
            legal = {("ACTIVE", "FROZEN"), ("FROZEN", "ACTIVE"), ("ACTIVE", "CLOSED"), ("FROZEN", "CLOSED")}
            response = await patch(client, auth, card, state=target)
            if (self.state, target) in legal:
                assert response.status_code == 200, response.text
                self.state = target
                if target == "CLOSED":
                    for t in self.transactions:
                        if t.status in PENDING:
                            self._release(t)
                            t.status = "SETTLED" if t.settled else "EXPIRED"
            else:
                assert response.status_code == 409, response.text
        await self.observe()

    async def clear(self, t: Tracked, kind: str) -> None:
        rest = max(t.authorized - t.settled, 0)
        amount = {"partial": max(1, rest // 2), "full": max(1, rest), "over": rest + 50, "zero": 0}[kind]
        response = await clear(self.client, self.auth, self.setup["card"], t.id, amount)
        if t.status not in ("AUTHORIZED", "PARTIALLY_SETTLED", "EXPIRED", "EXCEPTION") or (
            amount == 0 and t.status not in PENDING
        ):
            assert response.status_code == 409, response.text
            return
        assert response.status_code == 200, response.text
        if amount == 0:
            self._release(t)
            t.status = "SETTLED" if t.settled else "EXPIRED"
            return
        captured = min(amount, t.hold)
        t.hold -= captured
        self.held -= captured
        excess = amount - captured
        failed = False
        if excess:
            if self.available >= excess:
                self.available -= excess
                t.pulled += excess
            else:
                failed = True
        was = t.status
        t.settled += amount
        if failed:
            t.status = "EXCEPTION"
        elif t.settled >= t.authorized or was in ("EXPIRED", "EXCEPTION"):
            t.status = "SETTLED"
        else:
            t.status = "PARTIALLY_SETTLED"
        if t.status != "PARTIALLY_SETTLED":
            self._release(t)

    async def observe(self) -> None:
        assert await balance(self.client, self.auth, self.setup["customer"]) == (
            self.available,
            self.available + self.held,
        )
        assert self.available >= 0 and self.held >= 0
        assert await open_holds(self.db, self.setup["account"]) == self.held
        listed = (
            await self.client.get(
                f"/cards/{self.setup['card']}/transactions",
                auth=self.auth,
                params={"limit": 100},
            )
        ).json()["data"]
        statuses = {t["id"]: t["status"] for t in listed if t["status"] != "DECLINED"}
        assert statuses == {t.id: t.status for t in self.transactions}
        pulled = {t["id"]: t["pullSummary"]["totalAmount"] for t in listed if t["status"] != "DECLINED"}
        assert pulled == {t.id: t.pulled for t in self.transactions}


class TestCardMoneyProperties:
    @hypothesis_settings(
        max_examples=8,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(sequence=st.lists(actions, min_size=4, max_size=14))
    async def test_balances_follow_the_model_and_no_hold_leaks(self, client, db, settings, runner, sequence):
        auth = (await create_platform(db, settings))["sandbox"]  # a fresh tenant for every example
        person = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, person["id"], 5_000)
        card = await active_card(client, auth, runner, person["id"], [account["id"]])
        setup = {"customer": person["id"], "account": account["id"], "card": card["id"]}
        model = Model(client, auth, db, setup, 5_000)
        for action in sequence:
            await model.step(action)
        for t in model.transactions:  # every authorization left open expires
            if t.status in PENDING:
                await model.clear(t, "zero")
        await model.observe()
        assert model.held == 0
        await assert_ledger_verifies(db)
