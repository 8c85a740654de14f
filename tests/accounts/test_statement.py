"""GET /internal-accounts/{id}/entries, an internal account's statement, through the API on both databases:
card money (hold, partial clearing, expiry's release, post-hoc pull, return) and a transfer-out (hold,
settle) appear with their signs and links; the listed changes add up to the account's balances and the
running balances chain; pages, filters, 404s and 400s. The conftest verifies the ledger after each test."""

from __future__ import annotations

import asyncio
import itertools
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from platpay.kit import clock
from tests.factories import (
    account_destination,
    account_source,
    balances,
    create_platform,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)
from tests.support.cards import (
    active_card,
    approved,
    approved_cardholder,
    clear,
    funded_account,
    give_back,
    opening_body,
    run_jobs,
    simulate,
)

# The kinds docs/customers-and-accounts.md's statement table explains ("| `KIND` | …").
DOCUMENTED_KINDS = set(
    re.findall(
        r"^  \| `([A-Z_]+)` \|",
        (Path(__file__).parents[2] / "docs" / "customers-and-accounts.md").read_text(),
        re.M,
    )
)


async def _entries(client, auth, account_id: str, **params: Any) -> dict[str, Any]:
    response = await client.get(f"/internal-accounts/{account_id}/entries", auth=auth, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def _all_entries(client, auth, account_id: str, **params: Any) -> list[dict[str, Any]]:
    return (await _entries(client, auth, account_id, limit=100, **params))["data"]


def _changes(entry: dict[str, Any]) -> tuple[int, int, int]:
    """(available, held, total) changes of an entry, minor units."""
    return (
        entry["availableChange"]["amount"],
        entry["heldChange"]["amount"],
        entry["totalChange"]["amount"],
    )


def _assert_adds_up(entries: list[dict[str, Any]], available: int, total: int) -> None:
    """The whole statement (newest first, from an account opened at zero) sums to the account's balances,
    and the running balances chain: the newest is the balance now, each older one is the next newer one
    less that entry's change, and the oldest is its own change."""
    assert {e["kind"] for e in entries} <= DOCUMENTED_KINDS
    assert sum(e["availableChange"]["amount"] for e in entries) == available
    assert sum(e["totalChange"]["amount"] for e in entries) == total
    for entry in entries:
        available_change, held_change, total_change = _changes(entry)
        assert total_change == available_change + held_change
    assert entries[0]["availableAfter"]["amount"] == available
    assert entries[0]["totalAfter"]["amount"] == total
    for newer, older in itertools.pairwise(entries):
        assert older["availableAfter"]["amount"] == (
            newer["availableAfter"]["amount"] - newer["availableChange"]["amount"]
        )
        assert older["totalAfter"]["amount"] == newer["totalAfter"]["amount"] - newer["totalChange"]["amount"]
    oldest = entries[-1]
    assert oldest["availableAfter"]["amount"] == oldest["availableChange"]["amount"]
    assert oldest["totalAfter"]["amount"] == oldest["totalChange"]["amount"]


@pytest.fixture
async def card_setup(client, auth, runner) -> dict[str, str]:
    person = await approved_cardholder(client, auth)
    account = await funded_account(client, auth, person["id"], 10_000)
    card = await active_card(client, auth, runner, person["id"], [account["id"]])
    return {"customer": person["id"], "account": account["id"], "card": card["id"]}


class TestCardMoney:
    async def test_hold_partial_clearing_release_pull_and_return_appear_with_signs_and_links(
        self, client, auth, card_setup
    ) -> None:
        card, account = card_setup["card"], card_setup["account"]
        first = await approved(client, auth, card, 2_500)
        [hold] = (await _entries(client, auth, account, limit=1))["data"]
        assert hold["kind"] == "CARD_AUTHORIZATION_HOLD" and _changes(hold) == (-2_500, 2_500, 0)
        assert hold["cardTransactionId"] == first["id"] and hold["reference"] == first["id"]
        assert "transactionId" not in hold
        assert hold["availableChange"]["currency"]["code"] == "USD"

        assert (await clear(client, auth, card, first["id"], 1_000)).json()["status"] == "PARTIALLY_SETTLED"
        assert (await clear(client, auth, card, first["id"], 0)).json()[
            "status"
        ] == "SETTLED"  # the rest expires
        second = await approved(client, auth, card, 500)
        assert (await clear(client, auth, card, second["id"], 700)).json()["status"] == "SETTLED"  # 200 over
        assert (await give_back(client, auth, card, first["id"], 400)).status_code == 200

        entries = await _all_entries(client, auth, account)
        assert [(e["kind"], _changes(e), e.get("cardTransactionId")) for e in entries] == [
            ("CARD_RETURN", (400, 0, 400), first["id"]),
            ("CARD_POST_HOC_PULL", (-200, 0, -200), second["id"]),
            ("CARD_CLEARING_CAPTURE", (0, -500, -500), second["id"]),
            ("CARD_AUTHORIZATION_HOLD", (-500, 500, 0), second["id"]),
            ("CARD_AUTHORIZATION_RELEASE", (1_500, -1_500, 0), first["id"]),
            ("CARD_CLEARING_CAPTURE", (0, -1_000, -1_000), first["id"]),
            ("CARD_AUTHORIZATION_HOLD", (-2_500, 2_500, 0), first["id"]),
            ("SANDBOX_FUNDING", (10_000, 0, 10_000), None),
        ]
        funding = entries[-1]
        assert funding["reference"] == account and "transactionId" not in funding
        available, total = await balances(client, auth, card_setup["customer"])
        assert (available, total) == (10_000 - 1_000 - 700 + 400, 10_000 - 1_000 - 700 + 400)
        _assert_adds_up(entries, available, total)

    async def test_an_open_hold_keeps_the_total_and_the_running_balances_show_it(
        self, client, auth, card_setup
    ) -> None:
        await approved(client, auth, card_setup["card"], 3_000)
        entries = await _all_entries(client, auth, card_setup["account"])
        assert (entries[0]["availableAfter"]["amount"], entries[0]["totalAfter"]["amount"]) == (7_000, 10_000)
        _assert_adds_up(entries, *await balances(client, auth, card_setup["customer"]))


class TestTransferOut:
    async def test_hold_then_settle_link_the_transaction(self, client, auth, runner) -> None:
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        await fund(client, auth, account["id"], 10_000)
        bank = await external_account(client, auth, person["id"])
        response = await client.post(
            "/transfer-out",
            auth=auth,
            json={
                "source": {"accountId": account["id"]},
                "destination": {"accountId": bank["id"]},
                "amount": 4_000,
            },
        )
        assert response.status_code == 201, response.text
        transaction = response.json()
        [held] = (await _entries(client, auth, account["id"], kind="TRANSFER_OUT_HOLD"))["data"]
        assert _changes(held) == (-4_000, 4_000, 0) and held["transactionId"] == transaction["id"]
        assert "cardTransactionId" not in held
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=2))
        await runner.run_until_idle()
        assert (await client.get(f"/transactions/{transaction['id']}", auth=auth)).json()[
            "status"
        ] == "COMPLETED"
        entries = await _all_entries(client, auth, account["id"])
        assert [(e["kind"], _changes(e), e.get("transactionId")) for e in entries] == [
            ("TRANSFER_OUT_SETTLE", (0, -4_000, -4_000), transaction["id"]),
            ("TRANSFER_OUT_HOLD", (-4_000, 4_000, 0), transaction["id"]),
            ("SANDBOX_FUNDING", (10_000, 0, 10_000), None),
        ]
        available, total = await balances(client, auth, person["id"])
        assert (available, total) == (6_000, 6_000)
        _assert_adds_up(entries, available, total)

    async def test_only_the_accounts_own_movements_are_listed(self, client, auth) -> None:
        mine = await internal_account(client, auth, (await customer(client, auth))["id"])
        theirs = await internal_account(client, auth, (await customer(client, auth))["id"])
        await fund(client, auth, mine["id"], 100)
        await fund(client, auth, theirs["id"], 200)
        [only] = await _all_entries(client, auth, mine["id"])
        assert only["availableChange"]["amount"] == 100
        untouched = await internal_account(client, auth, (await customer(client, auth))["id"])
        assert await _entries(client, auth, untouched["id"]) == {
            "data": [],
            "hasMore": False,
            "totalCount": 0,
        }


