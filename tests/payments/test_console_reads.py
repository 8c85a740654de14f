"""payments' reads for the console: the incoming payments awaiting the platform's decision, and GET
/transactions' service function filtered as the console filters it, each a fixed number of statements."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import text

from platpay.kit import clock
from platpay.kit.pagination import PageParams
from platpay.payments import service as payments_service
from platpay.tenants import service as tenants_service
from tests.factories import customer
from tests.support.sandbox_values import SUCCESS_USD
from tests.support.statements import count_statements


async def _tenant(db):
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))


async def _receive(client, auth, customer_id, amount=1_000):
    response = await client.post(
        "/sandbox/uma/receive",
        auth=auth,
        json={
            "senderUmaAddress": SUCCESS_USD,
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": amount,
            "customerId": customer_id,
        },
    )
    assert response.status_code == 200, response.text
    return response.json()


async def _awaiting(db, tenant_id):
    async with db.read() as session:
        with count_statements(db) as statements:
            count = await payments_service.count_incoming_awaiting_approval(session, tenant_id=tenant_id)
    assert statements.count == 1
    return count


class TestCountIncomingAwaitingApproval:
    async def test_counts_the_ones_the_platform_may_still_decide(self, db, client, auth):
        person = await customer(client, auth)
        tenant_id = await _tenant(db)
        assert await _awaiting(db, tenant_id) == 0
        received = [await _receive(client, auth, person["id"]) for _ in range(3)]  # no endpoint: API decides
        assert await _awaiting(db, tenant_id) == 3
        assert await _awaiting(db, "Tenant:someone-else") == 0
        approved = await client.post(f"/transactions/{received[0]['id']}/approve", auth=auth, json={})
        assert approved.status_code == 200, approved.text
        rejected = await client.post(f"/transactions/{received[1]['id']}/reject", auth=auth, json={})
        assert rejected.status_code == 200, rejected.text
        assert await _awaiting(db, tenant_id) == 1

    async def test_one_past_its_deadline_no_longer_counts(self, db, client, auth):
        person = await customer(client, auth)
        await _receive(client, auth, person["id"])
        tenant_id = await _tenant(db)
        assert await _awaiting(db, tenant_id) == 1
        clock.advance(timedelta(days=1))
        assert await _awaiting(db, tenant_id) == 0


class TestListTransactions:
    """list_transactions already serves GET /transactions: status, type, customer and created-date filters,
    transactions and card transactions merged (cards answer payments' reader hook)."""

    async def test_filters_and_a_fixed_number_of_statements(self, db, client, auth):
        person = await customer(client, auth)
        other = await customer(client, auth)
        tenant_id = await _tenant(db)
        async with db.read() as session:
            tenant = await tenants_service.load(session, tenant_id=tenant_id)
        counts = []
        for n in (1, 4):
            for _ in range(n):
                await _receive(client, auth, person["id"])
            await _receive(client, auth, other["id"])
            async with db.read() as session:
                with count_statements(db) as statements:
                    _page, items = await payments_service.list_transactions(
                        session,
                        tenant=tenant,
                        params=PageParams(limit=100, after_id=None),
                        customer_id=person["id"],
                        type_="INCOMING",
                        status="PENDING",
                        start_date=clock.now() - timedelta(hours=1),
                        end_date=clock.now() + timedelta(hours=1),
                    )
            counts.append(statements.count)
            assert {item.customer_id for item in items} == {person["id"]}
        assert len(items) == 5
        assert counts[0] == counts[1] <= 2  # the transactions' page and the card transactions' one
        async with db.read() as session:
            _, none = await payments_service.list_transactions(
                session,
                tenant=tenant,
                params=PageParams(limit=100, after_id=None),
                start_date=clock.now() + timedelta(hours=1),
            )
        assert none == []
