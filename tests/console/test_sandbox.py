"""The console's sandbox tools (console/pages/sandbox.py) over HTTP on both backends: each tool changes what
the API then shows, money tools act once per form (the idempotency runner) and end with the ledger verified;
refusals: production sessions, a forged CSRF token, a VIEW-only token, bad values beside their fields."""

from __future__ import annotations

import re
from typing import Any

from platpay.auth import service as auth_service
from platpay.messages import service as messages_service
from tests.factories import create_platform, customer, internal_account
from tests.support.cards import active_card, approved_cardholder, funded_account, run_jobs
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.ledger import assert_ledger_verifies
from tests.support.statements import count_statements

_KEY = re.compile(r'name="idempotency_key" value="([^"]+)"')


async def _tools(console) -> str:
    page = await console.get("/console/sandbox")
    assert page.status_code == 200, page.text
    return page.text


async def _send(console, path: str, **fields: Any) -> Any:
    """A tool's form as the page serves it: its CSRF token and a fresh idempotency key, then `fields`."""
    html = await _tools(console)
    data = {"csrf": csrf_of(html), "idempotency_key": _KEY.search(html).group(1), **fields}
    return await console.post(f"/console/sandbox/{path}", data=data)


def _done(answer, word: str) -> None:
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/console/sandbox?done={word}"


async def _platform_account(client, auth, currency: str = "USD") -> dict[str, Any]:
    listed = await client.get("/platform/internal-accounts", auth=auth, params={"currency": currency})
    assert listed.status_code == 200, listed.text
    return listed.json()["data"][0]


async def test_the_page_shows_every_tool_the_clock_and_the_mailbox(app, db, auth) -> None:
    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=auth[0], client_secret=auth[1])
    async with db.transaction() as session:
        await messages_service.send_email(
            session,
            tenant=principal.tenant,
            to="jane@example.com",
            subject="Your code <b>",
            text="123456",
            category="wallet.otp",
        )
    async with console_client(app) as console:
        await signed_in(console, auth)
        html = await _tools(console)
    for action in (
        "clock/advance",
        "clock/freeze",
        "clock/unfreeze",
        "clock/reset",
        "fund",
        "receive",
        "cards/authorization",
        "cards/clearing",
        "cards/return",
        "webhook-faults",
        "reset",
    ):
        assert f'action="/console/sandbox/{action}"' in html
    assert "Tenant time" in html and "real time" in html
    assert "jane@example.com" in html and "123456" in html
    assert "Your code &lt;b&gt;" in html  # escaped
    assert 'data-confirm="Delete all' in html
    assert html.count("<h1>") == 1


