"""The August reference's sandbox KYC outcomes beside platpay's earlier magic values, and its new verification
errors (DRIFT-2026-08 §3; docs/sandbox.md and docs/onboarding.md).

- An individual whose `fullName` ends in three digits (sandbox tenants only): `001` starts PENDING and its
  complete submission waits for a person, `002` starts REJECTED, `003` starts UNVERIFIED and its complete
  submission comes back RESOLVE_ERRORS with a POOR_QUALITY_DOCUMENT error, any other digits start APPROVED.
  A name without digits keeps the earlier behaviour (PENDING; the review follows the email's user part).
- A business's registrationNumber `003` waits for a person, like `001`.
- MISSING_CONTROL_PERSON: beneficial owners none of whom controls the business.
- MISSING_GOOD_STANDING_DOCUMENT: a charity or private foundation without a certificate of good standing.
"""

from __future__ import annotations

import httpx
import pytest

from tests.factories import create_platform
from tests.support.onboarding import (
    BUSINESS,
    OWNER_INFO,
    PERSON,
    complete_business,
    create,
    png,
    uploaded,
    verify,
)


async def _settled(runner, client, auth, verification_id: str) -> dict:
    await runner.run_until_idle(timeout=10)
    return (await client.get(f"/verifications/{verification_id}", auth=auth)).json()


async def _complete_person(client, auth, full_name: str) -> dict:
    person = await create(client, auth, {**PERSON, "fullName": full_name})
    await uploaded(client, auth, person["id"], "PASSPORT", png())
    await uploaded(client, auth, person["id"], "UTILITY_BILL")
    return person


class TestIndividualsByNameSuffix:
    @pytest.mark.parametrize(
        ("full_name", "status"),
        [
            ("Jane Doe 001", "PENDING"),
            ("Jane Doe 002", "REJECTED"),
            ("Jane Doe 003", "UNVERIFIED"),
            ("Jane Doe 000", "APPROVED"),
            ("Jane Doe123", "APPROVED"),
            ("Jane Doe", "PENDING"),  # no suffix: the unregulated platform's start, as before
        ],
    )
    async def test_the_suffix_decides_the_status_at_creation(self, client, auth, full_name, status):
        created = await create(client, auth, {**PERSON, "fullName": full_name})
        assert created["kycStatus"] == status and created["fullName"] == full_name

    async def test_it_decides_on_a_regulated_platform_too(self, client, db, settings):
        regulated = await create_platform(db, settings, is_regulated=True)
        created = await create(client, regulated["sandbox"], {**PERSON, "fullName": "Jane Doe 002"})
        assert created["kycStatus"] == "REJECTED"

    async def test_a_production_tenant_refuses_digits_in_a_name(self, client, db, settings):
        platform = await create_platform(db, settings)
        refused = await client.post(
            "/customers", auth=platform["production"], json={**PERSON, "fullName": "Jane 001"}
        )
        assert refused.status_code == 400 and refused.json()["details"]["fields"][0]["field"] == "fullName"

    @pytest.mark.parametrize("full_name", ["001", "Jane 0001x", "Jane  001", "Jane 12"])
    async def test_only_a_name_then_three_digits_is_a_suffix(self, client, auth, full_name):
        refused = await client.post("/customers", auth=auth, json={**PERSON, "fullName": full_name})
        assert refused.status_code == 400, refused.text
        assert refused.json()["details"]["fields"][0]["field"] == "fullName"

    async def test_001_is_reviewed_by_a_person(self, client, auth, runner):
        person = await _complete_person(client, auth, "Jane Doe 001")
        submitted = await verify(client, auth, person["id"])
        assert submitted["verificationStatus"] == "IN_PROGRESS", submitted
        assert (await _settled(runner, client, auth, submitted["id"]))[
            "verificationStatus"
        ] == "PENDING_MANUAL_REVIEW"
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "PENDING"

    async def test_003_is_sent_back_for_a_better_document(self, client, auth):
        person = await _complete_person(client, auth, "Jane Doe 003")
        documents = (
            await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})
        ).json()
        passport = next(d["id"] for d in documents["data"] if d["documentType"] == "PASSPORT")
        submitted = await verify(client, auth, person["id"])
        assert submitted["verificationStatus"] == "RESOLVE_ERRORS", submitted
        [error] = submitted["errors"]
        assert error["type"] == "POOR_QUALITY_DOCUMENT" and error["resourceId"] == passport
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "UNVERIFIED"

    async def test_003_with_something_missing_is_asked_for_that_first(self, client, auth):
        person = await create(client, auth, {**PERSON, "fullName": "Jane Doe 003"})
        submitted = await verify(client, auth, person["id"])
        assert {e["type"] for e in submitted["errors"]} == {
            "MISSING_IDENTITY_DOCUMENT",
            "MISSING_PROOF_OF_ADDRESS_DOCUMENT",
        }

    async def test_a_decided_customer_s_verification_says_so(self, client, auth):
        rejected = await create(client, auth, {**PERSON, "fullName": "Jane Doe 002"})
        assert (await verify(client, auth, rejected["id"]))["verificationStatus"] == "REJECTED"
        approved = await create(client, auth, {**PERSON, "fullName": "Jane Doe 000"})
        assert (await verify(client, auth, approved["id"]))["verificationStatus"] == "APPROVED"

    async def test_the_email_suffix_still_decides_a_name_without_digits(self, client, auth, runner):
        person = await create(client, auth, {**PERSON, "email": "jane.002@example.com"})
        await uploaded(client, auth, person["id"], "PASSPORT", png())
        await uploaded(client, auth, person["id"], "UTILITY_BILL")
        submitted = await verify(client, auth, person["id"])
        assert (await _settled(runner, client, auth, submitted["id"]))["verificationStatus"] == "REJECTED"


