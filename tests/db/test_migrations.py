"""One Alembic script set upgrades an empty SQLite and an empty PostgreSQL to exactly the models."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy.exc import IntegrityError

from platpay import domains
from platpay.db import migrate
from platpay.db.base import Base
from platpay.db.types import JsonType, UtcDateTime
from tests.support.onboarding import PERSON, create, verify


async def test_migrated_schema_matches_the_models(db):
    domains.load()

    def diff(connection):
        context = MigrationContext.configure(connection, opts={"compare_type": True, "render_as_batch": True})
        return compare_metadata(context, Base.metadata)

    async with db.engine.connect() as connection:
        differences = await connection.run_sync(diff)
    assert differences == []


async def test_database_is_at_head(db):
    async with db.read() as session:
        assert await migrate.current_revision(session) == migrate.head_revision()


_PLATFORMS = sa.table(
    "platforms",
    *(sa.column(name) for name in ("id", "name", "is_regulated")),
    sa.column("created_at", UtcDateTime()),
    sa.column("updated_at", UtcDateTime()),
)
_TENANTS = sa.table(
    "tenants",
    *(sa.column(name) for name in ("id", "platform_id", "environment", "config_id", "uma_domain")),
    *(sa.column(name) for name in ("webhook_private_key_sealed", "webhook_public_key_pem")),
    sa.column("supported_currencies", JsonType),
    sa.column("created_at", UtcDateTime()),
    sa.column("updated_at", UtcDateTime()),
)
_TRANSACTIONS = sa.table(
    "transactions",
    *(sa.column(name) for name in ("id", "tenant_id", "type", "kind", "status", "fee_amount")),
    *(sa.column(name, JsonType) for name in ("source", "destination", "extra")),
    sa.column("created_at", UtcDateTime()),
    sa.column("updated_at", UtcDateTime()),
)


async def _seed_at_0002_shape(db, now: datetime, approval: dict) -> None:
    """A tenant, an incoming UMA payment whose approval is in extra, and a transfer without one."""
    common = {"tenant_id": "Tenant:m", "type": "INCOMING", "status": "PENDING", "fee_amount": 0}
    common |= {"source": {}, "destination": {}, "created_at": now, "updated_at": now}
    async with db.transaction() as session:
        await session.execute(
            _PLATFORMS.insert().values(
                id="Platform:m", name="m", is_regulated=False, created_at=now, updated_at=now
            )
        )
        await session.execute(
            _TENANTS.insert().values(
                id="Tenant:m",
                platform_id="Platform:m",
                environment="sandbox",
                config_id="Config:m",
                uma_domain="m.test",
                webhook_private_key_sealed="-",
                webhook_public_key_pem="-",
                supported_currencies=[],
                created_at=now,
                updated_at=now,
            )
        )
        await session.execute(
            _TRANSACTIONS.insert(),
            [
                {
                    **common,
                    "id": "Transaction:uma",
                    "kind": "UMA_INCOMING",
                    "extra": {"payoutRail": None, "approval": approval},
                },
                {**common, "id": "Transaction:ach", "kind": "TRANSFER_IN", "extra": {"x": 1}},
            ],
        )


async def test_the_incoming_approval_moves_from_extra_to_columns_and_back(db, database_url):
    """0004 moves extra["approval"] into the approval_* columns (and its downgrade moves it back)."""
    config = migrate.alembic_config(database_url)
    before = ScriptDirectory.from_config(config).get_revision("0004").down_revision
    now = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)
    deadline = now + timedelta(seconds=5)
    approval = {
        "state": "AWAITING_DECISION",
        "timeoutSeconds": 5.0,
        "arrivalDelaySeconds": 30,
        "deadline": deadline.isoformat(),
        "deferredAt": "2026-12-01T09:30:15.123Z",
        "decidedAt": "2026-12-01T09:30:16.500Z",
        "decidedBy": "WEBHOOK",
    }
    await asyncio.to_thread(command.downgrade, config, before)
    try:
        await _seed_at_0002_shape(db, now, approval)
    finally:
        await migrate.upgrade_async(database_url)
    columns = (
        "id, extra, approval_state, approval_deadline, approval_timeout_us, approval_arrival_delay_us, "
        "approval_decided_at, approval_decided_by"
    )
    read = sa.text(f"SELECT {columns} FROM transactions ORDER BY id").columns(
        extra=JsonType, approval_deadline=UtcDateTime(), approval_decided_at=UtcDateTime()
    )
    async with db.read() as session:
        ach, uma = (await session.execute(read)).all()
    assert uma.extra == {"payoutRail": None}
    assert tuple(uma)[2:] == (
        "AWAITING_DECISION",
        deadline,
        5_000_000,
        30_000_000,
        datetime(2026, 12, 1, 9, 30, 16, 500000, tzinfo=UTC),
        "WEBHOOK",
    )
    assert ach.extra == {"x": 1} and tuple(ach)[2:] == (None,) * 6

    await asyncio.to_thread(command.downgrade, config, before)
    try:
        async with db.read() as session:
            rows = (
                await session.execute(
                    sa.text("SELECT id, extra FROM transactions ORDER BY id").columns(extra=JsonType)
                )
            ).all()
    finally:
        await migrate.upgrade_async(database_url)
    restored = {key: value for key, value in approval.items() if key != "deferredAt"}
    assert [tuple(row) for row in rows] == [
        ("Transaction:ach", {"x": 1}),
        ("Transaction:uma", {"payoutRail": None, "approval": {**restored, "arrivalDelaySeconds": 30.0}}),
    ]


async def test_0014_queues_the_backfill_that_gives_wallet_only_customers_their_usdb_holding_account(
    db, database_url, client, auth, runner
):
    """Before 0014 a customer's USDB account was its embedded wallet alone. The upgrade queues the accounts
    backfill job, which opens the missing USDB holding account (and leaves the wallet alone)."""
    person = (await client.post("/customers", auth=auth, json={"customerType": "INDIVIDUAL"})).json()
    listed = "/customers/internal-accounts"
    params = {"customerId": person["id"], "currency": "USDB"}
    before = (await client.get(listed, auth=auth, params=params)).json()["data"]
    wallet, holding = before  # newest first: the wallet is opened after the holding account
    assert (holding["type"], wallet["type"]) == ("INTERNAL_CRYPTO", "EMBEDDED_WALLET")
    await runner.run_until_idle()
    async with db.transaction() as session:  # the customer as 0013 provisioned it: the wallet only
        for table in ("internal_accounts", "ledger_accounts"):
            await session.execute(sa.text(f"DELETE FROM {table} WHERE id = :id"), {"id": holding["id"]})
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0013_agent_token_first_use")
    await migrate.upgrade_async(database_url)
    async with db.read() as session:
        queued = (
            await session.execute(
                sa.text("SELECT kind, state, payload FROM jobs WHERE dedupe_key LIKE '%:0014:%'").columns(
                    payload=JsonType
                )
            )
        ).all()
    # one job per tenant configured with USDB: the platform's sandbox and production tenants
    assert (
        sorted((kind, state, payload["currency"]) for kind, state, payload in queued)
        == [("accounts.backfill_currency", "QUEUED", "USDB")] * 2
    )
    await runner.run_until_idle()
    after = (await client.get(listed, auth=auth, params=params)).json()["data"]
    assert [a["type"] for a in after] == ["INTERNAL_CRYPTO", "EMBEDDED_WALLET"]  # the backfilled one is newer
    assert after[1] == wallet and after[0]["id"] != holding["id"]
    assert after[0]["balance"]["amount"] == 0 and "privateEnabled" not in after[0]


async def test_0021_backfills_direction_the_moved_fields_and_the_card_transactions_holders(
    db, database_url, client, auth, runner
):
    """Rows written before 0021: transactions get their direction (OUTGOING DEBIT, INCOMING CREDIT), a
    transfer-in its sentAmount, a quote's purposeOfPayment its column, a transfer's rail its selection mode;
    card transactions their cardholder, so GET /transactions lists them."""
    from tests.factories import external_account
    from tests.support.cards import active_card, approved, approved_cardholder, funded_account

    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    bank = await external_account(client, auth, person["id"])
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    spent = await approved(client, auth, card["id"], 300)
    out = await client.post(
        "/transfer-out",
        auth=auth,
        json={
            "source": {"accountId": account["id"]},
            "destination": {"accountId": bank["id"]},
            "amount": 100,
        },
    )
    pulled = await client.post(
        "/transfer-in",
        auth=auth,
        json={
            "source": {"accountId": bank["id"]},
            "destination": {"accountId": account["id"]},
            "amount": 200,
        },
    )
    before = {t["id"]: t for t in (await client.get("/transactions", auth=auth)).json()["data"]}
    assert {spent["id"], out.json()["id"], pulled.json()["id"]} == set(before)
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0020_fees")
    try:
        async with db.transaction() as session:  # as 0019's code wrote a transfer-in: no sentAmount
            await session.execute(
                sa.text("UPDATE transactions SET sent_amount = NULL, sent_currency = NULL WHERE id = :id"),
                {"id": pulled.json()["id"]},
            )
    finally:
        await migrate.upgrade_async(database_url)
    after = {t["id"]: t for t in (await client.get("/transactions", auth=auth)).json()["data"]}
    assert after[out.json()["id"]]["direction"] == "DEBIT"
    assert after[out.json()["id"]]["railSelectionMode"] == "AUTO"  # what the request named was not recorded
    assert after[pulled.json()["id"]]["direction"] == "CREDIT"
    assert after[pulled.json()["id"]]["sentAmount"] == before[pulled.json()["id"]]["sentAmount"]
    card_tx = after[spent["id"]]
    assert (card_tx["customerId"], card_tx["platformCustomerId"]) == (
        person["id"],
        person["platformCustomerId"],
    )
    assert card_tx == before[spent["id"]]


async def test_0024_adds_who_decided_a_manual_review_and_its_downgrade_removes_it(
    db, database_url, client, auth, runner
):
    """0024 adds verifications.decided_by and decision_reason (nullable: existing rows keep null); its
    downgrade drops them and keeps every row; the upgrade again leaves the table's status CHECK in place."""
    person = await create(client, auth, PERSON)
    before = await verify(client, auth, person["id"])  # RESOLVE_ERRORS: no decision
    config = migrate.alembic_config(database_url)

    async def columns() -> set[str]:
        async with db.engine.connect() as connection:
            return await connection.run_sync(
                lambda sync: {c["name"] for c in sa.inspect(sync).get_columns("verifications")}
            )

    assert {"decided_by", "decision_reason"} <= await columns()
    await asyncio.to_thread(command.downgrade, config, "0023_console")
    try:
        assert not {"decided_by", "decision_reason"} & await columns()
        async with db.read() as session:
            found = await session.execute(
                sa.text("SELECT status FROM verifications WHERE id = :id"), {"id": before["id"]}
            )
            assert found.scalar_one() == "RESOLVE_ERRORS"
    finally:
        await migrate.upgrade_async(database_url)
    assert {"decided_by", "decision_reason"} <= await columns()
    after = (await client.get(f"/verifications/{before['id']}", auth=auth)).json()
    assert after == before and "decidedBy" not in after
    with pytest.raises(IntegrityError, match=r"(?i)check"):
        async with db.transaction() as session:
            await session.execute(sa.text("UPDATE verifications SET status = 'DONE'"))