class TestQuotes:
    async def test_an_execution_and_its_refund_link_the_transaction(self, client, auth, runner) -> None:
        person = await customer(client, auth)
        usd = await internal_account(client, auth, person["id"])
        await fund(client, auth, usd["id"], 50_000)
        payee = await mxn_account(client, auth, person["id"], suffix="002")  # the execution fails: refunded
        created = (
            await quote(
                client, auth, source=account_source(usd["id"]), destination=account_destination(payee["id"])
            )
        ).json()
        assert (await client.post(f"/quotes/{created['id']}/execute", auth=auth)).status_code == 200
        clock.advance(timedelta(seconds=1))
        await runner.run_until_idle()
        clock.advance(timedelta(seconds=1))
        await runner.run_until_idle()
        refunded = (await client.get(f"/transactions/{created['transactionId']}", auth=auth)).json()
        assert refunded["refund"]["status"] == "COMPLETED"
        entries = await _all_entries(client, auth, usd["id"])
        assert [(e["kind"], _changes(e), e.get("transactionId")) for e in entries] == [
            ("QUOTE_REFUND", (10_000, 0, 10_000), created["transactionId"]),
            ("QUOTE_EXECUTE", (-10_000, 0, -10_000), created["transactionId"]),
            ("SANDBOX_FUNDING", (50_000, 0, 50_000), None),
        ]
        _assert_adds_up(entries, *await balances(client, auth, person["id"]))


