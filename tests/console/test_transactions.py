"""The console's transactions (console/pages/transactions.py): the list of every kind GET /transactions lists,
with its filters and cursor, and one transaction's page: facts, status changes, webhook events with each
delivery attempt's status code and latency, ledger entries with totals per currency that balance. Each page
runs a fixed number of statements however many rows it shows."""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

from sqlalchemy import text

from platpay.events import service as events_service
from platpay.kit import clock
from platpay.ledger import service as ledger_service
from tests.factories import create_platform, customer, external_account, fund, internal_account
from tests.support.cards import active_card, approved, approved_cardholder, funded_account
from tests.support.console import console_client, signed_in
from tests.support.jobs import run_jobs_until
from tests.support.ledger import assert_ledger_verifies
from tests.support.receiver import Reply
from tests.support.sandbox_values import SUCCESS_USD
from tests.support.statements import count_statements

REJECTED_BY_BANK = "123456004"  # sandbox: fails when the rail answers (BANK_REJECTED), its hold released
_LINK = re.compile(r'href="(/console/transactions/[^"]+)"')


async def _tenant_id(db) -> str:
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox' ORDER BY id"))


async def transfer_out(client, auth, source: str, destination: str, amount: int) -> dict[str, Any]:
    body = {"source": {"accountId": source}, "destination": {"accountId": destination}, "amount": amount}
    response = await client.post("/transfer-out", auth=auth, json=body)
    assert response.status_code == 201, response.text
    return response.json()


async def money_moved(client, auth, runner, receiver) -> dict[str, Any]:
    """A customer with 10,000 funded, one transfer-out that completes (its first webhook answered 500, then
    200) and one the bank rejects, webhooks delivered to `receiver`."""
    configured = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert configured.status_code == 200, configured.text
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    await fund(client, auth, account["id"], 10_000)
    good = await external_account(client, auth, person["id"])
    bad = await external_account(client, auth, person["id"], account_number=REJECTED_BY_BANK)
    await runner.run_until_idle()
    receiver.default = Reply(
        status=500
    )  # the transfer's first webhook (and any sent with it) answered 500...
    sent = await transfer_out(client, auth, account["id"], good["id"], 1_234)
    await run_jobs_until(
        runner, lambda: any(r.json["data"].get("id") == sent["id"] for r in receiver.received)
    )
    receiver.default = Reply()  # ...then 200 when retried
    failed = await transfer_out(client, auth, account["id"], bad["id"], 500)
    await runner.run_until_idle()
    clock.advance(timedelta(seconds=2))
    await run_jobs_until(
        runner,
        lambda: (
            any(r.json["data"].get("status") == "COMPLETED" for r in receiver.received)
            and any(r.json["data"].get("status") == "FAILED" for r in receiver.received)
        ),
    )
    await runner.run_until_idle()
    for tx, status in ((sent, "COMPLETED"), (failed, "FAILED")):
        got = (await client.get(f"/transactions/{tx['id']}", auth=auth)).json()
        assert got["status"] == status, got
    return {"customer": person["id"], "account": account["id"], "sent": sent["id"], "failed": failed["id"]}


def _rows(page: str) -> list[str]:
    return [html.unescape(link) for link in _LINK.findall(page)]


