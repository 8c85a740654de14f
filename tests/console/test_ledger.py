"""The console's ledger (console/pages/ledger.py): accounts with their balances, filtered by owner and kind and
paged with the API's cursors; an account's statement with its running balance; the ledger's check run from a
form (CSRF, VIEW is enough), its result on the page and in the console trail. Fixed statements per page."""

from __future__ import annotations

import html
import re

from sqlalchemy import text

from platpay.auth.sessions import service as sessions_service
from platpay.ledger import service as ledger_service
from tests.console.test_transactions import money_moved
from tests.factories import create_platform, customer, fund, internal_account
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.ledger import assert_ledger_verifies
from tests.support.statements import count_statements

_ACCOUNT = re.compile(r'href="/console/ledger/accounts/([^"]+)"')


async def _tenant_id(db) -> str:
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox' ORDER BY id"))


def _accounts(page: str) -> list[str]:
    return [html.unescape(found) for found in _ACCOUNT.findall(page)]


async def _view_only(client, auth) -> tuple[str, str]:
    created = await client.post("/tokens", auth=auth, json={"name": "viewer", "permissions": ["VIEW"]})
    assert created.status_code == 201, created.text
    return created.json()["clientId"], created.json()["clientSecret"]


class TestAccounts:
    async def test_balances_filtered_by_owner_and_kind(self, app, db, client, auth, runner, receiver):
        moved = await money_moved(client, auth, runner, receiver)
        other = await customer(client, auth)
        other_account = await internal_account(client, auth, other["id"])
        await fund(client, auth, other_account["id"], 4_200)
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            everything = await browser.get("/console/ledger")
            owned = await browser.get(
                "/console/ledger", params={"owner": moved["customer"], "kind": "INTERNAL"}
            )
            clearing = await browser.get("/console/ledger", params={"kind": "CLEARING"})
            nobody = await browser.get("/console/ledger", params={"owner": "Customer:nobody"})
        assert everything.status_code == 200, everything.text
        assert moved["account"] in _accounts(everything.text) and other_account["id"] in _accounts(
            everything.text
        )
        owned_ids = _accounts(owned.text)
        assert moved["account"] in owned_ids  # among the customer's accounts (one per currency it holds)
        assert owned.text.count(f"<code>{moved['customer']}</code>") == len(owned_ids)
        # 10,000 funded, 12.34 sent, 5.00 sent and returned
        assert "87.66 USD" in owned.text and moved["customer"] in owned.text
        assert other_account["id"] not in owned.text
        assert _accounts(clearing.text) and "INTERNAL</td>" not in clearing.text
        assert _accounts(nobody.text) == [] and "No ledger accounts match" in nobody.text
        await assert_ledger_verifies(db)

    async def test_pages_with_the_apis_cursor_and_bad_filters_are_400(self, app, db, client, auth):
        for _ in range(3):
            person = await customer(client, auth)
            await fund(client, auth, (await internal_account(client, auth, person["id"]))["id"], 100)
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            seen: list[str] = []
            url: str | None = "/console/ledger?kind=INTERNAL&limit=2"
            while url:
                page = await browser.get(url)
                assert page.status_code == 200, page.text
                seen += _accounts(page.text)
                found = re.search(r'href="([^"]+)" rel="next"', page.text)
                url = html.unescape(found.group(1)) if found else None
                if url:
                    assert "kind=INTERNAL" in url
            assert len(seen) == len(set(seen)) >= 3
            for query, name in (
                ({"kind": "GOLD"}, "kind"),
                ({"owner": "x" * 65}, "owner"),
                ({"limit": "x"}, "limit"),
            ):
                bad = await browser.get("/console/ledger", params=query)
                assert bad.status_code == 400 and name in bad.text, (query, bad.text)
        await assert_ledger_verifies(db)

    async def test_a_fixed_number_of_statements_for_3_or_30_accounts(self, app, db, client, auth):
        counts = []
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            for total in (3, 30):
                while (
                    len(_accounts((await browser.get("/console/ledger?kind=INTERNAL&limit=100")).text))
                    < total
                ):
                    await customer(client, auth)
                with count_statements(db) as statements:
                    page = await browser.get("/console/ledger?kind=INTERNAL&limit=100")
                shown = len(_accounts(page.text))
                assert total <= shown < total + 3  # a customer opens its accounts together
                counts.append(statements.count)
        assert counts[0] == counts[1], counts


