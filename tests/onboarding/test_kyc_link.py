"""KYC links and the hosted page through HTTP: the link (single-use, expiring, idempotent, kycStatus
unchanged, redirectUri rules), the page asking only for what is missing, a submission that goes through
POST /verifications' code, errors beside their fields, the used / expired / unknown pages."""

from __future__ import annotations

import re
from datetime import timedelta

import httpx
import pytest

from platpay.kit import clock
from tests.factories import create_platform
from tests.support.onboarding import BUSINESS, EXECUTABLE, PDF, PERSON, create, png

REDIRECT = "https://app.example.com/onboarding/done"


def _page_client(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """The same app, outside the API's base path (where the hosted page is)."""
    return httpx.AsyncClient(transport=client._transport, base_url="http://testserver")


async def _link(client, auth, customer_id: str, **body) -> dict:
    response = await client.post(f"/customers/{customer_id}/kyc-link", auth=auth, json=body or None)
    assert response.status_code == 201, response.text
    return response.json()


class TestLink:
    async def test_a_link_for_a_customer(self, client, auth):
        person = await create(client, auth, PERSON)
        link = await _link(client, auth, person["id"], redirectUri=REDIRECT)
        assert re.fullmatch(r"http://testserver/kyc/[A-Za-z0-9_-]{40,}", link["kycUrl"]), link
        assert link["provider"] == "SUMSUB" and link["expiresAt"] and "token" not in link
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "PENDING"
        another = await _link(client, auth, person["id"])
        assert another["kycUrl"] != link["kycUrl"]  # earlier links stay valid; each is its own

    async def test_idempotent_and_refusals(self, client, auth, db, settings):
        person = await create(client, auth, PERSON)
        headers = {"Idempotency-Key": "link-1"}
        first = await client.post(f"/customers/{person['id']}/kyc-link", auth=auth, json={}, headers=headers)
        again = await client.post(f"/customers/{person['id']}/kyc-link", auth=auth, json={}, headers=headers)
        assert first.status_code == again.status_code == 201 and first.json() == again.json()
        for uri in (
            "http://app.example.com/done",
            "ftp://x.example/y",
            "javascript:alert(1)",
            "https://",
            "x" * 3000,
        ):
            response = await client.post(
                f"/customers/{person['id']}/kyc-link", auth=auth, json={"redirectUri": uri}
            )
            assert response.status_code == 400 and "redirectUri" in response.text, uri
        for uri in ("http://127.0.0.1:3000/back", "http://localhost/back", "http://[::1]:8080/"):
            assert (
                await client.post(f"/customers/{person['id']}/kyc-link", auth=auth, json={"redirectUri": uri})
            ).status_code == 201
        assert (await client.post("/customers/Customer:none/kyc-link", auth=auth)).status_code == 404
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (await client.post(f"/customers/{person['id']}/kyc-link", auth=other)).status_code == 404


class TestHostedPage:
    async def test_asks_for_what_is_missing_and_submits_through_verifications(self, client, auth, runner):
        person = await create(
            client, auth, {**PERSON, "address": {k: v for k, v in PERSON["address"].items() if k != "city"}}
        )
        link = await _link(client, auth, person["id"], redirectUri=REDIRECT)
        path = link["kycUrl"].removeprefix("http://testserver")
        async with _page_client(client) as browser:
            page = await browser.get(path)
            assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
            html = page.text
            assert (
                'name="customer.address.city"' in html
                and '<label for="f-customer.address.city">City</label>' in html
            )
            assert 'name="customer.fullName"' not in html  # on file already: not asked
            assert 'type="file"' in html and "http" not in html.split("<body>")[0].replace("http-equiv", "")
            files = {
                f"doc.{person['id']}.MISSING_IDENTITY_DOCUMENT": ("passport.png", png(), "image/png"),
                f"doc.{person['id']}.MISSING_PROOF_OF_ADDRESS_DOCUMENT": ("bill.pdf", PDF, "application/pdf"),
            }
            data = {
                "customer.address.city": "Springfield",
                "documents.country": "US",
                f"type.{person['id']}.MISSING_IDENTITY_DOCUMENT": "PASSPORT",
                f"type.{person['id']}.MISSING_PROOF_OF_ADDRESS_DOCUMENT": "UTILITY_BILL",
            }
            done = await browser.post(path, data=data, files=files)
            assert done.status_code == 303 and done.headers["location"] == REDIRECT, done.text
            used = await browser.get(path)
            assert used.status_code == 410 and "already been used" in used.text
            assert (await browser.post(path, data=data, files=files)).status_code == 410
        customer = (await client.get(f"/customers/{person['id']}", auth=auth)).json()
        assert customer["kycStatus"] == "PENDING" and customer["address"]["city"] == "Springfield"
        [verification] = (
            await client.get("/verifications", auth=auth, params={"customerId": person["id"]})
        ).json()["data"]
        assert verification["verificationStatus"] == "IN_PROGRESS"
        docs = (await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})).json()[
            "data"
        ]
        assert {d["documentType"] for d in docs} == {"PASSPORT", "UTILITY_BILL"}
        await runner.run_until_idle(timeout=10)
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "APPROVED"

    async def test_errors_show_beside_their_fields_and_change_nothing(self, client, auth, settings):
        person = await create(
            client, auth, {**PERSON, "address": {k: v for k, v in PERSON["address"].items() if k != "city"}}
        )
        link = await _link(client, auth, person["id"])
        path = link["kycUrl"].removeprefix("http://testserver")
        async with _page_client(client) as browser:
            refused = await browser.post(
                path,
                data={"customer.address.city": "Springfield", "documents.country": "US"},
                files={
                    f"doc.{person['id']}.MISSING_IDENTITY_DOCUMENT": (
                        "passport.pdf",
                        EXECUTABLE,
                        "application/pdf",
                    )
                },
            )
            assert refused.status_code == 400
            assert re.search(
                r'id="e-doc\.[^"]+\.MISSING_IDENTITY_DOCUMENT">[^<]*PDF, JPEG or PNG', refused.text
            ), refused.text
            bad_city = await browser.post(
                path,
                data={"customer.address.city": " ", "documents.country": "ZZ"},
                files={
                    f"doc.{person['id']}.MISSING_IDENTITY_DOCUMENT": ("p.png", png(), "image/png"),
                },
            )
            assert bad_city.status_code == 400 and 'id="e-documents.country"' in bad_city.text
            assert (await browser.get(path)).status_code == 200  # not used up
        customer = (await client.get(f"/customers/{person['id']}", auth=auth)).json()
        assert "city" not in customer["address"]
        assert (await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})).json()[
            "data"
        ] == []

    @pytest.mark.parametrize("case", ["unknown", "expired"])
    async def test_unknown_and_expired_links_have_their_pages(self, client, auth, case):
        person = await create(client, auth, PERSON)
        link = await _link(client, auth, person["id"])
        path = link["kycUrl"].removeprefix("http://testserver")
        if case == "unknown":
            path = path[:-4] + "abcd"
        else:
            clock.freeze(clock.now() + timedelta(days=2))
        async with _page_client(client) as browser:
            page = await browser.get(path)
        assert page.status_code == (404 if case == "unknown" else 410)
        assert page.headers["content-type"].startswith("text/html")
        assert ("not found" if case == "unknown" else "expired") in page.text.lower()
        assert "Traceback" not in page.text


