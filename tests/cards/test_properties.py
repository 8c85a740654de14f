"""Property test: random sequences of authorize / clear (partial, full, over, zero) / return / fund /
freeze / unfreeze / close on one card, against a model the test keeps itself. After every step the API's
balance and totalBalance and every card transaction's status equal the model's, the held amount equals the
ledger's open holds and no customer balance is negative; after every sequence, expiring what is left leaves
nothing held, and the ledger verifies. And for (card currency, request currency, amount) drawn over the cards'
currencies and others: the hold, the clearing and the return are each exactly the request's amount converted
(USD on a USDB or USDC card ×10^4), any other currency declines with the request recorded and nothing held,
and the ledger verifies. And random sequences of every network message the sandbox simulates (the six that
open a card transaction, clearings, advices, returns, return reversals) keep the ledger balanced and every
card transaction accounted for in the network's clearing account."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from platpay.cards.models import CardRow
from platpay.ledger.models import JournalEntryRow, LedgerAccountRow, LedgerHoldRow, PostingRow
from tests.factories import balances, create_platform, fund, internal_account, wallet_account
from tests.support.cards import (
    active_card,
    approved_cardholder,
    authorize,
    balance,
    clear,
    funded_account,
    give_back,
    open_holds,
    patch,
    run_jobs,
    simulate,
)
from tests.support.ledger import assert_ledger_verifies

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


# The conversion as this test states it, independently of platpay: (card currency, request currency) → the
# factor a request's minor units are multiplied by to be the card's (USD has 2 decimals, the coins 6).
FACTORS = {
    ("USD", "USD"): 1,
    ("USDB", "USDB"): 1,
    ("USDC", "USDC"): 1,
    ("USDB", "USD"): 10**4,
    ("USDC", "USD"): 10**4,
}
CARD_CURRENCIES = ("USD", "USDB", "USDC")
REQUEST_CURRENCIES = ("USD", "USDB", "USDC", "USDT", "EUR", "JPY", "BTC", "MXN")
FUNDS = 100_000_000_000  # the most one sandbox deposit takes


class Cards:
    """One cardholder with a card in each currency, built by the first example and used by the rest (the
    function-scoped fixtures are the same for every example of one test), with the balances the test
    expects of each card's funding account."""

    def __init__(self) -> None:
        self.by_currency: dict[str, dict[str, str]] = {}
        self.total: dict[str, int] = {}

    async def build(self, client: Any, auth: Any, runner: Any) -> None:
        if self.by_currency:
            return
        person = await approved_cardholder(client, auth)
        for currency in CARD_CURRENCIES:
            account = await funded_account(client, auth, person["id"], FUNDS, currency=currency)
            card = await active_card(client, auth, runner, person["id"], [account["id"]])
            assert card["currency"] == currency
            self.by_currency[currency] = {
                "customer": person["id"],
                "account": account["id"],
                "card": card["id"],
            }
            self.total[currency] = FUNDS

    async def top_up(self, client: Any, auth: Any, currency: str) -> None:
        if self.total[currency] < FUNDS // 2:
            await fund(client, auth, self.by_currency[currency]["account"], FUNDS)
            self.total[currency] += FUNDS

    async def check(self, client: Any, auth: Any, db: Any, currency: str) -> None:
        """Nothing held and the balance the test expects."""
        setup = self.by_currency[currency]
        assert await balances(client, auth, setup["customer"], currency) == (self.total[currency],) * 2
        assert await open_holds(db, setup["account"]) == 0


@pytest.fixture
def cards() -> Cards:
    return Cards()


