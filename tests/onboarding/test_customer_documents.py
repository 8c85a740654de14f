"""onboarding_service.list_customer_documents (the console's customer page), on both backends: the documents
of a customer and of its beneficial owners, paged, none of another customer or tenant."""

from __future__ import annotations

from sqlalchemy import text

from platpay.kit.pagination import PageParams
from platpay.onboarding import service as onboarding_service
from tests.factories import create_platform
from tests.support.onboarding import PERSON, complete_business, create, uploaded
from tests.support.statements import count_statements


async def _documents(db, tenant_id: str, customer_id: str, limit: int = 20, after: str | None = None):
    async with db.read() as session:
        return await onboarding_service.list_customer_documents(
            session,
            tenant_id=tenant_id,
            customer_id=customer_id,
            params=PageParams(limit=limit, after_id=after),
        )


async def _tenant_of(session, customer_id: str) -> str:
    return await session.scalar(text("SELECT tenant_id FROM customers WHERE id = :id"), {"id": customer_id})


async def test_a_customer_s_and_its_owners_documents(client, auth, db, settings, platform) -> None:
    business, person = await complete_business(client, auth)
    other = await create(client, auth, PERSON)
    await uploaded(client, auth, other["id"], "PASSPORT")
    elsewhere = await create_platform(db, settings)
    theirs = await create(client, elsewhere["sandbox"], PERSON)
    await uploaded(client, elsewhere["sandbox"], theirs["id"], "PASSPORT")
    listed = (await client.get(f"/documents?documentHolder={business['id']}", auth=auth)).json()["data"]
    owner_docs = (await client.get(f"/documents?documentHolder={person['id']}", auth=auth)).json()["data"]
    async with db.read() as session:
        tenant_id = await _tenant_of(session, business["id"])
    with count_statements(db) as statements:
        page = await _documents(db, tenant_id, business["id"])
    assert statements.count <= 2  # the page (and its total)
    assert {row.id for row in page.items} == {d["id"] for d in listed + owner_docs}
    assert {row.holder_id for row in page.items} == {business["id"], person["id"]}
    first = await _documents(db, tenant_id, business["id"], limit=3)
    assert first.has_more and len(first.items) == 3
    rest = await _documents(db, tenant_id, business["id"], limit=3, after=first.items[-1].id)
    assert {r.id for r in first.items} | {r.id for r in rest.items} == {r.id for r in page.items}
    assert (await _documents(db, tenant_id, theirs["id"])).items == []