class TestHostedPageForABusiness:
    async def test_business_details_documents_and_an_owner(self, client, auth, runner):
        info = {k: v for k, v in BUSINESS["businessInfo"].items() if k != "registrationNumber"}
        business = await create(client, auth, {**BUSINESS, "businessInfo": info})
        link = await _link(client, auth, business["id"], redirectUri=REDIRECT)
        path = link["kycUrl"].removeprefix("http://testserver")
        biz = business["id"]
        async with _page_client(client) as browser:
            html = (await browser.get(path)).text
            for name in ("customer.businessInfo.registrationNumber", "owner.firstName", "owner.identifier"):
                assert f'name="{name}"' in html, name
            owner_fields = {
                "owner.firstName": "Ada",
                "owner.lastName": "Lovelace",
                "owner.birthDate": "1980-02-03",
                "owner.nationality": "GB",
                "owner.address.line1": "2 Oak St",
                "owner.address.city": "London",
                "owner.address.postalCode": "N1 9GU",
                "owner.address.country": "GB",
                "owner.idType": "NON_US_TAX_ID",
                "owner.identifier": "QQ123456C",
                "owner.ownershipPercentage": "60",
            }
            files = {
                f"doc.{biz}.MISSING_LEGAL_PRESENCE_DOCUMENT": ("inc.pdf", PDF, "application/pdf"),
                f"doc.{biz}.MISSING_OWNERSHIP_STRUCTURE_DOCUMENT": ("register.pdf", PDF, "application/pdf"),
                f"doc.{biz}.MISSING_PROOF_OF_ADDRESS_DOCUMENT": ("bill.png", png(), "image/png"),
                "doc.owner.MISSING_IDENTITY_DOCUMENT": ("passport.png", png(), "image/png"),
            }
            data = {
                "customer.businessInfo.registrationNumber": "REG-7000",
                "documents.country": "US",
                **owner_fields,
            }
            bad = await browser.post(path, data={**data, "owner.birthDate": "3000-01-01"}, files=files)
            assert bad.status_code == 400 and 'id="e-owner.birthDate"' in bad.text, bad.text
            done = await browser.post(path, data=data, files=files)
            assert done.status_code == 303 and done.headers["location"] == REDIRECT, done.text
        [person] = (await client.get("/beneficial-owners", auth=auth, params={"customerId": biz})).json()[
            "data"
        ]
        assert person["personalInfo"]["lastName"] == "Lovelace" and person["ownershipPercentage"] == 60
        docs = (await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})).json()[
            "data"
        ]
        assert [d["documentType"] for d in docs] == ["PASSPORT"]
        customer = (await client.get(f"/customers/{biz}", auth=auth)).json()
        assert (
            customer["businessInfo"]["registrationNumber"] == "REG-7000"
            and customer["kycStatus"] == "PENDING"
        )
        await runner.run_until_idle(timeout=10)
        assert (await client.get(f"/customers/{biz}", auth=auth)).json()["kycStatus"] == "APPROVED"


