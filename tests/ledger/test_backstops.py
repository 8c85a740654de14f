"""The database's own backstops for the ledger (migration 0003): CHECK constraints refuse what the ledger
code never writes, whoever writes it. Every test goes around the service (raw SQL, or ORM rows), expects
IntegrityError, and ends with the ledger verifying (the `db` fixture checks it too). Runs on every backend."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import CheckConstraint, inspect, text, update
from sqlalchemy.exc import IntegrityError

from platpay.ledger import service as ledger
from platpay.ledger.errors import InsufficientFunds
from platpay.ledger.models import LedgerAccountRow, PostingRow

NOW = datetime(2026, 1, 1, tzinfo=UTC)


async def _refused(db: Any, statement: Any, params: dict[str, Any] | None = None) -> None:
    """`statement` (raw SQL or a Core statement) raises IntegrityError, and nothing it tried stays."""
    with pytest.raises(IntegrityError, match=r"(?i)check"):
        async with db.transaction() as session:
            await session.execute(statement, params or {})


async def _funded(db: Any, accounts: dict[str, Any], amount: int = 1_000) -> ledger.Entry:
    async with db.transaction() as session:
        return await ledger.post(
            session,
            tenant_id=accounts["tenant"],
            kind="FUNDING",
            reference="backstops",
            legs=[
                ledger.Leg(accounts["source"], "USD", -amount),
                ledger.Leg(accounts["a"], "USD", amount),
            ],
        )


async def _verify(db: Any) -> ledger.VerifyReport:
    async with db.read() as session:
        report = await ledger.verify(session)
    assert report.ok, "\n".join(report.lines())
    return report


def _posting(accounts: dict[str, Any], entry_id: str, **overrides: Any) -> dict[str, Any]:
    return {
        "id": "Posting:raw",
        "entry_id": entry_id,
        "account_id": accounts["a"],
        "tenant_id": accounts["tenant"],
        "currency": "USD",
        "bucket": "AVAILABLE",
        "amount": 1,
        "created_at": NOW,
        **overrides,
    }


_INSERT_POSTING = text(
    "INSERT INTO postings (id, entry_id, account_id, tenant_id, currency, bucket, amount, created_at) "
    "VALUES (:id, :entry_id, :account_id, :tenant_id, :currency, :bucket, :amount, :created_at)"
)


async def test_the_migrated_schema_has_the_models_check_constraints(db):
    """Alembic's schema comparison (tests/test_migrations.py) does not compare CHECK constraints: this does,
    by name, for the ledger's tables."""
    expected = {
        table.name: {c.name for c in table.constraints if isinstance(c, CheckConstraint)}
        for table in (LedgerAccountRow.__table__, PostingRow.__table__)
    }
    assert expected == {
        "ledger_accounts": {
            "ck_ledger_accounts_non_negative",
            "ck_ledger_accounts_internal_never_negative",
            "ck_ledger_accounts_known_kind",
        },
        "postings": {"ck_postings_nonzero_amount", "ck_postings_known_bucket"},
    }

    def reflected(connection: Any) -> dict[str, set[str]]:
        inspector = inspect(connection)
        return {name: {c["name"] for c in inspector.get_check_constraints(name)} for name in expected}

    async with db.engine.connect() as connection:
        assert await connection.run_sync(reflected) == expected


class TestPostings:
    async def test_a_zero_posting_is_refused(self, db, accounts):
        entry = await _funded(db, accounts)
        await _refused(db, _INSERT_POSTING, _posting(accounts, entry.id, amount=0))

    async def test_a_zero_orm_posting_is_refused(self, db, accounts):
        entry = await _funded(db, accounts)
        with pytest.raises(IntegrityError, match=r"(?i)check"):
            async with db.transaction() as session:
                session.add(PostingRow(**_posting(accounts, entry.id, amount=0)))

    @pytest.mark.parametrize("bucket", ["PENDING", "available", "", "HELD "])
    async def test_an_unknown_bucket_is_refused(self, db, accounts, bucket):
        entry = await _funded(db, accounts)
        await _refused(db, _INSERT_POSTING, _posting(accounts, entry.id, bucket=bucket))

    async def test_an_unknown_orm_bucket_is_refused(self, db, accounts):
        entry = await _funded(db, accounts)
        with pytest.raises(IntegrityError, match=r"(?i)check"):
            async with db.transaction() as session:
                session.add(PostingRow(**_posting(accounts, entry.id, bucket="RESERVED")))

    async def test_the_ledger_s_own_buckets_and_signs_are_accepted(self, db, accounts):
        """The constraints name exactly the buckets the code uses: a raw posting to each, either sign, is
        stored (then removed again, since a lone posting would not verify)."""
        entry = await _funded(db, accounts)
        rows = [
            _posting(accounts, entry.id, id=f"Posting:raw{i}", bucket=bucket, amount=amount)
            for i, (bucket, amount) in enumerate(
                [(ledger.AVAILABLE, 1), (ledger.AVAILABLE, -1), (ledger.HELD, 1), (ledger.HELD, -1)]
            )
        ]
        async with db.transaction() as session:
            for row in rows:
                await session.execute(_INSERT_POSTING, row)
            await session.execute(text("DELETE FROM postings WHERE id LIKE 'Posting:raw%'"))