class TestPlatformAccount:
    async def test_the_platforms_own_account_has_a_statement(self, client, auth) -> None:
        [usd] = (
            await client.get("/platform/internal-accounts", auth=auth, params={"currency": "USD"})
        ).json()["data"]
        await fund(client, auth, usd["id"], 1_234)
        [entry] = await _all_entries(client, auth, usd["id"])
        assert entry["kind"] == "SANDBOX_FUNDING" and _changes(entry) == (1_234, 0, 1_234)


@pytest.fixture
async def seven_fundings(client, auth) -> dict[str, Any]:
    """Seven deposits of 1, 2, … 7 (minor units), a minute apart on a frozen clock."""
    clock.freeze()
    person = await customer(client, auth)
    account = await internal_account(client, auth, person["id"])
    times = []
    for amount in range(1, 8):
        times.append(clock.now())
        await fund(client, auth, account["id"], amount)
        clock.advance(timedelta(minutes=1))
    return {"account": account["id"], "times": times}


class TestPages:
    async def test_limit_and_cursor_walk_every_entry_once_newest_first(
        self, client, auth, seven_fundings
    ) -> None:
        account = seven_fundings["account"]
        everything = await _all_entries(client, auth, account)
        assert [e["availableChange"]["amount"] for e in everything] == [7, 6, 5, 4, 3, 2, 1]
        seen, cursor, sizes = [], None, []
        while True:
            params: dict[str, Any] = {"limit": 3}
            if cursor:
                params["cursor"] = cursor
            page = await _entries(client, auth, account, **params)
            assert page["totalCount"] == 7
            seen += page["data"]
            sizes.append(len(page["data"]))
            if not page["hasMore"]:
                assert "nextCursor" not in page
                break
            cursor = page["nextCursor"]
        assert sizes == [3, 3, 1]
        assert seen == everything  # same items, same running balances, no repeats
        assert len({e["id"] for e in seen}) == 7
        _assert_adds_up(seen, 28, 28)


class TestFilters:
    async def test_dates_bound_the_entries_and_keep_the_true_running_balances(
        self, client, auth, seven_fundings
    ) -> None:
        account, times = seven_fundings["account"], seven_fundings["times"]
        everything = {e["id"]: e for e in await _all_entries(client, auth, account)}
        window = await _all_entries(
            client, auth, account, startDate=times[2].isoformat(), endDate=times[4].isoformat()
        )
        assert [e["availableChange"]["amount"] for e in window] == [5, 4, 3]  # both bounds included
        assert [e["availableAfter"]["amount"] for e in window] == [15, 10, 6]
        assert all(everything[e["id"]] == e for e in window)
        page = await _entries(client, auth, account, startDate=times[3].isoformat(), limit=2)
        assert page["totalCount"] == 4 and [e["availableAfter"]["amount"] for e in page["data"]] == [28, 21]

    async def test_kinds_select_entries_and_the_balances_still_count_the_others(
        self, client, auth, card_setup
    ) -> None:
        card, account = card_setup["card"], card_setup["account"]
        authorization = await approved(client, auth, card, 1_000)
        await clear(client, auth, card, authorization["id"], 1_000)
        captures = await _all_entries(client, auth, account, kind="CARD_CLEARING_CAPTURE")
        assert [(e["kind"], e["availableAfter"]["amount"], e["totalAfter"]["amount"]) for e in captures] == [
            ("CARD_CLEARING_CAPTURE", 9_000, 9_000)
        ]
        several = await _all_entries(
            client, auth, account, kind=["SANDBOX_FUNDING", "CARD_AUTHORIZATION_HOLD"]
        )
        assert [e["kind"] for e in several] == ["CARD_AUTHORIZATION_HOLD", "SANDBOX_FUNDING"]
        assert (
            several[0]["availableAfter"]["amount"] == 9_000 and several[0]["totalAfter"]["amount"] == 10_000
        )
        assert await _all_entries(client, auth, account, kind="NOT_A_KIND_WE_POST") == []


