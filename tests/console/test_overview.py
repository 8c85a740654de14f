"""The console's overview (console/pages/overview.py) over HTTP on both backends: balances and money in/out
as the API shows them after some deposits and transfers, the SVG chart with its text fallback, endpoint
health, what waits for a person, a bad range, and a fixed number of statements whatever the data."""

from __future__ import annotations

import re
from typing import Any

from platpay.console.web import _money
from tests.factories import customer, external_account, fund, internal_account
from tests.support.console import console_client, signed_in
from tests.support.ledger import assert_ledger_verifies
from tests.support.onboarding import PERSON, create, png, uploaded, verify
from tests.support.statements import count_statements


async def _platform_usd(client, auth) -> dict[str, Any]:
    listed = await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
    return listed.json()["data"][0]


def _row(html: str, header: str) -> list[str]:
    """The cells of the table row whose row header is `header`."""
    found = re.search(rf'<th scope="row">{re.escape(header)}</th>(.*?)</tr>', html, re.S)
    assert found is not None, f"no row {header!r}"
    return re.findall(r'<td class="num">([^<]*)</td>', found.group(1))


async def _people_with_money(client, auth, count: int, amount: int) -> list[dict[str, Any]]:
    people = []
    for _ in range(count):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], amount)
        people.append({"person": person, "account": account})
    return people


async def test_balances_and_money_flow_match_the_api(app, client, auth, db, runner) -> None:
    people = await _people_with_money(client, auth, 2, 10_000)
    platform = await _platform_usd(client, auth)
    await fund(client, auth, platform["id"], 5_000)
    payer = people[0]
    bank = await external_account(client, auth, payer["person"]["id"])
    sent = await client.post(
        "/transfer-out",
        auth=auth,
        json={
            "source": {"accountId": payer["account"]["id"]},
            "destination": {"accountId": bank["id"], "paymentRail": "ACH"},
            "amount": 2_500,
        },
    )
    assert sent.status_code == 201, sent.text
    await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 3 * 86400})
    await runner.run_until_idle()
    outgoing = (await client.get("/transactions", auth=auth, params={"type": "OUTGOING"})).json()["data"]
    completed_out = sum(t["sentAmount"]["amount"] for t in outgoing if t["status"] == "COMPLETED")
    assert completed_out == 2_500, outgoing

    customers_available = 0
    for p in people:
        customers_available += (await internal_account(client, auth, p["person"]["id"]))["balance"]["amount"]
    platform_available = (await _platform_usd(client, auth))["balance"]["amount"]
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get("/console")
        assert page.status_code == 200, page.text
        html = page.text
        balances = _row(html, "USD")  # the balances table comes first
        assert balances == [
            _money(platform_available, "USD"),
            _money(0, "USD"),
            _money(customers_available, "USD"),
            _money(0, "USD"),
        ]
        flows = _row(html.split('id="flow-heading"')[1], "USD")
        money_in = _money(10_000 * 2 + 5_000, "USD")
        assert flows == [money_in, _money(completed_out, "USD")] * 2  # 7 and 30 days
        # the chart: a title, a description, integer bars, and its table
        chart = html.split("<svg", 1)[1].split("</svg>", 1)[0]
        assert 'role="img"' in chart and "<title id=" in chart and "<desc id=" in chart
        assert re.search(r'<rect class="in" x="\d+" y="\d+" width="\d+" height="\d+"/>', chart)
        assert re.search(r'<rect class="out" x="\d+" y="\d+" width="\d+" height="\d+"/>', chart)
        assert "USD per day (table)" in html
        week = await console.get("/console", params={"days": "7"})
        assert week.status_code == 200 and "last 7 days" in week.text
        assert week.text.split("<svg", 1)[1].count('<text x="') >= 7
        bad = await console.get("/console", params={"days": "12"})
        assert bad.status_code == 400 and "days" in bad.text
    await assert_ledger_verifies(db)


async def _awaiting_review(client, auth, runner) -> dict[str, Any]:
    """A customer whose KYC review the sandbox provider leaves to a person (the `001` name suffix)."""
    person = await create(client, auth, {**PERSON, "fullName": "Jane Doe 001"})
    await uploaded(client, auth, person["id"], "PASSPORT", png())
    await uploaded(client, auth, person["id"], "UTILITY_BILL")
    submitted = await verify(client, auth, person["id"])
    for _ in range(50):
        found = (await client.get(f"/verifications/{submitted['id']}", auth=auth)).json()
        if found["verificationStatus"] != "IN_PROGRESS":
            break
        await runner.run_until_idle(timeout=10)
    assert found["verificationStatus"] == "PENDING_MANUAL_REVIEW", found
    return person


async def test_what_waits_for_a_person_is_counted_and_linked(app, client, auth, db, runner) -> None:
    reviewed = await _awaiting_review(client, auth, runner)
    kyc = (await client.get(f"/customers/{reviewed['id']}", auth=auth)).json()["kycStatus"]
    assert kyc == "PENDING"  # what the link to the customers filters on
    person = await customer(client, auth)
    for amount in (100, 200):
        received = await client.post(
            "/sandbox/uma/receive",
            auth=auth,
            json={
                "senderUmaAddress": "$success.usd@sandbox.uma.money",
                "customerId": person["id"],
                "receivingCurrencyCode": "USD",
                "receivingCurrencyAmount": amount,
            },
        )
        assert received.status_code == 200, received.text
    async with console_client(app) as console:
        await signed_in(console, auth)
        html = (await console.get("/console")).text
    incoming = re.search(
        r'href="/console/transactions\?type=INCOMING&amp;status=PENDING"><strong class="overview-count">(\d+)',
        html,
    )
    assert incoming is not None and incoming.group(1) == "2"
    reviews = re.search(
        r'href="/console/customers\?kycStatus=PENDING"><strong class="overview-count">(\d+)', html
    )
    assert reviews is not None and reviews.group(1) == "1"
    for link in ('href="/console/agents"', 'href="/console/webhooks?status=FAILED"'):
        assert link in html
    await assert_ledger_verifies(db)


async def test_webhook_endpoint_health_is_shown(app, client, auth) -> None:
    configured = await client.patch(
        "/config", auth=auth, json={"webhookEndpoint": "https://hooks.example.com/platpay"}
    )
    assert configured.status_code == 200, configured.text
    async with console_client(app) as console:
        await signed_in(console, auth)
        html = (await console.get("/console")).text
    assert "https://hooks.example.com/platpay" in html and "(configured)" in html
    assert "status-active" in html


async def test_the_page_runs_the_same_statements_with_3_or_30_rows(app, client, auth, db) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        await _people_with_money(client, auth, 3, 1_000)
        with count_statements(db) as few:
            assert (await console.get("/console")).status_code == 200
        await _people_with_money(client, auth, 27, 1_000)
        for days in range(1, 4):  # money on other days too: more rows of money_flow
            await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 86400})
            await fund(client, auth, (await _platform_usd(client, auth))["id"], days)
        with count_statements(db) as many:
            page = await console.get("/console")
            assert page.status_code == 200
    assert many.count == few.count, (few.sql, many.sql)
    assert _row(page.text, "USD")[2] == _money(30_000, "USD")
