"""GET /exchange-rates: corridors, filters, fees for the sending amount, the ~5 minute cache."""

from __future__ import annotations

from datetime import timedelta

import pytest

from platpay.fx import cache
from platpay.kit import clock
from tests.support.fx import expected


@pytest.fixture(autouse=True)
def _empty_rate_cache():
    cache.clear()
    yield
    cache.clear()


async def _rates(client, auth, **params):
    response = await client.get("/exchange-rates", auth=auth, params=params)
    assert response.status_code == 200, response.text
    return response.json()["data"]


class TestExchangeRates:
    async def test_filters_by_source_and_repeatable_destination(self, client, auth):
        data = await _rates(client, auth, sourceCurrency="USD", destinationCurrency=["MXN", "INR"])
        assert [(r["destinationCurrency"]["code"], r["destinationPaymentRail"]) for r in data] == [
            ("MXN", "SPEI"),
            ("INR", "UPI"),
            ("INR", "NEFT"),  # the bank form the 2026-08 reference added
            ("INR", "RTGS"),
        ]  # in the order asked
        mxn = data[0]
        want = expected("USD", "MXN", "SPEI", locked="SENDING", amount=10_000)
        assert mxn["sourceCurrency"] == {"code": "USD", "name": "US Dollar", "symbol": "$", "decimals": 2}
        assert mxn["sendingAmount"] == 10_000  # the default
        assert mxn["receivingAmount"] == want["receiving"] == 172_732
        assert mxn["exchangeRate"] == 17.4125  # MXN per USD: 17.5 less the 50 bps spread
        assert mxn["fees"] == {"fixed": 50, "total": want["fees"]}
        assert (mxn["minSendingAmount"], mxn["maxSendingAmount"]) == (1, 1_000_000_000_000)

    async def test_sending_amount_sets_fees_and_receiving_amount(self, client, auth):
        rows = await _rates(
            client, auth, sourceCurrency="USD", destinationCurrency="EUR", sendingAmount=123_456
        )
        assert [row["destinationPaymentRail"] for row in rows] == ["SEPA", "SEPA_INSTANT"]
        for row in rows:
            want = expected("USD", "EUR", row["destinationPaymentRail"], locked="SENDING", amount=123_456)
            assert (row["receivingAmount"], row["fees"]["total"]) == (want["receiving"], want["fees"])
        [zero] = await _rates(client, auth, sourceCurrency="USD", destinationCurrency="MXN", sendingAmount=0)
        assert zero["receivingAmount"] == 0 and zero["fees"]["total"] == zero["fees"]["fixed"] == 50

    async def test_without_filters_every_platform_currency_to_every_corridor(self, client, auth):
        data = await _rates(client, auth)
        sources = {r["sourceCurrency"]["code"] for r in data}
        assert sources == {"USD", "USDC", "USDB"}  # the platform's supportedCurrencies
        assert all(r["sourceCurrency"]["code"] != r["destinationCurrency"]["code"] for r in data)
        assert ("USD", "MXN", "SPEI") in {
            (r["sourceCurrency"]["code"], r["destinationCurrency"]["code"], r["destinationPaymentRail"])
            for r in data
        }
        assert all(r["exchangeRate"] > 0 and r["updatedAt"] for r in data)

    async def test_a_currency_without_a_dedicated_corridor_goes_over_swift_when_asked(self, client, auth):
        [jpy] = await _rates(client, auth, sourceCurrency="USD", destinationCurrency="JPY")
        assert jpy["destinationPaymentRail"] == "SWIFT"
        assert (
            jpy["receivingAmount"]
            == expected("USD", "JPY", "SWIFT", locked="SENDING", amount=10_000)["receiving"]
        )
        assert await _rates(client, auth, sourceCurrency="USD", destinationCurrency="USD") == []

    async def test_platform_limits_are_the_sending_min_and_max(self, client, auth):
        config = (await client.get("/config", auth=auth)).json()
        entries = [
            {k: c[k] for k in ("currencyCode", "minAmount", "maxAmount", "requiredCounterpartyFields", "enabledTransactionTypes")}
            for c in config["supportedCurrencies"]
        ]  # fmt: skip
        for entry in entries:
            if entry["currencyCode"] == "USD":
                entry["minAmount"], entry["maxAmount"] = 500, 900_000
        assert (
            await client.patch("/config", auth=auth, json={"supportedCurrencies": entries})
        ).status_code == 200
        [mxn] = await _rates(client, auth, sourceCurrency="USD", destinationCurrency="MXN")
        assert (mxn["minSendingAmount"], mxn["maxSendingAmount"]) == (500, 900_000)

    async def test_updated_at_is_stable_within_the_cache_ttl(self, client, auth):
        clock.freeze()  # 299 s of a 300 s cache: no real second may pass between the two reads
        first = (await _rates(client, auth, sourceCurrency="USD", destinationCurrency="MXN"))[0]["updatedAt"]
        clock.advance(timedelta(seconds=299))
        assert (await _rates(client, auth, sourceCurrency="USD", destinationCurrency="MXN"))[0][
            "updatedAt"
        ] == first
        clock.advance(timedelta(seconds=2))
        refreshed = (await _rates(client, auth, sourceCurrency="USD", destinationCurrency="MXN"))[0][
            "updatedAt"
        ]
        assert refreshed > first

    @pytest.mark.parametrize(
        ("params", "field"),
        [
            ({"sourceCurrency": "XYZ"}, "sourceCurrency"),
            ({"destinationCurrency": ["MXN", "NOPE"]}, "destinationCurrency"),
            ({"sendingAmount": -1}, "sendingAmount"),
            ({"sendingAmount": "ten"}, "sendingAmount"),
        ],
    )
    async def test_bad_filters_name_the_field(self, client, auth, params, field):
        response = await client.get("/exchange-rates", auth=auth, params=params)
        assert response.status_code == 400
        assert field in str(response.json()["details"])

    async def test_credentials_are_required(self, client):
        assert (await client.get("/exchange-rates")).status_code == 401
