"""The ledger's reads for the console: what a transaction caused, an account's statement, accounts with their
balances, totals per currency and the money flow; each a fixed number of statements however many rows."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from platpay.accounts import service as accounts_service
from platpay.kit import clock
from platpay.kit.pagination import PageParams
from platpay.ledger import service as ledger
from tests.support.statements import count_statements


async def _fund(db, accounts, account, amount, reference="Transaction:fund"):
    async with db.transaction() as session:
        return await ledger.post(
            session,
            tenant_id=accounts["tenant"],
            kind="FUNDING",
            reference=reference,
            legs=[
                ledger.Leg(accounts["source"], "USD", -amount),
                ledger.Leg(account, "USD", amount),
            ],
        )


async def _move(db, accounts, amount, reference):
    async with db.transaction() as session:
        return await ledger.post(
            session,
            tenant_id=accounts["tenant"],
            kind="TRANSFER",
            reference=reference,
            legs=[ledger.Leg(accounts["a"], "USD", -amount), ledger.Leg(accounts["b"], "USD", amount)],
        )


class TestEntriesForTransaction:
    async def test_each_entry_with_its_postings_and_the_accounts_they_hit(self, db, accounts):
        await _fund(db, accounts, accounts["a"], 1000)
        first = await _move(db, accounts, 100, "Transaction:t1")
        second = await _move(db, accounts, 50, "Transaction:t1")
        await _move(db, accounts, 7, "Transaction:other")
        async with db.read() as session:
            entries = await ledger.entries_for_transaction(
                session, tenant_id=accounts["tenant"], transaction_id="Transaction:t1"
            )
        assert [e.id for e in entries] == [first.id, second.id]
        postings = entries[0].postings
        assert {(p.account_id, p.side, p.amount, p.account_kind, p.currency) for p in postings} == {
            (accounts["a"], "DEBIT", -100, "INTERNAL", "USD"),
            (accounts["b"], "CREDIT", 100, "INTERNAL", "USD"),
        }
        assert postings[0].account_code.startswith("internal:")

    async def test_another_tenants_transaction_shows_nothing(self, db, accounts):
        await _fund(db, accounts, accounts["a"], 10, reference="Transaction:mine")
        async with db.read() as session:
            assert (
                await ledger.entries_for_transaction(
                    session, tenant_id="Tenant:someone-else", transaction_id="Transaction:mine"
                )
                == []
            )

    async def test_one_statement_however_many_entries(self, db, accounts):
        await _fund(db, accounts, accounts["a"], 1000)
        counts = []
        for n in (1, 6):
            for _ in range(n):
                await _move(db, accounts, 1, f"Transaction:n{n}")
            async with db.read() as session:
                with count_statements(db) as statements:
                    entries = await ledger.entries_for_transaction(
                        session, tenant_id=accounts["tenant"], transaction_id=f"Transaction:n{n}"
                    )
            assert len(entries) == n
            counts.append(statements.count)
        assert counts == [1, 1]


class TestAccountStatement:
    async def test_newest_first_with_the_balance_after_each_line_across_pages(self, db, accounts):
        await _fund(db, accounts, accounts["a"], 1000)
        for amount in (10, 20, 30, 40):
            await _move(db, accounts, amount, f"Transaction:{amount}")
        lines, params = [], PageParams(limit=2, after_id=None)
        async with db.read() as session:
            while True:
                with count_statements(db) as statements:
                    page = await ledger.account_statement(
                        session, tenant_id=accounts["tenant"], ledger_account_id=accounts["a"], params=params
                    )
                assert statements.count == 4  # count, page, the newest line's balance, the page's changes
                lines += page.items
                if not page.has_more:
                    break
                params = PageParams(limit=2, after_id=page.items[-1].id)
        assert [line.available_change for line in lines] == [-40, -30, -20, -10, 1000]
        assert [line.available_after for line in lines] == [900, 940, 970, 990, 1000]


class TestAccountsWithBalances:
    async def test_available_held_and_open_holds_one_statement_a_page(self, db, accounts):
        await _fund(db, accounts, accounts["a"], 1000)
        async with db.transaction() as session:
            await ledger.place_hold(
                session, tenant_id=accounts["tenant"], account_id=accounts["a"], currency="USD", amount=300,
                reference="CardTransaction:h1",
            )  # fmt: skip
        seen, params = {}, PageParams(limit=1, after_id=None, descending=False)
        async with db.read() as session:
            while True:
                with count_statements(db) as statements:
                    page = await ledger.list_accounts_with_balances(
                        session, tenant_id=accounts["tenant"], params=params
                    )
                assert statements.count == 1
                seen.update({account.id: account for account in page.items})
                if not page.has_more:
                    break
                params = PageParams(limit=1, after_id=page.items[-1].id, descending=False)
        a = seen[accounts["a"]]
        assert (a.available, a.held, a.total, a.open_holds, a.kind) == (700, 300, 1000, 1, "INTERNAL")
        assert seen[accounts["source"]].available == -1000
        assert {accounts["a"], accounts["b"], accounts["source"]} <= set(seen)  # and the platform's own

    async def test_narrowed_to_an_owner_by_kind_or_ids(self, db, accounts):
        async with db.read() as session:
            internal = await ledger.list_accounts_with_balances(
                session,
                tenant_id=accounts["tenant"],
                params=PageParams(limit=10, after_id=None),
                kind="INTERNAL",
            )
            only_b = await ledger.list_accounts_with_balances(
                session,
                tenant_id=accounts["tenant"],
                params=PageParams(limit=10, after_id=None),
                account_ids=sa.select(sa.literal(accounts["b"])),
            )
            foreign = await ledger.list_accounts_with_balances(
                session, tenant_id="Tenant:someone-else", params=PageParams(limit=10, after_id=None)
            )
        assert {accounts["a"], accounts["b"]} <= {a.id for a in internal.items}
        assert {a.kind for a in internal.items} == {"INTERNAL"}
        assert [a.id for a in only_b.items] == [accounts["b"]]
        assert foreign.items == []


class TestBalancesByCurrency:
    async def test_platform_apart_from_customers(self, db, accounts):
        await _fund(db, accounts, accounts["a"], 1000)
        await _fund(db, accounts, accounts["b"], 250)
        platform_ids = accounts_service.internal_account_ids_of(
            tenant_id=accounts["tenant"], customer_id=None
        )
        async with db.read() as session:
            with count_statements(db) as statements:
                by_currency = await ledger.balances_by_currency(
                    session,
                    tenant_id=accounts["tenant"],
                    platform_accounts=sa.select(sa.literal(accounts["b"])),
                )
            real = await ledger.balances_by_currency(
                session, tenant_id=accounts["tenant"], platform_accounts=platform_ids
            )
        assert statements.count == 1
        usd = next(t for t in by_currency if t.currency == "USD")
        assert (usd.platform_available, usd.customers_available) == (250, 1000)
        # the platform's own USD account (opened with the platform) holds nothing; a and b are not its
        usd = next(t for t in real if t.currency == "USD")
        assert (usd.platform_available, usd.platform_held, usd.customers_available) == (0, 0, 1250)


class TestMoneyFlow:
    async def test_in_from_outside_out_to_outside_internal_moves_are_neither(self, db, accounts):
        start = clock.now()
        await _fund(db, accounts, accounts["a"], 1000)
        await _move(db, accounts, 100, "Transaction:inside")
        async with db.transaction() as session:
            clearing = await ledger.system_account(
                session, tenant_id=accounts["tenant"], kind=ledger.CLEARING, currency="USD", qualifier="ACH"
            )
            await ledger.post(
                session,
                tenant_id=accounts["tenant"],
                kind="TRANSFER_OUT",
                reference="Transaction:out",
                legs=[ledger.Leg(accounts["b"], "USD", -60), ledger.Leg(clearing, "USD", 60)],
            )
        async with db.read() as session:
            with count_statements(db) as statements:
                flows = await ledger.money_flow(
                    session, tenant_id=accounts["tenant"], since=start - timedelta(days=1)
                )
            months = await ledger.money_flow(
                session, tenant_id=accounts["tenant"], since=start - timedelta(days=1), bucket="month"
            )
            later = await ledger.money_flow(
                session, tenant_id=accounts["tenant"], since=start + timedelta(days=1)
            )
        assert statements.count == 1
        assert [(f.period, f.currency, f.money_in, f.money_out) for f in flows] == [
            (start.date(), "USD", 1000, 60)
        ]
        assert [(m.period, m.money_in) for m in months] == [(start.date().replace(day=1), 1000)]
        assert later == []
