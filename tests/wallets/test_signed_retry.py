"""The signed-retry mechanism (wallets/signed/retry.py), through one of its operations (wallet privacy,
PATCH /internal-accounts/{id}): the 202, the verified retry that runs once, and every refusal — a 401 with
its code that changes nothing."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import text

from platpay.jobs import registry
from platpay.kit import clock
from platpay.kit.crypto import p256
from tests.support.wallets import Wallet, new_key, signed_headers, stamp, wallet_account


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    w = Wallet(client, auth, await wallet_account(client, auth))
    await w.email_otp_login()
    return w


async def _privacy(client, auth, account_id: str) -> bool:
    accounts = await client.get(
        "/customers/internal-accounts", auth=auth, params={"type": "EMBEDDED_WALLET", "limit": 100}
    )
    return next(a for a in accounts.json()["data"] if a["id"] == account_id)["privateEnabled"]


async def _first(wallet: Wallet, value: bool = True) -> dict:
    response = await wallet.client.patch(
        f"/internal-accounts/{wallet.id}", auth=wallet.auth, json={"privateEnabled": value}
    )
    assert response.status_code == 202, response.text
    return response.json()


async def _retry(wallet: Wallet, headers: dict, value: bool = True) -> httpx.Response:
    return await wallet.client.patch(
        f"/internal-accounts/{wallet.id}", auth=wallet.auth, json={"privateEnabled": value}, headers=headers
    )


def _assert_refused(response: httpx.Response, code: str) -> None:
    assert response.status_code == 401, response.text
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == 401 and body["reason"] and body["details"]["reason"] == body["reason"]


class TestTheTwoSteps:
    async def test_first_call_answers_202_with_a_payload_binding_the_fields(
        self, wallet, client, auth
    ) -> None:
        challenge = await _first(wallet)
        assert set(challenge) == {"payloadToSign", "requestId", "expiresAt"}
        assert challenge["requestId"].startswith("Request:")
        payload = json.loads(challenge["payloadToSign"])
        assert payload["parameters"]["privateEnabled"] is True
        assert payload["requestId"] == challenge["requestId"]
        assert await _privacy(client, auth, wallet.id) is False  # nothing changed yet

    async def test_the_signed_retry_runs_the_operation_once(self, wallet, client, auth) -> None:
        challenge = await _first(wallet)
        headers = signed_headers(wallet.key, challenge)
        response = await _retry(wallet, headers)
        assert response.status_code == 200, response.text
        assert response.json()["privateEnabled"] is True and response.json()["id"] == wallet.id
        assert await _privacy(client, auth, wallet.id) is True
        _assert_refused(await _retry(wallet, headers), "WALLET_SIGNATURE_INVALID")  # replayed Request-Id

    async def test_a_python_stamper_with_spaces_and_padding_is_accepted(self, wallet) -> None:
        challenge = await _first(wallet)
        key = wallet.key
        stamp_json = json.dumps(
            {
                "publicKey": p256.compressed_hex(key.public_key()),
                "scheme": "SIGNATURE_SCHEME_TK_API_P256",
                "signature": p256.sign_der(key, challenge["payloadToSign"].encode()).hex(),
            }
        )  # ", " and ": " separators, as a Python stamper writes it
        header = base64.urlsafe_b64encode(stamp_json.encode()).decode()  # padded
        response = await _retry(
            wallet, {"Svc-Wallet-Signature": header, "Request-Id": challenge["requestId"]}
        )
        assert response.status_code == 200, response.text


class TestEveryRefusalIsA401ThatChangesNothing:
    async def test_request_id_without_signature(self, wallet, client, auth) -> None:
        challenge = await _first(wallet)
        _assert_refused(
            await _retry(wallet, {"Request-Id": challenge["requestId"]}), "WALLET_SIGNATURE_MISSING"
        )
        assert await _privacy(client, auth, wallet.id) is False

    async def test_signature_without_request_id(self, wallet) -> None:
        challenge = await _first(wallet)
        headers = signed_headers(wallet.key, challenge)
        del headers["Request-Id"]
        _assert_refused(await _retry(wallet, headers), "REQUEST_ID_MISSING")

    async def test_malformed_stamps(self, wallet) -> None:
        challenge = await _first(wallet)
        headers = {
            "not-base64": "not base64 !!",
            "not-json": base64.urlsafe_b64encode(b"not json").decode(),
            "not-object": base64.urlsafe_b64encode(b'["a list"]').decode(),
            "no-signature": base64.urlsafe_b64encode(
                b'{"publicKey":"02ab","scheme":"SIGNATURE_SCHEME_TK_API_P256"}'
            ).decode(),
            "bad-key": base64.urlsafe_b64encode(
                b'{"publicKey":"0411","scheme":"SIGNATURE_SCHEME_TK_API_P256","signature":"3045"}'
            ).decode(),
        }
        for name, header in headers.items():
            response = await _retry(
                wallet, {"Svc-Wallet-Signature": header, "Request-Id": challenge["requestId"]}
            )
            assert response.status_code == 401, name
            _assert_refused(response, "WALLET_SIGNATURE_MALFORMED")
        good = await _retry(wallet, signed_headers(wallet.key, challenge))  # the challenge was not used up
        assert good.status_code == 200, good.text

    async def test_wrong_scheme(self, wallet) -> None:
        challenge = await _first(wallet)
        good = json.loads(base64.urlsafe_b64decode(stamp(wallet.key, challenge["payloadToSign"]) + "=="))
        good["scheme"] = "SIGNATURE_SCHEME_TK_API_SECP256K1"
        header = base64.urlsafe_b64encode(json.dumps(good).encode()).decode().rstrip("=")
        response = await _retry(
            wallet, {"Svc-Wallet-Signature": header, "Request-Id": challenge["requestId"]}
        )
        _assert_refused(response, "WALLET_SIGNATURE_MALFORMED")

    async def test_unknown_request_id(self, wallet) -> None:
        challenge = await _first(wallet)
        headers = signed_headers(wallet.key, challenge)
        headers["Request-Id"] = "Request:019542f5-b3e7-7d02-8000-000000000010"
        _assert_refused(await _retry(wallet, headers), "WALLET_SIGNATURE_INVALID")

    async def test_expired_challenge(self, wallet, client, auth) -> None:
        challenge = await _first(wallet)
        clock.advance(timedelta(seconds=301))
        _assert_refused(
            await _retry(wallet, signed_headers(wallet.key, challenge)), "WALLET_SIGNATURE_INVALID"
        )
        assert await _privacy(client, auth, wallet.id) is False

    async def test_request_id_of_another_operation(self, wallet) -> None:
        other = await wallet.client.post(
            f"/internal-accounts/{wallet.id}/export",
            auth=wallet.auth,
            json={"clientPublicKey": p256.uncompressed_hex(new_key().public_key())},
        )
        assert other.status_code == 202
        headers = {
            "Svc-Wallet-Signature": stamp(wallet.key, other.json()["payloadToSign"]),
            "Request-Id": other.json()["requestId"],
        }
        _assert_refused(await _retry(wallet, headers), "WALLET_SIGNATURE_INVALID")

    async def test_body_differing_from_the_bound_fields(self, wallet, client, auth) -> None:
        challenge = await _first(wallet, True)
        response = await _retry(wallet, signed_headers(wallet.key, challenge), value=False)
        _assert_refused(response, "WALLET_SIGNATURE_BODY_MISMATCH")
        assert await _privacy(client, auth, wallet.id) is False

    async def test_stamp_over_another_payload(self, wallet) -> None:
        challenge = await _first(wallet)
        other = await _first(wallet)
        headers = {
            "Svc-Wallet-Signature": stamp(wallet.key, other["payloadToSign"]),
            "Request-Id": challenge["requestId"],
        }
        _assert_refused(await _retry(wallet, headers), "WALLET_SIGNATURE_INVALID")

    async def test_stamp_by_a_key_that_is_no_session(self, wallet) -> None:
        challenge = await _first(wallet)
        _assert_refused(
            await _retry(wallet, signed_headers(new_key(), challenge)), "WALLET_SIGNATURE_INVALID"
        )

    async def test_stamp_by_another_accounts_session(self, wallet, client, auth) -> None:
        stranger = Wallet(client, auth, await wallet_account(client, auth, email="other@example.com"))
        await stranger.email_otp_login()
        challenge = await _first(wallet)
        _assert_refused(
            await _retry(wallet, signed_headers(stranger.key, challenge)), "WALLET_SIGNATURE_INVALID"
        )

    async def test_stamp_by_an_expired_session(self, wallet) -> None:
        clock.advance(timedelta(minutes=14))
        challenge = await _first(wallet)
        clock.advance(timedelta(minutes=2))  # the session (15 min) is over, the challenge (5 min) is not
        _assert_refused(
            await _retry(wallet, signed_headers(wallet.key, challenge)), "WALLET_SIGNATURE_INVALID"
        )

    async def test_stamp_by_a_revoked_session(self, wallet) -> None:
        [session_id] = wallet.keys
        challenge = await _first(wallet)
        await wallet.signed("DELETE", f"/auth/sessions/{session_id}", expect=204)
        _assert_refused(
            await _retry(wallet, signed_headers(wallet.key, challenge)), "WALLET_SIGNATURE_INVALID"
        )

    async def test_another_tenants_request_id_and_account(self, wallet, client, auth, platform) -> None:
        production = platform["production"]
        response = await client.patch(
            f"/internal-accounts/{wallet.id}", auth=production, json={"privateEnabled": True}
        )
        assert response.status_code == 404
        assert response.json()["code"] == "REFERENCE_NOT_FOUND"


class TestAccountsThatAreNotWallets:
    async def test_a_fiat_account_is_refused_with_400(self, wallet, client, auth) -> None:
        accounts = await client.get(
            "/customers/internal-accounts",
            auth=auth,
            params={"customerId": wallet.account["customer"]["id"], "currency": "USD"},
        )
        usd = accounts.json()["data"][0]["id"]
        response = await client.patch(f"/internal-accounts/{usd}", auth=auth, json={"privateEnabled": True})
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT"

    async def test_an_empty_update_is_refused_with_400(self, wallet, client, auth) -> None:
        response = await client.patch(f"/internal-accounts/{wallet.id}", auth=auth, json={})
        assert response.status_code == 400
        assert response.json()["details"]["fields"][0]["field"] == "privateEnabled"


async def test_concurrent_retries_with_one_request_id_run_once(backend, wallet, db) -> None:
    """Real parallel connections (PostgreSQL): of six retries racing with one Request-Id, one runs."""
    if backend != "postgresql":
        pytest.skip("concurrency runs on PostgreSQL (SQLite serializes writers)")
    challenge = await _first(wallet)
    headers = signed_headers(wallet.key, challenge)
    responses = await asyncio.gather(*(_retry(wallet, headers) for _ in range(6)))
    statuses = sorted(r.status_code for r in responses)
    assert statuses == [200, 401, 401, 401, 401, 401], [r.text for r in responses]
    async with db.read() as session:
        rows = (
            await session.execute(
                text(
                    "SELECT count(*) FROM wallet_audit_log WHERE action = 'PRIVACY_UPDATED' AND account_id = :a"
                ),
                {"a": wallet.id},
            )
        ).scalar()
    assert rows == 1


async def test_expired_challenges_are_purged_by_the_runners_housekeeping(wallet, db) -> None:
    await _first(wallet)
    async with db.read() as session:
        count = text("SELECT count(*) FROM wallet_challenges")
        before = (await session.execute(count)).scalar()
    clock.advance(timedelta(days=1, minutes=10))
    async with db.transaction() as session:
        for housekeeper in registry.housekeepers():
            await housekeeper(session, clock.now())
    async with db.read() as session:
        assert before >= 1 and (await session.execute(count)).scalar() == 0