class TestNothingPersonalInTheLogs:
    @pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
    async def test_tokens_tax_ids_document_numbers_and_file_content_stay_out(self, client, auth, capsys):
        business = await create(client, auth, BUSINESS)
        secret_id, number, marker = "QQ987654Z", "P-55443322", b"SECRET-FILE-CONTENT"
        person = await client.post(
            "/beneficial-owners",
            auth=auth,
            json={
                "customerId": business["id"],
                "roles": ["UBO"],
                "ownershipPercentage": 50,
                "personalInfo": {
                    "firstName": "Ada",
                    "lastName": "Lovelace",
                    "birthDate": "1980-02-03",
                    "nationality": "GB",
                    "address": {"line1": "2 Oak St", "postalCode": "N1 9GU", "country": "GB"},
                    "idType": "NON_US_TAX_ID",
                    "identifier": secret_id,
                },
            },
        )
        assert person.status_code == 201
        uploaded = await client.post(
            "/documents",
            auth=auth,
            data={
                "documentHolder": person.json()["id"],
                "documentType": "PASSPORT",
                "country": "GB",
                "documentNumber": number,
            },
            files={"file": ("p.pdf", PDF + marker, "application/pdf")},
        )
        assert uploaded.status_code == 201
        refused = await client.post(
            "/documents",
            auth=auth,
            data={
                "documentHolder": person.json()["id"],
                "documentType": "PASSPORT",
                "country": "GB",
                "documentNumber": number,
            },
            files={"file": ("p.pdf", b"MZ" + marker, "application/pdf")},
        )
        assert refused.status_code == 400
        link = await _link(client, auth, business["id"])
        token = link["kycUrl"].rsplit("/", 1)[-1]
        async with _page_client(client) as browser:
            assert (await browser.get(f"/kyc/{token}")).status_code == 200
        logged = capsys.readouterr()
        text = logged.out + logged.err
        assert '"route": "/kyc/{token}"' in text  # the page's request was logged, by its route
        for secret in (secret_id, number, marker.decode(), token):
            assert secret not in text, secret


class TestPartialSubmission:
    async def test_what_was_given_is_kept_and_the_rest_asked_for(self, client, auth):
        person = await create(
            client, auth, {**PERSON, "address": {k: v for k, v in PERSON["address"].items() if k != "city"}}
        )
        link = await _link(client, auth, person["id"], redirectUri=REDIRECT)
        path = link["kycUrl"].removeprefix("http://testserver")
        async with _page_client(client) as browser:
            partial = await browser.post(
                path,
                data={"customer.address.city": "Springfield", "documents.country": "US"},
                files={f"doc.{person['id']}.MISSING_IDENTITY_DOCUMENT": ("p.png", png(), "image/png")},
            )
            assert partial.status_code == 400
            assert 'name="customer.address.city"' not in partial.text  # given: no longer asked
            assert re.search(
                r'id="e-doc\.[^"]+\.MISSING_PROOF_OF_ADDRESS_DOCUMENT">Proof of address is required',
                partial.text,
            )
            assert "MISSING_IDENTITY_DOCUMENT" not in partial.text
            rest = await browser.post(
                path,
                data={"documents.country": "US"},
                files={
                    f"doc.{person['id']}.MISSING_PROOF_OF_ADDRESS_DOCUMENT": (
                        "bill.pdf",
                        PDF,
                        "application/pdf",
                    )
                },
            )
            assert rest.status_code == 303 and rest.headers["location"] == REDIRECT
        statuses = [
            v["verificationStatus"] for v in (await client.get("/verifications", auth=auth)).json()["data"]
        ]
        assert statuses == ["IN_PROGRESS"]  # the RESOLVE_ERRORS one moved on


class TestTheTenantsClock:
    async def test_a_link_expires_on_the_sandbox_tenants_clock(self, client, auth):
        person = await create(client, auth, PERSON)
        link = await _link(client, auth, person["id"])
        path = link["kycUrl"].removeprefix("http://testserver")
        moved = await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 2 * 86400})
        assert moved.status_code == 200, moved.text
        async with _page_client(client) as browser:
            page = await browser.get(path)
        assert page.status_code == 410 and "expired" in page.text.lower()
