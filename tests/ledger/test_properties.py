"""Property tests of money movement through the API: random sequences of sandbox fundings, transfer-outs
(with magic suffixes, so some fail at once and some fail at the rail and release their hold), transfer-ins
(pulls that settle or fail), quotes (USD -> MXN) created and executed (refused when short, paid out, or
failed and refunded), settlement steps run one job at a time or all at once, and clock jumps that make steps
due in varying orders.

After every step: no account that may not go negative is negative, and every internal account's API
`balance` / `totalBalance` equals a model the test keeps itself, from the requests it made and the
transaction states it observed (holds at creation; a settlement takes the hold away, a failure gives it
back; a pull credits once, when it completes; an executed quote debits at once and gives everything back
when its refund completes). After every sequence: every transaction is terminal in the state its suffix
dictates (an unexecuted quote expires), nothing is held, the model still agrees, and the ledger verifies
(every stored balance equals its postings, every trial balance is zero).

Each example runs on a fresh platform (tenants are isolated), on SQLite and on PostgreSQL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import text

from platpay.jobs.runner import JobRunner
from platpay.kit import clock
from tests.factories import create_platform, customer, external_account, fund, internal_account, mxn_account
from tests.support.ledger import assert_ledger_verifies

HOLDERS = 3  # the platform's USD account and two customers'
# Outcome by the external account number's last three digits (INTERFACE-FACTS §7).
FINAL = {"000": "COMPLETED", "002": "FAILED", "003": "FAILED", "004": "FAILED", "005": "FAILED"}
AT_ONCE = {"002", "003"}
# Quote payouts to an MXN account: 011 pays out; 002 fails right after execution, 004 at delivery (refunded).
QUOTE_FINAL = {"011": "COMPLETED", "002": "FAILED", "004": "FAILED"}
RANK = {"PENDING": 0, "PROCESSING": 1, "COMPLETED": 2, "FAILED": 2, "EXPIRED": 2}

holder = st.integers(0, HOLDERS - 1)
amount = st.integers(1, 6_000)
actions = st.one_of(
    st.tuples(st.just("fund"), holder, st.integers(1, 8_000)),
    # None: no amount, i.e. "send the whole available balance".
    st.tuples(
        st.just("out"),
        holder,
        st.integers(-1_500, 6_000).map(lambda n: n if n > 0 else None),
        st.sampled_from(sorted(FINAL)),
    ),
    st.tuples(st.just("in"), holder, amount, st.sampled_from(["000", "000", "002", "004"])),
    st.tuples(
        st.just("quote"),
        st.integers(1, HOLDERS - 1),
        st.integers(1_000, 6_000),
        st.sampled_from(sorted(QUOTE_FINAL)),
    ),
    st.tuples(st.just("run_one_job")),
    st.tuples(st.just("run_due_jobs")),
    st.tuples(st.just("advance"), st.integers(0, 40)),
)


@dataclass
class Tracked:
    holder: int
    kind: str  # OUT | IN | QUOTE
    amount: int  # minor units: sent, received, or the quote's totalSendingAmount
    final: str  # the state it must end in
    status: str  # as last observed
    refunded: bool = False  # a quote's refund observed COMPLETED


@dataclass
class Holder:
    account_id: str
    customer_id: str | None  # None: the platform's own account
    banks: dict[str, str] = field(default_factory=dict)  # suffix -> external account id
    payees: dict[str, str] = field(default_factory=dict)  # suffix -> MXN external account id
    available: int = 0  # the model
    held: int = 0


class Model:
    """The API as the test expects it to behave, kept independently of the ledger."""

    def __init__(self, client: Any, auth: tuple[str, str], runner: JobRunner, holders: list[Holder]) -> None:
        self.client, self.auth, self.runner, self.holders = client, auth, runner, holders
        self.transactions: dict[str, Tracked] = {}

    async def bank(self, holder: Holder, suffix: str) -> str:
        if suffix not in holder.banks:
            number = f"{len(self.transactions) + 100_000 * (1 + self.holders.index(holder))}{suffix}"
            created = await external_account(
                self.client, self.auth, holder.customer_id, account_number=number
            )
            holder.banks[suffix] = created["id"]
        return holder.banks[suffix]

    async def step(self, action: tuple[Any, ...]) -> None:
        name, *args = action
        if name == "fund":
            index, value = args
            await fund(self.client, self.auth, self.holders[index].account_id, value)
            self.holders[index].available += value
        elif name == "out":
            await self.transfer_out(*args)
        elif name == "in":
            await self.transfer_in(*args)
        elif name == "quote":
            await self.quote(*args)
        elif name == "run_one_job":
            for job, token in await self.runner.claim(1):
                await self.runner.execute(job, token)
        elif name == "run_due_jobs":
            await self.runner.run_until_idle()
        else:
            clock.advance(timedelta(seconds=args[0]))
        await self.observe()

    async def transfer_out(self, index: int, value: int | None, suffix: str) -> None:
        holder = self.holders[index]
        body: dict[str, Any] = {
            "source": {"accountId": holder.account_id},
            "destination": {"accountId": await self.bank(holder, suffix)},
        }
        if value is not None:
            body["amount"] = value
        response = await self.client.post("/transfer-out", auth=self.auth, json=body)
        sent = holder.available if value is None else value
        if sent <= 0:
            assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT", response.text
            return
        if sent > holder.available:
            assert response.status_code == 400, response.text
            assert response.json()["code"] == "INSUFFICIENT_BALANCE", response.text
            assert response.json()["details"]["available"] == holder.available
            return
        assert response.status_code == 201, response.text
        transaction = response.json()
        assert transaction["sentAmount"]["amount"] == sent
        if suffix in AT_ONCE:
            assert transaction["status"] == "FAILED"  # held and released in the same request
        else:
            assert transaction["status"] == "PENDING"
            holder.available -= sent
            holder.held += sent
        self.transactions[transaction["id"]] = Tracked(
            index, "OUT", sent, FINAL[suffix], transaction["status"]
        )

    async def transfer_in(self, index: int, value: int, suffix: str) -> None:
        holder = self.holders[index]
        body = {
            "source": {"accountId": await self.bank(holder, suffix)},
            "destination": {"accountId": holder.account_id},
            "amount": value,
        }
        response = await self.client.post("/transfer-in", auth=self.auth, json=body)
        assert response.status_code == 201, response.text
        transaction = response.json()
        assert transaction["status"] == ("FAILED" if suffix in AT_ONCE else "PENDING")
        self.transactions[transaction["id"]] = Tracked(
            index, "IN", value, FINAL[suffix], transaction["status"]
        )

    async def quote(self, index: int, value: int, suffix: str) -> None:
        holder = self.holders[index]
        if suffix not in holder.payees:
            holder.payees[suffix] = (await mxn_account(self.client, self.auth, holder.customer_id, suffix))[
                "id"
            ]
        body = {
            "source": {"sourceType": "ACCOUNT", "accountId": holder.account_id},
            "destination": {"destinationType": "ACCOUNT", "accountId": holder.payees[suffix]},
            "lockedCurrencySide": "SENDING",
            "lockedCurrencyAmount": value,
        }
        created = await self.client.post("/quotes", auth=self.auth, json=body)
        assert created.status_code == 201, created.text
        quote = created.json()
        assert quote["totalSendingAmount"] == value and quote["status"] == "PENDING"
        tracked = Tracked(index, "QUOTE", value, "EXPIRED", "PENDING")  # unexecuted, it expires
        self.transactions[quote["transactionId"]] = tracked
        executed = await self.client.post(f"/quotes/{quote['id']}/execute", auth=self.auth)
        if value > holder.available:
            assert executed.status_code == 400, executed.text
            assert executed.json()["code"] == "INSUFFICIENT_BALANCE", executed.text
            return
        assert executed.status_code == 200, executed.text
        holder.available -= value
        tracked.final = QUOTE_FINAL[suffix]

    async def observe(self) -> None:
        """Apply the transitions that happened since the last look, then compare the balances."""
        page = await self.client.get("/transactions", auth=self.auth, params={"limit": 100})
        listed = {t["id"]: t for t in page.json()["data"]}
        assert set(listed) == set(self.transactions)
        for transaction_id, tracked in self.transactions.items():
            status = listed[transaction_id]["status"]
            refund = listed[transaction_id].get("refund") or {}
            if tracked.kind == "QUOTE" and refund.get("status") == "COMPLETED" and not tracked.refunded:
                tracked.refunded = True  # the whole sending amount, fees included, is back
                self.holders[tracked.holder].available += tracked.amount
            if status == tracked.status:
                continue
            assert RANK[status] > RANK[tracked.status], (tracked, status)  # states only move forward
            if RANK[status] == 2:
                assert status == tracked.final, (tracked, status)
                holder = self.holders[tracked.holder]
                if tracked.kind == "OUT":
                    holder.held -= tracked.amount
                    if status == "FAILED":
                        holder.available += tracked.amount  # released
                elif tracked.kind == "IN" and status == "COMPLETED":
                    holder.available += tracked.amount
            tracked.status = status
        for holder in self.holders:
            assert await self.api_balances(holder) == (holder.available, holder.available + holder.held)

    async def api_balances(self, holder: Holder) -> tuple[int, int]:
        if holder.customer_id is None:
            page = await self.client.get(
                "/platform/internal-accounts", auth=self.auth, params={"currency": "USD"}
            )
            [account] = page.json()["data"]
        else:
            account = await internal_account(self.client, self.auth, holder.customer_id)
        assert account["id"] == holder.account_id
        return account["balance"]["amount"], account["totalBalance"]["amount"]

    async def drain(self) -> None:
        """Time passes until every step has run (a slow failure takes ~30 s, a quote expires after 5 min)."""
        for seconds in (31, 31, 31, 31, 301, 31):
            clock.advance(timedelta(seconds=seconds))
            await self.runner.run_until_idle()
        await self.observe()
        assert all(t.status == t.final for t in self.transactions.values()), self.transactions
        assert all(
            t.refunded == (t.kind == "QUOTE" and t.final == "FAILED") for t in self.transactions.values()
        )
        assert all(h.held == 0 for h in self.holders)


async def open_holders(client: Any, auth: tuple[str, str]) -> list[Holder]:
    platform_usd = (
        await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
    ).json()["data"][0]
    holders = [Holder(platform_usd["id"], None)]
    for _ in range(HOLDERS - 1):
        person = await customer(client, auth)
        holders.append(Holder((await internal_account(client, auth, person["id"]))["id"], person["id"]))
    return holders


async def negative_accounts(db: Any) -> list[Any]:
    async with db.read() as session:
        rows = await session.execute(
            text(
                "SELECT id, available, held FROM ledger_accounts "
                "WHERE NOT allow_negative AND (available < 0 OR held < 0)"
            )
        )
        return list(rows)


class TestMoneyMovementProperties:
    @hypothesis_settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(sequence=st.lists(actions, min_size=6, max_size=30))
    async def test_balances_follow_the_model_and_the_ledger_always_balances(
        self, client, db, settings, runner, sequence
    ):
        auth = (await create_platform(db, settings))["sandbox"]  # a fresh tenant for every example
        model = Model(client, auth, runner, await open_holders(client, auth))
        for index in range(HOLDERS):  # a starting balance, so that short sequences move money too
            await model.step(("fund", index, 10_000))
        for action in sequence:
            await model.step(action)
            assert await negative_accounts(db) == [], action
        await model.drain()
        await assert_ledger_verifies(db)