async def test_done_notices_are_fixed_text(app, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get("/console/sandbox", params={"done": "funded"})
        assert "The internal account was funded." in page.text
        odd = await console.get("/console/sandbox", params={"done": "<script>alert(1)</script>"})
        assert odd.status_code == 200 and "<script>alert" not in odd.text and 'class="notice"' not in odd.text


async def test_the_clock_advances_freezes_unfreezes_and_refuses_to_go_back(app, client, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        _done(await _send(console, "clock/advance", clock_count="2", clock_unit="hours"), "clock-advanced")
        seen = (await client.get("/sandbox/clock", auth=auth)).json()
        assert 7195 <= seen["offsetSeconds"] <= 7300 and not seen["frozen"]
        _done(await _send(console, "clock/freeze"), "clock-frozen")
        assert (await client.get("/sandbox/clock", auth=auth)).json()["frozen"] is True
        assert "FROZEN" in await _tools(console)
        _done(await _send(console, "clock/unfreeze"), "clock-unfrozen")
        assert (await client.get("/sandbox/clock", auth=auth)).json()["frozen"] is False
        # ahead of real time: going back is refused, beside the clock, nothing changed
        refused = await _send(console, "clock/reset")
        assert refused.status_code == 409 and "ahead of real time" in refused.text
        assert (await client.get("/sandbox/clock", auth=auth)).json()["offsetSeconds"] > 7000
        bad = await _send(console, "clock/advance", clock_count="1.5", clock_unit="weeks")
        assert bad.status_code == 400
        assert 'id="clock_count-error"' in bad.text and 'id="clock_unit-error"' in bad.text
        trail = await _tools(console)
        assert "SANDBOX_CLOCK_ADVANCED" in trail and "SANDBOX_CLOCK_FROZEN" in trail


async def test_funding_an_account_acts_once_per_form(app, client, auth, db) -> None:
    account = await _platform_account(client, auth)
    before = account["balance"]["amount"]
    async with console_client(app) as console:
        await signed_in(console, auth)
        html = await _tools(console)
        form = {
            "csrf": csrf_of(html),
            "idempotency_key": _KEY.search(html).group(1),
            "fund_account": account["id"],
            "fund_amount": "12345",
        }
        _done(await console.post("/console/sandbox/fund", data=form), "funded")
        _done(await console.post("/console/sandbox/fund", data=form), "funded")  # sent twice: acts once
        after = await _platform_account(client, auth)
        assert after["balance"]["amount"] == before + 12345
        # a new form (a new key) funds again
        _done(await _send(console, "fund", fund_account=account["id"], fund_amount="5"), "funded")
        assert (await _platform_account(client, auth))["balance"]["amount"] == before + 12350
        # bad values: beside their fields, status 400, nothing changed
        bad = await _send(console, "fund", fund_account=account["id"], fund_amount="12.50")
        assert bad.status_code == 400 and 'id="fund_amount-error"' in bad.text
        assert 'value="12.50"' in bad.text  # what was typed stays
        unknown = await _send(console, "fund", fund_account="InternalAccount:nope", fund_amount="100")
        assert unknown.status_code == 400 and 'id="fund_account-error"' in unknown.text
        too_much = await _send(console, "fund", fund_account=account["id"], fund_amount="100000000001")
        assert too_much.status_code == 400 and 'id="fund_amount-error"' in too_much.text
        assert (await _platform_account(client, auth))["balance"]["amount"] == before + 12350
    await assert_ledger_verifies(db)


async def test_a_customer_receives_an_incoming_uma_payment(app, client, auth, db) -> None:
    person = await customer(client, auth)
    async with console_client(app) as console:
        await signed_in(console, auth)
        sent = await _send(
            console,
            "receive",
            receive_sender="$success.usd@sandbox.uma.money",
            receive_customer=person["id"],
            receive_receiver="",
            receive_currency="usd",
            receive_amount="2500",
        )
        _done(sent, "received")
        listed = await client.get("/transactions", auth=auth, params={"customerId": person["id"]})
        [payment] = listed.json()["data"]
        assert payment["type"] == "INCOMING" and payment["status"] == "PENDING"
        assert payment["receivedAmount"]["amount"] == 2500
        both = await _send(
            console,
            "receive",
            receive_sender="$success.usd@sandbox.uma.money",
            receive_customer=person["id"],
            receive_receiver="$jane@example.com",
            receive_currency="USD",
            receive_amount="1",
        )
        assert both.status_code == 400 and 'id="receive_customer-error"' in both.text
        nobody = await _send(
            console,
            "receive",
            receive_sender="$nobody.usd@sandbox.uma.money",
            receive_customer=person["id"],
            receive_currency="USD",
            receive_amount="1",
        )
        assert nobody.status_code == 400 and 'id="receive_sender-error"' in nobody.text
        assert (
            len(
                (await client.get("/transactions", auth=auth, params={"customerId": person["id"]})).json()[
                    "data"
                ]
            )
            == 1
        )
    await assert_ledger_verifies(db)


async def test_card_authorization_clearing_and_return(app, client, auth, db, runner) -> None:
    holder = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, holder["id"], 50_000)
    card = await active_card(client, auth, runner, holder["id"], [account["id"]])
    async with console_client(app) as console:
        await signed_in(console, auth)
        authorized = await _send(
            console,
            "cards/authorization",
            auth_card=card["id"],
            auth_amount="1250",
            auth_currency="USD",
            auth_merchant="Blue Bottle",
        )
        _done(authorized, "card-authorization")
        await run_jobs(client)
        [opened] = (await client.get(f"/cards/{card['id']}/transactions", auth=auth)).json()["data"]
        assert opened["status"] == "AUTHORIZED", opened
        held = await internal_account(client, auth, holder["id"])
        assert held["balance"]["amount"] == 50_000 - 1250

        _done(
            await _send(
                console,
                "cards/clearing",
                clearing_card=card["id"],
                clearing_transaction=opened["id"],
                clearing_amount="1250",
            ),
            "card-clearing",
        )
        await run_jobs(client)
        cleared = (await client.get(f"/card-transactions/{opened['id']}", auth=auth)).json()
        assert cleared["status"] in ("SETTLED", "COMPLETED", "CLEARED"), cleared
        _done(
            await _send(
                console,
                "cards/return",
                return_card=card["id"],
                return_transaction=opened["id"],
                return_amount="250",
            ),
            "card-return",
        )
        await run_jobs(client)
        returned = (await client.get(f"/card-transactions/{opened['id']}", auth=auth)).json()
        assert [refund["amount"]["amount"] for refund in returned["refunds"]] == [250], returned
        final = await internal_account(client, auth, holder["id"])
        assert final["balance"]["amount"] == 50_000 - 1250 + 250

        unknown = await _send(
            console,
            "cards/authorization",
            auth_card="Card:nope",
            auth_amount="1",
            auth_currency="USD",
            auth_merchant="x",
        )
        assert unknown.status_code == 400 and 'id="auth_card-error"' in unknown.text
        too_much = await _send(
            console,
            "cards/return",
            return_card=card["id"],
            return_transaction=opened["id"],
            return_amount="999999",
        )
        assert too_much.status_code == 400 and "return_amount-error" in too_much.text
    await assert_ledger_verifies(db)


async def test_webhook_faults_are_set_and_shown(app, client, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        _done(
            await _send(
                console, "webhook-faults", faults_duplicate="on", faults_delay="250", faults_reorder=""
            ),
            "faults-set",
        )
        faults = (await client.get("/sandbox/webhooks/faults", auth=auth)).json()
        assert faults == {"duplicate": True, "delayMs": 250, "reorderMs": 0}
        assert "every delivery sent twice" in await _tools(console)
        bad = await _send(console, "webhook-faults", faults_delay="4000000")
        assert bad.status_code == 400 and 'id="faults_delay-error"' in bad.text
        _done(await _send(console, "webhook-faults"), "faults-set")
        assert (await client.get("/sandbox/webhooks/faults", auth=auth)).json()["duplicate"] is False


async def test_reset_deletes_the_data_and_keeps_the_session_and_trail(app, client, auth, db) -> None:
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    async with console_client(app) as console:
        await signed_in(console, auth)
        _done(await _send(console, "fund", fund_account=account["id"], fund_amount="700"), "funded")
        _done(await _send(console, "reset"), "reset")
        assert (await client.get("/customers", auth=auth)).json()["data"] == []
        html = await _tools(console)  # still signed in
        assert "SANDBOX_RESET" in html
        assert (await _platform_account(client, auth))["balance"]["amount"] == 0
    await assert_ledger_verifies(db)


async def test_production_sessions_get_403_pages(app, platform) -> None:
    async with console_client(app) as console:
        csrf = await signed_in(console, platform["production"])
        page = await console.get("/console/sandbox")
        assert page.status_code == 403 and "sandbox tools are not available" in page.text
        assert "text/html" in page.headers["content-type"]
        for path in ("clock/advance", "fund", "reset", "cards/authorization", "webhook-faults"):
            answer = await console.post(
                f"/console/sandbox/{path}", data={"csrf": csrf, "clock_count": "1", "clock_unit": "days"}
            )
            assert answer.status_code == 403, path


async def test_a_forged_csrf_token_changes_nothing(app, client, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        html = await _tools(console)
        forged = await console.post(
            "/console/sandbox/clock/advance",
            data={"csrf": "forged", "clock_count": "3", "clock_unit": "days"},
        )
        assert forged.status_code == 403 and "not sent by your console session" in forged.text
        account = await _platform_account(client, auth)
        refused = await console.post(
            "/console/sandbox/fund",
            data={
                "csrf": "forged",
                "idempotency_key": _KEY.search(html).group(1),
                "fund_account": account["id"],
                "fund_amount": "100",
            },
        )
        assert refused.status_code == 403
    assert abs((await client.get("/sandbox/clock", auth=auth)).json()["offsetSeconds"]) < 60
    assert (await _platform_account(client, auth))["balance"]["amount"] == account["balance"]["amount"]


async def test_a_view_token_sees_no_forms_and_is_refused(app, client, auth) -> None:
    created = await client.post("/tokens", auth=auth, json={"name": "viewer", "permissions": ["VIEW"]})
    assert created.status_code == 201, created.text
    token = created.json()
    account = await _platform_account(client, auth)
    async with console_client(app) as console:
        csrf = await signed_in(console, (token["clientId"], token["clientSecret"]))
        html = await _tools(console)
        assert "/console/sandbox/fund" not in html and "/console/sandbox/clock/advance" not in html
        assert "/console/sandbox/reset" not in html and "Tenant time" in html
        for path, data in (
            ("clock/advance", {"clock_count": "1", "clock_unit": "days"}),
            ("fund", {"fund_account": account["id"], "fund_amount": "100", "idempotency_key": "k" * 20}),
            ("reset", {}),
        ):
            answer = await console.post(f"/console/sandbox/{path}", data={"csrf": csrf, **data})
            assert answer.status_code == 403 and "lacks the" in answer.text, path
    assert (await _platform_account(client, auth))["balance"]["amount"] == account["balance"]["amount"]
    assert (await client.get("/customers", auth=auth)).status_code == 200


async def test_another_platforms_account_is_unknown(app, client, auth, db, settings) -> None:
    other = await create_platform(db, settings, name="Other")
    theirs = await _platform_account(client, other["sandbox"])
    async with console_client(app) as console:
        await signed_in(console, auth)
        refused = await _send(console, "fund", fund_account=theirs["id"], fund_amount="100")
        assert refused.status_code == 400 and 'id="fund_account-error"' in refused.text
    assert (await _platform_account(client, other["sandbox"]))["balance"]["amount"] == theirs["balance"][
        "amount"
    ]


async def _mail(db, auth, count: int, first: int = 0) -> None:
    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=auth[0], client_secret=auth[1])
    async with db.transaction() as session:
        for index in range(first, first + count):
            await messages_service.send_email(
                session,
                tenant=principal.tenant,
                to=f"user{index}@example.com",
                subject="Code",
                text=f"code {index:06d}",
                category="wallet.otp",
            )


async def test_the_mailbox_pages_with_a_fixed_number_of_statements(app, db, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        await _mail(db, auth, 3)
        with count_statements(db) as few:
            assert (await console.get("/console/sandbox")).status_code == 200
        await _mail(db, auth, 27, first=3)
        with count_statements(db) as many:
            first = await console.get("/console/sandbox", params={"limit": "20"})
        assert many.count == few.count, (few.sql, many.sql)
        assert "user29@example.com" in first.text and "user9@example.com" not in first.text
        found = re.search(r'<a href="([^"]+)" rel="next">', first.text)
        assert found is not None
        second = await console.get(found.group(1).replace("&amp;", "&"))
        assert second.status_code == 200
        assert "user9@example.com" in second.text and "user29@example.com" not in second.text
        assert (await console.get("/console/sandbox", params={"limit": "0"})).status_code == 400
