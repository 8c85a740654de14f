"""The hosted verification page in a real browser (Debian's Chromium through Playwright,
tests/support/browser.py) against the app served by uvicorn on 127.0.0.1: open a KYC link, fill what is
missing, upload a PDF and a PNG, submit, land on the redirect; then the used link shows its page. A
screenshot of each step is kept (test artifacts: PLATPAY_TEST_ARTIFACTS, else the test's tmp dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import served  # noqa: F401  (the app on a real socket)
from tests.support.onboarding import PDF, PERSON, create, png


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_a_customer_completes_the_page_in_chromium(browser, served, client, auth, tmp_path) -> None:  # noqa: F811
    shots = Path(os.environ.get("PLATPAY_TEST_ARTIFACTS") or tmp_path) / "kyc-page"
    shots.mkdir(parents=True, exist_ok=True)
    (tmp_path / "passport.png").write_bytes(png(64, 40))
    (tmp_path / "bill.pdf").write_bytes(PDF)
    person = await create(
        client, auth, {**PERSON, "address": {k: v for k, v in PERSON["address"].items() if k != "city"}}
    )
    done_url = f"{served}/healthz"
    response = await client.post(
        f"/customers/{person['id']}/kyc-link", auth=auth, json={"redirectUri": done_url}
    )
    assert response.status_code == 201, response.text
    kyc_url = response.json()["kycUrl"].replace("http://testserver", served)

    context = await browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    page = await context.new_page()
    opened = await page.goto(kyc_url)
    assert opened is not None and opened.status == 200
    await page.screenshot(path=str(shots / "1-opened.png"), full_page=True)
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 390  # nothing wider than the phone

    await page.get_by_label("City", exact=True).fill("Springfield")
    await page.get_by_label("Identity document: type").select_option("PASSPORT")
    await page.get_by_label("Identity document: file").set_input_files(str(tmp_path / "passport.png"))
    await page.get_by_label("Proof of address: type").select_option("UTILITY_BILL")
    await page.get_by_label("Proof of address: file").set_input_files(str(tmp_path / "bill.pdf"))
    await page.screenshot(path=str(shots / "2-filled.png"), full_page=True)

    await page.get_by_role("button", name="Submit for verification").click()
    await page.wait_for_url(done_url)
    assert page.url == done_url
    await page.screenshot(path=str(shots / "3-redirected.png"), full_page=True)

    again = await page.goto(kyc_url)
    assert again is not None and again.status == 410
    assert await page.get_by_role("heading", name="Link already used").is_visible()
    await page.screenshot(path=str(shots / "4-used.png"), full_page=True)
    await context.close()

    customer = (await client.get(f"/customers/{person['id']}", auth=auth)).json()
    assert customer["kycStatus"] == "PENDING" and customer["address"]["city"] == "Springfield"
    docs = (await client.get("/documents", auth=auth, params={"documentHolder": person["id"]})).json()["data"]
    assert sorted(d["fileName"] for d in docs) == ["bill.pdf", "passport.png"]