class TestList:
    async def test_every_kind_with_amounts_and_links(self, app, db, client, auth, runner, receiver):
        moved = await money_moved(client, auth, runner, receiver)
        holder = await approved_cardholder(client, auth)
        source = await funded_account(client, auth, holder["id"], 5_000)
        card = await active_card(client, auth, runner, holder["id"], [source["id"]])
        authorized = await approved(client, auth, card["id"], 725)
        incoming = await client.post(
            "/sandbox/uma/receive",
            auth=auth,
            json={
                "senderUmaAddress": SUCCESS_USD,
                "receivingCurrencyCode": "USD",
                "receivingCurrencyAmount": 300,
                "customerId": moved["customer"],
            },
        )
        assert incoming.status_code == 200, incoming.text
        api = (await client.get("/transactions", auth=auth, params={"limit": 100})).json()["data"]
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            page = await browser.get("/console/transactions")
        assert page.status_code == 200, page.text
        links = _rows(page.text)
        assert links == [f"/console/transactions/{t['id']}" for t in api]  # the API's order, every kind
        assert {t["type"] for t in api} >= {"OUTGOING", "INCOMING", "CARD"}
        assert "12.34 USD" in page.text and "5.00 USD" in page.text and "7.25 USD" in page.text
        assert authorized["id"] in page.text and "BLUE BOTTLE SF" in page.text
        await assert_ledger_verifies(db)

    async def test_filters_are_the_apis(self, app, db, client, auth, runner, receiver):
        moved = await money_moved(client, auth, runner, receiver)
        other = await customer(client, auth)
        other_account = await internal_account(client, auth, other["id"])
        await fund(client, auth, other_account["id"], 100)
        async with console_client(app) as browser:
            await signed_in(browser, auth)

            async def listed(**query: str) -> list[str]:
                page = await browser.get("/console/transactions", params=query)
                assert page.status_code == 200, page.text
                return [link.rsplit("/", 1)[1] for link in _rows(page.text)]

            assert await listed(status="FAILED") == [moved["failed"]]
            assert await listed(status="COMPLETED", type="OUTGOING") == [moved["sent"]]
            assert await listed(type="INCOMING") == []
            assert set(await listed(customerId=moved["customer"])) >= {moved["sent"], moved["failed"]}
            assert moved["sent"] not in await listed(customerId=other["id"])
            today = clock.now().date()
            assert moved["sent"] in await listed(createdFrom=str(today), createdTo=str(today))
            assert await listed(createdFrom=str(today + timedelta(days=1))) == []
            assert await listed(createdTo=str(today - timedelta(days=1))) == []
            shown = await browser.get("/console/transactions", params={"status": "FAILED"})
            assert '<option value="FAILED" selected>' in shown.text  # the form shows the filter applied

    async def test_bad_filters_are_a_400_page_naming_the_field(self, app, auth):
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            for query, name in (
                ({"createdFrom": "2026-13-01"}, "createdFrom"),
                ({"createdTo": "yesterday"}, "createdTo"),
                ({"createdFrom": "2026-05-02", "createdTo": "2026-05-01"}, "createdTo"),
                ({"status": "LOST"}, "status"),
                ({"type": "SIDEWAYS"}, "type"),
                ({"customerId": "x" * 65}, "customerId"),
                ({"limit": "0"}, "limit"),
                ({"cursor": "not-a-cursor"}, "cursor"),
            ):
                page = await browser.get("/console/transactions", params=query)
                assert page.status_code == 400, (query, page.text)
                assert "text/html" in page.headers["content-type"]
                assert name in page.text, (query, page.text)

    async def test_pages_with_the_apis_cursor(self, app, db, client, auth):
        person = await customer(client, auth)
        for amount in (100, 200, 300):
            received = await client.post(
                "/sandbox/uma/receive",
                auth=auth,
                json={
                    "senderUmaAddress": SUCCESS_USD,
                    "receivingCurrencyCode": "USD",
                    "receivingCurrencyAmount": amount,
                    "customerId": person["id"],
                },
            )
            assert received.status_code == 200, received.text
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            first = await browser.get("/console/transactions", params={"limit": "2", "type": "INCOMING"})
            found = re.search(r'href="([^"]+)" rel="next"', first.text)
            assert found is not None, first.text
            next_url = html.unescape(found.group(1))
            assert "type=INCOMING" in next_url and "cursor=" in next_url  # the filters go along
            second = await browser.get(next_url)
            assert second.status_code == 200, second.text
            assert 'rel="next"' not in second.text
        seen = _rows(first.text) + _rows(second.text)
        assert len(seen) == 3 == len(set(seen))

    async def test_a_fixed_number_of_statements_for_3_or_30_rows(self, app, db, client, auth):
        person = await customer(client, auth)
        counts = []
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            for total in (3, 30):
                while len(_rows((await browser.get("/console/transactions?limit=100")).text)) < total:
                    received = await client.post(
                        "/sandbox/uma/receive",
                        auth=auth,
                        json={
                            "senderUmaAddress": SUCCESS_USD,
                            "receivingCurrencyCode": "USD",
                            "receivingCurrencyAmount": 100,
                            "customerId": person["id"],
                        },
                    )
                    assert received.status_code == 200, received.text
                with count_statements(db) as statements:
                    page = await browser.get("/console/transactions?limit=100")
                assert len(_rows(page.text)) == total
                counts.append(statements.count)
        assert counts[0] == counts[1], counts


