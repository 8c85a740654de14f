"""The console in Debian's Chromium: sign in through the form, the overview at phone width, axe-core on
each page, sign out; a wrong secret's page."""

from __future__ import annotations

import pytest

from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import PHONE, ConsoleTab, check_accessibility, served, shots_dir  # noqa: F401


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_sign_in_look_around_and_sign_out(browser, served, auth, tmp_path) -> None:  # noqa: F811
    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    page = tab.page
    assert await page.get_by_role("heading", name="Overview").is_visible()
    assert await page.get_by_text("Sandbox: test data").is_visible()
    assert await page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await tab.check("overview-phone")
    await page.get_by_role("button", name="Sign out").click()
    await page.wait_for_url(f"{served}/console/sign-in")
    await tab.check("sign-in")
    response = await tab.goto("/console")
    assert response is not None and page.url.startswith(f"{served}/console/sign-in?next=")
    await tab.close()


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_wrong_secret_shows_one_message(browser, served, auth, tmp_path) -> None:  # noqa: F811
    context = await browser.new_context()
    page = await context.new_page()
    await page.goto(f"{served}/console/sign-in")
    await page.get_by_label("Client id").fill(auth[0])
    await page.get_by_label("Client secret").fill("not-the-secret")
    await page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    assert "Those credentials were not accepted" in await alert.inner_text()
    await check_accessibility(page)
    await page.screenshot(path=str(shots_dir(tmp_path) / "sign-in-refused.png"), full_page=True)
    await context.close()
