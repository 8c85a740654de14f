"""The console's customers (console/pages/customers.py) over HTTP, on both backends: the searchable list, a
customer's page and its documents' files, and a person's decision of a manual review (the same service call
as POST /verifications/{id}/decision, with the console trail)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.factories import create_platform, customer
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.onboarding import (
    BUSINESS,
    JPEG,
    PDF,
    PERSON,
    complete_business,
    create,
    owner,
    png,
    uploaded,
    verify,
)
from tests.support.statements import count_statements

DECISION_EVENTS = (
    "VERIFICATION.APPROVED",
    "VERIFICATION.REJECTED",
    "CUSTOMER.KYC_APPROVED",
    "CUSTOMER.KYC_REJECTED",
)


async def awaiting_review(client, auth, runner, *, full_name: str = "Jane Doe 001") -> dict[str, Any]:
    """A complete individual whose verification the sandbox provider left to a person (platpay/onboarding/
    sandbox.py: a fullName ending in 001): its verification, PENDING_MANUAL_REVIEW."""
    person = await create(client, auth, {**PERSON, "fullName": full_name})
    await uploaded(client, auth, person["id"], "PASSPORT", png())
    await uploaded(client, auth, person["id"], "UTILITY_BILL")
    submitted = await verify(client, auth, person["id"])
    for _ in range(50):
        found = (await client.get(f"/verifications/{submitted['id']}", auth=auth)).json()
        if found["verificationStatus"] != "IN_PROGRESS":
            break
        await runner.run_until_idle(timeout=10)
    assert found["verificationStatus"] == "PENDING_MANUAL_REVIEW", found
    return found


async def view_token(client, auth) -> tuple[str, str]:
    created = await client.post("/tokens", auth=auth, json={"name": "viewer", "permissions": ["VIEW"]})
    assert created.status_code == 201, created.text
    return created.json()["clientId"], created.json()["clientSecret"]


def ids_linked(html: str) -> list[str]:
    return re.findall(r'href="/console/customers/(Customer:[^"/?]+)"', html)


async def verification_of(client, auth, verification_id: str) -> dict[str, Any]:
    return (await client.get(f"/verifications/{verification_id}", auth=auth)).json()


async def delivered(runner, receiver) -> list[str]:
    await runner.run_until_idle(timeout=10)
    return sorted(r.json["type"] for r in receiver.received if r.json["type"] in DECISION_EVENTS)


# ---- the list


class TestList:
    async def test_lists_customers_each_linking_to_its_page(self, app, client, auth) -> None:
        jane = await customer(client, auth, platformCustomerId="jane-1")
        acme = await create(client, auth, {**BUSINESS, "platformCustomerId": "acme-1"})
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get("/console/customers")
        assert page.status_code == 200, page.text
        assert set(ids_linked(page.text)) == {jane["id"], acme["id"]}
        assert "Jane Doe" in page.text and "Acme Corp" in page.text
        assert '<th scope="col">' in page.text and page.text.count("<h1>") == 1

    async def test_search_by_name_email_platform_id_uma_address_and_exact_id(self, app, client, auth) -> None:
        jane = await customer(client, auth, platformCustomerId="jane-1", email="jane@example.com")
        john = await customer(
            client, auth, fullName="John Roe", platformCustomerId="ext-john-7", email="john@roe.example"
        )
        acme = await create(client, auth, {**BUSINESS, "platformCustomerId": "acme-1"})
        async with console_client(app) as console:
            await signed_in(console, auth)

            async def found(**query: str) -> set[str]:
                answer = await console.get("/console/customers", params=query)
                assert answer.status_code == 200, answer.text
                return set(ids_linked(answer.text))

            assert await found(q="jane doe") == {jane["id"]}
            assert await found(q="ROE.EXAMPLE") == {john["id"]}
            assert await found(q="ext-john") == {john["id"]}
            assert await found(q="acme") == {acme["id"]}
            assert await found(q=john["umaAddress"]) == {john["id"]}
            assert await found(q=jane["id"]) == {jane["id"]}
            assert await found(q="nobody-like-this") == set()
            assert await found(customerType="BUSINESS") == {acme["id"]}
            assert await found(customerType="INDIVIDUAL", q="j") == {jane["id"], john["id"]}
            assert await found(kycStatus="UNVERIFIED", customerType="BUSINESS") == {acme["id"]}
            assert await found(kycStatus="APPROVED") == set()
            page = await console.get("/console/customers", params={"q": "ext-john"})
            assert 'value="ext-john"' in page.text  # the filter shows what it filters by

    async def test_the_next_page_link_leads_to_the_rest(self, app, client, auth) -> None:
        made = {(await customer(client, auth, platformCustomerId=f"p-{i}"))["id"] for i in range(5)}
        async with console_client(app) as console:
            await signed_in(console, auth)
            first = await console.get("/console/customers", params={"limit": 2, "customerType": "INDIVIDUAL"})
            seen = ids_linked(first.text)
            url = re.search(r'<a href="([^"]+)" rel="next">', first.text)
            while url is not None:
                assert "customerType=INDIVIDUAL" in url.group(1)
                page = await console.get(url.group(1).replace("&amp;", "&"))
                assert page.status_code == 200, page.text
                seen += ids_linked(page.text)
                url = re.search(r'<a href="([^"]+)" rel="next">', page.text)
        assert len(seen) == 5 and set(seen) == made

    @pytest.mark.parametrize(
        ("query", "field"),
        [
            ({"kycStatus": "MAYBE"}, "kycStatus"),
            ({"customerType": "ROBOT"}, "customerType"),
            ({"limit": "0"}, "limit"),
        ],
    )
    async def test_a_bad_filter_is_a_400_page_naming_it(self, app, auth, query, field) -> None:
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get("/console/customers", params=query)
        assert page.status_code == 400
        assert field in page.text and "text/html" in page.headers["content-type"]

    async def test_the_list_runs_as_many_statements_for_30_rows_as_for_3(self, app, client, auth, db) -> None:
        async with console_client(app) as console:
            await signed_in(console, auth)
            counts = []
            made = 0
            for total in (3, 30):
                while made < total:
                    await customer(client, auth, platformCustomerId=f"n-{made}")
                    made += 1
                with count_statements(db) as statements:
                    page = await console.get("/console/customers?limit=100")
                assert len(ids_linked(page.text)) == total
                counts.append(statements.count)
        assert counts[0] == counts[1], counts


# ---- a customer's page


class TestCustomerPage:
    async def test_shows_kyb_documents_owners_accounts_and_links(self, app, client, auth, runner) -> None:
        business, person = await complete_business(client, auth)
        submitted = await verify(client, auth, business["id"])
        await runner.run_until_idle(timeout=10)
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(f"/console/customers/{business['id']}")
        assert page.status_code == 200, page.text
        html = page.text
        assert "<h1>Acme Corp</h1>" in html and "KYB status" in html
        assert submitted["id"] in html
        for kind in ("CERTIFICATE_OF_INCORPORATION", "SHAREHOLDER_REGISTER", "UTILITY_BILL", "PASSPORT"):
            assert kind in html
        assert "Ada Lovelace" in html and person["id"] in html  # the owner, and as holder of its passport
        assert f"/console/transactions?customerId={business['id'].replace(':', '%3A')}" in html
        accounts = (
            await client.get(f"/customers/internal-accounts?customerId={business['id']}", auth=auth)
        ).json()
        for account in accounts["data"]:
            assert account["id"] in html
        assert "Console actions" in html

    async def test_verification_errors_and_contact_status_are_shown(self, app, client, auth) -> None:
        person = await create(client, auth, PERSON)
        submitted = await verify(client, auth, person["id"])  # nothing uploaded: RESOLVE_ERRORS
        assert submitted["verificationStatus"] == "RESOLVE_ERRORS"
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(f"/console/customers/{person['id']}")
        assert "RESOLVE_ERRORS" in page.text
        for error in submitted["errors"]:
            assert error["type"] in page.text
        assert "Contact verification" in page.text

    async def test_the_page_runs_as_many_statements_whatever_it_lists(self, app, client, auth, db) -> None:
        small, _ = await complete_business(client, auth, registration="REG-1")
        big, _ = await complete_business(client, auth, registration="REG-2", owner_last_name="Hopper")
        for index in range(3):
            extra = await owner(client, auth, big["id"], last_name=f"Owner{index}", share=10)
            await uploaded(client, auth, extra["id"], "PASSPORT", png())
        for kind in ("BANK_STATEMENT", "PROOF_OF_ADDRESS", "UTILITY_BILL"):
            await uploaded(client, auth, big["id"], kind)
        async with console_client(app) as console:
            await signed_in(console, auth)
            counts = []
            for target in (small, big):
                with count_statements(db) as statements:
                    page = await console.get(f"/console/customers/{target['id']}")
                assert page.status_code == 200
                counts.append(statements.count)
        assert counts[0] == counts[1], counts

    async def test_a_document_opens_in_place_or_downloads(self, app, client, auth) -> None:
        person = await create(client, auth, PERSON)
        scan = await uploaded(client, auth, person["id"], "PASSPORT", JPEG)
        bill = await uploaded(client, auth, person["id"], "UTILITY_BILL", PDF)
        base = f"/console/customers/{person['id']}/documents"
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(f"/console/customers/{person['id']}")
            assert f"{base}/{scan['id']}/file" in page.text
            assert f"{base}/{bill['id']}/file?download=1" in page.text
            shown = await console.get(f"{base}/{bill['id']}/file")
            assert shown.status_code == 200 and shown.content == PDF
            assert shown.headers["content-type"] == "application/pdf"
            assert shown.headers["content-disposition"].startswith("inline;")
            image = await console.get(f"{base}/{scan['id']}/file")
            assert image.headers["content-type"] == "image/jpeg" and image.content == JPEG
            saved = await console.get(f"{base}/{bill['id']}/file", params={"download": "1"})
            assert saved.status_code == 200 and saved.content == PDF
            assert saved.headers["content-disposition"].startswith("attachment;")
            assert "script-src" not in shown.headers["content-security-policy"]
            assert shown.headers["x-content-type-options"] == "nosniff"

    async def test_a_document_of_another_customer_or_platform_is_not_found(
        self, app, client, auth, db, settings
    ) -> None:
        person = await create(client, auth, PERSON)
        theirs = await create(client, auth, {**PERSON, "platformCustomerId": "other"})
        doc = await uploaded(client, auth, theirs["id"], "PASSPORT", PDF)
        other = await create_platform(db, settings)
        elsewhere = await create(client, other["sandbox"], PERSON)
        foreign = await uploaded(client, other["sandbox"], elsewhere["id"], "PASSPORT", PDF)
        async with console_client(app) as console:
            await signed_in(console, auth)
            for path in (
                f"/console/customers/{person['id']}/documents/{doc['id']}/file",
                f"/console/customers/{person['id']}/documents/{foreign['id']}/file",
                f"/console/customers/{elsewhere['id']}/documents/{foreign['id']}/file",
                f"/console/customers/{person['id']}/documents/Document:nope/file",
            ):
                answer = await console.get(path)
                assert answer.status_code == 404, path
                assert "%PDF" not in answer.text and "Not found" in answer.text

    async def test_another_platform_s_customer_is_the_unknown_id_s_404(
        self, app, client, auth, db, settings
    ) -> None:
        other = await create_platform(db, settings)
        theirs = await create(client, other["sandbox"], PERSON)
        unknown = theirs["id"][:-4] + ("0000" if not theirs["id"].endswith("0000") else "1111")
        async with console_client(app) as console:
            await signed_in(console, auth)
            foreign = await console.get(f"/console/customers/{theirs['id']}")
            missing = await console.get(f"/console/customers/{unknown}")
        assert foreign.status_code == missing.status_code == 404
        assert foreign.text.replace(theirs["id"], "ID") == missing.text.replace(unknown, "ID")
        assert "Jane Doe" not in foreign.text


# ---- deciding a manual review


class TestDecision:
    async def test_manage_approves_and_the_page_shows_it_with_the_trail_and_webhooks(
        self, app, client, auth, runner, receiver
    ) -> None:
        assert (
            await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        ).status_code == 200
        waiting = await awaiting_review(client, auth, runner)
        before = await delivered(runner, receiver)
        page_path = f"/console/customers/{waiting['customerId']}"
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(page_path)
            assert "Manual review of" in page.text and 'value="approve"' in page.text
            answer = await console.post(
                f"/console/verifications/{waiting['id']}/decision",
                data={"csrf": csrf_of(page.text), "decision": "approve", "reason": ""},
            )
            assert answer.status_code == 303, answer.text
            assert answer.headers["location"].startswith(page_path)
            after = await console.get(answer.headers["location"])
        decided = await verification_of(client, auth, waiting["id"])
        assert decided["verificationStatus"] == "APPROVED" and decided["decidedBy"].startswith("Token:")
        customer_now = (await client.get(f"/customers/{waiting['customerId']}", auth=auth)).json()
        assert customer_now["kycStatus"] == "APPROVED"
        assert "Decision recorded" in after.text and "Manual review of" not in after.text
        assert "REVIEW_DECIDED" in after.text and "decision: APPROVED" in after.text
        history = after.text.split('id="history-heading"')[1].split("</section>")[0]
        assert "CUSTOMER.KYC_APPROVED" in history
        if "CUSTOMER.KYC_PENDING" in history:  # newest first
            assert history.index("CUSTOMER.KYC_APPROVED") < history.index("CUSTOMER.KYC_PENDING")
        assert (await delivered(runner, receiver))[len(before) :] == [
            "CUSTOMER.KYC_APPROVED",
            "VERIFICATION.APPROVED",
        ]

    async def test_reject_needs_a_reason_shown_beside_the_field_then_rejects(
        self, app, client, auth, runner, receiver
    ) -> None:
        assert (
            await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        ).status_code == 200
        waiting = await awaiting_review(client, auth, runner)
        path = f"/console/verifications/{waiting['id']}/decision"
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(f"/console/customers/{waiting['customerId']}")
            csrf = csrf_of(page.text)
            empty = await console.post(path, data={"csrf": csrf, "decision": "reject", "reason": "  "})
            assert empty.status_code == 400
            assert 'aria-describedby="reason-1-error"' in empty.text
            assert re.search(r'<p class="error" id="reason-1-error">[^<]*reason', empty.text)
            assert (await verification_of(client, auth, waiting["id"]))[
                "verificationStatus"
            ] == "PENDING_MANUAL_REVIEW"
            assert "REVIEW_DECIDED" not in empty.text
            rejected = await console.post(
                path, data={"csrf": csrf, "decision": "reject", "reason": "document altered"}
            )
            assert rejected.status_code == 303, rejected.text
            after = await console.get(rejected.headers["location"])
        decided = await verification_of(client, auth, waiting["id"])
        assert decided["verificationStatus"] == "REJECTED" and decided["decisionReason"] == "document altered"
        assert decided["errors"][0]["type"] == "APPLICANT_REJECTED"
        assert "document altered" in after.text and "REVIEW_DECIDED" in after.text
        assert await delivered(runner, receiver) == ["CUSTOMER.KYC_REJECTED", "VERIFICATION.REJECTED"]

    async def test_two_tabs_deciding_apply_the_first_and_show_the_second_it_was_decided(
        self, app, client, auth, runner, receiver, db
    ) -> None:
        assert (
            await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        ).status_code == 200
        waiting = await awaiting_review(client, auth, runner)
        path = f"/console/verifications/{waiting['id']}/decision"
        async with console_client(app) as console:
            await signed_in(console, auth)
            tab_a = await console.get(f"/console/customers/{waiting['customerId']}")
            tab_b = await console.get(f"/console/customers/{waiting['customerId']}")
            first = await console.post(path, data={"csrf": csrf_of(tab_a.text), "decision": "approve"})
            assert first.status_code == 303
            after_first = await verification_of(client, auth, waiting["id"])
            second = await console.post(
                path, data={"csrf": csrf_of(tab_b.text), "decision": "reject", "reason": "second tab"}
            )
            assert second.status_code == 409
            assert "Already changed" in second.text and "APPROVED" in second.text
            assert "VERIFICATION_NOT_AWAITING_REVIEW" in second.text
            page = await console.get(f"/console/customers/{waiting['customerId']}")
        assert await verification_of(client, auth, waiting["id"]) == after_first
        assert page.text.count("REVIEW_DECIDED") == 1
        assert await delivered(runner, receiver) == ["CUSTOMER.KYC_APPROVED", "VERIFICATION.APPROVED"]

    async def test_a_view_token_sees_no_form_and_its_post_is_403(self, app, client, auth, runner) -> None:
        waiting = await awaiting_review(client, auth, runner)
        viewer = await view_token(client, auth)
        async with console_client(app) as console:
            csrf = await signed_in(console, viewer)
            page = await console.get(f"/console/customers/{waiting['customerId']}")
            assert page.status_code == 200
            assert "PENDING_MANUAL_REVIEW" in page.text
            assert 'value="approve"' not in page.text and "/decision" not in page.text
            refused = await console.post(
                f"/console/verifications/{waiting['id']}/decision", data={"csrf": csrf, "decision": "approve"}
            )
        assert refused.status_code == 403 and "MANAGE" in refused.text
        assert (await verification_of(client, auth, waiting["id"]))[
            "verificationStatus"
        ] == "PENDING_MANUAL_REVIEW"

    async def test_a_forged_form_is_403_and_changes_nothing(self, app, client, auth, runner) -> None:
        waiting = await awaiting_review(client, auth, runner)
        async with console_client(app) as console:
            await signed_in(console, auth)
            for data in ({"csrf": "forged", "decision": "approve"}, {"decision": "approve"}):
                refused = await console.post(f"/console/verifications/{waiting['id']}/decision", data=data)
                assert refused.status_code == 403
            page = await console.get(f"/console/customers/{waiting['customerId']}")
        assert (await verification_of(client, auth, waiting["id"]))[
            "verificationStatus"
        ] == "PENDING_MANUAL_REVIEW"
        assert "REVIEW_DECIDED" not in page.text

    async def test_another_platform_s_verification_is_not_found(
        self, app, client, auth, runner, db, settings
    ) -> None:
        other = await create_platform(db, settings)
        theirs = await awaiting_review(client, other["sandbox"], runner)
        async with console_client(app) as console:
            csrf = await signed_in(console, auth)
            foreign = await console.post(
                f"/console/verifications/{theirs['id']}/decision", data={"csrf": csrf, "decision": "approve"}
            )
            unknown = await console.post(
                "/console/verifications/Verification:nope/decision",
                data={"csrf": csrf, "decision": "approve"},
            )
        assert foreign.status_code == unknown.status_code == 404
        after = await verification_of(client, other["sandbox"], theirs["id"])
        assert after["verificationStatus"] == "PENDING_MANUAL_REVIEW"

    async def test_an_unknown_decision_is_a_400_page(self, app, client, auth, runner) -> None:
        waiting = await awaiting_review(client, auth, runner)
        async with console_client(app) as console:
            csrf = await signed_in(console, auth)
            answer = await console.post(
                f"/console/verifications/{waiting['id']}/decision", data={"csrf": csrf, "decision": "maybe"}
            )
        assert answer.status_code == 400 and "decision" in answer.text
        assert (await verification_of(client, auth, waiting["id"]))[
            "verificationStatus"
        ] == "PENDING_MANUAL_REVIEW"
