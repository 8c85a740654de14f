"""search_customers' console filters (kycStatus, customerType; a blank query matches every live customer), on
both backends, still one statement a page."""

from __future__ import annotations

from sqlalchemy import text

from platpay.customers import service as customers_service
from platpay.kit.pagination import PageParams
from tests.factories import customer
from tests.support.onboarding import BUSINESS, create
from tests.support.statements import count_statements


async def _found(db, tenant_id: str, query: str = "", **filters: str) -> set[str]:
    async with db.read() as session:
        with count_statements(db) as statements:
            page = await customers_service.search_customers(
                session,
                tenant_id=tenant_id,
                query=query,
                params=PageParams(limit=50, after_id=None),
                **filters,
            )
        assert statements.count == 1
    return {row.id for row in page.items}


async def test_filters_combine_with_the_query(client, auth, db) -> None:
    jane = await customer(client, auth, platformCustomerId="jane")
    john = await customer(client, auth, platformCustomerId="john", fullName="John Roe")
    acme = await create(client, auth, {**BUSINESS, "platformCustomerId": "acme"})
    gone = await customer(client, auth, platformCustomerId="gone")
    assert (await client.delete(f"/customers/{gone['id']}", auth=auth)).status_code in (200, 204)
    approved = await client.post(
        f"/sandbox/customers/{john['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
    )
    assert approved.status_code == 200, approved.text
    async with db.read() as session:
        tenant_id = await session.scalar(
            text("SELECT tenant_id FROM customers WHERE id = :id"), {"id": jane["id"]}
        )
    assert await _found(db, tenant_id) == {jane["id"], john["id"], acme["id"]}
    assert await _found(db, tenant_id, "  ") == {jane["id"], john["id"], acme["id"]}
    assert await _found(db, tenant_id, customer_type="BUSINESS") == {acme["id"]}
    assert await _found(db, tenant_id, "o", customer_type="INDIVIDUAL") == {jane["id"], john["id"]}
    assert await _found(db, tenant_id, kyc_status="APPROVED") == {john["id"]}
    assert await _found(db, tenant_id, "jane doe", kyc_status="APPROVED") == set()
    assert await _found(db, tenant_id, kyc_status="UNVERIFIED", customer_type="BUSINESS") == {acme["id"]}
