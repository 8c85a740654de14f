"""Every status column, and every closed-set kind/type column, refuses a value its enum does not have
(platpay.db.base.check_in, migration 0022_status_checks), on SQLite and PostgreSQL,
whoever writes it; each migration keeps the rows it finds and refuses to run over one it would have to
refuse."""

from __future__ import annotations

import asyncio
import importlib.util
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.exc import IntegrityError

import platpay
from platpay import domains
from platpay.accounts.state import InternalAccountType
from platpay.agents.state import ActionType
from platpay.db import migrate
from platpay.db.base import Base, check_in
from platpay.jobs.models import JobRow
from platpay.jobs.state import JobState
from platpay.ledger.state import LedgerAccountKind
from platpay.payments.state import TransactionKind, TransactionType
from tests import factories


class _Colour(StrEnum):
    RED = "RED"
    DARK_BLUE = "DARK_BLUE"


def _status_checks() -> dict[str, set[str]]:
    """table -> the names of its `known_*` CHECKs, as the models declare them."""
    domains.load()
    checks: dict[str, set[str]] = {}
    for table in Base.metadata.sorted_tables:
        for constraint in table.constraints:
            if isinstance(constraint, sa.CheckConstraint) and str(constraint.name).startswith(
                f"ck_{table.name}_known_"
            ):
                checks.setdefault(table.name, set()).add(str(constraint.name))
    return checks


class TestCheckIn:
    def test_it_lists_the_members_in_order_under_a_stable_name(self):
        table = sa.Table(
            "paints", sa.MetaData(naming_convention={"ck": "ck_%(table_name)s_%(constraint_name)s"})
        )
        table.append_constraint(check_in("colour", _Colour))
        (constraint,) = [c for c in table.constraints if isinstance(c, sa.CheckConstraint)]
        assert constraint.name == "ck_paints_known_colour"
        assert str(constraint.sqltext) == "colour IN ('RED', 'DARK_BLUE')"

    def test_a_value_with_a_quote_is_refused(self):
        with pytest.raises(ValueError, match="quote"):
            check_in("colour", StrEnum("Quoted", {"ODD": "O'DD"}))


async def test_every_status_column_has_its_check_in_the_migrated_schema(db):
    """Alembic's comparison (test_migrations.py) skips CHECK constraints: this compares them by name."""
    expected = _status_checks()
    assert {"transactions", "internal_accounts", "external_accounts", "jobs", "ledger_holds", "cards"} <= set(
        expected
    )
    assert sum(len(names) for names in expected.values()) == 22 + 5  # statuses, kinds/types

    def reflected(connection: sa.Connection) -> dict[str, set[str]]:
        inspector = sa.inspect(connection)
        return {
            name: {c["name"] for c in inspector.get_check_constraints(name) if "_known_" in (c["name"] or "")}
            for name in expected
        }

    async with db.engine.connect() as connection:
        assert await connection.run_sync(reflected) == expected


async def _customer_with_accounts(client, auth) -> str:
    person = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
    return person["id"]


@pytest.mark.parametrize(
    ("statement", "value"),
    [
        ("UPDATE customers SET kyc_status = :value WHERE id = :customer", "VERIFIED"),
        ("UPDATE internal_accounts SET status = :value WHERE customer_id = :customer", "active"),
        ("UPDATE internal_accounts SET status = :value WHERE customer_id = :customer", "ACTIVE "),
        ("UPDATE internal_accounts SET type = :value WHERE customer_id = :customer", "INTERNAL"),
        ("UPDATE internal_accounts SET type = :value WHERE customer_id = :customer", "internal_fiat"),
    ],
)
async def test_an_unknown_status_is_refused_by_the_database(db, client, auth, statement, value):
    customer = await _customer_with_accounts(client, auth)
    with pytest.raises(IntegrityError, match=r"(?i)check"):
        async with db.transaction() as session:
            await session.execute(sa.text(statement), {"value": value, "customer": customer})


@pytest.mark.parametrize("state", [JobState.QUEUED, "FINISHED"])
async def test_a_job_is_written_in_a_known_state_only(db, state):
    now = datetime(2026, 12, 1, tzinfo=UTC)
    job = {"id": f"Job:{state}", "kind": "test.noop", "lane": "default", "payload": {}, "state": state}
    job |= {"run_at": now, "attempts": 0, "max_attempts": 1, "created_at": now, "updated_at": now}
    if state in set(JobState):
        async with db.transaction() as session:
            session.add(JobRow(**job))
        with pytest.raises(IntegrityError, match=r"(?i)check"):  # and it moves to known states only
            async with db.transaction() as session:
                await session.execute(
                    sa.update(JobRow).where(JobRow.id == job["id"]).values(state="FINISHED")
                )
        async with db.transaction() as session:  # (done, so the runner leaves it alone)
            await session.execute(sa.update(JobRow).where(JobRow.id == job["id"]).values(state=JobState.DONE))
        return
    with pytest.raises(IntegrityError, match=r"(?i)check"):
        async with db.transaction() as session:
            session.add(JobRow(**job))


async def _count(db, table: str) -> int:
    async with db.read() as session:
        return (await session.execute(sa.text(f"SELECT count(*) FROM {table}"))).scalar_one()


