"""POST /verifications: RESOLVE_ERRORS naming exactly what is missing, then the review through the sandbox
KYC provider (the magic suffixes), with the customer's and the verification's webhooks; GET and list."""

from __future__ import annotations

import pytest

from platpay.customers.state import KYC, KycStatus
from platpay.kit.states import IllegalTransition
from platpay.onboarding.state import OWNER_KYC, VERIFICATION, VerificationStatus
from tests.factories import create_platform
from tests.support.jobs import run_jobs_until
from tests.support.onboarding import (
    BUSINESS,
    PERSON,
    complete_business,
    create,
    owner,
    png,
    uploaded,
    verify,
)

IDENTITY = ["PASSPORT", "DRIVERS_LICENSE", "NATIONAL_ID"]


def _kinds(verification: dict) -> set[tuple[str, str, str | None]]:
    return {(e["resourceId"], e["type"], e.get("field")) for e in verification["errors"]}


async def _hooked(client, auth, receiver) -> None:
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text


async def _settled(runner, client, auth, verification_id: str) -> dict:
    state: dict = {}

    def done() -> bool:
        return state.get("verificationStatus") not in (None, "IN_PROGRESS")

    async def check() -> None:
        state.update((await client.get(f"/verifications/{verification_id}", auth=auth)).json())

    await check()
    for _ in range(50):
        if done():
            break
        await runner.run_until_idle(timeout=10)
        await check()
    return state


class TestIndividual:
    async def test_missing_data_is_named_then_resolved_and_approved(self, client, auth, runner, receiver):
        await _hooked(client, auth, receiver)
        person = await create(
            client, auth, {**PERSON, "address": {k: v for k, v in PERSON["address"].items() if k != "city"}}
        )
        first = await verify(client, auth, person["id"])
        assert first["verificationStatus"] == "RESOLVE_ERRORS"
        assert _kinds(first) == {
            (person["id"], "MISSING_FIELD", "customer.address.city"),
            (person["id"], "MISSING_IDENTITY_DOCUMENT", None),
            (person["id"], "MISSING_PROOF_OF_ADDRESS_DOCUMENT", None),
        }
        identity = next(e for e in first["errors"] if e["type"] == "MISSING_IDENTITY_DOCUMENT")
        assert identity["acceptedDocumentTypes"] == IDENTITY and identity["reason"]
        # nothing about the customer changed
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "PENDING"

        patched = await client.patch(
            f"/customers/{person['id']}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "address": PERSON["address"]},
        )
        assert patched.status_code == 200, patched.text
        await uploaded(client, auth, person["id"], "PASSPORT", png())
        still = await verify(client, auth, person["id"])
        assert still["id"] == first["id"] and _kinds(still) == {
            (person["id"], "MISSING_PROOF_OF_ADDRESS_DOCUMENT", None)
        }
        await uploaded(client, auth, person["id"], "BANK_STATEMENT")
        submitted = await verify(client, auth, person["id"])
        assert submitted["verificationStatus"] == "IN_PROGRESS" and submitted["errors"] == []
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "PENDING"
        again = await verify(client, auth, person["id"])  # while under review: the same verification
        assert again["id"] == submitted["id"] and again["verificationStatus"] == "IN_PROGRESS"

        done = await _settled(runner, client, auth, submitted["id"])
        assert done["verificationStatus"] == "APPROVED" and done["errors"] == []
        customer = (await client.get(f"/customers/{person['id']}", auth=auth)).json()
        assert customer["kycStatus"] == "APPROVED"
        await run_jobs_until(runner, lambda: len(receiver.of_type("VERIFICATION.APPROVED")) == 1)
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
        types = [r.json["type"] for r in receiver.received]
        for expected in (
            "VERIFICATION.RESOLVE_ERRORS",
            "VERIFICATION.IN_PROGRESS",
            "CUSTOMER.KYC_PENDING",
            "VERIFICATION.APPROVED",
            "CUSTOMER.KYC_APPROVED",
        ):
            assert expected in types, types
        assert receiver.of_type("CUSTOMER.KYC_APPROVED")[0].json["data"] == customer
        assert receiver.of_type("VERIFICATION.APPROVED")[0].json["data"] == done

    async def test_the_002_suffix_rejects(self, client, auth, runner):
        person = await create(client, auth, {**PERSON, "email": "jane.002@example.com"})
        await uploaded(client, auth, person["id"], "PASSPORT")
        await uploaded(client, auth, person["id"], "UTILITY_BILL")
        submitted = await verify(client, auth, person["id"])
        done = await _settled(runner, client, auth, submitted["id"])
        assert done["verificationStatus"] == "REJECTED"
        assert _kinds(done) == {(person["id"], "APPLICANT_REJECTED", None)}
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "REJECTED"
        # no exit from REJECTED: asking again says so
        again = await verify(client, auth, person["id"])
        assert again["verificationStatus"] == "REJECTED"

    async def test_a_minor_is_an_invalid_field(self, client, auth):
        person = await create(client, auth, {**PERSON, "birthDate": "2020-01-01"})
        found = await verify(client, auth, person["id"])
        assert (person["id"], "INVALID_FIELD", "customer.birthDate") in _kinds(found)


