"""An EMAIL_OTP verify's two legs: on PostgreSQL the OTP (first leg) and the signed-retry challenge (the retry
stamped by the TEK) are taken by the statement that locks the credential and counts the attempt
(wallets.repository.counted_credential), so every refusal after it must give them back, racing retries must
still get one session between them, and a verify that waited for a new challenge's lock must not take the
code that challenge superseded."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from platpay.kit import clock
from platpay.kit.crypto import bundles
from platpay.tenants import service as tenants_service
from platpay.wallets import otp, repository
from tests.support.wallets import Wallet, new_key, public_hex, signed_headers, wallet_account


async def _first_leg(wallet: Wallet) -> tuple[str, dict[str, Any], Any, dict[str, Any]]:
    """(credential id, the verify body, the TEK, the 202's body)."""
    credential_id = (await wallet.email_otp_credential())["id"]
    challenge = await wallet.client.post(f"/auth/credentials/{credential_id}/challenge", auth=wallet.auth)
    assert challenge.status_code == 200, challenge.text
    tek = new_key()
    body = {
        "type": "EMAIL_OTP",
        "encryptedOtpBundle": bundles.seal_otp_attempt(
            challenge.json()["otpEncryptionTargetBundle"], otp_code="000000", public_key_hex=public_hex(tek)
        ),
    }
    first = await wallet.client.post(f"/auth/credentials/{credential_id}/verify", auth=wallet.auth, json=body)
    assert first.status_code == 202, first.text
    return credential_id, body, tek, first.json()


async def _retry(
    wallet: Wallet, credential_id: str, body: dict[str, Any], headers: dict[str, str]
) -> httpx.Response:
    return await wallet.client.post(
        f"/auth/credentials/{credential_id}/verify", auth=wallet.auth, json=body, headers=headers
    )


async def _sessions_of(db, credential_id: str) -> int:  # type: ignore[no-untyped-def]
    async with db.read() as session:
        return int(
            (
                await session.execute(
                    text("SELECT count(*) FROM auth_sessions WHERE credential_id = :c"), {"c": credential_id}
                )
            ).scalar_one()
        )


class TestTheRetry:
    async def test_refused_retries_leave_the_challenge_to_the_right_one(self, client, auth, db) -> None:
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        credential_id, body, tek, token = await _first_leg(wallet)
        other_key = signed_headers(new_key(), token)
        wrong_body = {**body, "encryptedOtpBundle": body["encryptedOtpBundle"].replace('"c', '"c', 1) + " "}
        unknown = {**signed_headers(tek, token), "Request-Id": "Request:00000000-0000-7000-8000-000000000000"}
        refusals = [
            await _retry(wallet, credential_id, body, other_key),
            await _retry(wallet, credential_id, wrong_body, signed_headers(tek, token)),
            await _retry(wallet, credential_id, body, unknown),
        ]
        assert [(r.status_code, r.json()["code"]) for r in refusals] == [
            (401, "WALLET_SIGNATURE_INVALID"),
            (401, "WALLET_SIGNATURE_BODY_MISMATCH"),
            (401, "WALLET_SIGNATURE_INVALID"),
        ], [r.text for r in refusals]
        assert await _sessions_of(db, credential_id) == 0
        accepted = await _retry(wallet, credential_id, body, signed_headers(tek, token))
        assert accepted.status_code == 200, accepted.text
        again = await _retry(wallet, credential_id, body, signed_headers(tek, token))
        assert again.status_code == 401 and "already used" in again.json()["message"]
        assert await _sessions_of(db, credential_id) == 1

    async def test_a_retry_past_the_verify_limit_is_429_and_its_challenge_stays_pending(
        self, settings, client, auth, db
    ) -> None:
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        credential_id, body, tek, token = await _first_leg(wallet)  # one attempt counted
        for _ in range(settings.wallet_verify_limit - 1):  # the OTP is used: each first leg is a 401
            again = await client.post(f"/auth/credentials/{credential_id}/verify", auth=auth, json=body)
            assert again.status_code == 401
        limited = await _retry(wallet, credential_id, body, signed_headers(tek, token))
        assert limited.status_code == 429 and limited.json()["code"] == "RATE_LIMITED"
        assert await _sessions_of(db, credential_id) == 0
        clock.advance(timedelta(seconds=settings.wallet_limit_window_seconds))
        accepted = await _retry(wallet, credential_id, body, signed_headers(tek, token))
        assert accepted.status_code == 200, accepted.text
        assert await _sessions_of(db, credential_id) == 1

    async def test_an_expired_verification_token_is_refused(self, settings, client, auth, db) -> None:
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        credential_id, body, tek, token = await _first_leg(wallet)
        clock.advance(timedelta(seconds=settings.wallet_challenge_ttl_seconds + 1))
        expired = await _retry(wallet, credential_id, body, signed_headers(tek, token))
        assert expired.status_code == 401 and "expired" in expired.json()["message"]
        assert await _sessions_of(db, credential_id) == 0

    async def test_racing_retries_of_one_token_get_one_session(self, backend, client, auth, db) -> None:
        """Real parallel connections (PostgreSQL): of six retries of one verificationToken, one gets a session."""
        if backend != "postgresql":
            pytest.skip("concurrency runs on PostgreSQL (SQLite serializes writers)")
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        credential_id, body, tek, token = await _first_leg(wallet)
        headers = signed_headers(tek, token)
        responses = await asyncio.gather(*(_retry(wallet, credential_id, body, headers) for _ in range(6)))
        assert sorted(r.status_code for r in responses) == [200, 401, 401, 401, 401, 401], [
            r.text for r in responses
        ]
        assert await _sessions_of(db, credential_id) == 1


class TestTheFirstLeg:
    async def test_refused_attempts_leave_the_otp_to_the_right_one(self, client, auth) -> None:
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        credential_id = (await wallet.email_otp_credential())["id"]
        challenge = await client.post(f"/auth/credentials/{credential_id}/challenge", auth=auth)
        target = challenge.json()["otpEncryptionTargetBundle"]
        path = f"/auth/credentials/{credential_id}/verify"

        def sealed(code: str) -> dict[str, Any]:
            attempt = bundles.seal_otp_attempt(target, otp_code=code, public_key_hex=public_hex(new_key()))
            return {"type": "EMAIL_OTP", "encryptedOtpBundle": attempt}

        wrong = await client.post(path, auth=auth, json=sealed("999999"))
        malformed = await client.post(path, auth=auth, json={"type": "EMAIL_OTP", "encryptedOtpBundle": "{}"})
        assert (wrong.status_code, malformed.status_code) == (401, 400), (wrong.text, malformed.text)
        right = await client.post(path, auth=auth, json=sealed("000000"))
        assert right.status_code == 202, right.text
        used = await client.post(path, auth=auth, json=sealed("000000"))
        assert used.status_code == 401 and "no OTP is pending" in used.json()["message"]

    async def test_a_verify_that_waited_for_a_new_challenge_cannot_use_the_code_it_superseded(
        self, backend, client, auth, db
    ) -> None:
        """The verify's statement reads with the snapshot it began with, before it waited for the credential's
        lock: the newer OTP is not in it, so the older one must be found used."""
        if backend != "postgresql":
            pytest.skip("row locks: PostgreSQL (SQLite serializes writers)")
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        credential_id = (await wallet.email_otp_credential())["id"]
        old = await client.post(f"/auth/credentials/{credential_id}/challenge", auth=auth)
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                old.json()["otpEncryptionTargetBundle"],
                otp_code="000000",
                public_key_hex=public_hex(new_key()),
            ),
        }
        async with db.transaction() as session:
            tenant_id = (
                await session.execute(
                    text("SELECT tenant_id FROM auth_credentials WHERE id = :c"), {"c": credential_id}
                )
            ).scalar_one()
            tenant = await tenants_service.load(session, tenant_id=tenant_id)
        async with db.lean_transaction() as held:  # a challenge in progress: the credential locked
            credential = await repository.get_credential(
                held, tenant_id=tenant.id, credential_id=credential_id, for_update=True
            )
            assert credential is not None
            verify = asyncio.create_task(
                client.post(f"/auth/credentials/{credential_id}/verify", auth=auth, json=body)
            )
            for _ in range(200):  # until the verify's statement waits for the lock
                async with db.read() as session:
                    waiting = (
                        await session.execute(
                            text(
                                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                                "AND wait_event_type = 'Lock'"
                            )
                        )
                    ).scalar_one()
                if waiting:
                    break
                await asyncio.sleep(0.05)
            assert waiting and not verify.done()
            await otp.issue(held, tenant=tenant, credential=credential, now=clock.now(tenant))
        response = await verify
        assert response.status_code == 401 and "no OTP is pending" in response.json()["message"], (
            response.text
        )