async def test_0025_gives_existing_events_their_resource_id(db, database_url, platform):
    """Events written before 0025 get their data's id as resource_id (a TEST ping, with none, keeps null),
    so a resource's timeline finds them; events emitted after it carry it from their INSERT."""
    from platpay.events import service as events_service

    async with db.read() as session:
        tenant_id = await session.scalar(sa.text("SELECT id FROM tenants WHERE environment = 'sandbox'"))
    async with db.transaction() as session:
        before = await events_service.emit(
            session, tenant_id=tenant_id, type="CUSTOMER.KYC_APPROVED", resource={"id": "Customer:old"}
        )
        ping = await events_service.emit(session, tenant_id=tenant_id, type="TEST", resource={})
    config = migrate.alembic_config(database_url)
    await asyncio.to_thread(command.downgrade, config, "0024_decision")
    await migrate.upgrade_async(database_url)
    async with db.read() as session:
        stored = dict(
            (
                await session.execute(
                    sa.text("SELECT id, resource_id FROM events WHERE tenant_id = :t"), {"t": tenant_id}
                )
            )
            .tuples()
            .all()
        )
        [event] = await events_service.timeline_for_resource(
            session, tenant_id=tenant_id, resource_id="Customer:old"
        )
    assert stored[before] == "Customer:old" and stored[ping] is None
    assert event.id == before
