"""A card's controls and secrets through the API (the August 2026 reference): maxSpendPerTransaction (create, PATCH,
null clears, the card's own value sent back is no change, enforced by decisioning in the card's currency),
processorRef, the write-only threeDSecurePassword (sealed, never answered, never logged), and POST
/cards/{id}/reveal (a URL of the card page that shows once and expires, every reveal recorded with who asked).
Every money test ends with the ledger verified (the db fixture)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from sqlalchemy import select

from platpay.cards import providers
from platpay.cards.models import CardRevealRow, CardRow
from platpay.cards.sandbox import SandboxIssuer
from platpay.cards.schemas import MAX_AMOUNT
from platpay.config import get_settings
from platpay.kit import clock
from platpay.kit.crypto.sealing import get_sealer
from platpay.kit.idempotency import IdempotencyKeyRow
from tests.factories import internal_account
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    balance,
    events,
    funded_account,
    get_card,
    issue,
    open_holds,
    patch,
)
from tests.support.wallets import Wallet, signed_headers

PASSWORD = "Zq7!correct-horse-9"


@pytest.fixture
async def holder(client, auth):
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 100_000)
    return {"customer": person["id"], "account": account["id"]}


async def limited_card(client, auth, runner, holder, limit) -> dict:
    return await active_card(
        client, auth, runner, holder["customer"], [holder["account"]], maxSpendPerTransaction=limit
    )


class TestMaxSpendPerTransaction:
    async def test_it_is_set_on_create_and_shown_in_every_answer_null_included(
        self, client, auth, runner, holder, db
    ) -> None:
        created = await issue(
            client, auth, holder["customer"], [holder["account"]], maxSpendPerTransaction=5_000
        )
        assert created.status_code == 201, created.text
        assert created.json()["maxSpendPerTransaction"] == 5_000
        await runner.run_until_idle()
        assert (await get_card(client, auth, created.json()["id"]))["maxSpendPerTransaction"] == 5_000
        [(_, activated)] = await events(db, "card.state_change")
        assert activated["maxSpendPerTransaction"] == 5_000
        unlimited = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        assert "maxSpendPerTransaction" in unlimited and unlimited["maxSpendPerTransaction"] is None
        listed = (await client.get("/cards", auth=auth)).json()["data"]
        assert {card["id"]: card["maxSpendPerTransaction"] for card in listed} == {
            created.json()["id"]: 5_000,
            unlimited["id"]: None,
        }

    async def test_exactly_the_limit_is_approved_and_a_unit_more_declined_holding_nothing(
        self, client, auth, runner, holder
    ) -> None:
        card = await limited_card(client, auth, runner, holder, 5_000)
        over = (await authorize(client, auth, card["id"], 5_001)).json()
        assert over["status"] == "DECLINED" and over["declineReason"] == "TRANSACTION_SIZE_LIMIT_EXCEEDED"
        assert await balance(client, auth, holder["customer"]) == (100_000, 100_000)
        exact = await approved(client, auth, card["id"], 5_000)
        assert exact["authorizedAmount"]["amount"] == 5_000
        assert await balance(client, auth, holder["customer"]) == (95_000, 100_000)

    async def test_the_limit_is_compared_in_the_cards_currency_after_the_conversion(
        self, client, auth, runner, db
    ) -> None:
        person = await approved_cardholder(client, auth)
        usdb = await funded_account(client, auth, person["id"], 10**9, "USDB")
        card = await active_card(
            client, auth, runner, person["id"], [usdb["id"]], maxSpendPerTransaction=12_500_000
        )  # 12.50 USDB
        assert (await authorize(client, auth, card["id"], 1_250, currency="USD")).json()[
            "status"
        ] == "AUTHORIZED"
        declined = (await authorize(client, auth, card["id"], 1_251, currency="USD")).json()
        assert declined["declineReason"] == "TRANSACTION_SIZE_LIMIT_EXCEEDED"
        assert await open_holds(db, usdb["id"]) == 12_500_000

    async def test_a_patch_sets_it_and_null_clears_it(self, client, auth, runner, holder) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        limited = await patch(client, auth, card["id"], maxSpendPerTransaction=100)
        assert limited.status_code == 200 and limited.json()["maxSpendPerTransaction"] == 100, limited.text
        assert (await authorize(client, auth, card["id"], 101)).json()["declineReason"] == (
            "TRANSACTION_SIZE_LIMIT_EXCEEDED"
        )
        cleared = await patch(client, auth, card["id"], maxSpendPerTransaction=None)
        assert cleared.status_code == 200 and cleared.json()["maxSpendPerTransaction"] is None, cleared.text
        assert (await authorize(client, auth, card["id"], 50_000)).json()["status"] == "AUTHORIZED"

    async def test_the_cards_own_value_sent_back_changes_nothing(
        self, client, auth, runner, holder, db
    ) -> None:
        card = await limited_card(client, auth, runner, holder, 700)
        before = await events(db, "card.")
        for value in (700, 700):
            same = await patch(client, auth, card["id"], maxSpendPerTransaction=value)
            assert same.status_code == 200 and same.json() == card, same.text
        assert await events(db, "card.") == before
        # with a state move, the move is made and the limit kept
        frozen = await patch(client, auth, card["id"], state="FROZEN", maxSpendPerTransaction=700)
        assert frozen.status_code == 200 and frozen.json()["state"] == "FROZEN", frozen.text
        assert frozen.json()["maxSpendPerTransaction"] == 700

    async def test_closing_takes_the_cards_own_value_but_not_another(
        self, client, auth, runner, holder
    ) -> None:
        card = await limited_card(client, auth, runner, holder, 700)
        for value in (701, None):
            refused = await patch(client, auth, card["id"], state="CLOSED", maxSpendPerTransaction=value)
            assert refused.status_code == 400, refused.text
            assert refused.json()["details"]["fields"][0]["field"] == "maxSpendPerTransaction"
        assert (await get_card(client, auth, card["id"]))["state"] == "ACTIVE"
        closed = await patch(client, auth, card["id"], state="CLOSED", maxSpendPerTransaction=700)
        assert closed.status_code == 200 and closed.json()["state"] == "CLOSED", closed.text
        unlimited = await active_card(
            client, auth, runner, holder["customer"], [holder["account"]], platform_card_id="card-test-101"
        )
        closed = await patch(client, auth, unlimited["id"], state="CLOSED", maxSpendPerTransaction=None)
        assert closed.status_code == 200, closed.text

    async def test_a_closed_card_takes_no_limit_even_its_own(self, client, auth, runner, holder) -> None:
        card = await limited_card(client, auth, runner, holder, 700)
        await patch(client, auth, card["id"], state="CLOSED")
        for value in (700, 800, None):
            response = await patch(client, auth, card["id"], maxSpendPerTransaction=value)
            assert response.status_code == 409 and response.json()["code"] == "CARD_NOT_MUTABLE", (
                response.text
            )
        again = await patch(client, auth, card["id"], state="CLOSED", maxSpendPerTransaction=700)
        assert again.status_code == 409 and again.json()["code"] == "CARD_ALREADY_CLOSED", again.text

    @pytest.mark.parametrize("value", [0, -1, "100", 1.5, True, MAX_AMOUNT + 1, [100]])
    async def test_a_bad_value_is_400_naming_the_field_and_changes_nothing(
        self, client, auth, runner, holder, value
    ) -> None:
        card = await limited_card(client, auth, runner, holder, 700)
        response = await patch(client, auth, card["id"], maxSpendPerTransaction=value)
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT", response.text
        assert response.json()["details"]["fields"][0]["field"] == "maxSpendPerTransaction"
        assert (await get_card(client, auth, card["id"]))["maxSpendPerTransaction"] == 700
        created = await issue(
            client,
            auth,
            holder["customer"],
            [holder["account"]],
            "card-test-102",
            maxSpendPerTransaction=value,
        )
        assert created.status_code == 400, created.text
        assert created.json()["details"]["fields"][0]["field"] == "maxSpendPerTransaction"

    async def test_null_on_create_is_no_limit(self, client, auth, holder) -> None:
        created = await issue(
            client, auth, holder["customer"], [holder["account"]], maxSpendPerTransaction=None
        )
        assert created.status_code == 201 and created.json()["maxSpendPerTransaction"] is None, created.text


class TestOnAWalletFundedCard:
    """SPEC §4.9 rule 3: a change to a card an embedded wallet funds is a signed retry; the card's own limit
    sent back (as a client generated from the reference sends it) is no change, so no signature."""

    @pytest.fixture
    async def wallet_card(self, client, auth, runner):
        person = await approved_cardholder(client, auth)
        wallet = Wallet(
            client, auth, await internal_account(client, auth, person["id"], "USDB", "EMBEDDED_WALLET")
        )
        await wallet.email_otp_login()
        card = await active_card(
            client, auth, runner, person["id"], [wallet.id], maxSpendPerTransaction=10**6
        )
        return wallet, card

    async def test_the_cards_own_limit_alone_answers_200_at_once(self, client, auth, wallet_card) -> None:
        _, card = wallet_card
        response = await patch(client, auth, card["id"], maxSpendPerTransaction=10**6)
        assert response.status_code == 200 and response.json() == card, response.text

    async def test_a_new_limit_needs_the_wallets_signature(self, client, auth, wallet_card) -> None:
        wallet, card = wallet_card
        first = await patch(client, auth, card["id"], maxSpendPerTransaction=5)
        assert first.status_code == 202, first.text
        assert (await get_card(client, auth, card["id"]))["maxSpendPerTransaction"] == 10**6
        other = await client.patch(
            f"/cards/{card['id']}",
            auth=auth,
            json={"maxSpendPerTransaction": 6},
            headers=signed_headers(wallet.key, first.json()),
        )
        assert other.status_code == 401 and other.json()["code"] == "WALLET_SIGNATURE_BODY_MISMATCH"
        again = await patch(client, auth, card["id"], maxSpendPerTransaction=5)
        signed = await client.patch(
            f"/cards/{card['id']}",
            auth=auth,
            json={"maxSpendPerTransaction": 5},
            headers=signed_headers(wallet.key, again.json()),
        )
        assert signed.status_code == 200 and signed.json()["maxSpendPerTransaction"] == 5, signed.text

    async def test_a_move_with_the_cards_own_limit_is_still_signed(self, client, auth, wallet_card) -> None:
        _, card = wallet_card
        first = await patch(client, auth, card["id"], state="FROZEN", maxSpendPerTransaction=10**6)
        assert first.status_code == 202, first.text


class TestProcessorRef:
    async def test_the_issuer_names_the_card_when_it_provisions_it(
        self, client, auth, runner, holder
    ) -> None:
        created = await issue(client, auth, holder["customer"], [holder["account"]])
        assert "processorRef" not in created.json()
        await runner.run_until_idle()
        card = await get_card(client, auth, created.json()["id"])
        assert card["processorRef"].startswith("card_") and len(card["processorRef"]) == 21
        assert card["processorRef"] != card["issuerRef"]


async def issue_keyed(client, auth, holder, password: str):
    body = {
        "cardholderId": holder["customer"],
        "form": "VIRTUAL",
        "fundingSources": [holder["account"]],
        "threeDSecurePassword": password,
    }
    return await client.post("/cards", auth=auth, json=body, headers={"Idempotency-Key": "3ds-1"})


class TestThreeDSecurePassword:
    async def test_it_is_kept_sealed_and_never_answered_or_logged(
        self, client, auth, runner, holder, db, capsys
    ) -> None:
        created = await issue_keyed(client, auth, holder, PASSWORD)
        assert created.status_code == 201, created.text
        await runner.run_until_idle()
        card = await get_card(client, auth, created.json()["id"])
        listed = await client.get("/cards", auth=auth)
        async with db.read() as session:
            sealed = await session.scalar(
                select(CardRow.three_ds_password_sealed).where(CardRow.id == card["id"])
            )
            stored = [tuple(row) for row in (await session.execute(select(IdempotencyKeyRow))).all()]
        settings = get_settings()
        opened = get_sealer(settings.master_key, settings.var_dir).open(
            sealed, purpose=f"card-3ds-password:{card['id']}"
        )
        assert opened.decode() == PASSWORD and PASSWORD not in sealed
        for text in (created.text, str(card), listed.text, str(stored), str(await events(db, "card."))):
            assert PASSWORD not in text and "threeDSecurePassword" not in text
        logged = capsys.readouterr()
        assert PASSWORD not in logged.out + logged.err
        replay = await issue_keyed(client, auth, holder, PASSWORD)
        assert replay.status_code == 201 and replay.json()["id"] == card["id"]
        other = await issue_keyed(client, auth, holder, PASSWORD + "x")
        assert other.status_code == 400, other.text  # another password is another request

    async def test_a_program_without_a_static_password_refuses_it(self, client, auth, holder) -> None:
        class NoStaticPassword(SandboxIssuer):
            static_3ds_password = False

        providers.SANDBOX_ISSUER.use(NoStaticPassword())
        try:
            refused = await issue(
                client, auth, holder["customer"], [holder["account"]], threeDSecurePassword=PASSWORD
            )
            without = await issue(client, auth, holder["customer"], [holder["account"]])
        finally:
            providers.SANDBOX_ISSUER.use(None)
        assert refused.status_code == 400 and refused.json()["code"] == "INVALID_INPUT", refused.text
        assert refused.json()["details"]["fields"][0]["field"] == "threeDSecurePassword"
        assert without.status_code == 201, without.text

    @pytest.mark.parametrize(
        "password", ["short7!", "has space 123", "x" * 65, 12345678, "caf\u00e9-caf\u00e9"]
    )
    async def test_a_bad_password_is_400_naming_the_field_without_echoing_it(
        self, client, auth, holder, password
    ) -> None:
        response = await issue(
            client, auth, holder["customer"], [holder["account"]], threeDSecurePassword=password
        )
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT", response.text
        assert response.json()["details"]["fields"][0]["field"] == "threeDSecurePassword"
        assert str(password) not in response.text
        assert (await client.get("/cards", auth=auth)).json()["totalCount"] == 0


def _path(url: str) -> str:
    return "/" + url.split("://", 1)[1].split("/", 1)[1]


class TestReveal:
    async def test_the_url_shows_the_card_page_once_and_the_reveal_is_recorded(
        self, client, auth, runner, holder, db
    ) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        token = (
            await client.post("/tokens", auth=auth, json={"name": "ops", "permissions": ["MANAGE"]})
        ).json()
        clock.freeze()
        response = await client.post(
            f"/cards/{card['id']}/reveal", auth=(token["clientId"], token["clientSecret"])
        )
        assert response.status_code == 200, response.text
        revealed = response.json()
        assert set(revealed) == {"panEmbedUrl", "expiresAt"}
        expires_at = datetime.fromisoformat(revealed["expiresAt"].replace("Z", "+00:00"))
        assert expires_at == clock.real_now() + timedelta(minutes=5)
        assert revealed["panEmbedUrl"] != card["panEmbedUrl"]
        page = await client.get(f"http://testserver{_path(revealed['panEmbedUrl'])}")
        assert page.status_code == 200 and card["last4"] in page.text and "CVV" in page.text
        assert page.headers["cache-control"] == "no-store"
        again = await client.get(f"http://testserver{_path(revealed['panEmbedUrl'])}")
        assert again.status_code == 404  # used up
        async with db.read() as session:
            [row] = (await session.scalars(select(CardRevealRow))).all()
        assert (row.card_id, row.actor) == (card["id"], f"PLATFORM_TOKEN:{token['id']}")
        assert row.used_at == clock.real_now() and row.token_digest not in revealed["panEmbedUrl"]

    async def test_an_expired_url_shows_nothing(self, client, auth, runner, holder) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        clock.freeze()
        revealed = (await client.post(f"/cards/{card['id']}/reveal", auth=auth)).json()
        clock.advance(timedelta(minutes=5))
        assert (await client.get(f"http://testserver{_path(revealed['panEmbedUrl'])}")).status_code == 404
        fresh = (await client.post(f"/cards/{card['id']}/reveal", auth=auth)).json()
        clock.advance(timedelta(minutes=4, seconds=59))
        assert (await client.get(f"http://testserver{_path(fresh['panEmbedUrl'])}")).status_code == 200

    async def test_a_forged_or_altered_token_shows_nothing(self, client, auth, runner, holder) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        revealed = (await client.post(f"/cards/{card['id']}/reveal", auth=auth)).json()
        path = _path(revealed["panEmbedUrl"])
        for forged in (
            path[:-1] + ("A" if path[-1] != "A" else "B"),
            "/card-embed/rv1.",
            "/card-embed/rv1.x",
        ):
            assert (await client.get(f"http://testserver{forged}")).status_code == 404, forged
        assert (await client.get(f"http://testserver{path}")).status_code == 200  # still unused

    async def test_a_card_closed_after_the_reveal_shows_nothing(self, client, auth, runner, holder) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        revealed = (await client.post(f"/cards/{card['id']}/reveal", auth=auth)).json()
        await patch(client, auth, card["id"], state="CLOSED")
        assert (await client.get(f"http://testserver{_path(revealed['panEmbedUrl'])}")).status_code == 404

    async def test_a_card_with_no_number_to_show_is_409_and_an_unknown_one_404(
        self, client, auth, runner, holder
    ) -> None:
        pending = await issue(client, auth, holder["customer"], [holder["account"]], "card-test-001")
        response = await client.post(f"/cards/{pending.json()['id']}/reveal", auth=auth)
        assert response.status_code == 409 and response.json()["code"] == "CONFLICT", response.text
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        await patch(client, auth, card["id"], state="CLOSED")
        assert (await client.post(f"/cards/{card['id']}/reveal", auth=auth)).status_code == 409
        unknown = await client.post("/cards/Card:019542f5-b3e7-1d02-0000-00000000dead/reveal", auth=auth)
        assert unknown.status_code == 404

    async def test_a_view_only_token_cannot_reveal(self, client, auth, runner, holder) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        viewer = (
            await client.post("/tokens", auth=auth, json={"name": "ro", "permissions": ["VIEW"]})
        ).json()
        response = await client.post(
            f"/cards/{card['id']}/reveal", auth=(viewer["clientId"], viewer["clientSecret"])
        )
        assert response.status_code == 403, response.text

    @pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
    async def test_the_url_is_never_logged(self, client, auth, runner, holder, capsys) -> None:
        card = await active_card(client, auth, runner, holder["customer"], [holder["account"]])
        revealed = (await client.post(f"/cards/{card['id']}/reveal", auth=auth)).json()
        token = revealed["panEmbedUrl"].rsplit("/", 1)[-1]
        assert (await client.get(f"http://testserver{_path(revealed['panEmbedUrl'])}")).status_code == 200
        assert (await client.get(f"http://testserver{_path(revealed['panEmbedUrl'])}")).status_code == 404
        logged = capsys.readouterr()
        text = logged.out + logged.err
        assert '"route": "/card-embed/{token}"' in text and '"cards.reveal"' in text
        assert token not in text and token[4:] not in text