class TestBusiness:
    async def test_starts_unverified_and_names_documents_and_owners(self, client, auth):
        business = await create(client, auth, BUSINESS)
        assert business["kycStatus"] == "UNVERIFIED"
        found = await verify(client, auth, business["id"])
        assert _kinds(found) == {
            (business["id"], "MISSING_LEGAL_PRESENCE_DOCUMENT", None),
            (business["id"], "MISSING_OWNERSHIP_STRUCTURE_DOCUMENT", None),
            (business["id"], "MISSING_PROOF_OF_ADDRESS_DOCUMENT", None),
            (business["id"], "MISSING_BENEFICIAL_OWNER", None),
        }
        person = await owner(client, auth, business["id"])
        found = await verify(client, auth, business["id"])
        assert (person["id"], "MISSING_IDENTITY_DOCUMENT", None) in _kinds(found)
        assert (business["id"], "MISSING_BENEFICIAL_OWNER", None) not in _kinds(found)

    async def test_a_complete_business_is_approved_with_kyb_events(self, client, auth, runner, receiver):
        await _hooked(client, auth, receiver)
        business, person = await complete_business(client, auth)
        submitted = await verify(client, auth, business["id"])
        assert submitted["verificationStatus"] == "IN_PROGRESS"
        done = await _settled(runner, client, auth, submitted["id"])
        assert done["verificationStatus"] == "APPROVED"
        assert (await client.get(f"/customers/{business['id']}", auth=auth)).json()["kycStatus"] == "APPROVED"
        assert (await client.get(f"/beneficial-owners/{person['id']}", auth=auth)).json()[
            "kycStatus"
        ] == "APPROVED"
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYB_APPROVED")) == 1)
        assert receiver.of_type("CUSTOMER.KYB_PENDING")

    @pytest.mark.parametrize(
        ("registration", "last_name", "status", "kyc"),
        [
            ("REG-002", "Lovelace", "REJECTED", "REJECTED"),
            ("REG-100", "Smith002", "REJECTED", "REJECTED"),
            ("REG-001", "Lovelace", "PENDING_MANUAL_REVIEW", "PENDING"),
            ("REG-100", "Smith001", "PENDING_MANUAL_REVIEW", "PENDING"),
        ],
    )
    async def test_suffixes_decide_the_review(
        self, client, auth, runner, registration, last_name, status, kyc
    ):
        business, person = await complete_business(
            client, auth, registration=registration, owner_last_name=last_name
        )
        submitted = await verify(client, auth, business["id"])
        done = await _settled(runner, client, auth, submitted["id"])
        assert done["verificationStatus"] == status
        assert (await client.get(f"/customers/{business['id']}", auth=auth)).json()["kycStatus"] == kyc
        if status == "REJECTED":
            rejected = business["id"] if registration.endswith("002") else person["id"]
            assert _kinds(done) == {(rejected, "APPLICANT_REJECTED", None)}


