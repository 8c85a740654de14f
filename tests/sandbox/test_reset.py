"""Per-tenant reset (POST /sandbox/reset and `platpay sandbox reset`): the tenant's data gone in one
transaction, its credentials, configuration and clock kept, other tenants untouched, the ledger verified
(the db fixture verifies it after every test)."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import func, select, text, true
from sqlalchemy.dialects import sqlite as sqlite_dialect
from typer.testing import CliRunner

from platpay import cli, domains
from platpay.db.base import Base
from platpay.ledger import repository as ledger_repository
from platpay.sandbox import repository as sandbox_repository
from platpay.sandbox import service as sandbox_service
from tests.factories import (
    account_destination,
    account_source,
    create_platform,
    customer,
    fund,
    internal_account,
    mxn_account,
    quote,
)


async def _populate(client, auth) -> dict[str, Any]:
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 50_000)
    payee = await mxn_account(client, auth, person["id"])
    created = await quote(
        client, auth, source=account_source(usd["id"]), destination=account_destination(payee["id"])
    )
    assert created.status_code == 201, created.text
    assert (await client.post(f"/quotes/{created.json()['id']}/execute", auth=auth)).status_code == 200
    return {"customer": person, "quote": created.json()}


class TestReset:
    async def test_reset_wipes_one_tenant_only(self, client, auth, db, settings, runner, receiver, platform):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        mine = await _populate(client, auth)
        theirs = await _populate(client, other)
        await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 5})
        await runner.run_until_idle()
        reset = await client.post("/sandbox/reset", auth=auth)
        assert reset.status_code == 200, reset.text
        deleted = reset.json()["deleted"]
        assert deleted["customers"] == 1 and deleted["quotes"] == 1 and deleted["postings"] > 0
        listed = (await client.get("/customers", auth=auth)).json()
        assert listed["data"] == []
        # not a row of the tenant left in a table the reset clears (those read through their parents too), but
        # the platform's own internal accounts, opened again
        async with db.read() as session:
            mine_tenant = await session.scalar(
                text("SELECT id FROM tenants WHERE platform_id = :platform AND environment = 'sandbox'"),
                {"platform": platform["platform_id"]},
            )
            left = {
                table.name: await session.scalar(
                    select(func.count())
                    .select_from(table)
                    .where(table.c.tenant_id == mine_tenant)
                    .where(table.c.customer_id.is_not(None) if table.name == "internal_accounts" else true())
                )
                for table in [*sandbox_service.tenant_tables(), Base.metadata.tables["postings"]]
            }
        assert not any(left.values()), {name: count for name, count in left.items() if count}
        assert (await client.get(f"/quotes/{mine['quote']['id']}", auth=auth)).status_code == 404
        assert (await client.get("/transactions", auth=auth)).json()["data"] == []
        # the credentials, the configuration and the clock stay
        config = (await client.get("/config", auth=auth)).json()
        assert config["webhookEndpoint"] == receiver.url
        assert (await client.get("/sandbox/clock", auth=auth)).json()["offsetSeconds"] >= 5
        # the other platform's sandbox keeps everything
        assert (await client.get(f"/customers/{theirs['customer']['id']}", auth=other)).status_code == 200
        assert (await client.get(f"/quotes/{theirs['quote']['id']}", auth=other)).status_code == 200
        # the reset sandbox works as new: the platform's accounts are there, money moves
        again = await _populate(client, auth)
        assert again["customer"]["id"] != mine["customer"]["id"]
        await runner.run_until_idle()

    async def test_cli_twin(self, client, auth, db, settings, platform, monkeypatch):
        await _populate(client, auth)
        monkeypatch.setenv("PLATPAY_DATABASE_URL", settings.database_url)
        monkeypatch.setattr(cli, "get_settings", lambda: settings)
        result = await asyncio.to_thread(
            CliRunner().invoke, cli.app, ["sandbox", "reset", "--platform", platform["platform_id"], "--json"]
        )
        assert result.exit_code == 0, result.output
        assert '"customers": 1' in result.output
        assert (await client.get("/customers", auth=auth)).json()["data"] == []
        unknown = await asyncio.to_thread(
            CliRunner().invoke, cli.app, ["sandbox", "reset", "--platform", "Platform:nope"]
        )
        assert unknown.exit_code == 2


def test_every_tenant_table_is_covered() -> None:
    """A new table either carries tenant_id (and a reset deletes its rows, or keeps them by KEPT) or is
    listed as holding no tenant rows: nothing of a tenant survives a reset unnoticed."""
    domains.load()
    tables = {table.name: table for table in Base.metadata.sorted_tables}
    uncovered = sorted(
        name
        for name, table in tables.items()
        if "tenant_id" not in table.c and name not in sandbox_service.WITHOUT_TENANT
    )
    assert not uncovered, (
        f"tables neither tenant-scoped nor listed in sandbox.service.WITHOUT_TENANT: {uncovered}"
    )
    assert set(tables) >= sandbox_service.KEPT and set(tables) >= sandbox_service.WITHOUT_TENANT
    reset = {table.name for table in sandbox_service.tenant_tables()}
    assert reset == {name for name, table in tables.items() if "tenant_id" in table.c} - (
        sandbox_service.KEPT | sandbox_service.CLEARED_BY_DOMAIN
    )


# Read whole by a reset: no index finds its rows by tenant, and they hang from no parent row (an agent's audit
# head: one row per agent). A table added here is read whole, every tenant's rows, in the reset's transaction.
READ_WHOLE = {"agent_audit_heads"}


def test_a_reset_reads_the_tenants_rows_only(sqlite_template: Path) -> None:
    """Each table's delete (and the ledger's postings') finds the tenant's rows by an index, on SQLite: by
    the tenant where an index begins with it, else through the parent rows they belong to (a webhook's
    attempts by its deliveries, postings by their entries), never by reading the table whole."""
    domains.load()
    statements = {
        table.name: table.delete().where(sandbox_repository.of_tenant(table, "Tenant:t"))
        for table in sandbox_service.tenant_tables()
    }
    statements["postings"] = ledger_repository.delete_postings_of("Tenant:t")
    dialect = sqlite_dialect.dialect()
    with contextlib.closing(sqlite3.connect(sqlite_template)) as connection:
        read_whole = set()
        for name, statement in statements.items():
            sql = str(statement.compile(dialect=dialect))
            plan = [
                row[3] for row in connection.execute(f"EXPLAIN QUERY PLAN {sql}", [None] * sql.count("?"))
            ]
            if any(line.startswith(f"SCAN {name}") for line in plan):
                read_whole.add(name)
    assert read_whole == READ_WHOLE
    assert "webhook_deliveries.tenant_id" in str(statements["webhook_attempts"].compile(dialect=dialect))
