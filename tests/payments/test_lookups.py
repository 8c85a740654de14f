"""Receiver lookups: sandbox UMA addresses, this platform's own customers, external accounts."""

from __future__ import annotations

import pytest

from tests.factories import customer, mxn_account


class TestUmaLookup:
    @pytest.mark.parametrize(
        ("address", "currency", "rate"),
        [
            ("$success.mxn@sandbox.uma.money", "MXN", 17.4125),
            ("$success.eur@sandbox.uma.money", "EUR", 0.8955),
        ],
    )
    async def test_sandbox_addresses_resolve(self, client, auth, address, currency, rate):
        response = await client.get(f"/receiver/uma/{address}", auth=auth)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["receiverUmaAddress"] == address
        assert body["lookupId"].startswith("Lookup:")
        [supported] = body["supportedCurrencies"]
        assert supported["currency"]["code"] == currency
        assert supported["estimatedExchangeRate"] == rate  # from USD, the platform's first currency
        assert supported["min"] >= 1 and supported["max"] >= supported["min"]

    async def test_the_senders_currency_sets_the_estimated_rate(self, client, auth):
        person = await customer(client, auth, currencies=["USDC"])
        body = (
            await client.get(
                "/receiver/uma/$success.usd@sandbox.uma.money", auth=auth, params={"customerId": person["id"]}
            )
        ).json()
        assert body["supportedCurrencies"][0]["estimatedExchangeRate"] == 1.0  # USDC -> USD, no spread

    async def test_unknown_and_malformed_addresses(self, client, auth):
        missing = await client.get("/receiver/uma/$non.existent.usd@sandbox.uma.money", auth=auth)
        assert missing.status_code == 404 and missing.json()["code"] == "UMA_NOT_FOUND"
        elsewhere = await client.get("/receiver/uma/$someone@other.example", auth=auth)
        assert elsewhere.status_code == 404
        malformed = await client.get("/receiver/uma/not-an-address", auth=auth)
        assert malformed.status_code == 400 and malformed.json()["code"] == "INVALID_UMA_ADDRESS"

    async def test_own_customers_resolve_locally(self, client, auth):
        receiver = await customer(client, auth)
        sender = await customer(client, auth)
        response = await client.get(
            f"/receiver/uma/{receiver['umaAddress']}",
            auth=auth,
            params={"senderUmaAddress": sender["umaAddress"]},
        )
        assert response.status_code == 200, response.text
        codes = [c["currency"]["code"] for c in response.json()["supportedCurrencies"]]
        assert codes == receiver["currencies"]
        usd = response.json()["supportedCurrencies"][codes.index("USD")]
        assert usd["estimatedExchangeRate"] == 1.0

    async def test_sender_must_be_this_platforms_customer(self, client, auth):
        address = "$success.mxn@sandbox.uma.money"
        foreign = await client.get(
            f"/receiver/uma/{address}",
            auth=auth,
            params={"senderUmaAddress": "$success.usd@sandbox.uma.money"},
        )
        assert (
            foreign.status_code == 400
            and foreign.json()["details"]["fields"][0]["field"] == "senderUmaAddress"
        )
        unknown = await client.get(
            f"/receiver/uma/{address}", auth=auth, params={"customerId": "Customer:nope"}
        )
        assert unknown.status_code == 404 and unknown.json()["code"] == "USER_NOT_FOUND"

    async def test_production_does_not_know_the_sandbox_directory(self, client, platform):
        response = await client.get(
            "/receiver/uma/$success.mxn@sandbox.uma.money", auth=platform["production"]
        )
        assert response.status_code == 404


class TestExternalAccountLookup:
    async def test_currency_rate_and_lookup_id(self, client, auth):
        person = await customer(client, auth)
        payee = await mxn_account(client, auth, person["id"])
        response = await client.get(f"/receiver/external-account/{payee['id']}", auth=auth)
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["accountId"] == payee["id"] and body["lookupId"].startswith("Lookup:")
        assert [(c["currency"]["code"], c["estimatedExchangeRate"]) for c in body["supportedCurrencies"]] == [
            ("MXN", 17.4125)
        ]

    async def test_unknown_and_other_tenants_accounts_are_404(self, client, auth, db, settings):
        from tests.factories import create_platform

        assert (
            await client.get("/receiver/external-account/ExternalAccount:nope", auth=auth)
        ).status_code == 404
        person = await customer(client, auth)
        payee = await mxn_account(client, auth, person["id"])
        other = (await create_platform(db, settings, name="Other"))["sandbox"]
        assert (await client.get(f"/receiver/external-account/{payee['id']}", auth=other)).status_code == 404
