"""`ledger.service.verify(tenant_id=…)`: the ledger's check over one tenant's rows (the console's "Verify the
ledger"), which finds that tenant's problems and neither counts nor names another tenant's; and
`account_with_balance`, one account of the tenant or the same not-found for an unknown or foreign id."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from platpay.ledger import service as ledger
from platpay.ledger.errors import LedgerAccountNotFound
from tests.factories import create_platform
from tests.ledger.support import fund


async def _other_tenant(db, settings) -> str:
    created = await create_platform(db, settings, name="Other")
    async with db.read() as session:
        return await session.scalar(
            text("SELECT id FROM tenants WHERE environment = 'sandbox' AND platform_id = :p"),
            {"p": created["platform_id"]},
        )


async def _skew(db, account_id: str, by: int) -> None:
    async with db.transaction() as session:
        await session.execute(
            text("UPDATE ledger_accounts SET available = available + :by WHERE id = :a"),
            {"a": account_id, "by": by},
        )


class TestVerifyOneTenant:
    async def test_counts_and_trial_balances_are_the_tenants_own(self, db, settings, accounts):
        await fund(db, accounts, 700)
        other = await _other_tenant(db, settings)
        async with db.read() as session:
            whole = await ledger.verify(session)
            mine = await ledger.verify(session, tenant_id=accounts["tenant"])
            theirs = await ledger.verify(session, tenant_id=other)
        assert whole.ok and mine.ok and theirs.ok
        assert {t["tenantId"] for t in mine.trial_balances} == {accounts["tenant"]}
        assert all(t["tenantId"] == other for t in theirs.trial_balances)
        assert mine.counts["entries"] == 1 and mine.counts["postings"] == 2
        assert theirs.counts["entries"] == 0
        assert mine.counts["accounts"] + theirs.counts["accounts"] <= whole.counts["accounts"]

    async def test_a_tenants_problem_is_found_for_it_only(self, db, settings, accounts):
        await fund(db, accounts, 700)
        other = await _other_tenant(db, settings)
        await _skew(db, accounts["a"], 5)
        try:
            async with db.read() as session:
                mine = await ledger.verify(session, tenant_id=accounts["tenant"])
                theirs = await ledger.verify(session, tenant_id=other)
            assert not mine.ok and theirs.ok
            assert [m["accountId"] for m in mine.balance_mismatches] == [accounts["a"]]
            assert [(t["currency"], t["total"]) for t in mine.nonzero_trial_balances] == [("USD", 5)]
        finally:
            await _skew(db, accounts["a"], -5)


class TestAccountWithBalance:
    async def test_one_account_or_one_not_found(self, db, settings, accounts):
        await fund(db, accounts, 700)
        other = await _other_tenant(db, settings)
        async with db.read() as session:
            found = await ledger.account_with_balance(
                session, tenant_id=accounts["tenant"], ledger_account_id=accounts["a"]
            )
            assert (found.id, found.kind, found.available, found.held, found.open_holds) == (
                accounts["a"], "INTERNAL", 700, 0, 0,
            )  # fmt: skip
            for tenant_id, account_id in ((other, accounts["a"]), (accounts["tenant"], "InternalAccount:zz")):
                with pytest.raises(LedgerAccountNotFound) as refused:
                    await ledger.account_with_balance(
                        session, tenant_id=tenant_id, ledger_account_id=account_id
                    )
                assert refused.value.status == 404 and refused.value.code == "REFERENCE_NOT_FOUND"