async def test_0022_keeps_every_row_and_refuses_to_run_over_an_unknown_status(db, database_url, client, auth):
    """Rows written before 0022 stay (the SQLite rebuild of tables other tables reference included); a row
    holding a status no enum has stops the upgrade, naming it, until it is corrected."""
    customer = await _customer_with_accounts(client, auth)
    tables = ("customers", "internal_accounts", "ledger_accounts", "jobs", "webhook_deliveries")
    before = {table: await _count(db, table) for table in tables}
    assert before["customers"] >= 1 and before["internal_accounts"] >= 1
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0021_txn")
    try:
        async with db.transaction() as session:  # a status written by hand, which 0022 would refuse
            await session.execute(
                sa.text("UPDATE customers SET kyc_status = 'LEGACY' WHERE id = :id"), {"id": customer}
            )
        with pytest.raises(RuntimeError, match=r"customers\.kyc_status = 'LEGACY'"):
            await migrate.upgrade_async(database_url)
        async with db.read() as session:
            assert await migrate.current_revision(session) == "0021_txn"
    finally:
        async with db.transaction() as session:
            await session.execute(
                sa.text("UPDATE customers SET kyc_status = 'UNVERIFIED' WHERE id = :id"), {"id": customer}
            )
        await migrate.upgrade_async(database_url)
    async with db.read() as session:
        assert await migrate.current_revision(session) == migrate.head_revision()
    assert {table: await _count(db, table) for table in tables} == before
    response = await client.get(f"/customers/{customer}", auth=auth)
    assert response.status_code == 200 and response.json()["kycStatus"] == "UNVERIFIED"
    with pytest.raises(IntegrityError, match=r"(?i)check"):
        async with db.transaction() as session:
            await session.execute(
                sa.text("UPDATE customers SET kyc_status = 'LEGACY' WHERE id = :id"), {"id": customer}
            )


def _migration(name: str):
    path = Path(platpay.__file__).parent / "migrations" / "versions" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"migration_{name}", path)
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    return migration


def test_the_migration_adds_the_models_conditions_value_for_value():
    """0022 froze each enum's values (statuses, kinds/types): the same lists, in the same order, as the
    models' check_in today, each CHECK added once."""
    domains.load()
    declared = {
        str(constraint.name): str(constraint.sqltext)
        for table in Base.metadata.sorted_tables
        for constraint in table.constraints
        if isinstance(constraint, sa.CheckConstraint) and "_known_" in str(constraint.name)
    }
    added: dict[str, str] = {}
    for name in ("0022_status_checks",):
        migration = _migration(name)
        for table, column, values in migration._CHECKS:
            assert migration._name(table, column) not in added
            added[migration._name(table, column)] = migration._condition(column, values)
    assert added == {
        name: condition
        for name, condition in declared.items()
        if name not in ("ck_ledger_holds_known_status", "ck_postings_known_bucket")  # since 0010 and 0003
    }


def test_0022_covers_the_kind_and_type_enums():
    """The closed sets of the state modules that are columns: transactions' type and kind, internal
    accounts' type, agent actions' type, ledger accounts' kind."""
    migration = _migration("0022_status_checks")
    kinds = {("transactions", "type"), ("transactions", "kind"), ("internal_accounts", "type")}
    kinds |= {("agent_actions", "type"), ("ledger_accounts", "kind")}
    checks = {(table, column): values for table, column, values in migration._CHECKS}
    assert {key: checks.get(key) for key in kinds} == {
        ("transactions", "type"): tuple(TransactionType),
        ("transactions", "kind"): tuple(TransactionKind),
        ("internal_accounts", "type"): tuple(InternalAccountType),
        ("agent_actions", "type"): tuple(ActionType),
        ("ledger_accounts", "kind"): tuple(LedgerAccountKind),
    }


async def test_0022_keeps_every_row_and_refuses_to_run_over_an_unknown_kind(db, database_url, client, auth):
    """As for statuses: rows written before 0022 stay, a row holding a type no enum has stops the upgrade, naming it,
    and once migrated the database refuses an unknown type or kind on a transaction."""
    customer = (await factories.customer(client, auth))["id"]
    account = await factories.internal_account(client, auth, customer)
    await factories.fund(client, auth, account["id"], 1_000)
    bank = await factories.external_account(client, auth, customer)
    body = {"source": {"accountId": account["id"]}, "destination": {"accountId": bank["id"]}, "amount": 100}
    response = await client.post("/transfer-out", auth=auth, json=body)
    assert response.status_code == 201, response.text
    tables = ("transactions", "internal_accounts", "ledger_accounts", "agent_actions", "postings")
    before = {table: await _count(db, table) for table in tables}
    assert before["transactions"] >= 1 and before["internal_accounts"] >= 1
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0021_txn")
    try:
        async with db.transaction() as session:  # a type written by hand, which 0022 would refuse
            await session.execute(
                sa.text("UPDATE internal_accounts SET type = 'LEGACY' WHERE id = :id"), {"id": account["id"]}
            )
        with pytest.raises(RuntimeError, match=r"internal_accounts\.type = 'LEGACY'"):
            await migrate.upgrade_async(database_url)
        async with db.read() as session:
            assert await migrate.current_revision(session) == "0021_txn"
    finally:
        async with db.transaction() as session:
            await session.execute(
                sa.text("UPDATE internal_accounts SET type = :type WHERE id = :id"),
                {"type": account["type"], "id": account["id"]},
            )
        await migrate.upgrade_async(database_url)
    async with db.read() as session:
        assert await migrate.current_revision(session) == migrate.head_revision()
    assert {table: await _count(db, table) for table in tables} == before
    assert (await factories.internal_account(client, auth, customer))["id"] == account["id"]
    for column, value in (("type", "SIDEWAYS"), ("kind", "GIFT")):
        with pytest.raises(IntegrityError, match=r"(?i)check"):
            async with db.transaction() as session:
                await session.execute(sa.text(f"UPDATE transactions SET {column} = :value"), {"value": value})
