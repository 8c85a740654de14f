"""HOLD (the August reference: "the customer is placed on hold and may be required to update
or provide more information"): reached through the sandbox's override, it moves no money, like REJECTED, at
every gate that checks KYC (403 USER_NOT_READY, nothing changed; a card needs APPROVED), and a resubmission
(POST /verifications) or a decision lifts it. The reference has no webhook for it."""

from __future__ import annotations

from typing import Any

import pytest

from platpay.customers.state import KYC, KycStatus
from platpay.kit.states import IllegalTransition
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
from tests.support.cards import issue
from tests.support.jobs import run_jobs_until
from tests.support.onboarding import PERSON, png, uploaded


async def _kyc(client, auth, customer_id: str, status: str):
    return await client.post(f"/sandbox/customers/{customer_id}/kyc", auth=auth, json={"kycStatus": status})


@pytest.fixture
async def on_hold(client, auth) -> dict[str, Any]:
    """A funded, approved customer with a quote made before it was put on hold."""
    person = await customer(client, auth)
    assert (await _kyc(client, auth, person["id"], "APPROVED")).json()["kycStatus"] == "APPROVED"
    usd = await internal_account(client, auth, person["id"])
    await fund(client, auth, usd["id"], 100_000)
    bank = await external_account(client, auth, person["id"])
    payee = await mxn_account(client, auth, person["id"])
    earlier = await quote(
        client, auth, source=account_source(usd["id"]), destination=account_destination(payee["id"])
    )
    assert earlier.status_code == 201, earlier.text
    held = await _kyc(client, auth, person["id"], "HOLD")
    assert held.status_code == 200 and held.json()["kycStatus"] == "HOLD", held.text
    return {"customer": person, "usd": usd, "bank": bank, "payee": payee, "quote": earlier.json()}


def _not_ready(response) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "USER_NOT_READY" and "HOLD" in response.json()["message"]


class TestACustomerOnHoldMovesNoMoney:
    async def test_transfer_out_is_refused(self, client, auth, on_hold):
        body = {
            "source": {"accountId": on_hold["usd"]["id"]},
            "destination": {"accountId": on_hold["bank"]["id"]},
        }
        _not_ready(await client.post("/transfer-out", auth=auth, json={**body, "amount": 1_000}))
        assert await balances(client, auth, on_hold["customer"]["id"]) == (100_000, 100_000)

    async def test_transfer_in_is_refused(self, client, auth, on_hold):
        body = {
            "source": {"accountId": on_hold["bank"]["id"]},
            "destination": {"accountId": on_hold["usd"]["id"]},
        }
        _not_ready(await client.post("/transfer-in", auth=auth, json={**body, "amount": 1_000}))

    async def test_a_new_quote_is_refused(self, client, auth, on_hold):
        source, destination = (
            account_source(on_hold["usd"]["id"]),
            account_destination(on_hold["payee"]["id"]),
        )
        _not_ready(await quote(client, auth, source=source, destination=destination))

    async def test_a_quote_made_before_the_hold_does_not_execute(self, client, auth, on_hold):
        _not_ready(await client.post(f"/quotes/{on_hold['quote']['id']}/execute", auth=auth))
        assert (await client.get(f"/quotes/{on_hold['quote']['id']}", auth=auth)).json()[
            "status"
        ] == "PENDING"
        assert await balances(client, auth, on_hold["customer"]["id"]) == (100_000, 100_000)

    async def test_an_incoming_uma_payment_is_refused(self, client, auth, on_hold):
        body = {
            "senderUmaAddress": "$success.usd@sandbox.uma.money",
            "customerId": on_hold["customer"]["id"],
            "receivingCurrencyCode": "USD",
            "receivingCurrencyAmount": 1_000,
        }
        _not_ready(await client.post("/sandbox/uma/receive", auth=auth, json=body))

    async def test_no_card_is_issued(self, client, auth, on_hold):
        created = await issue(client, auth, on_hold["customer"]["id"], [on_hold["usd"]["id"]])
        assert created.status_code == 400 and created.json()["code"] == "CARDHOLDER_KYC_NOT_APPROVED", (
            created.text
        )

    async def test_approving_lifts_the_hold(self, client, auth, on_hold):
        assert (await _kyc(client, auth, on_hold["customer"]["id"], "APPROVED")).json()[
            "kycStatus"
        ] == "APPROVED"
        executed = await client.post(f"/quotes/{on_hold['quote']['id']}/execute", auth=auth)
        assert executed.status_code == 200, executed.text


class TestReachingAndLeavingHold:
    async def test_a_hold_sends_no_webhook_but_its_lifting_does(self, client, auth, runner, receiver):
        await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        person = await customer(client, auth)
        await _kyc(client, auth, person["id"], "APPROVED")
        await _kyc(client, auth, person["id"], "HOLD")
        await _kyc(client, auth, person["id"], "REJECTED")
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_REJECTED")) == 1)
        await runner.run_until_idle(timeout=10)  # every delivery made
        # deliveries run concurrently, so they may arrive in either order
        types = sorted(r.json["type"] for r in receiver.received if r.json["type"] != "TEST")
        assert types == [
            "CUSTOMER.KYC_APPROVED",
            "CUSTOMER.KYC_REJECTED",
        ]  # PENDING -> APPROVED -> HOLD -> REJECTED
        assert receiver.of_type("CUSTOMER.KYC_REJECTED")[0].json["data"]["kycStatus"] == "REJECTED"

    async def test_a_business_is_held_under_both_names(self, client, auth):
        business = (await client.post("/customers", auth=auth, json={"customerType": "BUSINESS"})).json()
        held = (await _kyc(client, auth, business["id"], "HOLD")).json()  # UNVERIFIED -> PENDING -> HOLD
        assert held["kycStatus"] == held["kybStatus"] == "HOLD"

    async def test_a_resubmission_lifts_it_to_pending(self, client, auth, runner):
        person = (await client.post("/customers", auth=auth, json=PERSON)).json()
        for kind in ("PASSPORT", "UTILITY_BILL"):
            await uploaded(client, auth, person["id"], kind, png())
        await _kyc(client, auth, person["id"], "HOLD")
        submitted = await client.post("/verifications", auth=auth, json={"customerId": person["id"]})
        assert submitted.json()["verificationStatus"] == "IN_PROGRESS", submitted.text
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "PENDING"
        await runner.run_until_idle(timeout=10)
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "APPROVED"

    @pytest.mark.parametrize("status", ["UNVERIFIED", "ON_HOLD"])
    async def test_the_override_refuses_other_statuses(self, client, auth, status):
        person = await customer(client, auth)
        refused = await _kyc(client, auth, person["id"], status)
        assert refused.status_code == 400 and refused.json()["code"] == "INVALID_INPUT", refused.text
        assert refused.json()["details"]["fields"][0]["field"] == "kycStatus"
        assert (await client.get(f"/customers/{person['id']}", auth=auth)).json()["kycStatus"] == "PENDING"

    def test_the_machine_holds_from_approved_or_pending_and_leaves_to_a_review_or_a_decision(self):
        assert KYC.can_move(KycStatus.APPROVED, KycStatus.HOLD) and KYC.can_move(
            KycStatus.PENDING, KycStatus.HOLD
        )
        for target in (KycStatus.PENDING, KycStatus.APPROVED, KycStatus.REJECTED):
            assert KYC.can_move(KycStatus.HOLD, target)
        for source in (KycStatus.UNVERIFIED, KycStatus.REJECTED):
            with pytest.raises(IllegalTransition):
                KYC.move(source, KycStatus.HOLD)
