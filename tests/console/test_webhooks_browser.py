"""The webhooks pages in Debian's Chromium: the endpoint's health and the log, a delivery's page, redelivering
by clicking (the new attempt shows once the runner has delivered it), sending a TEST event; axe-core and a
screenshot of each page; the log at phone width."""

from __future__ import annotations

import pytest

from platpay.events import service as events_service
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401
from tests.support.jobs import run_jobs_until


async def _tenant_id(client, auth, db) -> str:
    from sqlalchemy import text

    config_id = (await client.get("/config", auth=auth)).json()["id"]
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE config_id = :c"), {"c": config_id})


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_webhooks_pages_redeliver_and_test_event(
    browser,  # noqa: F811
    served,  # noqa: F811
    client,
    auth,
    db,
    runner,
    receiver,
    tmp_path,
) -> None:
    assert (
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    ).status_code == 200
    async with db.transaction() as session:
        await events_service.emit(
            session,
            tenant_id=await _tenant_id(client, auth, db),
            type="CUSTOMER.KYC_APPROVED",
            resource={"id": "Customer:browser", "kycStatus": "APPROVED"},
        )
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
    delivery_id = receiver.of_type("CUSTOMER.KYC_APPROVED")[0].json["id"]

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await page.get_by_role("link", name="Webhooks").click()
    await page.wait_for_url(f"{served}/console/webhooks")
    assert await page.get_by_role("heading", name="Webhooks", level=1).is_visible()
    assert await page.get_by_text(receiver.url).first.is_visible()
    await tab.check("webhooks-index")

    await page.get_by_label("Status").select_option("DELIVERED")
    await page.get_by_role("button", name="Filter").click()
    await page.wait_for_url(f"{served}/console/webhooks?status=DELIVERED")
    await page.get_by_role("link", name=delivery_id).click()
    await page.wait_for_url(f"{served}/console/webhooks/deliveries/{delivery_id}")
    attempts = page.locator("table.webhooks-attempts tbody tr")
    assert await attempts.count() == 1
    await tab.check("webhooks-delivery")

    await page.get_by_role("button", name="Redeliver").click()
    await page.wait_for_url(f"{served}/console/webhooks/deliveries/{delivery_id}")
    assert await page.get_by_role("cell", name="WEBHOOK_REDELIVERED").is_visible()
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
    await page.reload()
    assert await attempts.count() == 2
    await tab.check("webhooks-delivery-redelivered")

    await tab.goto("/console/webhooks")
    await page.get_by_role("button", name="Send a test event").click()
    await page.wait_for_url(f"{served}/console/webhooks/deliveries/Webhook:*")
    assert await page.get_by_role("cell", name="WEBHOOK_TEST_SENT").is_visible()
    assert await attempts.count() == 1 and "200" in await attempts.first.inner_text()
    assert len(receiver.of_type("TEST")) == 2  # the endpoint's own, and this one
    await tab.check("webhooks-test-sent")
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto("/console/webhooks")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("webhooks-index-phone")
    await phone.goto(f"/console/webhooks/deliveries/{delivery_id}")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("webhooks-delivery-phone")
    await phone.close()
