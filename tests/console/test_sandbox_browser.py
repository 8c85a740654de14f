"""The sandbox tools and the overview in Debian's Chromium: advancing the clock by clicking expires a quote,
a card authorization, a funding form refused and then accepted, a reset behind its confirmation, and the
overview at desktop and phone width; axe-core and a screenshot of each page."""

from __future__ import annotations

import pytest

from tests.factories import (
    account_destination,
    account_source,
    customer,
    fund,
    internal_account,
    mxn_account,
    quote,
)
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.cards import active_card, approved_cardholder, funded_account
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401
from tests.support.ledger import assert_ledger_verifies

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser is tested


async def test_advancing_the_clock_expires_a_quote(browser, served, client, auth, tmp_path) -> None:  # noqa: F811
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 100_000)
    payee = await mxn_account(client, auth, person["id"])
    created = await quote(
        client,
        auth,
        source=account_source(usd["id"]),
        destination=account_destination(payee["id"]),
        amount=5_000,
    )
    assert created.status_code == 201, created.text
    assert created.json()["status"] == "PENDING"

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console/sandbox")
    assert await page.get_by_role("heading", name="Sandbox tools", level=1).is_visible()
    await tab.check("sandbox-tools")
    await page.get_by_label("Advance by").fill("10")
    await page.get_by_label("Unit", exact=True).select_option("minutes")
    await page.get_by_role("button", name="Advance the clock").click()
    await page.wait_for_url(f"{served}/console/sandbox?done=clock-advanced")
    assert "The clock moved forward" in await page.get_by_role("status").inner_text()
    await tab.check("sandbox-clock-advanced")

    expired = (await client.get(f"/quotes/{created.json()['id']}", auth=auth)).json()
    assert expired["status"] == "EXPIRED", expired
    transaction = (await client.get(f"/transactions/{created.json()['transactionId']}", auth=auth)).json()
    assert transaction["status"] == "EXPIRED" and transaction["failureReason"] == "QUOTE_EXPIRED"
    await tab.close()


async def test_a_card_authorization_and_a_funding_by_clicking(
    browser,  # noqa: F811
    served,  # noqa: F811
    client,
    auth,
    runner,
    db,
    tmp_path,
) -> None:
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 20_000)
    card = await active_card(client, auth, runner, holder["id"], [account["id"]])

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console/sandbox")
    await page.get_by_label("Card id", exact=True).first.fill(card["id"])
    await page.locator("#auth_amount").fill("1999")
    await page.get_by_role("button", name="Authorize").click()
    await page.wait_for_url(f"{served}/console/sandbox?done=card-authorization")
    [opened] = (await client.get(f"/cards/{card['id']}/transactions", auth=auth)).json()["data"]
    assert opened["status"] == "AUTHORIZED" and opened["merchant"]["descriptor"] == "Sandbox Coffee", opened
    assert (await internal_account(client, auth, holder["id"]))["balance"]["amount"] == 20_000 - 1999

    # ...and in the transactions: the card transaction's page, its hold in the ledger entries
    await page.get_by_role("link", name="Transactions").click()
    await page.get_by_role("link", name=opened["id"]).click()
    await page.wait_for_url(f"{served}/console/transactions/{opened['id']}")
    assert "AUTHORIZED" in await page.locator("main").inner_text()
    assert "Sandbox Coffee" in await page.locator("main").inner_text()
    assert "balanced" in await page.locator("table.transactions-postings").inner_text()
    await tab.check("sandbox-card-authorization-timeline")
    await tab.goto("/console/sandbox")

    # a bad amount: the message beside the field, nothing changed; then the corrected form goes through
    await page.locator("#fund_account").fill(account["id"])
    await page.locator("#fund_amount").fill("19.99")
    await page.get_by_role("button", name="Fund", exact=True).click()
    error = page.locator("#fund_amount-error")
    assert "whole number" in await error.inner_text()
    assert await page.locator("#fund_amount").get_attribute("aria-invalid") == "true"
    await tab.check("sandbox-form-error")
    await page.locator("#fund_amount").fill("1999")
    await page.get_by_role("button", name="Fund", exact=True).click()
    await page.wait_for_url(f"{served}/console/sandbox?done=funded")
    assert (await internal_account(client, auth, holder["id"]))["balance"]["amount"] == 20_000
    await tab.close()
    await assert_ledger_verifies(db)


async def test_reset_asks_first(browser, served, client, auth, db, tmp_path) -> None:  # noqa: F811
    await customer(client, auth)
    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console/sandbox")
    page.once("dialog", lambda dialog: dialog.dismiss())
    await page.get_by_role("button", name="Reset the sandbox").click()
    await page.wait_for_timeout(200)
    assert len((await client.get("/customers", auth=auth)).json()["data"]) == 1  # dismissed: nothing done
    page.once("dialog", lambda dialog: dialog.accept())
    await page.get_by_role("button", name="Reset the sandbox").click()
    await page.wait_for_url(f"{served}/console/sandbox?done=reset")
    assert (await client.get("/customers", auth=auth)).json()["data"] == []
    await tab.check("sandbox-reset")
    await tab.close()
    await assert_ledger_verifies(db)


async def test_the_overview_at_desktop_and_phone_width(browser, served, client, auth, db, tmp_path) -> None:  # noqa: F811
    for currency_amount in (12_345, 6_789):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], currency_amount)
    await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 86400})
    platform = (await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})).json()
    await fund(client, auth, platform["data"][0]["id"], 50_000)

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console")
    assert await page.get_by_role("img", name="USD: money in and out per day, last 30 days").is_visible()
    await tab.check("overview-desktop")
    await page.get_by_role("link", name="Last 7 days").click()
    await page.wait_for_url(f"{served}/console?days=7")
    await page.get_by_text("USD per day (table)").click()
    assert await page.get_by_role("row", name="0.00 USD").count() >= 1
    await tab.check("overview-7-days")
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto("/console")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("overview-phone-with-data")
    await phone.goto("/console/sandbox")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("sandbox-phone")
    await phone.close()
    await assert_ledger_verifies(db)
