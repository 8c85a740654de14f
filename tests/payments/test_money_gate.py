"""The money gate on an unregulated platform (docs/customers-and-accounts.md): a customer whose KYC was
REJECTED moves no money either way, each operation answering 403 USER_NOT_READY with nothing changed; one
still PENDING (or not yet verified) is not blocked by the service: SPEC §1 leaves that to the platform."""

from __future__ import annotations

from typing import Any

import pytest

from tests.factories import (
    account_destination,
    account_source,
    balances,
    customer,
    external_account,
    fund,
    internal_account,
    mxn_account,
    quote,
)


@pytest.fixture
async def rejected(client, auth) -> dict[str, Any]:
    """A funded customer with a quote created before its KYC was rejected."""
    person = await customer(client, auth)
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 100_000)
    bank = await external_account(client, auth, person["id"])
    payee = await mxn_account(client, auth, person["id"])
    earlier = await quote(
        client, auth, source=account_source(usd["id"]), destination=account_destination(payee["id"])
    )
    assert earlier.status_code == 201, earlier.text
    refused = await client.post(
        f"/sandbox/customers/{person['id']}/kyc", auth=auth, json={"kycStatus": "REJECTED"}
    )
    assert refused.json()["kycStatus"] == "REJECTED"
    return {"customer": person, "usd": usd, "bank": bank, "payee": payee, "quote": earlier.json()}


def _not_ready(response) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "USER_NOT_READY"


class TestRejectedCustomers:
    async def test_send_by_transfer_out_is_refused(self, client, auth, rejected):
        body = {
            "source": {"accountId": rejected["usd"]["id"]},
            "destination": {"accountId": rejected["bank"]["id"]},
        }
        _not_ready(await client.post("/transfer-out", auth=auth, json={**body, "amount": 1_000}))
        assert await balances(client, auth, rejected["customer"]["id"]) == (100_000, 100_000)

    async def test_pull_by_transfer_in_is_refused(self, client, auth, rejected):
        body = {
            "source": {"accountId": rejected["bank"]["id"]},
            "destination": {"accountId": rejected["usd"]["id"]},
        }
        _not_ready(await client.post("/transfer-in", auth=auth, json={**body, "amount": 1_000}))

    async def test_a_new_quote_is_refused(self, client, auth, rejected):
        _not_ready(
            await quote(
                client,
                auth,
                source=account_source(rejected["usd"]["id"]),
                destination=account_destination(rejected["payee"]["id"]),
            )
        )

    async def test_executing_a_quote_made_before_the_rejection_is_refused(self, client, auth, rejected):
        _not_ready(await client.post(f"/quotes/{rejected['quote']['id']}/execute", auth=auth))
        assert (await client.get(f"/quotes/{rejected['quote']['id']}", auth=auth)).json()[
            "status"
        ] == "PENDING"
        assert await balances(client, auth, rejected["customer"]["id"]) == (100_000, 100_000)

    async def test_an_incoming_uma_payment_is_refused(self, client, auth, rejected):
        body = {
            "senderUmaAddress": "$success.usd@sandbox.uma.money",
            "customerId": rejected["customer"]["id"],
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": 1_000,
        }
        before = len((await client.get("/transactions", auth=auth)).json()["data"])  # the quote's
        _not_ready(await client.post("/sandbox/uma/receive", auth=auth, json=body))
        assert len((await client.get("/transactions", auth=auth)).json()["data"]) == before

    async def test_a_quote_paying_into_its_account_is_refused(self, client, auth, rejected):
        payer = await customer(client, auth, fullName="John Roe")
        payer_usd = await internal_account(client, auth, payer["id"])
        await fund(client, auth, payer_usd["id"], 50_000)
        target = await internal_account(client, auth, rejected["customer"]["id"], "USDC")
        _not_ready(
            await quote(
                client,
                auth,
                source=account_source(payer_usd["id"]),
                destination=account_destination(target["id"]),
            )
        )

    async def test_a_quote_paying_its_uma_address_is_refused(self, client, auth, rejected):
        payer = await customer(client, auth, fullName="John Roe")
        payer_usd = await internal_account(client, auth, payer["id"])
        await fund(client, auth, payer_usd["id"], 50_000)
        address = rejected["customer"]["umaAddress"]
        lookup = await client.get(f"/receiver/uma/{address}", auth=auth, params={"customerId": payer["id"]})
        assert lookup.status_code == 200, lookup.text
        _not_ready(
            await quote(
                client,
                auth,
                source=account_source(payer_usd["id"]),
                destination={"destinationType": "UMA_ADDRESS", "umaAddress": address, "currency": "USDC"},
                lookupId=lookup.json()["lookupId"],
                immediatelyExecute=True,
            )
        )
        assert await balances(client, auth, payer["id"]) == (50_000, 50_000)


class TestPendingCustomers:
    async def test_the_service_leaves_pending_customers_to_the_platform(self, client, auth):
        person = await customer(client, auth)
        assert person["kycStatus"] == "PENDING"
        usd = await internal_account(client, auth, person["id"])
        await fund(client, auth, usd["id"], 10_000)
        bank = await external_account(client, auth, person["id"])
        sent = await client.post(
            "/transfer-out",
            auth=auth,
            json={
                "source": {"accountId": usd["id"]},
                "destination": {"accountId": bank["id"]},
                "amount": 1_000,
            },
        )
        assert sent.status_code == 201, sent.text