class TestBalances:
    @pytest.mark.parametrize("column", ["available", "held"])
    async def test_an_internal_account_cannot_go_negative(self, db, accounts, column):
        await _funded(db, accounts)
        await _refused(
            db, text(f"UPDATE ledger_accounts SET {column} = -1 WHERE id = :a"), {"a": accounts["a"]}
        )

    async def test_an_internal_account_cannot_go_negative_through_the_orm(self, db, accounts):
        await _funded(db, accounts, amount=100)
        statement = (
            update(LedgerAccountRow)
            .where(LedgerAccountRow.id == accounts["a"])
            .values(available=LedgerAccountRow.available - 101)
        )
        await _refused(db, statement)

    async def test_an_internal_account_cannot_be_allowed_negative(self, db, accounts):
        await _refused(
            db,
            text("UPDATE ledger_accounts SET allow_negative = :t WHERE id = :a"),
            {"a": accounts["a"], "t": True},
        )

    async def test_an_internal_account_cannot_be_opened_negative(self, db, accounts):
        row = {
            "id": "InternalAccount:negative",
            "tenant_id": accounts["tenant"],
            "currency": "USD",
            "kind": ledger.INTERNAL,
            "code": "internal:InternalAccount:negative",
            "allow_negative": False,
            "available": -1,
            "held": 0,
            "created_at": NOW,
            "updated_at": NOW,
        }
        with pytest.raises(IntegrityError, match=r"(?i)check"):
            async with db.transaction() as session:
                session.add(LedgerAccountRow(**row))
        with pytest.raises(IntegrityError, match=r"(?i)check"):
            async with db.transaction() as session:
                session.add(LedgerAccountRow(**{**row, "available": 0, "allow_negative": True}))

    async def test_a_system_account_may_go_negative(self, db, accounts):
        """Only what the code guarantees is constrained: system accounts (here the sandbox funding source)
        go negative as a matter of course, in either bucket."""
        await _funded(db, accounts, amount=250)
        async with db.read() as session:
            assert (await ledger.balances(session, [accounts["source"]]))[
                accounts["source"]
            ].available == -250
        async with db.engine.connect() as connection:  # rolled back: the stored balance must match postings
            await connection.execute(
                text("UPDATE ledger_accounts SET held = -7 WHERE id = :s"), {"s": accounts["source"]}
            )
            await connection.rollback()


async def test_the_money_path_still_works(db, accounts):
    """Through the service nothing changes: funding, a hold and its release, a settle to a clearing account,
    a reversal, and an overdraft refused by the service (InsufficientFunds, before any constraint)."""
    tenant = accounts["tenant"]
    await _funded(db, accounts, amount=1_000)
    async with db.transaction() as session:
        clearing = await ledger.system_account(
            session, tenant_id=tenant, kind=ledger.CLEARING, currency="USD"
        )
        await ledger.post(
            session,
            tenant_id=tenant,
            kind="TRANSFER_OUT_HOLD",
            reference="backstops",
            legs=[ledger.Leg(accounts["a"], "USD", -600), ledger.Leg(accounts["a"], "USD", 600, ledger.HELD)],
        )
        settled = await ledger.post(
            session,
            tenant_id=tenant,
            kind="TRANSFER_OUT_SETTLE",
            reference="backstops",
            legs=[ledger.Leg(accounts["a"], "USD", -600, ledger.HELD), ledger.Leg(clearing, "USD", 600)],
        )
        await ledger.reverse(
            session, tenant_id=tenant, entry_id=settled.id, kind="REVERSAL", reference="backstops"
        )
    with pytest.raises(InsufficientFunds):
        async with db.transaction() as session:
            await ledger.post(
                session,
                tenant_id=tenant,
                kind="TEST",
                reference="backstops",
                legs=[ledger.Leg(accounts["a"], "USD", -401), ledger.Leg(accounts["b"], "USD", 401)],
            )
    async with db.read() as session:
        found = await ledger.balances(session, [accounts["a"], accounts["b"], clearing])
    assert found[accounts["a"]] == ledger.Balance(available=400, held=600)
    assert found[accounts["b"]] == ledger.Balance(0, 0) and found[clearing] == ledger.Balance(0, 0)
    report = await _verify(db)
    assert report.counts["entries"] == 4 and report.counts["postings"] == 8