class TestRefusals:
    async def test_another_tenants_account_and_an_unknown_one_are_404(
        self, client, auth, platform, db, settings
    ) -> None:
        person = await customer(client, auth)
        account = await internal_account(client, auth, person["id"])
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        for credentials in (other, platform["production"]):
            response = await client.get(f"/internal-accounts/{account['id']}/entries", auth=credentials)
            assert response.status_code == 404, response.text
            assert response.json()["code"] == "REFERENCE_NOT_FOUND"
        unknown = "InternalAccount:019542f5-b3e7-1d02-0000-00000000dead"
        assert (await client.get(f"/internal-accounts/{unknown}/entries", auth=auth)).status_code == 404

    @pytest.mark.parametrize(
        ("path_id", "params", "field"),
        [
            ("not-an-id", {}, "id"),
            ("Card:019542f5-b3e7-1d02-0000-000000000001", {}, "id"),
            (None, {"limit": 0}, "limit"),
            (None, {"limit": 101}, "limit"),
            (None, {"cursor": "garbage"}, "cursor"),
            (None, {"startDate": "yesterday"}, "startDate"),
            (None, {"startDate": "2026-01-02T00:00:00Z", "endDate": "2026-01-01T00:00:00Z"}, "startDate"),
            (None, {"kind": "card_return"}, "kind"),
        ],
    )
    async def test_bad_parameters_are_400_naming_the_field(
        self, client, auth, path_id, params, field
    ) -> None:
        if path_id is None:
            path_id = (await internal_account(client, auth, (await customer(client, auth))["id"]))["id"]
        response = await client.get(f"/internal-accounts/{path_id}/entries", auth=auth, params=params)
        assert response.status_code == 400, response.text
        body = response.json()
        assert body["code"] == "INVALID_INPUT"
        assert [f["field"] for f in body["details"]["fields"]] == [field]

    async def test_a_cursor_from_another_list_is_400(self, client, auth) -> None:
        for _ in range(2):
            await customer(client, auth)
        page = (await client.get("/customers/internal-accounts", auth=auth, params={"limit": 1})).json()
        account = page["data"][0]["id"]
        response = await client.get(
            f"/internal-accounts/{account}/entries", auth=auth, params={"cursor": page["nextCursor"]}
        )
        assert response.status_code == 400 and response.json()["details"]["fields"][0]["field"] == "cursor"


class TestConcurrentMovements:
    @pytest.fixture
    def backend(self, request, pg_database):
        if pg_database is None:
            pytest.skip("PostgreSQL concurrency: set PLATPAY_TEST_DATABASE_URL")
        return request.param

    @pytest.mark.parametrize("backend", ["postgresql"], indirect=True)
    async def test_the_running_balances_follow_the_order_the_ledger_applied_them(
        self, client, auth, runner
    ) -> None:
        """Holds and deposits racing on one account (PostgreSQL, parallel transactions): the statement's order
        is the order they were applied in, so no running balance is ever below zero, though the money was
        tight enough that another order would show one."""
        person = await approved_cardholder(client, auth)
        account = await funded_account(client, auth, person["id"], 300)
        card = await active_card(client, auth, runner, person["id"], [account["id"]])
        accepted = await asyncio.gather(
            *(simulate(client, auth, card["id"], "authorization", opening_body(100)) for _ in range(16))
        )
        assert all(r.status_code == 202 for r in accepted), [r.text for r in accepted if r.status_code != 202]
        deposits = [
            client.post(f"/sandbox/internal-accounts/{account['id']}/fund", auth=auth, json={"amount": 100})
            for _ in range(8)
        ]
        # the authorizations applied by two job runners while the deposits arrive
        *responses, _, _ = await asyncio.gather(
            *deposits, run_jobs(client, name="a"), run_jobs(client, name="b")
        )
        assert all(r.status_code == 200 for r in responses), [
            r.text for r in responses if r.status_code != 200
        ]
        entries = await _all_entries(client, auth, account["id"])
        holds = [e for e in entries if e["kind"] == "CARD_AUTHORIZATION_HOLD"]
        assert len(entries) == 1 + 8 + len(holds) and len(holds) >= 3
        for entry in entries:
            available, total = entry["availableAfter"]["amount"], entry["totalAfter"]["amount"]
            assert available >= 0 and total - available >= 0, entry
        _assert_adds_up(entries, *await balances(client, auth, person["id"]))
