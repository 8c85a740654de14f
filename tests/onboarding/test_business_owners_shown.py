"""Business customers show their beneficial owners (INTERFACE-FACTS §3.1 `beneficialOwners`) wherever the
customer is shown: create, GET, list (one owner query for the page), PATCH, delete, the sandbox KYC override
and its webhook. Individuals have no such field; another tenant's owners never appear."""

from __future__ import annotations

import pytest
from sqlalchemy import event

from tests.factories import create_platform
from tests.support.jobs import run_jobs_until
from tests.support.onboarding import BUSINESS, PERSON, create, owner

pytestmark = pytest.mark.usefixtures("db")


def _ids(customer: dict) -> list[str]:
    return [o["id"] for o in customer["beneficialOwners"]]


async def _listed(client, auth, customer_id: str) -> dict:
    response = await client.get("/customers", auth=auth, params={"limit": 100})
    assert response.status_code == 200, response.text
    [found] = [c for c in response.json()["data"] if c["id"] == customer_id]
    return found


class TestShown:
    async def test_a_business_with_two_owners_shows_both_in_get_list_and_after_patch(self, client, auth):
        business = await create(client, auth, BUSINESS)
        assert business["beneficialOwners"] == []
        first = await owner(client, auth, business["id"], share=60)
        second = await owner(client, auth, business["id"], last_name="Byron", share=40)
        expected = sorted([first["id"], second["id"]])

        got = (await client.get(f"/customers/{business['id']}", auth=auth)).json()
        assert _ids(got) == expected
        assert {o["id"]: o for o in got["beneficialOwners"]}[second["id"]] == second  # as GET owner shows it
        assert _ids(await _listed(client, auth, business["id"])) == expected

        patched = await client.patch(
            f"/customers/{business['id']}",
            auth=auth,
            json={"customerType": "BUSINESS", "address": {**BUSINESS["address"], "city": "Oakland"}},
        )
        assert patched.status_code == 200, patched.text
        assert patched.json()["address"]["city"] == "Oakland" and _ids(patched.json()) == expected

        # an owner's change shows on the customer at once
        renamed = await client.patch(
            f"/beneficial-owners/{first['id']}", auth=auth, json={"ownershipPercentage": 55}
        )
        assert renamed.status_code == 200, renamed.text
        got = (await client.get(f"/customers/{business['id']}", auth=auth)).json()
        assert {o["id"]: o["ownershipPercentage"] for o in got["beneficialOwners"]}[first["id"]] == 55

        deleted = await client.delete(f"/customers/{business['id']}", auth=auth)
        assert deleted.status_code == 200 and _ids(deleted.json()) == expected

    async def test_an_individual_has_no_such_field(self, client, auth):
        person = await create(client, auth, PERSON)
        assert "beneficialOwners" not in person
        assert "beneficialOwners" not in (await client.get(f"/customers/{person['id']}", auth=auth)).json()
        assert "beneficialOwners" not in await _listed(client, auth, person["id"])
        patched = await client.patch(
            f"/customers/{person['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "fullName": "Jane Q Doe"},
        )
        assert patched.status_code == 200 and "beneficialOwners" not in patched.json()

    async def test_another_tenants_owners_never_appear(self, client, auth, db, settings):
        mine = await create(client, auth, BUSINESS)
        my_owner = await owner(client, auth, mine["id"])
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        theirs = await create(client, other, BUSINESS)
        their_owner = await owner(client, other, theirs["id"], last_name="Byron")

        assert _ids((await client.get(f"/customers/{mine['id']}", auth=auth)).json()) == [my_owner["id"]]
        assert _ids((await client.get(f"/customers/{theirs['id']}", auth=other)).json()) == [
            their_owner["id"]
        ]
        listed = (await client.get("/customers", auth=auth, params={"limit": 100})).json()["data"]
        shown = {o["id"] for c in listed for o in c.get("beneficialOwners", [])}
        assert shown == {my_owner["id"]}
        assert (await client.get(f"/customers/{theirs['id']}", auth=auth)).status_code == 404


class TestOneQueryPerPage:
    async def test_a_page_of_businesses_reads_owners_once(self, client, auth, db):
        for n in range(4):
            business = await create(client, auth, BUSINESS)
            await owner(client, auth, business["id"], last_name=f"Owner{'abcd'[n]}")
        statements: list[str] = []

        def seen(conn, cursor, statement, parameters, context, executemany) -> None:
            statements.append(statement)

        event.listen(db.engine.sync_engine, "before_cursor_execute", seen)
        try:
            response = await client.get("/customers", auth=auth, params={"customerType": "BUSINESS"})
        finally:
            event.remove(db.engine.sync_engine, "before_cursor_execute", seen)
        assert response.status_code == 200, response.text
        page = response.json()["data"]
        assert len(page) == 4 and all(len(c["beneficialOwners"]) == 1 for c in page)
        assert sum("beneficial_owners" in s for s in statements) == 1


class TestWebhook:
    async def test_the_kyb_webhook_carries_the_owners(self, client, auth, runner, receiver):
        hooked = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        assert hooked.status_code == 200, hooked.text
        business = await create(client, auth, BUSINESS)
        person = await owner(client, auth, business["id"])
        decided = await client.post(
            f"/sandbox/customers/{business['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
        )
        assert decided.status_code == 200, decided.text
        assert _ids(decided.json()) == [person["id"]]
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYB_APPROVED")) == 1)
        [delivered] = receiver.of_type("CUSTOMER.KYB_APPROVED")
        assert _ids(delivered.json["data"]) == [person["id"]]
