"""The console's ledger in Debian's Chromium: the accounts, an account's statement reached by clicking, and
"Verify the ledger" pressed, its result on the page; axe-core and a screenshot of each page, the ledger page at
phone width without horizontal scroll."""

from __future__ import annotations

import pytest

from tests.console.test_transactions import money_moved
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401
from tests.support.ledger import assert_ledger_verifies

# What sticks out at phone width (named in a failure).
WIDE = (
    "[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > 391)"
    ".slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))"
)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_accounts_statement_and_verify(
    browser,  # noqa: F811
    served,  # noqa: F811
    db,
    client,
    auth,
    runner,
    receiver,
    tmp_path,
) -> None:
    moved = await money_moved(client, auth, runner, receiver)
    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console")
    await page.get_by_role("link", name="Ledger").click()
    await page.wait_for_url(f"{served}/console/ledger")
    await tab.check("ledger-list")

    await page.get_by_label("Owner (customer id, or the platform's id)").fill(moved["customer"])
    await page.get_by_label("Kind").select_option("INTERNAL")
    await page.get_by_role("button", name="Filter").click()
    await page.wait_for_url(f"{served}/console/ledger?*kind=INTERNAL*")
    await page.locator(f'a[href="/console/ledger/accounts/{moved["account"]}"]').click()
    await page.wait_for_url(f"{served}/console/ledger/accounts/{moved['account']}")
    statement = await page.locator("table.ledger-statement").inner_text()
    assert "87.66 USD" in statement and "100.00 USD" in statement
    await tab.check("ledger-account")
    await page.get_by_role("link", name=moved["sent"]).first.click()
    await page.wait_for_url(f"{served}/console/transactions/{moved['sent']}")

    await tab.goto("/console/ledger")
    await page.get_by_role("button", name="Verify the ledger").click()
    await page.wait_for_url(f"{served}/console/ledger*")
    result = page.locator(".ledger-result")
    text = await result.inner_text()
    assert "Balanced" in text and "USD: balanced" in text
    await tab.check("ledger-verified")
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto("/console/ledger")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], (
        await phone.page.evaluate(WIDE)
    )
    await phone.check("ledger-list-phone")
    await phone.goto(f"/console/ledger/accounts/{moved['account']}")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], (
        await phone.page.evaluate(WIDE)
    )
    await phone.close()
    await assert_ledger_verifies(db)
