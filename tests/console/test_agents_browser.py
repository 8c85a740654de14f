"""The agents pages in Debian's Chromium: the agents list with its approvals queue (axe, screenshot, phone
width), approving a pending agent payment and rejecting another by clicking, the agent's page with its usage
bars."""

from __future__ import annotations

import pytest

from tests.support.agents import connect, funded_customer, transfer_out
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import PHONE, ConsoleTab, served  # noqa: F401
from tests.support.ledger import assert_ledger_verifies


async def _pending(client, agent, money, amount: int) -> str:
    response = await transfer_out(
        client, agent["headers"], money["account"]["id"], money["bank"]["id"], amount
    )
    assert response.status_code == 201 and response.json()["status"] == "PENDING_APPROVAL", response.text
    return response.json()["id"]


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_approve_and_reject_by_clicking(browser, served, client, auth, db, tmp_path) -> None:  # noqa: F811
    money = await funded_customer(client, auth)
    agent = await connect(client, auth, money["customer"]["id"])
    done = await transfer_out(client, agent["headers"], money["account"]["id"], money["bank"]["id"], 2_000)
    assert done.status_code == 201, done.text
    first = await _pending(client, agent, money, 6_000)
    second = await _pending(client, agent, money, 7_000)

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page
    await tab.goto("/console/agents")
    assert await page.get_by_role("heading", name="Agents", exact=True).is_visible()
    assert await page.get_by_role("heading", name="Pending approvals (2)").is_visible()
    await tab.check("agents-list")

    await page.get_by_role("button", name=f"Approve {first}").click()
    await page.wait_for_url(f"**/console/agents/{agent['agent']['id']}?decided=*")
    row = page.locator("tr.agents-action", has_text=first)
    assert "APPROVED" in await row.inner_text()
    assert "transaction" in await row.inner_text()
    assert (
        "AGENT_ACTION_APPROVED"
        in await page.locator("section[aria-labelledby=trail-heading] table").inner_text()
    )
    assert await page.locator('svg[data-limit="daily"]').count() == 1
    await tab.check("agents-agent")

    await page.get_by_label("Reason for rejecting").fill("too much at once")
    await page.get_by_role("button", name=f"Reject {second}").click()
    await page.wait_for_url(f"**/console/agents/{agent['agent']['id']}?decided=*")
    row = page.locator("tr.agents-action", has_text=second)
    assert "REJECTED" in await row.inner_text() and "too much at once" in await row.inner_text()

    await tab.goto("/console/agents")
    assert await page.get_by_text("No agent action waits for approval.").is_visible()
    await tab.close()

    phone = await ConsoleTab.open(browser, served, auth, shots=tmp_path, viewport=PHONE)
    await phone.goto(f"/console/agents/{agent['agent']['id']}")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.check("agents-agent-phone")
    await phone.goto("/console/agents")
    assert await phone.page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    await phone.close()
    await assert_ledger_verifies(db)
