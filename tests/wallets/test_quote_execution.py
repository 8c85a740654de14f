"""Wallet-signed quote execution (SPEC §4.7): a quote funded from an EMBEDDED_WALLET account carries the
payloadToSign of its EMBEDDED_WALLET instruction; executing it needs the stamp of an active session of
that wallet over exactly that payload, else a 401 with its code and nothing moves."""

from __future__ import annotations

import json

import pytest

from tests.factories import account_destination, account_source, balances, fund, mxn_account, quote
from tests.support.wallets import Wallet, new_key, stamp, wallet_account


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    w = Wallet(client, auth, await wallet_account(client, auth))
    await w.email_otp_login()
    await fund(client, auth, w.id, 100_000_000)  # USDB has 6 decimals: $100
    return w


async def _wallet_quote(wallet: Wallet) -> dict:
    payee = await mxn_account(wallet.client, wallet.auth, wallet.account["customer"]["id"])
    response = await quote(
        wallet.client,
        wallet.auth,
        source=account_source(wallet.id),
        destination=account_destination(payee["id"]),
        amount=25_000_000,
    )
    assert response.status_code == 201, response.text
    return response.json()


def _payload(quote_body: dict) -> str:
    [instruction] = quote_body["paymentInstructions"]
    info = instruction["accountOrWalletInfo"]
    assert info["accountType"] == "EMBEDDED_WALLET"
    return info["payloadToSign"]


async def _execute(wallet: Wallet, quote_id: str, header: str | None, key: str | None = None):
    headers = {}
    if header is not None:
        headers["Svc-Wallet-Signature"] = header
    if key is not None:
        headers["Idempotency-Key"] = key
    return await wallet.client.post(f"/quotes/{quote_id}/execute", auth=wallet.auth, headers=headers)


class TestWalletFundedQuotes:
    async def test_the_quote_carries_the_payload_and_executes_with_the_stamp(
        self, wallet, client, auth
    ) -> None:
        body = await _wallet_quote(wallet)
        payload = _payload(body)
        activity = json.loads(payload)
        assert activity["type"] == "ACTIVITY_TYPE_SIGN_TRANSACTION_V2"
        assert activity["parameters"]["signWith"] == wallet.id
        assert (await client.get(f"/quotes/{body['id']}", auth=auth)).json()["paymentInstructions"] == body[
            "paymentInstructions"
        ]
        response = await _execute(wallet, body["id"], stamp(wallet.key, payload))
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "PROCESSING"
        available, _ = await balances(
            client, auth, wallet.account["customer"]["id"], "USDB", "EMBEDDED_WALLET"
        )
        assert available == 100_000_000 - body["totalSendingAmount"]

    async def test_every_bad_stamp_is_401_and_nothing_moves(self, wallet, client, auth) -> None:
        body = await _wallet_quote(wallet)
        payload = _payload(body)
        stranger = Wallet(client, auth, await wallet_account(client, auth, email="eve@example.com"))
        await stranger.email_otp_login()
        cases = {
            None: "WALLET_SIGNATURE_MISSING",
            "garbage": "WALLET_SIGNATURE_MALFORMED",
            stamp(wallet.key, payload + " "): "WALLET_SIGNATURE_INVALID",  # over another payload
            stamp(new_key(), payload): "WALLET_SIGNATURE_INVALID",  # not a session
            stamp(stranger.key, payload): "WALLET_SIGNATURE_INVALID",  # another wallet's session
        }
        for header, code in cases.items():
            response = await _execute(wallet, body["id"], header)
            assert response.status_code == 401, response.text
            assert response.json()["code"] == code
        assert (await client.get(f"/quotes/{body['id']}", auth=auth)).json()["status"] == "PENDING"
        assert await balances(client, auth, wallet.account["customer"]["id"], "USDB", "EMBEDDED_WALLET") == (
            100_000_000,
            100_000_000,
        )

    async def test_a_401_is_not_kept_under_the_idempotency_key(self, wallet) -> None:
        body = await _wallet_quote(wallet)
        refused = await _execute(wallet, body["id"], None, key="exec-1")
        assert refused.status_code == 401
        done = await _execute(wallet, body["id"], stamp(wallet.key, _payload(body)), key="exec-1")
        assert done.status_code == 200, done.text
        replay = await _execute(wallet, body["id"], stamp(wallet.key, _payload(body)), key="exec-1")
        assert replay.status_code == 200 and replay.headers.get("Idempotent-Replayed") == "true"

    async def test_a_stamp_by_a_revoked_session_is_refused(self, wallet) -> None:
        body = await _wallet_quote(wallet)
        [session_id] = list(wallet.keys)
        key = wallet.key
        await wallet.signed("DELETE", f"/auth/sessions/{session_id}", expect=204)
        response = await _execute(wallet, body["id"], stamp(key, _payload(body)))
        assert response.status_code == 401 and response.json()["code"] == "WALLET_SIGNATURE_INVALID"