class TestTransactionPage:
    async def test_timeline_webhook_attempts_and_balanced_postings(
        self, app, db, client, auth, runner, receiver
    ):
        moved = await money_moved(client, auth, runner, receiver)
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            listed = await browser.get("/console/transactions", params={"status": "COMPLETED"})
            [link] = _rows(listed.text)
            page = await browser.get(link)
        assert page.status_code == 200, page.text
        text_ = page.text
        assert moved["sent"] in text_ and "12.34 USD" in text_
        # status changes, each announced by its webhook event
        changes = text_.split('class="transactions-changes"')[1].split("</table>")[0]
        assert "OUTGOING_PAYMENT.COMPLETED" in changes
        assert changes.index("PROCESSING") < changes.index("COMPLETED") or "PENDING" in changes
        # each event's delivery attempts with the receiver's status codes and latencies
        attempts = re.findall(r'<td class="num">(\d{3}|—)</td>\s*<td class="num">(\d+) ms</td>', text_)
        codes = [code for code, _ms in attempts]
        assert "500" in codes and "200" in codes, attempts
        assert receiver.url in text_
        # the ledger entries: postings per account, totals balanced per currency
        postings = text_.split('class="transactions-postings"')[1].split("</table>")[0]
        assert f"internal:{moved['account']}" in postings or moved["account"] in postings
        assert "Total USD: balanced" in postings and "NOT balanced" not in postings
        async with db.read() as session:
            entries = await ledger_service.entries_for_transaction(
                session, tenant_id=await _tenant_id(db), transaction_id=moved["sent"]
            )
        assert entries and all(sum(p.amount for p in e.postings) == 0 for e in entries)
        await assert_ledger_verifies(db)

    async def test_a_failed_transfer_shows_its_failure_and_the_hold_coming_back(
        self, app, db, client, auth, runner, receiver
    ):
        moved = await money_moved(client, auth, runner, receiver)
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            page = await browser.get(f"/console/transactions/{moved['failed']}")
        assert page.status_code == 200, page.text
        assert "status-failed" in page.text and "OUTGOING_PAYMENT.FAILED" in page.text
        postings = page.text.split('class="transactions-postings"')[1].split("</table>")[0]
        assert "HELD" in postings and "AVAILABLE" in postings  # held, then released
        assert "Total USD: balanced" in postings
        await assert_ledger_verifies(db)

    async def test_a_card_transaction_page(self, app, db, client, auth, runner, receiver):
        configured = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        assert configured.status_code == 200
        holder = await approved_cardholder(client, auth)
        source = await funded_account(client, auth, holder["id"], 5_000)
        card = await active_card(client, auth, runner, holder["id"], [source["id"]])
        authorized = await approved(client, auth, card["id"], 725)
        await runner.run_until_idle()
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            page = await browser.get(f"/console/transactions/{authorized['id']}")
        assert page.status_code == 200, page.text
        assert "BLUE BOTTLE SF" in page.text and "7.25 USD" in page.text and "AUTHORIZED" in page.text
        postings = page.text.split('class="transactions-postings"')[1].split("</table>")[0]
        assert "HELD" in postings and "Total USD: balanced" in postings
        assert "CARD_TRANSACTION." in page.text  # its webhook events
        await assert_ledger_verifies(db)

    async def test_unknown_and_other_tenants_ids_are_the_same_404_page(
        self, app, db, client, settings, auth, runner, receiver
    ):
        moved = await money_moved(client, auth, runner, receiver)
        other = await create_platform(db, settings, name="Other")
        async with console_client(app) as browser:
            await signed_in(browser, other["sandbox"])
            foreign = await browser.get(f"/console/transactions/{moved['sent']}")
            unknown = await browser.get(
                "/console/transactions/Transaction:00000000-0000-0000-0000-000000000000"
            )
            card = await browser.get("/console/transactions/CardTransaction:nope")
            listed = await browser.get("/console/transactions")
        for page in (foreign, unknown, card):
            assert page.status_code == 404, page.text
            assert "Not found" in page.text and "text/html" in page.headers["content-type"]
        assert moved["sent"] not in listed.text  # nor listed
        await assert_ledger_verifies(db)

    async def test_a_fixed_number_of_statements_for_3_or_30_events_and_entries(
        self, app, db, client, auth, runner, receiver
    ):
        moved = await money_moved(client, auth, runner, receiver)
        tenant_id = await _tenant_id(db)
        other = await customer(client, auth)
        other_account = await internal_account(client, auth, other["id"])
        counts = []
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            for total in (3, 30):
                async with db.read() as session:
                    have = len(
                        await events_service.timeline_for_resource(
                            session, tenant_id=tenant_id, resource_id=moved["sent"]
                        )
                    )
                for _ in range(total - have):
                    async with db.transaction() as session:
                        await events_service.emit(
                            session,
                            tenant_id=tenant_id,
                            type="OUTGOING_PAYMENT.COMPLETED",
                            resource={"id": moved["sent"], "status": "COMPLETED"},
                        )
                        await ledger_service.post(  # and as many more entries for the transaction
                            session,
                            tenant_id=tenant_id,
                            kind="TRANSFER",
                            reference=moved["sent"],
                            legs=[
                                ledger_service.Leg(moved["account"], "USD", -1),
                                ledger_service.Leg(other_account["id"], "USD", 1),
                            ],
                        )
                await runner.run_until_idle()
                with count_statements(db) as statements:
                    page = await browser.get(f"/console/transactions/{moved['sent']}")
                assert page.status_code == 200
                assert page.text.count("transactions-event") >= total
                counts.append(statements.count)
        assert counts[0] == counts[1], counts
        await assert_ledger_verifies(db)
