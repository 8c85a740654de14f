"""Contact verification: `contactVerification` only where a currency's provider requires it (EUR: email and
phone; GBP: email), one-time codes by real mail (SMTP) and by SMS (the sandbox mailbox), the sandbox code,
expiry, single use, attempt limits, and the refusals (409 not required / already verified, 400 wrong code)."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import text

from platpay.customers import service as customers_service
from platpay.kit import clock
from tests.factories import create_platform

EUROPEAN = {
    "customerType": "INDIVIDUAL",
    "fullName": "Marie Curie",
    "birthDate": "1990-11-07",
    "nationality": "FR",
    "email": "marie@example.fr",
    "address": {"line1": "1 rue de Rivoli", "postalCode": "75001", "country": "FR"},
    "currencies": ["EUR"],
}


@pytest.fixture
async def platform(db, settings) -> dict[str, Any]:
    return await create_platform(db, settings, currencies=["USD", "EUR", "GBP"])


async def _customer(client, auth, **extra: Any) -> dict[str, Any]:
    response = await client.post("/customers", auth=auth, json={**EUROPEAN, **extra})
    assert response.status_code == 201, response.text
    return response.json()


def _code(message: str) -> str:
    found = re.search(r"\b(\d{6})\b", message)
    assert found, message
    return found.group(1)


def _logged(capsys: pytest.CaptureFixture[str], *secrets: str) -> list[str]:
    """The secrets found in what platpay logged (JSON lines, their timestamps aside; the test SMTP server's
    own log, which names recipients, is not platpay's)."""
    found = []
    for line in capsys.readouterr().out.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("logger") != "mail.log":
            entry.pop("timestamp", None)
            found += [secret for secret in secrets if secret in json.dumps(entry)]
    return found


async def _mailbox(client, auth, **params: Any) -> list[dict[str, Any]]:
    response = await client.get("/sandbox/mailbox", auth=auth, params=params)
    assert response.status_code == 200, response.text
    return response.json()["data"]


class TestWhichChannels:
    async def test_only_the_channels_a_currencys_provider_requires_appear(self, client, auth):
        euro = await _customer(client, auth)
        assert euro["contactVerification"] == {"email": "PENDING", "phone": "PENDING"}
        pound = await _customer(client, auth, currencies=["GBP"])
        assert pound["contactVerification"] == {"email": "PENDING"}
        dollar = await _customer(client, auth, currencies=["USD"])
        assert "contactVerification" not in dollar
        moved = await client.patch(
            f"/customers/{euro['id']}", auth=auth, json={"customerType": "INDIVIDUAL", "currencies": ["USD"]}
        )
        assert "contactVerification" not in moved.json()

    async def test_a_channel_not_required_is_409(self, client, auth):
        dollar = await _customer(client, auth, currencies=["USD"])
        pound = await _customer(client, auth, currencies=["GBP"])
        for customer_id, path, body in (
            (dollar["id"], "verify-email", None),
            (dollar["id"], "verify-email/confirm", {"code": "123456"}),
            (pound["id"], "verify-phone", {"phoneNumber": "+447700900123"}),
            (pound["id"], "verify-phone/confirm", {"code": "123456"}),
        ):
            refused = await client.post(f"/customers/{customer_id}/{path}", auth=auth, json=body)
            assert refused.status_code == 409 and refused.json()["code"] == "CONFLICT", (path, refused.text)

    async def test_another_tenants_customer_is_404(self, client, auth, platform):
        theirs = await _customer(client, platform["production"])
        for path, body in (("verify-email", None), ("verify-email/confirm", {"code": "123456"})):
            for customer_id in (theirs["id"], "Customer:nope"):
                refused = await client.post(f"/customers/{customer_id}/{path}", auth=auth, json=body)
                assert refused.status_code == 404 and refused.json()["code"] == "USER_NOT_FOUND"


class TestEmailOverSmtp:
    async def test_a_mailed_code_verifies_the_email_once(
        self, client, platform, db, runner, smtp_server, capsys
    ):
        production = platform["production"]
        marie = await _customer(client, production)
        path = f"/customers/{marie['id']}/verify-email"
        assert (await client.post(path, auth=production)).status_code == 204
        await runner.run_until_idle()
        mail = await smtp_server.wait_for(to=marie["email"])
        code = _code(mail.text)
        async with db.read() as session:
            stored = (await session.execute(text("SELECT * FROM customer_contact_codes"))).mappings().all()
        assert len(stored) == 1 and code not in str(dict(stored[0]))  # only a keyed digest is kept

        for wrong in ("123456" if code != "123456" else "654321", "12345", "abcdef"):
            refused = await client.post(f"{path}/confirm", auth=production, json={"code": wrong})
            assert refused.status_code == 400 and refused.json()["details"]["fields"][0]["field"] == "code"
        confirmed = await client.post(f"{path}/confirm", auth=production, json={"code": code})
        assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json()["contactVerification"] == {"email": "VERIFIED", "phone": "PENDING"}
        assert (await client.get(f"/customers/{marie['id']}", auth=production)).json() == confirmed.json()
        for again in (
            await client.post(f"{path}/confirm", auth=production, json={"code": code}),
            await client.post(path, auth=production),
        ):
            assert again.status_code == 409 and again.json()["code"] == "CONFLICT"

        changed = await client.patch(
            f"/customers/{marie['id']}",
            auth=production,
            json={"customerType": "INDIVIDUAL", "email": "marie@example.org"},
        )
        assert changed.json()["contactVerification"]["email"] == "PENDING"  # the new address is unconfirmed
        assert not _logged(capsys, code, marie["email"])

    async def test_an_expired_code_is_refused(self, client, platform, runner, smtp_server):
        production = platform["production"]
        marie = await _customer(client, production)
        path = f"/customers/{marie['id']}/verify-email"
        clock.freeze()
        await client.post(path, auth=production)
        await runner.run_until_idle()
        code = _code((await smtp_server.wait_for(to=marie["email"])).text)
        clock.advance(timedelta(minutes=10))
        refused = await client.post(f"{path}/confirm", auth=production, json={"code": code})
        assert refused.status_code == 400

    async def test_wrong_codes_burn_the_code_and_attempts_are_limited(
        self, client, platform, runner, smtp_server
    ):
        production = platform["production"]
        marie = await _customer(client, production)
        path = f"/customers/{marie['id']}/verify-email"
        await client.post(path, auth=production)
        await runner.run_until_idle()
        code = _code((await smtp_server.wait_for(to=marie["email"])).text)
        wrong = "000000" if code != "000000" else "111111"
        for _ in range(5):
            assert (
                await client.post(f"{path}/confirm", auth=production, json={"code": wrong})
            ).status_code == 400
        burnt = await client.post(f"{path}/confirm", auth=production, json={"code": code})
        assert burnt.status_code == 400  # five wrong tries used the code up
        for _ in range(4):
            await client.post(f"{path}/confirm", auth=production, json={"code": code})
        limited = await client.post(f"{path}/confirm", auth=production, json={"code": code})
        assert limited.status_code == 429 and limited.json()["code"] == "RATE_LIMITED"
        assert int(limited.headers["Retry-After"]) > 0

    async def test_sends_are_limited(self, client, platform):
        production = platform["production"]
        marie = await _customer(client, production)
        path = f"/customers/{marie['id']}/verify-email"
        for _ in range(5):
            assert (await client.post(path, auth=production)).status_code == 204
        limited = await client.post(path, auth=production)
        assert limited.status_code == 429 and "Retry-After" in limited.headers

    async def test_the_sandbox_code_is_refused_in_production(self, client, platform):
        production = platform["production"]
        marie = await _customer(client, production)
        refused = await client.post(
            f"/customers/{marie['id']}/verify-email/confirm", auth=production, json={"code": "123456"}
        )
        assert refused.status_code == 400

    async def test_a_customer_without_email_is_told_to_add_one(self, client, auth):
        nameless = await _customer(client, auth, email=None)
        refused = await client.post(f"/customers/{nameless['id']}/verify-email", auth=auth)
        assert refused.status_code == 400 and refused.json()["code"] == "MISSING_MANDATORY_USER_INFO"
        assert refused.json()["details"]["fields"][0]["field"] == "email"


class TestSandbox:
    async def test_123456_always_works_and_sends_nothing(self, client, auth, runner):
        marie = await _customer(client, auth)
        for channel in ("email", "phone"):
            confirmed = await client.post(
                f"/customers/{marie['id']}/verify-{channel}/confirm", auth=auth, json={"code": "123456"}
            )
            assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json()["contactVerification"] == {"email": "VERIFIED", "phone": "VERIFIED"}
        await runner.run_until_idle()
        assert await _mailbox(client, auth) == []

    async def test_a_texted_code_from_the_mailbox_verifies_the_phone(self, client, auth, runner, capsys):
        marie = await _customer(client, auth)
        path = f"/customers/{marie['id']}/verify-phone"
        missing = await client.post(path, auth=auth)
        assert missing.status_code == 400 and missing.json()["code"] == "MISSING_MANDATORY_USER_INFO"
        for bad in ("0612345678", "+0612", 33612345678):
            refused = await client.post(path, auth=auth, json={"phoneNumber": bad})
            assert (
                refused.status_code == 400
                and refused.json()["details"]["fields"][0]["field"] == "phoneNumber"
            )
        assert await _mailbox(client, auth) == []

        assert (await client.post(path, auth=auth, json={"phoneNumber": "+33612345678"})).status_code == 204
        assert (await client.post(path, auth=auth)).status_code == 204  # a resend goes to the same number
        await runner.run_until_idle()
        texts = await _mailbox(client, auth, category="customer.verify_phone", to="+33612345678")
        assert len(texts) == 2
        first, latest = _code(texts[1]["text"]), _code(texts[0]["text"])
        if first != latest:  # the resend replaced the first code
            assert (await client.post(f"{path}/confirm", auth=auth, json={"code": first})).status_code == 400
        confirmed = await client.post(f"{path}/confirm", auth=auth, json={"code": latest})
        assert confirmed.status_code == 200
        assert confirmed.json()["contactVerification"] == {"email": "PENDING", "phone": "VERIFIED"}
        assert not _logged(capsys, latest, "+33612345678")

    async def test_the_confirm_body_is_validated(self, client, auth):
        marie = await _customer(client, auth)
        for body in ({}, {"code": ""}, {"code": 123456}, {"code": "1" * 33}, {"pin": "1"}):
            refused = await client.post(
                f"/customers/{marie['id']}/verify-email/confirm", auth=auth, json=body
            )
            assert refused.status_code == 400 and refused.json()["code"] == "INVALID_INPUT", body
        fetched = (await client.get(f"/customers/{marie['id']}", auth=auth)).json()
        assert fetched["contactVerification"]["email"] == "PENDING"


class TestForTheKycLink:
    async def test_pending_channels_name_what_a_kyc_link_waits_for(self, client, auth, db):
        marie = await _customer(client, auth)
        tenant_id = await _tenant_id(db, marie["id"])

        async def pending() -> list[str]:
            async with db.read() as session:
                row = await customers_service.load_active(
                    session, tenant_id=tenant_id, customer_id=marie["id"]
                )
                return customers_service.pending_contact_channels(row)

        assert await pending() == ["email", "phone"]
        await client.post(
            f"/customers/{marie['id']}/verify-phone/confirm", auth=auth, json={"code": "123456"}
        )
        assert await pending() == ["email"]
        await client.post(
            f"/customers/{marie['id']}/verify-email/confirm", auth=auth, json={"code": "123456"}
        )
        assert await pending() == []


async def _tenant_id(db, customer_id: str) -> str:
    async with db.read() as session:
        return await session.scalar(
            text("SELECT tenant_id FROM customers WHERE id = :id"), {"id": customer_id}
        )


class TestKycLinkWaitsForContactVerification:
    async def test_a_kyc_link_is_409_until_every_required_channel_is_verified(self, client, auth):
        marie = await _customer(client, auth)
        path = f"/customers/{marie['id']}/kyc-link"
        refused = await client.post(path, auth=auth, json={})
        assert refused.status_code == 409, refused.text
        for channel in ("email", "phone"):
            await client.post(
                f"/customers/{marie['id']}/verify-{channel}/confirm", auth=auth, json={"code": "123456"}
            )
        created = await client.post(path, auth=auth, json={})
        assert created.status_code == 201, created.text
        assert created.json()["kycUrl"]