class TestStatement:
    async def test_running_balance_and_links_to_transactions(self, app, db, client, auth, runner, receiver):
        moved = await money_moved(client, auth, runner, receiver)
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            listed = await browser.get("/console/ledger", params={"owner": moved["customer"]})
            assert f'/console/ledger/accounts/{moved["account"]}"' in listed.text
            page = await browser.get(f"/console/ledger/accounts/{moved['account']}")
        assert page.status_code == 200, page.text
        statement = page.text.split('class="ledger-statement"')[1].split("</table>")[0]
        assert "100.00 USD" in statement  # the funding, and the balance after it
        assert "87.66 USD" in statement  # where it ends
        assert f'href="/console/transactions/{moved["sent"]}"' in statement
        assert f'href="/console/transactions/{moved["failed"]}"' in statement
        await assert_ledger_verifies(db)

    async def test_paged_and_a_fixed_number_of_statements_for_3_or_30_lines(self, app, db, client, auth):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        counts = []
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            for total, funded in ((3, 0), (30, 3)):
                for _ in range(total - funded):
                    await fund(client, auth, account["id"], 10)
                with count_statements(db) as statements:
                    page = await browser.get(f"/console/ledger/accounts/{account['id']}?limit=100")
                assert page.status_code == 200
                assert page.text.split('class="ledger-statement"')[1].count("<tr>") == total + 1  # the head
                counts.append(statements.count)
            first = await browser.get(f"/console/ledger/accounts/{account['id']}?limit=20")
            found = re.search(r'href="([^"]+)" rel="next"', first.text)
            assert found is not None
            second = await browser.get(html.unescape(found.group(1)))
            assert second.status_code == 200
            assert second.text.split('class="ledger-statement"')[1].count("<tr>") == 11
            assert "0.10 USD" in second.text.split('class="ledger-statement"')[1]  # the first line's balance
        assert counts[0] == counts[1], counts
        await assert_ledger_verifies(db)

    async def test_unknown_and_other_tenants_accounts_are_the_same_404_page(
        self, app, db, client, settings, auth
    ):
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        other = await create_platform(db, settings, name="Other")
        async with console_client(app) as browser:
            await signed_in(browser, other["sandbox"])
            foreign = await browser.get(f"/console/ledger/accounts/{account['id']}")
            unknown = await browser.get("/console/ledger/accounts/InternalAccount:nope")
            listed = await browser.get("/console/ledger")
        for page in (foreign, unknown):
            assert page.status_code == 404 and "Not found" in page.text, page.text
        assert account["id"] not in listed.text


class TestVerify:
    async def test_verify_shows_the_result_and_records_it(self, app, db, client, auth, runner, receiver):
        await money_moved(client, auth, runner, receiver)
        tenant_id = await _tenant_id(db)
        viewer = await _view_only(client, auth)
        async with console_client(app) as browser:
            csrf = await signed_in(browser, viewer)  # VIEW is enough: it reads
            page = await browser.get("/console/ledger")
            assert 'action="/console/ledger/verify"' in page.text
            done = await browser.post("/console/ledger/verify", data={"csrf": csrf_of(page.text)})
            assert done.status_code == 303 and done.headers["location"].startswith("/console/ledger")
            page = await browser.get("/console/ledger")
        result = page.text.split('class="notice ledger-result"')[1].split("</div>")[0]
        assert "Balanced" in result and "USD: balanced" in result
        async with db.read() as session:
            report = await ledger_service.verify(session, tenant_id=tenant_id)
            [record] = [
                r
                for r in await sessions_service.actions_for(
                    session, tenant_id=tenant_id, subject_id=tenant_id
                )
                if r.action == "LEDGER_VERIFIED"
            ]
        c = report.counts
        assert f"{c['accounts']} accounts, {c['entries']} entries, {c['postings']} postings" in result
        assert record.data["ok"] is True and record.data["accounts"] == c["accounts"]
        assert record.data["currencies"]["USD"] == 0 and record.data["problems"] == {}
        assert "LEDGER_VERIFIED" in page.text  # the trail on the page
        assert csrf
        await assert_ledger_verifies(db)

    async def test_without_the_csrf_token_nothing_is_recorded(self, app, db, auth):
        tenant_id = await _tenant_id(db)
        async with console_client(app) as browser:
            await signed_in(browser, auth)
            refused = await browser.post("/console/ledger/verify", data={"csrf": "forged"})
            missing = await browser.post("/console/ledger/verify", data={})
        for page in (refused, missing):
            assert page.status_code == 403 and "Not allowed" in page.text
        async with db.read() as session:
            records = await sessions_service.actions_for(session, tenant_id=tenant_id, subject_id=tenant_id)
        assert not [r for r in records if r.action == "LEDGER_VERIFIED"]

    async def test_a_problem_is_shown(self, app, db, client, auth):
        """A stored balance that its postings do not explain (written behind the ledger's back) is found, named
        on the page, and recorded; then put back so the ledger verifies again."""
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 500)
        async with db.transaction() as session:
            await session.execute(
                text("UPDATE ledger_accounts SET available = available + 1 WHERE id = :a"),
                {"a": account["id"]},
            )
        try:
            async with console_client(app) as browser:
                csrf = await signed_in(browser, auth)
                await browser.post("/console/ledger/verify", data={"csrf": csrf})
                page = await browser.get("/console/ledger")
            result = page.text.split('class="alert ledger-result"')[1].split("</div>")[0]
            assert "Problems found" in result and "balanceMismatches: 1" in result
            assert "USD: off by 0.01 USD" in result
        finally:
            async with db.transaction() as session:
                await session.execute(
                    text("UPDATE ledger_accounts SET available = available - 1 WHERE id = :a"),
                    {"a": account["id"]},
                )
        await assert_ledger_verifies(db)
