"""The developers page in Debian's Chromium: create a token by clicking (its secret shown once, and it works
against the API), delete it through the confirm dialog, change the webhook endpoint; axe-core and
screenshots; the page at phone width."""

from __future__ import annotations

import asyncio

import pytest

from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_create_and_delete_a_token(browser, served, client, auth, receiver, tmp_path) -> None:  # noqa: F811
    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await page.get_by_role("link", name="Developers").click()
    await page.wait_for_url(f"{served}/console/developers")
    assert await page.get_by_role("heading", name="Developers", level=1).is_visible()
    await tab.check("developers-index")

    await page.get_by_label("Name").fill("browser token")
    await page.get_by_label("TRANSACT").check()
    await page.get_by_role("button", name="Create token").click()
    await page.wait_for_url(f"{served}/console/developers/tokens")
    assert await page.get_by_role("heading", name="Token created").is_visible()
    client_id = (await page.locator("#client-id").inner_text()).strip()
    secret = (await page.locator("#client-secret").inner_text()).strip()
    await tab.check("developers-token-created")
    answer = await client.get("/tokens", auth=(client_id, secret))
    assert answer.status_code == 200  # the secret shown works against the API

    await page.get_by_role("link", name="Back to Developers").click()
    await page.wait_for_url(f"{served}/console/developers")
    assert secret not in await page.content()  # never shown again
    assert await page.get_by_text("browser token").first.is_visible()

    dialogs: list[str] = []
    accepting: list[asyncio.Future] = []

    def accept(dialog) -> None:
        dialogs.append(dialog.message)
        accepting.append(asyncio.ensure_future(dialog.accept()))

    page.on("dialog", accept)
    await page.get_by_role("button", name="Delete token browser token").click()
    await page.wait_for_load_state()
    await page.wait_for_url(f"{served}/console/developers")
    assert dialogs and "browser token" in dialogs[0]
    assert await page.get_by_role("cell", name="TOKEN_DELETED").is_visible()
    assert (await client.get("/tokens", auth=(client_id, secret))).status_code == 401

    await page.get_by_label("Webhook endpoint URL").fill(receiver.url)
    await page.get_by_role("button", name="Save endpoint").click()
    await page.wait_for_url(f"{served}/console/developers")
    assert await page.get_by_role("cell", name="CONFIG_UPDATED").is_visible()
    assert (await client.get("/config", auth=auth)).json()["webhookEndpoint"] == receiver.url
    await tab.check("developers-after-changes")
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto("/console/developers")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("developers-phone")
    await phone.close()
