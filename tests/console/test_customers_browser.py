"""The console's customers in Debian's Chromium: find a customer by searching, open it, view a document in
place, decide its manual review by clicking (a rejection without its reason first: the error shows beside
the field), axe-core and a screenshot of the list and of the customer's page, and both at phone width."""

from __future__ import annotations

import pytest

from tests.console.test_customers import awaiting_review
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401
from tests.support.onboarding import BUSINESS, create


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_search_open_and_decide_a_review(browser, served, client, auth, runner, tmp_path) -> None:  # noqa: F811
    waiting = await awaiting_review(client, auth, runner, full_name="Grace Hopper 001")
    await create(client, auth, {**BUSINESS, "platformCustomerId": "acme-browser"})
    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console/customers")
    assert await page.get_by_role("heading", name="Customers", level=1).is_visible()
    await tab.check("customers-list")

    await page.get_by_label("Search").fill("hopper")
    await page.get_by_role("button", name="Search").click()
    await page.wait_for_url("**/console/customers?q=hopper*")
    assert await page.get_by_role("link", name="Acme Corp").count() == 0
    await page.get_by_role("link", name="Grace Hopper 001").click()
    await page.wait_for_url(f"{served}/console/customers/{waiting['customerId']}")
    assert await page.get_by_role("heading", name="Grace Hopper 001", level=1).is_visible()
    assert await page.get_by_role("heading", name=f"Manual review of {waiting['id']}").is_visible()
    await tab.check("customers-detail")

    # a document opens in place: the image itself, shown inline
    view = page.get_by_role("link", name="View scan.pdf (PASSPORT)")
    href = await view.get_attribute("href")
    file_tab = await tab.context.new_page()
    shown = await file_tab.goto(f"{served}{href}")
    assert shown is not None and shown.status == 200
    headers = await shown.all_headers()
    assert headers["content-disposition"].startswith("inline")
    assert headers["content-type"] == "image/png"
    await file_tab.close()

    # reject without a reason: refused, the error beside the field, nothing changed
    await page.get_by_role("button", name="Reject").click()
    reason = page.get_by_label("Reason (required to reject)")
    error = page.locator("#reason-1-error")
    await error.wait_for()
    assert "reason" in (await error.inner_text()).lower()
    assert await reason.get_attribute("aria-describedby") == "reason-1-error"
    still = (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json()
    assert still["verificationStatus"] == "PENDING_MANUAL_REVIEW"
    await tab.check("customers-detail-reason-missing")

    await reason.fill("the passport photo does not match")
    await page.get_by_role("button", name="Reject").click()
    await page.get_by_role("status").filter(has_text="Decision recorded").wait_for()
    assert await page.get_by_role("button", name="Reject").count() == 0
    assert await page.get_by_role("cell", name="REVIEW_DECIDED").is_visible()
    assert await page.get_by_text("the passport photo does not match").first.is_visible()
    verification = (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json()
    assert verification["verificationStatus"] == "REJECTED"
    await tab.check("customers-detail-decided")
    await tab.close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_list_and_customer_page_fit_a_phone(browser, served, client, auth, runner, tmp_path) -> None:  # noqa: F811
    waiting = await awaiting_review(client, auth, runner)
    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    for path, name in (
        ("/console/customers", "customers-list-phone"),
        (f"/console/customers/{waiting['customerId']}", "customers-detail-phone"),
    ):
        await tab.goto(path)
        wide = await tab.page.evaluate(
            "[...document.querySelectorAll('main *')].filter(e => e.getBoundingClientRect().right > 392)"
            ".filter(e => !e.closest('.table-wrap')).map(e => e.tagName + '.' + e.className + ':' + "
            "e.textContent.slice(0, 40))"
        )
        assert not wide, wide
        assert await tab.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"], path
        await tab.check(name)
    await tab.close()
