"""UMA invitations through the API and their page: create, read and claim across platforms of one
environment, cancel by the creating platform only, expiry by the job at expiresAt, the terminal states'
codes, and every field validated with nothing created on a refusal."""

from __future__ import annotations

import asyncio
import re
from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from platpay.invitations.state import INVITATION, InvitationStatus
from platpay.kit import clock
from platpay.kit.crypto.webhook_signing import verify_header
from platpay.kit.states import IllegalTransition
from tests.factories import create_platform, customer
from tests.support.jobs import run_jobs_until
from tests.support.receiver import WebhookReceiver

CODE_RE = re.compile(r"^[0-9abcdefghjkmnpqrstvwxyz]{12}$")


@pytest.fixture
async def other(db, settings) -> dict[str, Any]:
    """A second platform: it reads and claims invitations by code, and may not cancel them."""
    return await create_platform(db, settings, name="Other")


async def _invite(client, auth, **body: Any) -> httpx.Response:
    return await client.post("/invitations", auth=auth, json=body)


async def _count(db) -> int:
    async with db.read() as session:
        return int(await session.scalar(text("SELECT count(*) FROM invitations")))


def _page_path(invitation: dict[str, Any]) -> str:
    return "/" + invitation["url"].split("/", 3)[3]


class TestCreate:
    async def test_an_invitation_from_a_customer_is_pending_with_a_short_code_and_a_page(self, client, auth):
        jane = await customer(client, auth)
        created = await _invite(
            client,
            auth,
            inviterUma=jane["umaAddress"].upper(),
            firstName="Alice",
            amountToSend=12550,
            expiresAt="2099-12-31T23:59:59Z",
        )
        assert created.status_code == 201, created.text
        body = created.json()
        assert CODE_RE.match(body["invitationCode"])
        assert body["url"].endswith(f"/i/{body['invitationCode']}")
        assert body["status"] == "PENDING"
        assert body["inviterUma"] == jane["umaAddress"]
        assert body["firstName"] == "Alice"
        assert body["amountToSend"]["amount"] == 12550
        assert body["amountToSend"]["currency"]["code"] == jane["currencies"][0]
        assert body["expiresAt"].startswith("2099-12-31T23:59:59")
        assert "claimedAt" not in body and "inviteeUma" not in body
        assert body["code"] == body["invitationCode"]  # the reference's name beside SPEC's (DRIFT-2026-08 §3)
        fetched = await client.get(f"/invitations/{body['invitationCode']}", auth=auth)
        assert fetched.status_code == 200 and fetched.json() == body

    async def test_codes_are_unique(self, client, auth):
        jane = await customer(client, auth)
        codes = {
            (await _invite(client, auth, inviterUma=jane["umaAddress"])).json()["invitationCode"]
            for _ in range(20)
        }
        assert len(codes) == 20

    async def test_every_field_is_validated_and_nothing_is_created(self, client, auth, db):
        jane = await customer(client, auth)
        cases = [
            ({}, "inviterUma", "INVALID_INPUT"),
            ({"inviterUma": "jane@example.com"}, "inviterUma", "INVALID_UMA_ADDRESS"),
            ({"inviterUma": "$UMA", "firstName": " Alice"}, "firstName", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "firstName": "Al\tice"}, "firstName", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "firstName": ""}, "firstName", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "amountToSend": 0}, "amountToSend", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "amountToSend": "100"}, "amountToSend", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "amountToSend": 10.5}, "amountToSend", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "expiresAt": "2020-01-01T00:00:00Z"}, "expiresAt", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "expiresAt": "1700000000"}, "expiresAt", "INVALID_INPUT"),
            ({"inviterUma": "$UMA", "code": "abc"}, "code", "INVALID_INPUT"),
        ]
        for body, field, code in cases:
            if body.get("inviterUma") == "$UMA":
                body = {**body, "inviterUma": jane["umaAddress"]}
            refused = await _invite(client, auth, **body)
            assert refused.status_code == 400, (body, refused.text)
            assert refused.json()["code"] == code, body
            assert field in {f["field"] for f in refused.json()["details"]["fields"]}, body
        assert await _count(db) == 0

    async def test_the_inviter_must_be_one_of_the_platforms_customers(
        self, client, auth, platform, other, db
    ):
        theirs = await customer(client, other["sandbox"])
        production = await customer(client, platform["production"])
        for uma in (theirs["umaAddress"], production["umaAddress"], "$nobody@test-platform.platpay.test"):
            refused = await _invite(client, auth, inviterUma=uma)
            assert refused.status_code == 404 and refused.json()["code"] == "USER_NOT_FOUND", refused.text
        assert await _count(db) == 0

    async def test_a_repeated_idempotency_key_replays_the_first_invitation(self, client, auth, db):
        jane = await customer(client, auth)
        headers = {"Idempotency-Key": "invite-1"}
        body = {"inviterUma": jane["umaAddress"]}
        first = await client.post("/invitations", auth=auth, json=body, headers=headers)
        again = await client.post("/invitations", auth=auth, json=body, headers=headers)
        assert first.status_code == again.status_code == 201
        assert first.json() == again.json()
        assert await _count(db) == 1


