"""End User Terms (DRIFT-2026-08 §4): GET /customers/end-user-terms, a customer's
`endUserTermsConsent` (who accepted which version when, from where and how), and the platform's opt-in
`endUserTermsRequired` on /config: off by default, where nothing changes; on, a quote for a customer without
an acceptance of the current version is refused 403 END_USER_TERMS_NOT_ACCEPTED, nothing created."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import (
    FULL_PERSON,
    account_destination,
    account_source,
    create_platform,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)

CONSENT = {
    "acceptedAt": "2026-01-05T10:00:00+01:00",
    "ipAddress": "2001:DB8::1",
    "termsVersion": "V1",
    "acceptanceMethod": "CHECKBOX",
}


def _patch(client, auth, customer_id: str, **fields: Any):
    return client.patch(f"/customers/{customer_id}", auth=auth, json={"customerType": "INDIVIDUAL", **fields})


@pytest.fixture
async def payer(client, auth) -> dict[str, Any]:
    """A funded customer without an acceptance on file, and where a quote of theirs would go."""
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 100_000)
    payee = await mxn_account(client, auth, person["id"])
    return {"customer": person, "usd": usd, "payee": payee}


async def _quote(client, auth, payer: dict[str, Any]):
    return await quote(
        client,
        auth,
        source=account_source(payer["usd"]["id"]),
        destination=account_destination(payer["payee"]["id"]),
    )


async def _quotes(client, auth) -> int:
    return len((await client.get("/transactions", auth=auth)).json()["data"])


class TestTheTerms:
    async def test_the_current_version_and_its_page(self, client, auth):
        terms = (await client.get("/customers/end-user-terms", auth=auth)).json()
        assert terms == {"version": "V1", "url": "http://127.0.0.1:8000/end-user-terms/V1"}
        page = await client.get("http://testserver/end-user-terms/V1")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "End User Terms V1" in page.text
        assert (await client.get("http://testserver/end-user-terms/V0")).status_code == 404

    async def test_the_version_and_url_are_settings(self, client, auth, monkeypatch, settings):
        monkeypatch.setattr(settings, "end_user_terms_version", "2026-08")  # the app's settings
        monkeypatch.setattr(settings, "end_user_terms_url", "https://example.com/terms/2026-08")
        terms = (await client.get("/customers/end-user-terms", auth=auth)).json()
        assert terms == {"version": "2026-08", "url": "https://example.com/terms/2026-08"}

    async def test_the_terms_need_credentials(self, client):
        assert (await client.get("/customers/end-user-terms")).status_code == 401


class TestConsent:
    async def test_is_recorded_as_given_and_shown(self, client, auth):
        person = await customer(client, auth, endUserTermsConsent=CONSENT)
        assert person["endUserTermsConsent"] == {
            "acceptedAt": "2026-01-05T09:00:00Z",
            "ipAddress": "2001:db8::1",
            "termsVersion": "V1",
            "acceptanceMethod": "CHECKBOX",
        }
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json() == person

    async def test_is_absent_until_recorded_and_replaced_by_a_later_one(self, client, auth):
        person = await customer(client, auth)
        assert "endUserTermsConsent" not in person
        later = {**CONSENT, "acceptedAt": "2026-02-01T12:00:00Z", "acceptanceMethod": "CLICK_TO_ACCEPT"}
        changed = await _patch(client, auth, person["id"], endUserTermsConsent=later)
        assert changed.status_code == 200, changed.text
        assert changed.json()["endUserTermsConsent"]["acceptanceMethod"] == "CLICK_TO_ACCEPT"
        refused = await _patch(client, auth, person["id"], endUserTermsConsent=None)
        assert (
            refused.status_code == 400
            and refused.json()["details"]["fields"][0]["field"] == "endUserTermsConsent"
        )

    @pytest.mark.parametrize(
        ("change", "named"),
        [
            ({"ipAddress": "not-an-address"}, "endUserTermsConsent.ipAddress"),
            ({"ipAddress": "999.1.1.1"}, "endUserTermsConsent.ipAddress"),
            ({"ipAddress": "1" * 46}, "endUserTermsConsent.ipAddress"),
            ({"acceptedAt": "2999-01-01T00:00:00Z"}, "endUserTermsConsent.acceptedAt"),
            ({"acceptedAt": "2026-01-05T10:00:00"}, "endUserTermsConsent.acceptedAt"),  # no time zone
            ({"acceptedAt": "yesterday"}, "endUserTermsConsent.acceptedAt"),
            ({"acceptanceMethod": "EMAIL"}, "endUserTermsConsent.acceptanceMethod"),
            ({"termsVersion": None}, "endUserTermsConsent.termsVersion"),
            ({"surprise": True}, "endUserTermsConsent.surprise"),
        ],
    )
    async def test_a_bad_acceptance_is_refused_naming_the_field(self, client, auth, change, named):
        consent = {k: v for k, v in {**CONSENT, **change}.items() if v is not None}
        response = await client.post(
            "/customers", auth=auth, json={**FULL_PERSON, "endUserTermsConsent": consent}
        )
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "INVALID_INPUT"
        assert named in [f["field"] for f in response.json()["details"]["fields"]]
        assert (await client.get("/customers", auth=auth)).json()["totalCount"] == 0

    async def test_an_unknown_version_is_the_reference_s_400(self, client, auth):
        response = await client.post(
            "/customers",
            auth=auth,
            json={**FULL_PERSON, "endUserTermsConsent": {**CONSENT, "termsVersion": "V0"}},
        )
        assert response.status_code == 400 and response.json()["code"] == "END_USER_TERMS_VERSION_NOT_FOUND"
        assert response.json()["details"]["fields"][0]["field"] == "endUserTermsConsent.termsVersion"
        assert (await client.get("/customers", auth=auth)).json()["totalCount"] == 0

    async def test_a_business_gives_one_too(self, client, auth):
        business = await client.post(
            "/customers", auth=auth, json={"customerType": "BUSINESS", "endUserTermsConsent": CONSENT}
        )
        assert business.status_code == 201 and business.json()["endUserTermsConsent"]["termsVersion"] == "V1"


class TestThePlatformSetting:
    async def test_is_off_by_default_and_per_environment(self, client, db, settings):
        platform = await create_platform(db, settings)
        sandbox, production = platform["sandbox"], platform["production"]
        assert (await client.get("/config", auth=sandbox)).json()["endUserTermsRequired"] is False
        on = await client.patch("/config", auth=sandbox, json={"endUserTermsRequired": True})
        assert on.status_code == 200 and on.json()["endUserTermsRequired"] is True
        assert (await client.get("/config", auth=sandbox)).json()["endUserTermsRequired"] is True
        assert (await client.get("/config", auth=production)).json()["endUserTermsRequired"] is False
        off = await client.patch("/config", auth=sandbox, json={"endUserTermsRequired": False})
        assert off.json()["endUserTermsRequired"] is False

    @pytest.mark.parametrize("value", [None, "yes", 1])
    async def test_only_a_boolean_sets_it(self, client, auth, value):
        response = await client.patch("/config", auth=auth, json={"endUserTermsRequired": value})
        assert response.status_code == 400, response.text
        assert response.json()["details"]["fields"][0]["field"] == "endUserTermsRequired"
        assert (await client.get("/config", auth=auth)).json()["endUserTermsRequired"] is False


class TestQuotes:
    async def test_off_a_customer_without_an_acceptance_quotes_as_before(self, client, auth, payer):
        created = await _quote(client, auth, payer)
        assert created.status_code == 201, created.text

    async def test_on_a_customer_without_an_acceptance_is_refused_and_nothing_is_created(
        self, client, auth, payer
    ):
        await client.patch("/config", auth=auth, json={"endUserTermsRequired": True})
        before = await _quotes(client, auth)
        refused = await _quote(client, auth, payer)
        assert refused.status_code == 403, refused.text
        error = refused.json()
        assert error["code"] == "END_USER_TERMS_NOT_ACCEPTED"
        assert error["details"] == {
            "customerId": payer["customer"]["id"],
            "termsVersion": "V1",
            "acceptedVersion": None,
        }
        assert await _quotes(client, auth) == before

    async def test_on_an_acceptance_of_the_current_version_lets_it_quote(self, client, auth, payer):
        await client.patch("/config", auth=auth, json={"endUserTermsRequired": True})
        assert (
            await _patch(client, auth, payer["customer"]["id"], endUserTermsConsent=CONSENT)
        ).status_code == 200
        created = await _quote(client, auth, payer)
        assert created.status_code == 201, created.text
        executed = await client.post(f"/quotes/{created.json()['id']}/execute", auth=auth)
        assert executed.status_code == 200, executed.text

    async def test_on_a_new_version_needs_a_new_acceptance(self, client, auth, payer, monkeypatch, settings):
        await client.patch("/config", auth=auth, json={"endUserTermsRequired": True})
        await _patch(client, auth, payer["customer"]["id"], endUserTermsConsent=CONSENT)
        monkeypatch.setattr(settings, "end_user_terms_version", "V2")  # PLATPAY_END_USER_TERMS_VERSION
        refused = await _quote(client, auth, payer)
        assert refused.status_code == 403 and refused.json()["details"]["acceptedVersion"] == "V1"
        stale = await _patch(client, auth, payer["customer"]["id"], endUserTermsConsent=CONSENT)
        assert stale.status_code == 400 and stale.json()["code"] == "END_USER_TERMS_VERSION_NOT_FOUND"
        accepted = await _patch(
            client, auth, payer["customer"]["id"], endUserTermsConsent={**CONSENT, "termsVersion": "V2"}
        )
        assert accepted.status_code == 200, accepted.text
        assert (await _quote(client, auth, payer)).status_code == 201

    async def test_on_transfers_are_not_concerned(self, client, auth, payer):
        """The reference requires the acceptance on quotes only (createQuote's 403)."""
        await client.patch("/config", auth=auth, json={"endUserTermsRequired": True})
        bank = await external_account(client, auth, payer["customer"]["id"])
        body = {
            "source": {"accountId": payer["usd"]["id"]},
            "destination": {"accountId": bank["id"]},
            "amount": 1_000,
        }
        assert (await client.post("/transfer-out", auth=auth, json=body)).status_code == 201