class TestBusinessesByRegistrationNumber:
    async def test_003_waits_for_a_person_like_001(self, client, auth, runner):
        business, _ = await complete_business(client, auth, registration="REG-003")
        assert business["kybStatus"] == "UNVERIFIED"
        submitted = await verify(client, auth, business["id"])
        assert (await _settled(runner, client, auth, submitted["id"]))[
            "verificationStatus"
        ] == "PENDING_MANUAL_REVIEW"
        assert (await client.get(f"/customers/{business['id']}", auth=auth)).json()["kybStatus"] == "PENDING"


class TestControlPerson:
    async def test_owners_none_of_whom_controls_the_business_are_named(self, client, auth, runner):
        business, person = await complete_business(client, auth)
        changed = await client.patch(f"/beneficial-owners/{person['id']}", auth=auth, json={"roles": ["UBO"]})
        assert changed.status_code == 200, changed.text
        submitted = await verify(client, auth, business["id"])
        assert submitted["verificationStatus"] == "RESOLVE_ERRORS"
        assert [(e["type"], e["resourceId"]) for e in submitted["errors"]] == [
            ("MISSING_CONTROL_PERSON", business["id"])
        ]
        await client.patch(
            f"/beneficial-owners/{person['id']}", auth=auth, json={"roles": ["UBO", "CONTROL_PERSON"]}
        )
        assert (await verify(client, auth, business["id"]))["verificationStatus"] == "IN_PROGRESS"

    @pytest.mark.parametrize(
        "role", ["DIRECTOR", "COMPANY_OFFICER", "GENERAL_PARTNER", "TRUSTEE", "CONTROL_PERSON"]
    )
    async def test_each_control_role_counts(self, client, auth, role):
        business, person = await complete_business(client, auth)
        await client.patch(f"/beneficial-owners/{person['id']}", auth=auth, json={"roles": [role]})
        assert (await verify(client, auth, business["id"]))["verificationStatus"] == "IN_PROGRESS"

    async def test_a_business_without_owners_is_asked_for_owners_first(self, client, auth):
        business = await create(client, auth, BUSINESS)
        types = {e["type"] for e in (await verify(client, auth, business["id"]))["errors"]}
        assert "MISSING_BENEFICIAL_OWNER" in types and "MISSING_CONTROL_PERSON" not in types


class TestGoodStanding:
    @pytest.mark.parametrize("entity_type", ["CHARITY", "PRIVATE_FOUNDATION"])
    async def test_a_charity_or_foundation_needs_a_certificate_of_good_standing(
        self, client, auth, entity_type
    ):
        business, _ = await complete_business(client, auth)
        await client.patch(
            f"/customers/{business['id']}",
            auth=auth,
            json={"customerType": "BUSINESS", "businessInfo": {"entityType": entity_type}},
        )
        submitted = await verify(client, auth, business["id"])
        [error] = submitted["errors"]
        assert error["type"] == "MISSING_GOOD_STANDING_DOCUMENT" and error["resourceId"] == business["id"]
        assert error["acceptedDocumentTypes"] == ["GOOD_STANDING_CERTIFICATE"]
        await uploaded(client, auth, business["id"], "GOOD_STANDING_CERTIFICATE")
        assert (await verify(client, auth, business["id"]))["verificationStatus"] == "IN_PROGRESS"

    @pytest.mark.parametrize("entity_type", ["LLC", "TRUST", "PUBLICLY_LISTED_COMPANY"])
    async def test_other_businesses_do_not(self, client, auth, entity_type):
        business, _ = await complete_business(client, auth)
        await client.patch(
            f"/customers/{business['id']}",
            auth=auth,
            json={"customerType": "BUSINESS", "businessInfo": {"entityType": entity_type}},
        )
        assert (await verify(client, auth, business["id"]))["verificationStatus"] == "IN_PROGRESS"


async def test_the_hosted_page_adds_a_missing_control_person(client, auth):
    business, person = await complete_business(client, auth)
    await client.patch(f"/beneficial-owners/{person['id']}", auth=auth, json={"roles": ["UBO"]})
    link = await client.post(f"/customers/{business['id']}/kyc-link", auth=auth)
    assert link.status_code == 201, link.text
    path = link.json()["kycUrl"].removeprefix("http://testserver")
    async with httpx.AsyncClient(transport=client._transport, base_url="http://testserver") as browser:
        page = await browser.get(path)
        assert 'name="owner.firstName"' in page.text  # the owner form, for the control person
        owner_fields = {
            f"owner.{key}": value
            for key, value in {
                **{
                    k: v
                    for k, v in OWNER_INFO.items()
                    if k not in ("address", "email", "phoneNumber", "countryOfIssuance")
                },
                "lastName": "Byron",
                "ownershipPercentage": "10",
            }.items()
        }
        address = {f"owner.address.{k}": v for k, v in OWNER_INFO["address"].items()}
        files = {"doc.owner.MISSING_IDENTITY_DOCUMENT": ("passport.png", png(), "image/png")}
        done = await browser.post(
            path, data={**owner_fields, **address, "documents.country": "GB"}, files=files
        )
    assert done.status_code in (200, 303), done.text
    owners = (
        await client.get("/beneficial-owners", auth=auth, params={"customerId": business["id"]})
    ).json()["data"]
    added = next(o for o in owners if o["personalInfo"]["lastName"] == "Byron")
    assert added["roles"] == ["CONTROL_PERSON"]  # 10 %: a control person, not a UBO