class TestReadAndClaim:
    async def test_another_platform_reads_and_claims_it_and_the_creator_is_told(
        self, client, auth, other, runner, receiver
    ):
        config = (await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})).json()
        jane = await customer(client, auth)
        claimer_hooks = WebhookReceiver().start()
        await client.patch("/config", auth=other["sandbox"], json={"webhookEndpoint": claimer_hooks.url})
        invitation = (await _invite(client, auth, inviterUma=jane["umaAddress"])).json()
        code = invitation["invitationCode"]
        bob = await customer(client, other["sandbox"], fullName="Bob Roe")

        seen = await client.get(f"/invitations/{code.upper()}", auth=other["sandbox"])
        assert seen.status_code == 200 and seen.json()["status"] == "PENDING"
        claimed = await client.post(
            f"/invitations/{code}/claim", auth=other["sandbox"], json={"inviteeUma": bob["umaAddress"]}
        )
        assert claimed.status_code == 200, claimed.text
        body = claimed.json()
        assert body["status"] == "CLAIMED" and body["inviteeUma"] == bob["umaAddress"]
        assert body["claimedAt"]

        await run_jobs_until(
            runner,
            lambda: (
                len(receiver.of_type("INVITATION_CLAIMED")) == 1 and len(claimer_hooks.of_type("TEST")) == 1
            ),
        )
        [event] = receiver.of_type("INVITATION_CLAIMED")
        assert verify_header(config["webhookPublicKey"], event.headers["x-svc-signature"], event.body)
        assert event.json["data"] == body == (await client.get(f"/invitations/{code}", auth=auth)).json()
        assert event.json["data"]["code"] == event.json["data"]["invitationCode"] == code
        claimer_hooks.stop()
        assert [r.json["type"] for r in claimer_hooks.received] == ["TEST"]  # the creator alone is told

        again = await client.post(
            f"/invitations/{code}/claim", auth=other["sandbox"], json={"inviteeUma": bob["umaAddress"]}
        )
        assert again.status_code == 400 and again.json()["code"] == "INVITATION_ALREADY_CLAIMED"
        cancelled = await client.post(f"/invitations/{code}/cancel", auth=auth)
        assert cancelled.status_code == 400 and cancelled.json()["code"] == "INVITATION_ALREADY_CLAIMED"

    async def test_environments_do_not_see_each_others_invitations(self, client, auth, platform, other):
        jane = await customer(client, auth)
        code = (await _invite(client, auth, inviterUma=jane["umaAddress"])).json()["invitationCode"]
        for credentials in (platform["production"], other["production"]):
            for method, path in (("GET", ""), ("POST", "/cancel")):
                response = await client.request(method, f"/invitations/{code}{path}", auth=credentials)
                assert response.status_code == 404 and response.json()["code"] == "INVITATION_NOT_FOUND"
        unknown = await client.get("/invitations/zzzzzzzzzzzz", auth=auth)
        assert unknown.status_code == 404 and unknown.json()["code"] == "INVITATION_NOT_FOUND"
        malformed = await client.get("/invitations/not-a-code!", auth=auth)
        assert malformed.status_code == 404

    async def test_the_invitee_must_be_one_of_the_claiming_platforms_customers(self, client, auth, other):
        jane = await customer(client, auth)
        code = (await _invite(client, auth, inviterUma=jane["umaAddress"])).json()["invitationCode"]
        ours = await customer(client, auth, fullName="Bob Roe")
        cases = [
            ({"inviteeUma": ours["umaAddress"]}, 404, "USER_NOT_FOUND"),  # another platform's customer
            ({"inviteeUma": "bob"}, 400, "INVALID_UMA_ADDRESS"),
            ({}, 400, "INVALID_INPUT"),
            ({"inviteeUma": 5}, 400, "INVALID_INPUT"),
        ]
        for body, status, error in cases:
            refused = await client.post(f"/invitations/{code}/claim", auth=other["sandbox"], json=body)
            assert (refused.status_code, refused.json()["code"]) == (status, error), refused.text
        own = await client.post(
            f"/invitations/{code}/claim", auth=auth, json={"inviteeUma": jane["umaAddress"]}
        )
        assert own.status_code == 400 and own.json()["details"]["fields"][0]["field"] == "inviteeUma"
        assert (await client.get(f"/invitations/{code}", auth=auth)).json()["status"] == "PENDING"


