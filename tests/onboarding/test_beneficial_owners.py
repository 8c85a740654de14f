"""Beneficial owners: create (business customers only), validation, the owners' 100 % ceiling, their own
KYC on the job runner (sandbox suffixes), list by customer, partial update, tenant isolation."""

from __future__ import annotations

import pytest

from tests.factories import create_platform
from tests.support.onboarding import BUSINESS, OWNER_INFO, PERSON, create, owner

pytestmark = pytest.mark.usefixtures("db")


async def _owner_status(client, auth, runner, owner_id: str) -> str:
    await runner.run_until_idle(timeout=10)
    return (await client.get(f"/beneficial-owners/{owner_id}", auth=auth)).json()["kycStatus"]


class TestCreate:
    async def test_created_pending_then_reviewed(self, client, auth, runner):
        business = await create(client, auth, BUSINESS)
        approved = await owner(client, auth, business["id"], share=40)
        assert approved["kycStatus"] == "PENDING" and approved["id"].startswith("BeneficialOwner:")
        assert approved["personalInfo"] == OWNER_INFO and approved["roles"] == ["UBO", "DIRECTOR"]
        rejected = await owner(client, auth, business["id"], last_name="Smith002", share=30)
        waiting = await owner(client, auth, business["id"], last_name="Smith001", share=30)
        assert await _owner_status(client, auth, runner, approved["id"]) == "APPROVED"
        assert await _owner_status(client, auth, runner, rejected["id"]) == "REJECTED"
        assert await _owner_status(client, auth, runner, waiting["id"]) == "PENDING"

    @pytest.mark.parametrize(
        ("change", "field"),
        [
            ({"ownershipPercentage": 101}, "ownershipPercentage"),
            ({"ownershipPercentage": "50"}, "ownershipPercentage"),
            ({"roles": []}, "roles"),
            ({"roles": ["OWNER"]}, "roles"),
            ({"personalInfo": {**OWNER_INFO, "phoneNumber": "0044 7700"}}, "personalInfo.phoneNumber"),
            ({"personalInfo": {**OWNER_INFO, "birthDate": "1980-02-30"}}, "personalInfo.birthDate"),
            ({"personalInfo": {**OWNER_INFO, "birthDate": "2999-01-01"}}, "personalInfo.birthDate"),
            ({"personalInfo": {**OWNER_INFO, "nationality": "XX"}}, "personalInfo.nationality"),
            ({"personalInfo": {**OWNER_INFO, "idType": "PASSPORT"}}, "personalInfo.idType"),
            ({"personalInfo": {**OWNER_INFO, "firstName": "1Ada"}}, "personalInfo.firstName"),
            ({"personalInfo": {**OWNER_INFO, "lastName": "Love  lace"}}, "personalInfo.lastName"),
            (
                {"personalInfo": {k: v for k, v in OWNER_INFO.items() if k != "identifier"}},
                "personalInfo.identifier",
            ),
            (
                {
                    "personalInfo": {
                        **OWNER_INFO,
                        "address": {"line1": "x", "postalCode": "1", "country": "ZZ"},
                    }
                },
                "personalInfo.address.country",
            ),
        ],
    )
    async def test_each_field_is_checked_and_nothing_is_created(self, client, auth, change, field):
        business = await create(client, auth, BUSINESS)
        body = {
            "customerId": business["id"],
            "roles": ["UBO"],
            "ownershipPercentage": 50,
            "personalInfo": OWNER_INFO,
            **change,
        }
        response = await client.post("/beneficial-owners", auth=auth, json=body)
        assert response.status_code == 400, response.text
        assert field in response.text
        listed = await client.get("/beneficial-owners", auth=auth, params={"customerId": business["id"]})
        assert listed.json()["data"] == []

    async def test_owners_hold_at_most_100_percent(self, client, auth):
        business = await create(client, auth, BUSINESS)
        await owner(client, auth, business["id"], share=70)
        response = await client.post(
            "/beneficial-owners",
            auth=auth,
            json={
                "customerId": business["id"],
                "roles": ["UBO"],
                "ownershipPercentage": 31,
                "personalInfo": OWNER_INFO,
            },
        )
        assert response.status_code == 400 and "ownershipPercentage" in response.text

    async def test_only_business_customers_of_the_tenant(self, client, auth, db, settings):
        person = await create(client, auth, PERSON)
        body = {
            "customerId": person["id"],
            "roles": ["UBO"],
            "ownershipPercentage": 10,
            "personalInfo": OWNER_INFO,
        }
        refused = await client.post("/beneficial-owners", auth=auth, json=body)
        assert refused.status_code == 400 and "customerId" in refused.text
        unknown = await client.post(
            "/beneficial-owners", auth=auth, json={**body, "customerId": "Customer:none"}
        )
        assert unknown.status_code == 404
        business = await create(client, auth, BUSINESS)
        mine = await owner(client, auth, business["id"])
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        theirs = await client.post(
            "/beneficial-owners", auth=other, json={**body, "customerId": business["id"]}
        )
        assert theirs.status_code == 404
        assert (await client.get(f"/beneficial-owners/{mine['id']}", auth=other)).status_code == 404
        assert (
            await client.patch(f"/beneficial-owners/{mine['id']}", auth=other, json={"roles": ["UBO"]})
        ).status_code == 404
        assert (
            await client.get("/beneficial-owners", auth=other, params={"customerId": business["id"]})
        ).status_code == 404


class TestReadAndUpdate:
    async def test_list_needs_the_customer_and_pages(self, client, auth):
        assert (await client.get("/beneficial-owners", auth=auth)).status_code == 400
        business = await create(client, auth, BUSINESS)
        first = await owner(client, auth, business["id"], share=10)
        second = await owner(client, auth, business["id"], last_name="Byron", share=10)
        page = (
            await client.get(
                "/beneficial-owners", auth=auth, params={"customerId": business["id"], "limit": 1}
            )
        ).json()
        assert page["data"] == [second] and page["hasMore"] and page["totalCount"] == 2
        assert (await client.get(f"/beneficial-owners/{first['id']}", auth=auth)).json() == first

    async def test_partial_update_and_review_again(self, client, auth, runner):
        business = await create(client, auth, BUSINESS)
        person = await owner(client, auth, business["id"], share=10)
        assert await _owner_status(client, auth, runner, person["id"]) == "APPROVED"
        share = await client.patch(
            f"/beneficial-owners/{person['id']}", auth=auth, json={"ownershipPercentage": 25}
        )
        assert share.status_code == 200 and share.json()["ownershipPercentage"] == 25
        assert share.json()["kycStatus"] == "APPROVED" and share.json()["personalInfo"] == OWNER_INFO
        renamed = await client.patch(
            f"/beneficial-owners/{person['id']}", auth=auth, json={"personalInfo": {"lastName": "King002"}}
        )
        assert renamed.status_code == 200, renamed.text
        body = renamed.json()
        assert body["kycStatus"] == "PENDING" and body["personalInfo"] == {
            **OWNER_INFO,
            "lastName": "King002",
        }
        assert await _owner_status(client, auth, runner, person["id"]) == "REJECTED"
        bad = await client.patch(
            f"/beneficial-owners/{person['id']}", auth=auth, json={"ownershipPercentage": 101}
        )
        assert bad.status_code == 400
        bad = await client.patch(
            f"/beneficial-owners/{person['id']}", auth=auth, json={"personalInfo": {"email": "no"}}
        )
        assert bad.status_code == 400 and "personalInfo.email" in bad.text
