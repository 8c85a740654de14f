"""The console's transactions in Debian's Chromium: from the list to a transaction's page by clicking, its
ledger entries balanced and its webhook attempts with their status codes; a filter applied through the form;
axe-core and a screenshot of each page; the transaction's page at phone width without horizontal scroll."""

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


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_follow_a_transaction_from_the_list(
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
    await page.get_by_role("link", name="Transactions").click()
    await page.wait_for_url(f"{served}/console/transactions")
    assert await page.get_by_role("heading", name="Transactions", level=1).is_visible()
    await tab.check("transactions-list")

    await page.get_by_label("Status").select_option("COMPLETED")
    await page.get_by_role("button", name="Filter").click()
    await page.wait_for_url(f"{served}/console/transactions?*status=COMPLETED*")
    rows = page.locator("table.transactions-list tbody tr")
    assert await rows.count() == 1
    await tab.check("transactions-list-filtered")

    await page.get_by_role("link", name=moved["sent"]).click()
    await page.wait_for_url(f"{served}/console/transactions/{moved['sent']}")
    assert await page.get_by_role("heading", name="Ledger entries").is_visible()
    postings = page.locator("table.transactions-postings")
    assert "Total USD: balanced" in await postings.inner_text()
    attempts = await page.locator("table.transactions-attempts").all_inner_texts()
    assert any("500" in t for t in attempts) and any("200" in t for t in attempts)
    assert "OUTGOING_PAYMENT.COMPLETED" in await page.locator("table.transactions-changes").inner_text()
    await tab.check("transactions-detail")

    await tab.goto(f"/console/transactions/{moved['failed']}")
    assert "FAILED" in await page.locator("table.transactions-changes").inner_text()
    await tab.check("transactions-detail-failed")
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto(f"/console/transactions/{moved['sent']}")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], (
        await phone.page.evaluate(WIDE)
    )
    await phone.check("transactions-detail-phone")
    await phone.goto("/console/transactions")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], (
        await phone.page.evaluate(WIDE)
    )
    await phone.close()
    await assert_ledger_verifies(db)