class TestCancel:
    async def test_only_the_creating_platform_cancels_and_the_page_shows_it(self, client, auth, other):
        jane = await customer(client, auth)
        invitation = (await _invite(client, auth, inviterUma=jane["umaAddress"])).json()
        code = invitation["invitationCode"]
        forbidden = await client.post(f"/invitations/{code}/cancel", auth=other["sandbox"])
        assert forbidden.status_code == 403 and forbidden.json()["code"] == "FORBIDDEN"
        assert (await client.get(f"/invitations/{code}", auth=auth)).json()["status"] == "PENDING"

        cancelled = await client.post(f"/invitations/{code}/cancel", auth=auth)
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "CANCELLED"
        for response in (
            await client.post(f"/invitations/{code}/cancel", auth=auth),
            await client.post(
                f"/invitations/{code}/claim",
                auth=other["sandbox"],
                json={"inviteeUma": (await customer(client, other["sandbox"]))["umaAddress"]},
            ),
        ):
            assert response.status_code == 400 and response.json()["code"] == "INVITATION_CANCELLED"

        page = await client.get(f"http://testserver{_page_path(invitation)}")
        assert page.status_code == 410 and "was cancelled" in page.text


class TestExpiry:
    async def test_an_invitation_expires_at_expires_at_by_the_job(self, client, auth, other, db, runner):
        clock.freeze()
        jane = await customer(client, auth)
        expires = clock.isoformat(clock.now() + timedelta(minutes=5))
        invitation = (await _invite(client, auth, inviterUma=jane["umaAddress"], expiresAt=expires)).json()
        code = invitation["invitationCode"]
        await runner.run_until_idle()
        assert (await client.get(f"/invitations/{code}", auth=auth)).json()["status"] == "PENDING"

        clock.advance(timedelta(minutes=5))
        assert (await client.get(f"/invitations/{code}", auth=auth)).json()["status"] == "EXPIRED"
        await runner.run_until_idle()
        async with db.read() as session:
            stored = await session.scalar(text("SELECT status FROM invitations WHERE code = :c"), {"c": code})
        assert stored == "EXPIRED"

        bob = await customer(client, other["sandbox"])
        for response in (
            await client.post(f"/invitations/{code}/cancel", auth=auth),
            await client.post(
                f"/invitations/{code}/claim", auth=other["sandbox"], json={"inviteeUma": bob["umaAddress"]}
            ),
        ):
            assert response.status_code == 400 and response.json()["code"] == "INVITATION_EXPIRED"
        page = await client.get(f"http://testserver{_page_path(invitation)}")
        assert page.status_code == 410 and "has expired" in page.text