class TestCurrencyConversionProperties:
    @hypothesis_settings(
        max_examples=40,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        card_currency=st.sampled_from(CARD_CURRENCIES),
        # half the draws in a currency the card takes: its own, or USD
        currency=st.one_of(st.sampled_from(["USD", "OWN"]), st.sampled_from(REQUEST_CURRENCIES)),
        amount=st.one_of(st.integers(1, 100), st.integers(1, 10**7), st.integers(10**7, 10**12)),
        clearing=st.sampled_from(["partial", "full", "over", "zero"]),
        returned=st.integers(0, 4),
    )
    # the cases of an authorization in another currency every run has, whatever hypothesis draws
    @example(card_currency="USDB", currency="USD", amount=1_250, clearing="partial", returned=2)
    @example(card_currency="USDB", currency="USD", amount=1_250, clearing="over", returned=4)
    @example(card_currency="USDB", currency="USD", amount=5_000_000, clearing="full", returned=3)
    @example(card_currency="USDB", currency="USD", amount=1, clearing="zero", returned=0)
    @example(card_currency="USDB", currency="EUR", amount=1_250, clearing="full", returned=4)
    @example(card_currency="USDC", currency="USD", amount=1_250, clearing="full", returned=4)
    @example(card_currency="USD", currency="USDB", amount=1_250, clearing="full", returned=4)
    async def test_every_amount_the_network_sends_is_converted_exactly_and_the_ledger_verifies(
        self, client, auth, db, runner, cards, card_currency, currency, amount, clearing, returned
    ) -> None:
        """An authorization in (card currency, request currency, amount): held exactly amount × factor, or
        declined with the request recorded as sent and nothing held; its clearing and return, sent in the
        request's currency, settle and credit amount × factor; every example ends with nothing held."""
        currency = card_currency if currency == "OWN" else currency
        await cards.build(client, auth, runner)
        await cards.top_up(client, auth, card_currency)
        setup, factor = cards.by_currency[card_currency], FACTORS.get((card_currency, currency))
        response = await authorize(client, auth, setup["card"], amount, currency=currency)
        assert response.status_code == 200, response.text
        transaction = response.json()
        assert (
            transaction["requestedAmount"]["amount"],
            transaction["requestedAmount"]["currency"]["code"],
        ) == (
            amount,
            currency,
        )
        assert transaction["authorizedAmount"]["currency"]["code"] == card_currency
        if factor is None:
            assert transaction["status"] == "DECLINED", transaction
            assert transaction["declineReason"] == "CURRENCY_MISMATCH"
            assert transaction["authorizedAmount"]["amount"] == 0
            await cards.check(client, auth, db, card_currency)
            return
        held = amount * factor
        assert transaction["authorizedAmount"]["amount"] == held
        if held > cards.total[card_currency]:
            assert transaction["declineReason"] == "INSUFFICIENT_FUNDS", transaction
            assert transaction["pullSummary"]["totalAmount"] == 0
            await cards.check(client, auth, db, card_currency)
            return
        assert transaction["status"] == "AUTHORIZED", transaction
        assert await open_holds(db, setup["account"]) == held
        assert await balances(client, auth, setup["customer"], card_currency) == (
            cards.total[card_currency] - held,
            cards.total[card_currency],
        )
        sent = {"partial": max(1, amount // 3), "full": amount, "over": amount + 7, "zero": 0}[clearing]
        if sent > amount and (sent - amount) * factor > cards.total[card_currency] - held:
            sent = amount  # an excess no balance covers is the operator's loss: test_card_money's business
        cleared = (await clear(client, auth, setup["card"], transaction["id"], sent)).json()
        assert cleared.get("settledAmount", {"amount": 0})["amount"] == sent * factor
        if cleared["status"] == "PARTIALLY_SETTLED":
            cleared = (
                await clear(client, auth, setup["card"], transaction["id"], 0)
            ).json()  # expires the rest
        assert cleared["status"] == ("SETTLED" if sent else "EXPIRED"), cleared
        cards.total[card_currency] -= sent * factor
        back = sent * returned // 4
        if back:
            refunded = (await give_back(client, auth, setup["card"], transaction["id"], back)).json()
            assert refunded["refundedAmount"]["amount"] == back * factor
            assert refunded["status"] == ("REFUNDED" if back == sent else "SETTLED")
            cards.total[card_currency] += back * factor
        await cards.check(client, auth, db, card_currency)
        await assert_ledger_verifies(db)


# ---- every network message, in random sequences, on a USDB card funded by two accounts

OPENINGS = (
    "authorization",
    "financial_authorization",
    "balance_inquiry",
    "credit_authorization",
    "credit_authorization_advice",
    "financial_credit_authorization",
)
messages = st.one_of(
    st.tuples(st.just("fund"), st.integers(0, 1), st.integers(1, 3_000)),
    st.tuples(
        st.just("open"),
        st.sampled_from(OPENINGS),
        st.integers(1, 4_000),
        st.sampled_from(["", "-002", "-005", "-006"]),
    ),
    # (which card transaction: 0 the newest, 1 the one before, …)
    st.tuples(
        st.just("clearing"), st.integers(0, 3), st.sampled_from(["partial", "full", "full", "over", "zero"])
    ),
    st.tuples(st.just("authorization_advice"), st.integers(0, 3), st.sampled_from([1, 2, 3, 8])),
    st.tuples(st.just("return"), st.integers(0, 3), st.integers(1, 4)),
    st.tuples(st.just("return_reversal"), st.integers(0, 3)),
)
CLOSED_STATUSES = ("SETTLED", "REFUNDED", "EXPIRED", "DECLINED")


class Ledgered:
    """What the ledger says of one tenant's card money: per card transaction, the net of the network's
    clearing account and of the operator's loss account; per account, what its open holds reserve."""

    def __init__(self, db: Any, tenant_id: str) -> None:
        self.db, self.tenant_id = db, tenant_id

    async def nets(self, code: str) -> dict[str, int]:
        async with self.db.read() as session:
            rows = await session.execute(
                select(JournalEntryRow.reference, func.sum(PostingRow.amount))
                .join(PostingRow, PostingRow.entry_id == JournalEntryRow.id)
                .join(LedgerAccountRow, LedgerAccountRow.id == PostingRow.account_id)
                .where(JournalEntryRow.tenant_id == self.tenant_id, LedgerAccountRow.code == code)
                .group_by(JournalEntryRow.reference)
            )
            return {reference: int(total) for reference, total in rows.all()}

    async def open_hold_of(self) -> dict[str, int]:
        async with self.db.read() as session:
            rows = await session.execute(
                select(LedgerHoldRow.reference, LedgerHoldRow.remaining).where(
                    LedgerHoldRow.tenant_id == self.tenant_id, LedgerHoldRow.status == "OPEN"
                )
            )
            return {reference: remaining for reference, remaining in rows.all()}


class TestNetworkMessageProperties:
    @hypothesis_settings(
        max_examples=8,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(sequence=st.lists(messages, min_size=6, max_size=16))
    @example(
        sequence=[
            ("open", "authorization", 900, ""),
            ("authorization_advice", 0, 8),  # beyond its source: the hold takes what there is
            ("clearing", 0, "partial"),
            ("clearing", 0, "over"),
            ("open", "financial_authorization", 500, "-006"),
            ("return", 0, 4),
            ("open", "credit_authorization", 700, ""),
            ("clearing", 0, "full"),
            ("return_reversal", 2),
        ]
    )
    @example(
        sequence=[
            ("open", "authorization", 1_500, ""),
            ("clearing", 0, "full"),
            ("return", 0, 2),
            ("return", 0, 4),
            ("return_reversal", 0),
            ("open", "financial_authorization", 2_500, ""),  # spends what the reversal did not take back
            ("return_reversal", 1),  # the first return: the holding account is short, the wallet pays
            ("open", "financial_credit_authorization", 300, ""),
            ("open", "credit_authorization_advice", 400, "-002"),
            ("clearing", 0, "over"),
        ]
    )
    async def test_every_sequence_keeps_the_ledger_balanced_and_each_transaction_accounted_for(
        self, client, db, settings, runner, sequence
    ) -> None:
        """After every message (accepted and applied by its job, or refused with a 4xx): the ledger verifies;
        no customer balance is negative and each account's held money is its open holds; the card network's
        clearing account holds, per card transaction, what the transaction says moved — a purchase's
        settled less returned, minus a credit's settled; a transaction in a closed status keeps no hold; the
        money of the tenant adds up to what was deposited. At the end, expiring what is open leaves nothing
        held."""
        created = await create_platform(db, settings)  # a fresh tenant for every example
        auth = created["sandbox"]
        person = await approved_cardholder(client, auth)
        h = (await internal_account(client, auth, person["id"], "USDB"))["id"]
        w = (await wallet_account(client, auth, person["id"]))["id"]
        deposited = 0
        for account_id, amount in ((h, 2_000), (w, 1_000)):
            await fund(client, auth, account_id, amount)
            deposited += amount
        card = (await active_card(client, auth, runner, person["id"], [h, w]))["id"]
        async with db.read() as session:
            tenant_id = await session.scalar(select(CardRow.tenant_id).where(CardRow.id == card))
        ledgered = Ledgered(db, tenant_id)
        opened: list[str] = []

        async def send(what: str, body: dict[str, Any]) -> None:
            response = await simulate(client, auth, card, what, body)
            assert response.status_code in (202, 400, 409), response.text
            if response.status_code == 202:
                await run_jobs(client)

        async def transactions() -> list[dict[str, Any]]:
            return (await client.get(f"/cards/{card}/transactions", auth=auth, params={"limit": 100})).json()[
                "data"
            ]

        async def check() -> None:
            await assert_ledger_verifies(db)
            holds = await ledgered.open_hold_of()
            for account_id in (h, w):
                available, total = await _usdb(client, auth, person["id"], account_id)
                assert available >= 0
                assert total - available == await open_holds(db, account_id)
            network, loss = (
                await ledgered.nets("clearing:CARD_NETWORK:USDB"),
                await ledgered.nets("loss:CARD:USDB"),
            )
            for t in await transactions():
                settled = (t.get("settledAmount") or {"amount": 0})["amount"]
                refunded = (t.get("refundedAmount") or {"amount": 0})["amount"]
                assert 0 <= refunded <= settled, t
                expected = -settled if t["direction"] == "CREDIT" else settled - refunded
                assert network.get(t["id"], 0) == expected, t
                if t["status"] in CLOSED_STATUSES:
                    assert t["id"] not in holds, t
            customers = 0
            for account_id in (h, w):
                customers += (await _usdb(client, auth, person["id"], account_id))[1]
            assert customers + sum(network.values()) + sum(loss.values()) == deposited

        for action in sequence:
            name, *args = action
            if name == "fund":
                amount = args[1]
                await fund(client, auth, (h, w)[args[0]], amount)
                deposited += amount
            elif name == "open":
                what, amount, suffix = args
                body: dict[str, Any] = {"merchant": {"descriptor": f"SHOP{suffix}"}}
                if what != "balance_inquiry":
                    body |= {"amount": amount, "currency": {"code": "USDB"}}
                await send(what, body)
                opened = [t["id"] for t in reversed(await transactions())]
            elif opened:
                t = (
                    await client.get(f"/card-transactions/{opened[args[0] % len(opened)]}", auth=auth)
                ).json()
                settled = (t.get("settledAmount") or {"amount": 0})["amount"]
                refunded = (t.get("refundedAmount") or {"amount": 0})["amount"]
                authorized = t["authorizedAmount"]["amount"]
                body = {"cardTransactionId": t["id"]}
                if name == "clearing":
                    rest = max(authorized - settled, 0)
                    body["amount"] = {
                        "partial": max(1, rest // 2),
                        "full": max(1, rest),
                        "over": rest + 50,
                        "zero": 0,
                    }[args[1]]
                elif name == "authorization_advice":
                    body["amount"] = max(1, authorized * args[1] // 2)
                elif name == "return":
                    body["amount"] = max(1, (settled - refunded) * args[1] // 4)
                await send(name, body)
            await check()
        for t in await transactions():  # what is left open expires (a refusal: it was not open)
            await send("clearing", {"cardTransactionId": t["id"], "amount": 0})
        await check()
        assert await ledgered.open_hold_of() == {}
        for account_id in (h, w):
            available, total = await _usdb(client, auth, person["id"], account_id)
            assert available == total


async def _usdb(client: Any, auth: Any, customer_id: str, account_id: str) -> tuple[int, int]:
    listed = (
        await client.get(
            "/customers/internal-accounts", auth=auth, params={"customerId": customer_id, "currency": "USDB"}
        )
    ).json()["data"]
    [account] = [a for a in listed if a["id"] == account_id]
    return account["balance"]["amount"], account["totalBalance"]["amount"]
