"""search_customers: the console's customer search, on both backends, one statement a page."""

from __future__ import annotations

from sqlalchemy import text

from platpay.customers import service as customers_service
from platpay.kit.pagination import PageParams
from tests.factories import customer
from tests.support.statements import count_statements

ACME = {
    "customerType": "BUSINESS",
    "platformCustomerId": "biz-1",
    "email": "ops@acme.example",
    "address": {"line1": "500 Market St", "postalCode": "94105", "country": "US"},
    "businessInfo": {
        "legalName": "Acme Corp",
        "doingBusinessAs": "Roadrunner Traps",
        "taxId": "12-3456789",
        "incorporatedOn": "2015-06-01",
        "entityType": "LLC",
    },
}


async def _tenant(db):
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))


async def _search(db, tenant_id, query, limit=20):
    async with db.read() as session:
        page = await customers_service.search_customers(
            session, tenant_id=tenant_id, query=query, params=PageParams(limit=limit, after_id=None)
        )
    return {row.id for row in page.items}


class TestSearchCustomers:
    async def test_matches_names_email_reference_uma_and_exact_id(self, db, client, auth):
        jane = await customer(client, auth, fullName="Jane Ölander", platformCustomerId="ext-JANE-7")
        response = await client.post("/customers", auth=auth, json=ACME)
        assert response.status_code == 201, response.text
        acme = response.json()
        other = await customer(client, auth, fullName="Bob Stone", email="bob@stone.example")
        tenant_id = await _tenant(db)
        assert await _search(db, tenant_id, "JANE Öl") == {jane["id"]}
        # SQLite's lower() folds ASCII only: "ölander" finds Ölander on PostgreSQL alone
        assert await _search(db, tenant_id, "acme") == {acme["id"]}  # legal name and email
        assert await _search(db, tenant_id, "ROADRUNNER") == {acme["id"]}
        assert await _search(db, tenant_id, "jane-7") == {jane["id"]}
        assert await _search(db, tenant_id, "STONE.EXAMPLE") == {other["id"]}
        assert await _search(db, tenant_id, other["umaAddress"].upper()) == {other["id"]}
        assert await _search(db, tenant_id, f"  {acme['id']} ") == {acme["id"]}
        assert await _search(db, tenant_id, acme["id"][:-3]) == set()  # an id only exactly

    async def test_percent_and_underscore_match_themselves(self, db, client, auth):
        literal = await customer(client, auth, platformCustomerId="ann-100%_off")
        await customer(client, auth, platformCustomerId="ann-1000-off")
        tenant_id = await _tenant(db)
        assert await _search(db, tenant_id, "100%_") == {literal["id"]}
        assert await _search(db, tenant_id, "%") == {literal["id"]}
        assert await _search(db, tenant_id, "_") == {literal["id"]}

    async def test_deleted_and_other_tenants_customers_are_not_found(self, db, client, auth):
        gone = await customer(client, auth, fullName="Gone Person")
        assert (await client.delete(f"/customers/{gone['id']}", auth=auth)).status_code == 200
        tenant_id = await _tenant(db)
        assert await _search(db, tenant_id, "gone") == set()
        await customer(client, auth, fullName="Visible Person")
        assert await _search(db, "Tenant:someone-else", "visible") == set()

    async def test_one_statement_a_page_whatever_the_page_size(self, db, client, auth):
        for name in "ABCDE":
            await customer(client, auth, fullName=f"Paged Person {name}")
        tenant_id = await _tenant(db)
        seen, params = [], PageParams(limit=2, after_id=None)
        async with db.read() as session:
            while True:
                with count_statements(db) as statements:
                    page = await customers_service.search_customers(
                        session, tenant_id=tenant_id, query="paged", params=params
                    )
                assert statements.count == 1
                seen += [row.full_name for row in page.items]
                if not page.has_more:
                    break
                params = PageParams(limit=2, after_id=page.items[-1].id)
            with count_statements(db) as statements:
                everyone = await customers_service.search_customers(
                    session, tenant_id=tenant_id, query="paged", params=PageParams(limit=100, after_id=None)
                )
        assert statements.count == 1 and len(everyone.items) == 5
        assert seen == [f"Paged Person {name}" for name in "EDCBA"]