class TestReadingAndRefusals:
    async def test_get_and_list_with_filters_and_pages(self, client, auth):
        a = await create(client, auth, PERSON)
        b = await create(client, auth, {**PERSON, "platformCustomerId": "other"})
        va, vb = await verify(client, auth, a["id"]), await verify(client, auth, b["id"])
        got = await client.get(f"/verifications/{va['id']}", auth=auth)
        assert got.status_code == 200 and got.json() == va
        page = (await client.get("/verifications", auth=auth, params={"limit": 1})).json()
        assert page["hasMore"] and page["totalCount"] == 2 and page["data"] == [vb]
        rest = (
            await client.get("/verifications", auth=auth, params={"limit": 1, "cursor": page["nextCursor"]})
        ).json()
        assert rest["data"] == [va] and not rest["hasMore"]
        mine = (await client.get("/verifications", auth=auth, params={"customerId": a["id"]})).json()
        assert [v["id"] for v in mine["data"]] == [va["id"]]
        none = (
            await client.get("/verifications", auth=auth, params={"verificationStatus": "APPROVED"})
        ).json()
        assert none["data"] == [] and none["totalCount"] == 0
        bad = await client.get("/verifications", auth=auth, params={"verificationStatus": "DONE"})
        assert bad.status_code == 400 and "verificationStatus" in bad.text

    async def test_bad_input_and_other_tenants(self, client, auth, db, settings):
        person = await create(client, auth, PERSON)
        for body, field in (
            ({}, "customerId"),
            ({"customerId": 5}, "customerId"),
            ({"customerId": person["id"], "x": 1}, "x"),
        ):
            response = await client.post("/verifications", auth=auth, json=body)
            assert response.status_code == 400 and field in response.text, response.text
        missing = await client.post("/verifications", auth=auth, json={"customerId": "Customer:nope"})
        assert missing.status_code == 404
        mine = await verify(client, auth, person["id"])
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (
            await client.post("/verifications", auth=other, json={"customerId": person["id"]})
        ).status_code == 404
        assert (await client.get(f"/verifications/{mine['id']}", auth=other)).status_code == 404
        assert (await client.get("/verifications", auth=other)).json()["data"] == []
        assert (await client.get("/verifications", auth=other)).json()["totalCount"] == 0


class TestMachines:
    def test_the_tables_are_the_documented_lifecycles(self):
        assert KYC.reachable() == set(KycStatus)
        assert KYC.terminal == frozenset()  # any state may enter PENDING again (SPEC §3)
        assert VERIFICATION.reachable() == set(VerificationStatus) - {
            VerificationStatus.READY_FOR_VERIFICATION
        }
        assert VERIFICATION.terminal == {VerificationStatus.APPROVED, VerificationStatus.REJECTED}
        assert OWNER_KYC.reachable() == {"PENDING", "APPROVED", "REJECTED"}
        with pytest.raises(IllegalTransition):
            KYC.move(KycStatus.UNVERIFIED, KycStatus.APPROVED)
        with pytest.raises(IllegalTransition):
            VERIFICATION.move(VerificationStatus.APPROVED, VerificationStatus.IN_PROGRESS)


class TestManualReview:
    async def test_the_sandbox_override_ends_a_manual_review(self, client, auth, runner):
        business, _ = await complete_business(client, auth, registration="REG-001")
        submitted = await verify(client, auth, business["id"])
        waiting = await _settled(runner, client, auth, submitted["id"])
        assert waiting["verificationStatus"] == "PENDING_MANUAL_REVIEW"
        decided = await client.post(
            f"/sandbox/customers/{business['id']}/kyc", auth=auth, json={"kycStatus": "APPROVED"}
        )
        assert decided.status_code == 200 and decided.json()["kycStatus"] == "APPROVED"
        done = (await client.get(f"/verifications/{submitted['id']}", auth=auth)).json()
        assert done["verificationStatus"] == "APPROVED"
