"""The console's cards pages over HTTP, on both backends: the cards list with its filters, a card's page
(funding sources, card transactions with their pulls, settlements and refunds, console trail), freezing and
unfreezing through the API's path, the signed-retry rule (a wallet-funded card's change is refused with a
message, nothing changed), and every refusal (CSRF, permission, unknown ids, bad filters)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.factories import create_platform, internal_account
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    authorize,
    clear,
    funded_account,
    get_card,
    give_back,
)
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.ledger import assert_ledger_verifies
from tests.support.statements import count_statements


@pytest.fixture
async def setup(client, auth, runner) -> dict[str, Any]:
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 100_000)
    card = await active_card(client, auth, runner, holder["id"], [account["id"]])
    return {"holder": holder, "account": account, "card": card}


async def _viewer(client, auth) -> tuple[str, str]:
    created = await client.post("/tokens", auth=auth, json={"name": "viewer", "permissions": ["VIEW"]})
    assert created.status_code == 201, created.text
    return created.json()["clientId"], created.json()["clientSecret"]


class TestCardsList:
    async def test_cards_with_state_and_funding_sources(self, app, auth, setup) -> None:
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get("/console/cards")
        assert page.status_code == 200, page.text
        assert "<h1>Cards</h1>" in page.text
        card = setup["card"]
        assert card["id"] in page.text and setup["account"]["id"] in page.text
        assert f"·· {card['last4']}" in page.text and "status-active" in page.text

    async def test_filters_by_cardholder_and_state(self, app, client, auth, runner, setup) -> None:
        other = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, other["id"], 0)
        second = await active_card(client, auth, runner, other["id"], [account["id"]], platform_card_id="c-2")
        frozen = await client.patch(f"/cards/{second['id']}", auth=auth, json={"state": "FROZEN"})
        assert frozen.status_code == 200, frozen.text
        first = setup["card"]["id"]
        async with console_client(app) as console:
            await signed_in(console, auth)
            mine = await console.get("/console/cards", params={"customerId": setup["holder"]["id"]})
            assert first in mine.text and second["id"] not in mine.text
            only_frozen = await console.get("/console/cards", params={"state": "FROZEN"})
            assert second["id"] in only_frozen.text and first not in only_frozen.text
            both = await console.get("/console/cards", params={"state": "ACTIVE", "customerId": other["id"]})
            assert "No cards match." in both.text
            bad = await console.get("/console/cards", params={"state": "MELTED"})
            assert bad.status_code == 400 and "state" in bad.text and "FROZEN" in bad.text
            too_long = await console.get("/console/cards", params={"customerId": "x" * 65})
            assert too_long.status_code == 400 and "customerId" in too_long.text

    async def test_pages_with_the_next_link(self, app, client, auth, runner, setup) -> None:
        for n in range(2):
            await active_card(
                client,
                auth,
                runner,
                setup["holder"]["id"],
                [setup["account"]["id"]],
                platform_card_id=f"p-{n}",
            )
        seen: list[str] = []
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get("/console/cards", params={"limit": 2})
            seen += re.findall(r'href="/console/cards/(Card:[^"]+)"', page.text)
            link = re.search(r'<a href="([^"]+)" rel="next">', page.text)
            assert link is not None
            second = await console.get(link.group(1).replace("&amp;", "&"))
            seen += re.findall(r'href="/console/cards/(Card:[^"]+)"', second.text)
            assert 'rel="next"' not in second.text
        assert len(set(seen)) == 3


async def _page_statements(app, auth, db, path: str) -> int:
    async with console_client(app) as console:
        await signed_in(console, auth)
        with count_statements(db) as statements:
            page = await console.get(path)
        assert page.status_code == 200, page.text
    return statements.count


async def test_the_list_and_the_card_page_cost_the_same_for_3_and_30_rows(app, client, auth, runner, db):
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 10_000_000)
    cards: list[dict[str, Any]] = []
    spent = 0
    counts: dict[str, list[int]] = {"list": [], "card": []}
    for rows in (3, 30):
        while len(cards) < rows:
            cards.append(
                await active_card(
                    client, auth, runner, holder["id"], [account["id"]], platform_card_id=f"n-{len(cards)}"
                )
            )
        while spent < rows:
            transaction = await approved(client, auth, cards[0]["id"], 100 + spent)
            if spent % 3 == 0:
                await clear(client, auth, cards[0]["id"], transaction["id"], 100 + spent)
            spent += 1
        counts["list"].append(await _page_statements(app, auth, db, "/console/cards?limit=100"))
        counts["card"].append(
            await _page_statements(app, auth, db, f"/console/cards/{cards[0]['id']}?limit=100")
        )
    assert counts["list"][0] == counts["list"][1], counts
    assert counts["card"][0] == counts["card"][1], counts
    await assert_ledger_verifies(db)


class TestCardPage:
    async def test_sources_and_transactions_with_pulls_settlements_and_refunds(
        self, app, client, auth, setup, db
    ) -> None:
        card_id = setup["card"]["id"]
        bought = await approved(client, auth, card_id, 2_500, descriptor="BLUE BOTTLE SF")
        cleared = await clear(client, auth, card_id, bought["id"], 2_500)
        assert cleared.json()["status"] == "SETTLED", cleared.text
        returned = await give_back(client, auth, card_id, bought["id"], 1_000)
        assert returned.status_code == 200, returned.text
        async with console_client(app) as console:
            await signed_in(console, auth)
            page = await console.get(f"/console/cards/{card_id}")
        assert page.status_code == 200, page.text
        html = page.text
        assert card_id in html and setup["holder"]["id"] in html
        assert setup["account"]["id"] in html and setup["account"]["type"] in html
        assert bought["id"] in html and "BLUE BOTTLE SF" in html and "25.00 USD" in html
        shown = (await client.get(f"/card-transactions/{bought['id']}", auth=auth)).json()
        pulls, settled = shown["pullSummary"], shown["settlementSummary"]
        assert f"{pulls['count']} · {pulls['totalAmount'] // 100}." in html
        assert f"{settled['count']} · 25.00 USD" in html
        assert "1 · 10.00 USD" in html  # one refund of 10.00
        assert 'action="/console/cards/' in html and "Freeze card" in html
        assert "No console actions on this yet." in html
        await assert_ledger_verifies(db)

    async def test_unknown_and_another_tenants_card_are_the_same_404(
        self, app, auth, setup, db, settings
    ) -> None:
        other = await create_platform(db, settings, name="Other Platform")
        async with console_client(app) as console:
            csrf = await signed_in(console, other["sandbox"])
            foreign = await console.get(f"/console/cards/{setup['card']['id']}")
            unknown = await console.get("/console/cards/Card:00000000-0000-0000-0000-000000000000")
            assert foreign.status_code == unknown.status_code == 404 and "Not found" in foreign.text
            frozen = await console.post(f"/console/cards/{setup['card']['id']}/freeze", data={"csrf": csrf})
            assert frozen.status_code == 404
            assert setup["card"]["id"] not in (await console.get("/console/cards")).text


class TestFreezing:
    async def test_freeze_and_unfreeze_through_the_apis_path_with_the_trail(
        self, app, client, auth, setup, db
    ) -> None:
        card_id = setup["card"]["id"]
        async with console_client(app) as console:
            csrf = await signed_in(console, auth)
            frozen = await console.post(f"/console/cards/{card_id}/freeze", data={"csrf": csrf})
            assert frozen.status_code == 303 and frozen.headers["location"] == f"/console/cards/{card_id}"
            assert (await get_card(client, auth, card_id))["state"] == "FROZEN"
            page = await console.get(f"/console/cards/{card_id}")
            assert (
                "CARD_FROZEN" in page.text and "state: FROZEN" in page.text and "Unfreeze card" in page.text
            )
            again = await console.post(f"/console/cards/{card_id}/freeze", data={"csrf": csrf})
            assert again.status_code == 409 and "cannot move from FROZEN to FROZEN" in again.text
            declined = await authorize(client, auth, card_id, 100)  # a frozen card declines
            assert declined.json()["status"] == "DECLINED", declined.text
            unfrozen = await console.post(f"/console/cards/{card_id}/unfreeze", data={"csrf": csrf})
            assert unfrozen.status_code == 303
            assert (await get_card(client, auth, card_id))["state"] == "ACTIVE"
            page = await console.get(f"/console/cards/{card_id}")
            assert page.text.count("CARD_FROZEN") == 1 and "CARD_UNFROZEN" in page.text
        await assert_ledger_verifies(db)

    async def test_a_wallet_funded_card_needs_the_wallets_signature(
        self, app, client, auth, runner, db
    ) -> None:
        holder = await approved_cardholder(client, auth)
        wallet = await internal_account(client, auth, holder["id"], "USDB", "EMBEDDED_WALLET")
        card = await active_card(client, auth, runner, holder["id"], [wallet["id"]], platform_card_id="w-1")
        assert (
            await client.patch(f"/cards/{card['id']}", auth=auth, json={"state": "FROZEN"})
        ).status_code == 202
        async with console_client(app) as console:
            csrf = await signed_in(console, auth)
            page = await console.get(f"/console/cards/{card['id']}")
            assert "EMBEDDED_WALLET" in page.text
            assert "needs the cardholder's wallet signature" in page.text
            refused = await console.post(f"/console/cards/{card['id']}/freeze", data={"csrf": csrf})
            assert refused.status_code == 403
            assert "needs the customer's wallet signature and cannot be done from the console" in refused.text
            assert "Nothing was changed" in refused.text
            after = await console.get(f"/console/cards/{card['id']}")
            assert "No console actions on this yet." in after.text
        assert (await get_card(client, auth, card["id"]))["state"] == "ACTIVE"
        await assert_ledger_verifies(db)

    async def test_without_the_csrf_token_nothing_changes(self, app, client, auth, setup, db) -> None:
        card_id = setup["card"]["id"]
        async with console_client(app) as console:
            await signed_in(console, auth)
            assert (await console.post(f"/console/cards/{card_id}/freeze", data={})).status_code == 403
            forged = await console.post(f"/console/cards/{card_id}/freeze", data={"csrf": "forged"})
            assert forged.status_code == 403
        assert (await get_card(client, auth, card_id))["state"] == "ACTIVE"
        await assert_ledger_verifies(db)

    async def test_a_view_only_token_sees_no_button_and_is_refused(
        self, app, client, auth, setup, db
    ) -> None:
        card_id = setup["card"]["id"]
        async with console_client(app) as console:
            await signed_in(console, await _viewer(client, auth))
            page = await console.get(f"/console/cards/{card_id}")
            assert page.status_code == 200 and "Freeze card" not in page.text
            refused = await console.post(
                f"/console/cards/{card_id}/freeze", data={"csrf": csrf_of(page.text)}
            )
            assert refused.status_code == 403 and "MANAGE" in refused.text
        assert (await get_card(client, auth, card_id))["state"] == "ACTIVE"
        await assert_ledger_verifies(db)
