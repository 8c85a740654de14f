"""The console end to end in Debian's Chromium, the way someone checking it from outside would: sign in,
find a customer, decide its review, approve an agent's payment, follow a transaction to its ledger entries
and webhook attempts, advance the sandbox clock; then each refusal: a forged form, a review decided twice
(two tabs), another tenant's id in a URL, a cookie naming another environment, a deleted token, too many
wrong secrets. Each step is checked by what the API says afterwards, and the ledger verifies at the end."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.kit import clock
from tests.console.test_customers import awaiting_review
from tests.console.test_transactions import money_moved
from tests.factories import create_platform
from tests.support.agents import connect, funded_customer, transfer_out
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.console_browser import ConsoleTab, served  # noqa: F401
from tests.support.ledger import assert_ledger_verifies
from tests.support.onboarding import PERSON, create


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)  # the browser, not the database, is tested
async def test_an_operators_day(
    browser,  # noqa: F811
    served,  # noqa: F811
    db,
    settings,
    client,
    auth,
    runner,
    receiver,
    tmp_path,
) -> None:
    moved = await money_moved(client, auth, runner, receiver)
    waiting = await awaiting_review(client, auth, runner, full_name="Ada Lovelace 001")
    money = await funded_customer(client, auth)
    agent = await connect(client, auth, money["customer"]["id"])
    asked = await transfer_out(client, agent["headers"], money["account"]["id"], money["bank"]["id"], 6_000)
    assert asked.status_code == 201 and asked.json()["status"] == "PENDING_APPROVAL", asked.text
    action_id = asked.json()["id"]

    tab = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    page = tab.page

    # find a customer and decide its review
    await page.get_by_role("link", name="Customers").click()
    await page.get_by_label("Search").fill("lovelace")
    await page.get_by_role("button", name="Search").click()
    await page.get_by_role("link", name="Ada Lovelace 001").click()
    await page.wait_for_url(f"{served}/console/customers/{waiting['customerId']}")
    second = await tab.context.new_page()  # a second tab on the same review, opened before deciding
    await second.goto(page.url)
    await page.get_by_role("button", name="Approve").click()
    await page.get_by_role("status").filter(has_text="Decision recorded").wait_for()
    decided = (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json()
    assert decided["verificationStatus"] == "APPROVED"
    customer = (await client.get(f"/customers/{waiting['customerId']}", auth=auth)).json()
    assert customer["kycStatus"] == "APPROVED"
    assert "REVIEW_DECIDED" in await page.locator("section[aria-labelledby=trail-heading]").inner_text()
    await tab.check("walkthrough-review-decided")

    # the same review decided again from the second tab, which still shows the form: refused, nothing twice
    await second.get_by_label("Reason (required to reject)").fill("changed my mind")
    async with second.expect_navigation():
        await second.get_by_role("button", name="Reject").click()
    assert "Already changed" in await second.get_by_role("heading", level=1).inner_text()
    again = (await client.get(f"/verifications/{waiting['id']}", auth=auth)).json()
    assert again["verificationStatus"] == "APPROVED" and again == decided
    await second.close()

    # approve the agent's payment: money moves once
    await page.get_by_role("link", name="Agents").click()
    await page.get_by_role("button", name=f"Approve {action_id}").click()
    await page.wait_for_url(f"**/console/agents/{agent['agent']['id']}?decided=*")
    row = page.locator("tr.agents-action", has_text=action_id)
    assert "APPROVED" in await row.inner_text()
    await runner.run_until_idle()

    # follow a transaction to its ledger entries and webhook attempts
    await page.get_by_role("link", name="Transactions").click()
    await page.get_by_role("link", name=moved["sent"]).click()
    await page.wait_for_url(f"{served}/console/transactions/{moved['sent']}")
    assert "balanced" in await page.locator("table.transactions-postings").inner_text()
    attempts = " ".join(await page.locator("table.transactions-attempts").all_inner_texts())
    assert "500" in attempts and "200" in attempts
    await tab.check("walkthrough-transaction")

    # advance the sandbox clock
    before = (await client.get("/sandbox/clock", auth=auth)).json()
    await page.get_by_role("link", name="Sandbox tools").click()
    await page.get_by_label("Advance by").fill("2")
    await page.get_by_label("Unit", exact=True).select_option("hours")
    await page.get_by_role("button", name="Advance the clock").click()
    await page.get_by_role("status").filter(has_text="The clock moved forward").wait_for()
    after = (await client.get("/sandbox/clock", auth=auth)).json()
    assert after != before

    # a forged form: 403, nothing changed
    refused = await page.request.post(
        f"{served}/console/agents/actions/{action_id}/reject", form={"csrf": "forged", "reason": "x"}
    )
    assert refused.status == 403 and "not sent by your console session" in await refused.text()

    # another tenant's id in a URL: the same page as an unknown id
    other = await create_platform(db, settings, name="Other platform")
    theirs = await create(client, other["sandbox"], {**PERSON, "fullName": "Not Yours"})
    foreign = await tab.goto(f"/console/customers/{theirs['id']}")
    unknown = await tab.goto("/console/customers/Customer:00000000-0000-7000-8000-000000000000")
    assert foreign.status == unknown.status == 404

    # a cookie naming another environment goes back to sign-in
    cookies = await tab.context.cookies()
    session = next(c for c in cookies if c["name"] == "platpay_console")
    await tab.context.add_cookies([{**session, "value": "production." + session["value"].split(".", 1)[1]}])
    await tab.goto("/console/customers")
    assert page.url.startswith(f"{served}/console/sign-in?next=")
    await tab.close()

    # an expired session goes back to sign-in (wall-clock time: the process clock, moved by the test)
    later = await ConsoleTab.open(browser, served, auth, shots=tmp_path)
    clock.advance(timedelta(seconds=settings.console_session_seconds + 1))
    await later.goto("/console/transactions")
    assert later.page.url.startswith(f"{served}/console/sign-in?next=")
    await later.close()

    # a VIEW token: no button that moves money or decides, and its forms are refused anyway
    token = (await client.post("/tokens", auth=auth, json={"name": "temp", "permissions": ["VIEW"]})).json()
    temp = await ConsoleTab.open(browser, served, (token["clientId"], token["clientSecret"]), shots=tmp_path)
    waits = await transfer_out(client, agent["headers"], money["account"]["id"], money["bank"]["id"], 7_000)
    assert waits.json()["status"] == "PENDING_APPROVAL", waits.text
    await temp.goto("/console/agents")
    assert await temp.page.get_by_role("heading", name="Pending approvals (1)").is_visible()
    assert await temp.page.get_by_role("button", name=f"Approve {waits.json()['id']}").count() == 0
    await temp.goto("/console/developers")
    assert await temp.page.get_by_role("button", name="Create token").count() == 0
    csrf = await temp.page.locator("input[name=csrf]").first.get_attribute("value")
    forbidden = await temp.page.request.post(
        f"{served}/console/agents/actions/{waits.json()['id']}/reject", form={"csrf": csrf, "reason": "x"}
    )
    assert forbidden.status == 403 and "lacks the TRANSACT permission" in await forbidden.text()
    await temp.check("walkthrough-view-only")

    # a deleted token: its session goes back to sign-in
    assert (await client.delete(f"/tokens/{token['id']}", auth=auth)).status_code in (200, 204)
    await temp.goto("/console")
    assert temp.page.url.startswith(f"{served}/console/sign-in")
    # too many wrong secrets for one client id: a 429 page, whatever the secret
    for _ in range(settings.console_signin_per_client + 1):
        await temp.page.goto(f"{served}/console/sign-in")
        await temp.page.get_by_label("Client id").fill(auth[0])
        await temp.page.get_by_label("Client secret").fill("wrong")
        await temp.page.get_by_role("button", name="Sign in").click()
    assert "Too many attempts" in await temp.page.get_by_role("heading", level=1).inner_text()
    await temp.check("walkthrough-rate-limited")
    await temp.close()
    await assert_ledger_verifies(db)
