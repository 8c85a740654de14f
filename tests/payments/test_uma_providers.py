"""GET /uma-providers: the provider directory, its filters, order and pagination."""

from __future__ import annotations

import pytest

from platpay.kit import currencies

CURRENCY_KEYS = {"code", "name", "symbol", "decimals"}


async def _list(client, auth, **params):
    response = await client.get("/uma-providers", auth=auth, params=params)
    assert response.status_code == 200, response.text
    return response.json()


async def _all(client, auth, **params):
    items, cursor = [], None
    while True:
        page = await _list(client, auth, limit=4, **params, **({"cursor": cursor} if cursor else {}))
        items += page["data"]
        if not page["hasMore"]:
            assert "nextCursor" not in page
            return items
        cursor = page["nextCursor"]


class TestListProviders:
    async def test_every_provider_with_its_details_newest_listing_first(self, client, auth):
        page = await _list(client, auth)
        assert page["totalCount"] == len(page["data"]) == 12 and page["hasMore"] is False
        first = page["data"][0]
        assert first["name"] == "Kiwi Coin Exchange"
        for provider in page["data"]:
            assert set(provider) == {
                "name",
                "supportedRegions",
                "domain",
                "logoUrl",
                "supportedCurrencies",
                "lei",
                "allowListStatus",
            }
            assert provider["logoUrl"].startswith("https://") and len(provider["lei"]) == 20
            assert all(set(c) == CURRENCY_KEYS for c in provider["supportedCurrencies"])
        lightspark = next(p for p in page["data"] if p["domain"] == "uma.me")
        assert lightspark["lei"] == "5493001KJTIIGC8Y1R12" and lightspark["supportedRegions"] == ["US"]
        assert lightspark["supportedCurrencies"] == [
            currencies.require("USD").as_api(),
            currencies.require("BTC").as_api(),
        ]

    async def test_sort_order_asc_reverses_it(self, client, auth):
        descending = [p["domain"] for p in (await _list(client, auth))["data"]]
        ascending = [p["domain"] for p in (await _list(client, auth, sortOrder="asc"))["data"]]
        assert ascending == list(reversed(descending)) and ascending[0] == "uma.me"

    @pytest.mark.parametrize("sort_order", ["asc", "desc"])
    async def test_pages_cover_the_list_once(self, client, auth, sort_order):
        everything = [p["domain"] for p in (await _list(client, auth, sortOrder=sort_order))["data"]]
        paged = [p["domain"] for p in await _all(client, auth, sortOrder=sort_order)]
        assert paged == everything
        first = await _list(client, auth, limit=3, sortOrder=sort_order)
        assert first["hasMore"] and first["totalCount"] == 12 and len(first["data"]) == 3

    async def test_a_cursor_belongs_to_its_sort_order(self, client, auth):
        cursor = (await _list(client, auth, limit=2))["nextCursor"]
        response = await client.get(
            "/uma-providers", auth=auth, params={"cursor": cursor, "sortOrder": "asc"}
        )
        assert response.status_code == 400 and response.json()["details"]["fields"][0]["field"] == "cursor"
        garbage = await client.get("/uma-providers", auth=auth, params={"cursor": "nope"})
        assert garbage.status_code == 400

    async def test_country_filter(self, client, auth):
        page = await _list(client, auth, countryCode="US")
        assert {p["domain"] for p in page["data"]} == {
            "uma.me",
            "sandbox.uma.money",
            "uma.mapletransfers.example",
        }
        assert all("US" in p["supportedRegions"] for p in page["data"])
        assert (await _list(client, auth, countryCode="AQ"))["data"] == []

    async def test_currency_filter(self, client, auth):
        page = await _list(client, auth, currencyCode="BTC")
        assert {p["domain"] for p in page["data"]} == {"uma.me", "kiwicoin.example"}
        assert page["totalCount"] == 2
        assert (await _list(client, auth, currencyCode="ZZZ"))["totalCount"] == 0

    async def test_filters_combine(self, client, auth):
        page = await _list(client, auth, countryCode="US", currencyCode="CAD")
        assert [p["domain"] for p in page["data"]] == ["uma.mapletransfers.example"]
        page = await _list(client, auth, countryCode="US", currencyCode="CAD", hasBlockedProviders="false")
        assert page["data"] == [] and page["totalCount"] == 0

    async def test_blocked_providers_are_included_unless_excluded(self, client, auth):
        everything = await _list(client, auth)
        assert any(p["allowListStatus"] is False for p in everything["data"])
        assert (await _list(client, auth, hasBlockedProviders="true"))["totalCount"] == everything[
            "totalCount"
        ]
        allowed = await _list(client, auth, hasBlockedProviders="false")
        assert allowed["totalCount"] == sum(p["allowListStatus"] for p in everything["data"]) == 9
        assert all(p["allowListStatus"] for p in allowed["data"])

    async def test_production_does_not_list_the_sandbox_counterparties(self, client, platform):
        page = await _list(client, platform["production"])
        assert page["totalCount"] == 11
        assert "sandbox.uma.money" not in {p["domain"] for p in page["data"]}

    @pytest.mark.parametrize(
        "params",
        [
            {"countryCode": "us"},
            {"countryCode": "USA"},
            {"currencyCode": "usd"},
            {"hasBlockedProviders": "maybe"},
            {"sortOrder": "up"},
            {"limit": 0},
            {"limit": 101},
        ],
    )
    async def test_bad_parameters_name_themselves(self, client, auth, params):
        response = await client.get("/uma-providers", auth=auth, params=params)
        assert response.status_code == 400
        assert response.json()["details"]["fields"][0]["field"] == next(iter(params))

    async def test_needs_credentials(self, client):
        assert (await client.get("/uma-providers")).status_code == 401
