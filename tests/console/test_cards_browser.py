"""The cards pages in Debian's Chromium: the cards list, a card's page with its transactions, freezing and
unfreezing by clicking, and a wallet-funded card's freeze refused with its message (axe and a screenshot of
each page; the card page at phone width)."""

from __future__ import annotations

import pytest

from tests.factories import internal_account
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.cards import active_card, approved, approved_cardholder, clear, funded_account, get_card
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401
from tests.support.ledger import assert_ledger_verifies


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_freeze_and_unfreeze_by_clicking(browser, served, client, auth, runner, db, tmp_path) -> None:  # noqa: F811
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 100_000)
    card = await active_card(client, auth, runner, holder["id"], [account["id"]])
    bought = await approved(client, auth, card["id"], 2_500)
    await clear(client, auth, card["id"], bought["id"], 2_500)
    wallet = await internal_account(client, auth, holder["id"], "USDB", "EMBEDDED_WALLET")
    signed = await active_card(client, auth, runner, holder["id"], [wallet["id"]], platform_card_id="w-1")

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console/cards")
    assert await page.get_by_role("heading", name="Cards", exact=True).is_visible()
    await tab.check("cards-list")

    await page.get_by_role("link", name=f"·· {card['last4']}").click()
    await page.wait_for_url(f"**/console/cards/{card['id']}")
    assert await page.get_by_text(bought["id"]).is_visible()
    await tab.check("cards-card")
    await page.get_by_role("button", name="Freeze card").click()
    await page.wait_for_url(f"**/console/cards/{card['id']}")
    assert await page.get_by_role("button", name="Unfreeze card").is_visible()
    assert "CARD_FROZEN" in await page.locator("section[aria-labelledby=trail-heading] table").inner_text()
    assert (await get_card(client, auth, card["id"]))["state"] == "FROZEN"
    await tab.check("cards-card-frozen")
    await page.get_by_role("button", name="Unfreeze card").click()
    await page.wait_for_url(f"**/console/cards/{card['id']}")
    assert await page.get_by_role("button", name="Freeze card").is_visible()
    assert (await get_card(client, auth, card["id"]))["state"] == "ACTIVE"

    await tab.goto(f"/console/cards/{signed['id']}")
    assert await page.get_by_role("note").filter(has_text="wallet signature").is_visible()
    await page.get_by_role("button", name="Freeze card").click()
    alert = page.get_by_role("alert")
    assert (
        "needs the customer's wallet signature and cannot be done from the console"
        in await alert.inner_text()
    )
    await tab.check("cards-needs-signature")
    assert (await get_card(client, auth, signed["id"]))["state"] == "ACTIVE"
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto(f"/console/cards/{card['id']}")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("cards-card-phone")
    await phone.goto("/console/cards")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.close()
    await assert_ledger_verifies(db)