class TestPage:
    async def test_the_page_shows_the_invitation_escaped_and_self_contained(self, client, auth):
        jane = await customer(client, auth)
        invitation = (
            await _invite(
                client, auth, inviterUma=jane["umaAddress"], firstName="<b>Al</b>", amountToSend=12550
            )
        ).json()
        page = await client.get(f"http://testserver{_page_path(invitation)}")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        assert "default-src 'none'" in page.headers["content-security-policy"]
        assert page.headers["referrer-policy"] == "no-referrer"
        html = page.text
        assert invitation["invitationCode"] in html and jane["umaAddress"] in html
        assert "&lt;b&gt;Al&lt;/b&gt;" in html and "<b>Al</b>" not in html
        assert "$125.50 USD" in html and "Sandbox invitation" in html
        assert 'name="viewport"' in html
        assert not re.search(r"(src|href)=|@import|url\(", html)  # nothing loads from anywhere

    async def test_an_unknown_code_is_a_404_page(self, client):
        for code in ("zzzzzzzzzzzz", "nope"):
            page = await client.get(f"http://testserver/i/{code}")
            assert page.status_code == 404 and "Invitation not found" in page.text


class TestStateMachine:
    def test_pending_moves_to_each_terminal_state_and_nothing_leaves_one(self):
        assert INVITATION.reachable() == set(InvitationStatus)
        assert INVITATION.terminal == {
            InvitationStatus.CLAIMED,
            InvitationStatus.CANCELLED,
            InvitationStatus.EXPIRED,
        }
        with pytest.raises(IllegalTransition):
            INVITATION.move(InvitationStatus.CANCELLED, InvitationStatus.CLAIMED)


class TestRaces:
    async def test_racing_claims_and_a_cancel_leave_one_winner(self, client, auth, other):
        jane = await customer(client, auth)
        code = (await _invite(client, auth, inviterUma=jane["umaAddress"])).json()["invitationCode"]
        invitees = [await customer(client, other["sandbox"]) for _ in range(4)]
        claims = [
            client.post(
                f"/invitations/{code}/claim", auth=other["sandbox"], json={"inviteeUma": i["umaAddress"]}
            )
            for i in invitees
        ]
        responses = await asyncio.gather(*claims, client.post(f"/invitations/{code}/cancel", auth=auth))
        winners = [r for r in responses if r.status_code == 200]
        assert len(winners) == 1, [r.text for r in responses]
        losers = {r.json()["code"] for r in responses if r.status_code != 200}
        assert {r.status_code for r in responses} == {200, 400}
        assert losers == {
            "INVITATION_ALREADY_CLAIMED"
            if winners[0].json()["status"] == "CLAIMED"
            else "INVITATION_CANCELLED"
        }
        assert (await client.get(f"/invitations/{code}", auth=auth)).json() == winners[0].json()


class TestSandboxClock:
    async def test_advancing_the_creators_sandbox_clock_expires_it_for_every_platform(
        self, client, auth, other, db
    ):
        jane = await customer(client, auth)
        now = (await client.get("/sandbox/clock", auth=auth)).json()["now"]
        expires = clock.isoformat(datetime.fromisoformat(now.replace("Z", "+00:00")) + timedelta(minutes=5))
        code = (await _invite(client, auth, inviterUma=jane["umaAddress"], expiresAt=expires)).json()[
            "invitationCode"
        ]
        advanced = await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 301})
        assert advanced.status_code == 200, advanced.text
        async with db.read() as session:
            stored = await session.scalar(text("SELECT status FROM invitations WHERE code = :c"), {"c": code})
        assert stored == "EXPIRED"  # the expiry job ran on the creator's clock
        for credentials in (auth, other["sandbox"]):  # the other platform's clock did not move
            assert (await client.get(f"/invitations/{code}", auth=credentials)).json()["status"] == "EXPIRED"
