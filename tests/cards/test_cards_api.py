"""Cards through the API: issue (KYC, funding sources, magic values), provisioning on the job runner, reads
and filters, and every PATCH move — the legal ones with their webhooks, the illegal ones with their codes."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.kit import clock
from tests.factories import create_platform, customer, internal_account
from tests.support.cards import (
    active_card,
    approved_cardholder,
    events,
    funded_account,
    get_card,
    issue,
    patch,
)
from tests.support.wallets import Wallet, signed_headers


@pytest.fixture
async def holder(client, auth):
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    return {"customer": person, "account": account}


class TestIssue:
    async def test_an_approved_cardholder_gets_a_pending_card_that_the_issuer_activates(
        self, client, auth, runner, holder, db
    ) -> None:
        response = await issue(client, auth, holder["customer"]["id"], [holder["account"]["id"]])
        assert response.status_code == 201, response.text
        card = response.json()
        assert card["state"] == "PENDING_ISSUE" and card["form"] == "VIRTUAL"
        assert card["fundingSources"] == [holder["account"]["id"]] and card["currency"] == "USD"
        assert card["platformCardId"] == "card-test-100" and card["cardholderId"] == holder["customer"]["id"]
        assert "last4" not in card and "panEmbedUrl" not in card
        await runner.run_until_idle()
        active = await get_card(client, auth, card["id"])
        assert active["state"] == "ACTIVE" and active["brand"] == "VISA"
        assert len(active["last4"]) == 4 and 1 <= active["expMonth"] <= 12 and active["expYear"] >= 2026
        assert active["issuerRef"] and active["panEmbedUrl"]
        changes = await events(db, "card.state_change")
        assert [(t, d["state"]) for t, d in changes] == [("card.state_change", "ACTIVE")]
        assert changes[0][1] == active

    async def test_the_pan_embed_page_shows_the_number_ending_in_last4(
        self, client, auth, runner, holder
    ) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        path = card["panEmbedUrl"].split("://", 1)[1].split("/", 1)[1]
        page = await client.get(f"http://testserver/{path}")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert card["last4"] in page.text and "CVV" in page.text
        assert (await client.get("http://testserver/card-embed/not-a-token")).status_code == 404

    async def test_the_same_card_number_is_shown_for_the_same_card(
        self, client, auth, runner, holder
    ) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        path = "/" + card["panEmbedUrl"].split("://", 1)[1].split("/", 1)[1]
        first = await client.get(f"http://testserver{path}")
        second = await client.get(f"http://testserver{path}")
        assert first.text == second.text

    async def test_a_cardholder_not_kyc_approved_is_refused(self, client, auth) -> None:
        person = await customer(client, auth)
        assert person["kycStatus"] == "PENDING"
        account = await internal_account(client, auth, person["id"])
        response = await issue(client, auth, person["id"], [account["id"]])
        assert response.status_code == 400
        assert response.json()["code"] == "CARDHOLDER_KYC_NOT_APPROVED"
        assert (await client.get("/cards", auth=auth)).json()["totalCount"] == 0

    async def test_ineligible_funding_sources_are_named(self, client, auth, holder) -> None:
        other = await approved_cardholder(client, auth)
        others = await internal_account(client, auth, other["id"])
        usdc = await internal_account(client, auth, holder["customer"]["id"], "USDC")
        own = holder["account"]["id"]
        for sources, field in [
            ([others["id"]], "fundingSources[0]"),
            ([own, usdc["id"]], "fundingSources[1]"),
            ([own, "InternalAccount:019542f5-b3e7-1d02-0000-00000000dead"], "fundingSources[1]"),
        ]:
            response = await issue(client, auth, holder["customer"]["id"], sources)
            assert response.status_code == 400, response.text
            body = response.json()
            assert body["code"] == "FUNDING_SOURCE_INELIGIBLE", body
            assert body["details"]["fields"][0]["field"] == field
        for sources in ([], [own, own]):
            response = await issue(client, auth, holder["customer"]["id"], sources)
            assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT", response.text
        assert (await client.get("/cards", auth=auth)).json()["totalCount"] == 0

    async def test_unknown_cardholder_and_bad_bodies(self, client, auth, holder) -> None:
        source = [holder["account"]["id"]]
        assert (await issue(client, auth, "Customer:nobody", source)).status_code == 400
        for extra in ({"form": "PHYSICAL"}, {"unexpected": 1}):
            assert (await issue(client, auth, holder["customer"]["id"], source, **extra)).status_code == 400

    @pytest.mark.parametrize(
        ("suffix", "state", "reason"),
        [("001", "PENDING_ISSUE", None), ("002", "CLOSED", "ISSUER_REJECTED"), ("777", "ACTIVE", None)],
    )
    async def test_the_sandbox_issuers_platform_card_id_suffixes(
        self, client, auth, runner, holder, db, suffix, state, reason
    ) -> None:
        response = await issue(
            client,
            auth,
            holder["customer"]["id"],
            [holder["account"]["id"]],
            platform_card_id=f"emp-{suffix}",
        )
        await runner.run_until_idle()
        card = await get_card(client, auth, response.json()["id"])
        assert card["state"] == state and card.get("stateReason") == reason
        if state == "CLOSED":
            assert card["fundingSources"] == []
            assert [d["stateReason"] for _, d in await events(db, "card.state_change")] == ["ISSUER_REJECTED"]

    async def test_suffix_005_activates_after_the_delay(self, client, auth, runner, holder) -> None:
        clock.freeze()
        response = await issue(
            client, auth, holder["customer"]["id"], [holder["account"]["id"]], platform_card_id="slow-005"
        )
        await runner.run_until_idle()
        assert (await get_card(client, auth, response.json()["id"]))["state"] == "PENDING_ISSUE"
        clock.advance(timedelta(seconds=31))
        await runner.run_until_idle()
        assert (await get_card(client, auth, response.json()["id"]))["state"] == "ACTIVE"

    async def test_an_idempotency_key_issues_once(self, client, auth, holder) -> None:
        body = {
            "cardholderId": holder["customer"]["id"],
            "form": "VIRTUAL",
            "fundingSources": [holder["account"]["id"]],
        }
        first = await client.post("/cards", auth=auth, json=body, headers={"Idempotency-Key": "c1"})
        again = await client.post("/cards", auth=auth, json=body, headers={"Idempotency-Key": "c1"})
        assert first.status_code == again.status_code == 201 and first.json() == again.json()
        assert first.json()["platformCardId"].startswith("card-")
        assert (await client.get("/cards", auth=auth)).json()["totalCount"] == 1


class TestRead:
    async def test_filters_and_pagination(self, client, auth, runner, holder) -> None:
        other = await approved_cardholder(client, auth)
        other_account = await funded_account(client, auth, other["id"], 0)
        mine = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        pending = (
            await issue(
                client, auth, holder["customer"]["id"], [holder["account"]["id"]], platform_card_id="p-001"
            )
        ).json()
        theirs = await active_card(
            client, auth, runner, other["id"], [other_account["id"]], platform_card_id="theirs-1"
        )

        async def ids(**params) -> list[str]:
            response = await client.get("/cards", auth=auth, params=params)
            assert response.status_code == 200, response.text
            return [card["id"] for card in response.json()["data"]]

        assert await ids() == [theirs["id"], pending["id"], mine["id"]]
        assert await ids(sortOrder="asc") == [mine["id"], pending["id"], theirs["id"]]
        assert await ids(cardholderId=other["id"]) == [theirs["id"]]
        assert await ids(accountId=holder["account"]["id"]) == [pending["id"], mine["id"]]
        assert await ids(platformCardId="theirs-1") == [theirs["id"]]
        assert await ids(state="ACTIVE") == [theirs["id"], mine["id"]]
        assert await ids(state="PROCESSING") == await ids(state="PENDING_ISSUE") == [pending["id"]]
        assert (await client.get("/cards", auth=auth, params={"state": "NOPE"})).status_code == 400
        page = (await client.get("/cards", auth=auth, params={"limit": 2})).json()
        assert page["hasMore"] and page["totalCount"] == 3 and len(page["data"]) == 2
        rest = (
            await client.get("/cards", auth=auth, params={"limit": 2, "cursor": page["nextCursor"]})
        ).json()
        assert [c["id"] for c in rest["data"]] == [mine["id"]] and not rest["hasMore"]

    async def test_another_tenants_card_is_not_found(
        self, client, auth, runner, holder, platform, db, settings
    ) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        stranger = (await create_platform(db, settings, name="Other"))["sandbox"]
        for credentials in (stranger, platform["production"]):
            assert (await client.get(f"/cards/{card['id']}", auth=credentials)).status_code == 404
            assert (await client.get("/cards", auth=credentials)).json()["data"] == []
            assert (await patch(client, credentials, card["id"], state="FROZEN")).status_code == 404


class TestPatch:
    async def test_freeze_unfreeze_close_and_their_webhooks(self, client, auth, runner, holder, db) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        for target in ("FROZEN", "ACTIVE", "FROZEN", "CLOSED"):
            response = await patch(client, auth, card["id"], state=target)
            assert response.status_code == 200, response.text
            assert response.json()["state"] == target
        closed = await get_card(client, auth, card["id"])
        assert closed["stateReason"] == "CLOSED_BY_PLATFORM" and closed["fundingSources"] == []
        assert [d["state"] for _, d in await events(db, "card.state_change")] == [
            "ACTIVE", "FROZEN", "ACTIVE", "FROZEN", "CLOSED",
        ]  # fmt: skip

    @pytest.mark.parametrize(
        ("moves", "target", "code"),
        [
            ([], "ACTIVE", "INVALID_STATE_TRANSITION"),
            (["FROZEN"], "FROZEN", "INVALID_STATE_TRANSITION"),
            (["CLOSED"], "CLOSED", "CARD_ALREADY_CLOSED"),
            (["CLOSED"], "ACTIVE", "CARD_NOT_MUTABLE"),
            (["FROZEN", "CLOSED"], "FROZEN", "CARD_NOT_MUTABLE"),
        ],
    )
    async def test_illegal_moves_are_409_and_change_nothing(
        self, client, auth, runner, holder, moves, target, code
    ) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        for move in moves:
            assert (await patch(client, auth, card["id"], state=move)).status_code == 200
        before = await get_card(client, auth, card["id"])
        response = await patch(client, auth, card["id"], state=target)
        assert response.status_code == 409 and response.json()["code"] == code, response.text
        assert await get_card(client, auth, card["id"]) == before

    async def test_a_card_being_issued_cannot_move(self, client, auth, holder) -> None:
        card = (
            await issue(
                client, auth, holder["customer"]["id"], [holder["account"]["id"]], platform_card_id="x-001"
            )
        ).json()
        for target in ("ACTIVE", "FROZEN"):
            response = await patch(client, auth, card["id"], state=target)
            assert response.status_code == 409 and response.json()["code"] == "INVALID_STATE_TRANSITION"

    async def test_changing_a_closed_cards_sources_is_refused(self, client, auth, runner, holder) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        await patch(client, auth, card["id"], state="CLOSED")
        response = await patch(client, auth, card["id"], fundingSources=[holder["account"]["id"]])
        assert response.status_code == 409 and response.json()["code"] == "CARD_NOT_MUTABLE"

    @pytest.mark.parametrize(
        "body",
        [
            {},
            {"fundingSources": []},
            {"state": "CLOSED", "fundingSources": ["InternalAccount:x"]},
            {"state": "GONE"},
        ],
    )
    async def test_invalid_bodies_are_400(self, client, auth, runner, holder, body) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        response = await client.patch(f"/cards/{card['id']}", auth=auth, json=body)
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT", response.text
        assert (await get_card(client, auth, card["id"]))["state"] == "ACTIVE"

    async def test_funding_sources_are_replaced_with_their_webhook(
        self, client, auth, runner, holder, db
    ) -> None:
        card = await active_card(client, auth, runner, holder["customer"]["id"], [holder["account"]["id"]])
        usdc = await internal_account(client, auth, holder["customer"]["id"], "USDC")
        wrong = await patch(client, auth, card["id"], fundingSources=[usdc["id"]])
        assert wrong.status_code == 400 and wrong.json()["code"] == "FUNDING_SOURCE_INELIGIBLE"
        response = await patch(
            client, auth, card["id"], state="FROZEN", fundingSources=[holder["account"]["id"]]
        )
        assert response.status_code == 200, response.text
        assert response.json()["state"] == "FROZEN"
        [(_kind, data)] = await events(db, "card.funding_source_change")
        assert data["fundingSources"] == [holder["account"]["id"]] and data["state"] == "FROZEN"


class TestWalletFundedCards:
    async def test_a_patch_needs_the_retry_signed_by_a_session_of_the_wallet(
        self, client, auth, runner
    ) -> None:
        person = await approved_cardholder(client, auth)
        wallet_account = await internal_account(client, auth, person["id"], "USDB", "EMBEDDED_WALLET")
        wallet = Wallet(client, auth, wallet_account)
        await wallet.email_otp_login()
        card = await active_card(client, auth, runner, person["id"], [wallet.id])
        assert card["currency"] == "USDB"
        first = await patch(client, auth, card["id"], state="FROZEN")
        assert first.status_code == 202, first.text
        challenge = first.json()
        assert set(challenge) >= {"payloadToSign", "requestId", "expiresAt"}
        assert (await get_card(client, auth, card["id"]))["state"] == "ACTIVE"
        unsigned = await client.patch(
            f"/cards/{card['id']}",
            auth=auth,
            json={"state": "FROZEN"},
            headers={"Request-Id": challenge["requestId"]},
        )
        assert unsigned.status_code == 401
        second = await patch(client, auth, card["id"], state="FROZEN")
        other_body = await client.patch(
            f"/cards/{card['id']}",
            auth=auth,
            json={"state": "CLOSED"},
            headers=signed_headers(wallet.key, second.json()),
        )
        assert other_body.status_code == 401 and other_body.json()["code"] == "WALLET_SIGNATURE_BODY_MISMATCH"
        third = await patch(client, auth, card["id"], state="FROZEN")
        signed = await client.patch(
            f"/cards/{card['id']}",
            auth=auth,
            json={"state": "FROZEN"},
            headers=signed_headers(wallet.key, third.json()),
        )
        assert signed.status_code == 200, signed.text
        assert signed.json()["state"] == "FROZEN"
