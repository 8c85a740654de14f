"""Sessions: logging in with OAUTH and PASSKEY (the session key sealed to clientPublicKey), listing (never a
key bundle), refreshing (signed by the session itself) and revoking (204, then 404 forever)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest

from platpay.kit import clock
from platpay.kit.crypto import p256
from tests.support.wallets import (
    Authenticator,
    Wallet,
    new_key,
    oidc_token,
    public_hex,
    signed_headers,
    wallet_account,
)


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    w = Wallet(client, auth, await wallet_account(client, auth))
    await w.email_otp_login()
    return w


async def _oauth_credential(wallet: Wallet, **token_claims) -> dict:
    token = oidc_token(client_public_key=None, **token_claims)
    return (
        await wallet.signed(
            "POST",
            "/auth/credentials",
            json_body={"type": "OAUTH", "accountId": wallet.id, "oidcToken": token},
            expect=201,
        )
    ).json()


async def _passkey_credential(wallet: Wallet, authenticator: Authenticator) -> dict:
    options = (
        await wallet.client.post(
            "/auth/credentials/passkey-challenges", auth=wallet.auth, json={"accountId": wallet.id}
        )
    ).json()
    body = {
        "type": "PASSKEY",
        "accountId": wallet.id,
        "nickname": "Laptop",
        "challenge": options["challenge"],
        "attestation": authenticator.register(options["challenge"]),
    }
    return (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()


async def _oauth_verify(wallet: Wallet, credential_id: str, client_key, **token_claims):
    token = oidc_token(client_public_key=public_hex(client_key), **token_claims)
    return await wallet.client.post(
        f"/auth/credentials/{credential_id}/verify",
        auth=wallet.auth,
        json={"type": "OAUTH", "oidcToken": token, "clientPublicKey": public_hex(client_key)},
    )


class TestOauthLogin:
    async def test_a_fresh_token_gets_a_session_key_sealed_to_the_client(self, wallet) -> None:
        credential = await _oauth_credential(wallet)
        client_key = new_key()
        response = await _oauth_verify(wallet, credential["id"], client_key)
        assert response.status_code == 200, response.text
        session = response.json()
        assert session["type"] == "OAUTH" and session["encryptedSessionSigningKey"]
        key = wallet.accept_session(session, client_key)
        # the opened key is the session's API key: it signs a signed retry
        await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=key
        )

    async def test_a_token_failing_any_check_is_401(self, wallet) -> None:
        credential = await _oauth_credential(wallet)
        now = time.time()
        cases = {
            "too-old": {"iat": now - 70},
            "wrong-nonce": {"nonce": "0" * 64},
            "wrong-audience": {"aud": "another-app.apps.googleusercontent.com"},
            "other-subject": {"sub": "someone-else"},
            "other-issuer": {"iss": "https://appleid.apple.com"},
            "expired": {"exp": now - 10},
            "future": {"iat": now + 30},
            "two-audiences": {"aud": ["a", "b"]},
            "iat-not-a-number": {"iat": "yesterday"},
        }
        for name, claims in cases.items():
            response = await _oauth_verify(wallet, credential["id"], new_key(), **claims)
            assert response.status_code == 401, (name, response.text)
            assert response.json()["code"] == "UNAUTHORIZED" and response.json()["reason"], name
        assert (await _oauth_verify(wallet, credential["id"], new_key())).status_code == 200

    async def test_a_token_not_shaped_like_a_jwt_is_400(self, wallet) -> None:
        credential = await _oauth_credential(wallet)
        response = await wallet.client.post(
            f"/auth/credentials/{credential['id']}/verify",
            auth=wallet.auth,
            json={"type": "OAUTH", "oidcToken": "not-a-jwt", "clientPublicKey": public_hex(new_key())},
        )
        assert response.status_code == 400

    async def test_an_oauth_credential_has_no_challenge(self, wallet) -> None:
        credential = await _oauth_credential(wallet)
        response = await wallet.client.post(
            f"/auth/credentials/{credential['id']}/challenge", auth=wallet.auth
        )
        assert response.status_code == 400


class TestPasskeyLogin:
    async def _challenge(self, wallet: Wallet, credential_id: str, client_key) -> dict:
        response = await wallet.client.post(
            f"/auth/credentials/{credential_id}/challenge",
            auth=wallet.auth,
            json={"clientPublicKey": public_hex(client_key)},
        )
        assert response.status_code == 200, response.text
        return response.json()

    async def _verify(self, wallet: Wallet, credential_id: str, assertion: dict, request_id: str | None):
        headers = {"Request-Id": request_id} if request_id else {}
        return await wallet.client.post(
            f"/auth/credentials/{credential_id}/verify",
            auth=wallet.auth,
            json={"type": "PASSKEY", "assertion": assertion},
            headers=headers,
        )

    async def test_an_assertion_over_the_challenge_gets_a_sealed_session(self, wallet) -> None:
        authenticator = Authenticator()
        credential = await _passkey_credential(wallet, authenticator)
        client_key = new_key()
        challenge = await self._challenge(wallet, credential["id"], client_key)
        assert challenge["credentialId"] == credential["credentialId"]
        assert len(challenge["challenge"]) == 64 and int(challenge["challenge"], 16) >= 0
        response = await self._verify(
            wallet, credential["id"], authenticator.assert_(challenge["challenge"]), challenge["requestId"]
        )
        assert response.status_code == 200, response.text
        key = wallet.accept_session(response.json(), client_key)
        await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=key
        )
        # the challenge was consumed
        again = await self._verify(
            wallet, credential["id"], authenticator.assert_(challenge["challenge"]), challenge["requestId"]
        )
        assert again.status_code == 401

    async def test_every_wrong_assertion_is_401(self, wallet) -> None:
        authenticator = Authenticator()
        credential = await _passkey_credential(wallet, authenticator)
        challenge = await self._challenge(wallet, credential["id"], new_key())
        other = await self._challenge(wallet, credential["id"], new_key())
        cases = {
            "other-challenge": (authenticator.assert_(other["challenge"]), challenge["requestId"]),
            "other-origin": (
                authenticator.assert_(challenge["challenge"], origin="https://evil.example"),
                challenge["requestId"],
            ),
            "other-credential": (Authenticator().assert_(challenge["challenge"]), challenge["requestId"]),
            "no-user-presence": (
                Authenticator(
                    key=authenticator.key,
                    credential_id=authenticator.credential_id,
                    sign_count=100,
                    user_present=False,
                ).assert_(challenge["challenge"]),
                challenge["requestId"],
            ),
            "unknown-request-id": (
                authenticator.assert_(challenge["challenge"]),
                "Request:019542f5-b3e7-7d02-8000-000000000010",
            ),
        }
        for name, (assertion, request_id) in cases.items():
            response = await self._verify(wallet, credential["id"], assertion, request_id)
            assert response.status_code == 401, (name, response.text)
        missing = await self._verify(
            wallet, credential["id"], authenticator.assert_(challenge["challenge"]), None
        )
        assert missing.status_code == 401 and missing.json()["code"] == "REQUEST_ID_MISSING"

    async def test_a_replayed_counter_is_refused(self, wallet) -> None:
        authenticator = Authenticator()
        credential = await _passkey_credential(wallet, authenticator)
        first = await self._challenge(wallet, credential["id"], new_key())
        ok = await self._verify(
            wallet,
            credential["id"],
            authenticator.assert_(first["challenge"], count_step=5),
            first["requestId"],
        )
        assert ok.status_code == 200
        second = await self._challenge(wallet, credential["id"], new_key())
        stale = await self._verify(
            wallet,
            credential["id"],
            authenticator.assert_(second["challenge"], count_step=-3),
            second["requestId"],
        )
        assert stale.status_code == 401

    async def test_a_passkey_challenge_needs_a_client_public_key(self, wallet) -> None:
        credential = await _passkey_credential(wallet, Authenticator())
        response = await wallet.client.post(
            f"/auth/credentials/{credential['id']}/challenge", auth=wallet.auth, json={}
        )
        assert response.status_code == 400


class TestListingRefreshingRevoking:
    async def test_the_list_shows_active_sessions_without_keys(self, wallet, client, auth) -> None:
        credential = await _oauth_credential(wallet)
        await _oauth_verify(wallet, credential["id"], new_key())
        response = await client.get("/auth/sessions", auth=auth, params={"accountId": wallet.id})
        assert response.status_code == 200
        sessions = response.json()["data"]
        assert sorted(s["type"] for s in sessions) == ["EMAIL_OTP", "OAUTH"]
        assert all("encryptedSessionSigningKey" not in s and s["expiresAt"] for s in sessions)
        bad = await client.get("/auth/sessions", auth=auth, params={"accountId": "nope"})
        assert bad.status_code == 400

    async def test_a_refresh_seals_a_new_key_to_the_bound_client_key(self, wallet) -> None:
        [session_id] = list(wallet.keys)
        client_key = new_key()
        body = {"clientPublicKey": public_hex(client_key)}
        first = await wallet.client.post(f"/auth/sessions/{session_id}/refresh", auth=wallet.auth, json=body)
        assert first.status_code == 202
        other_body = {"clientPublicKey": public_hex(new_key())}
        mismatch = await wallet.client.post(
            f"/auth/sessions/{session_id}/refresh", auth=wallet.auth, json=other_body,
            headers=signed_headers(wallet.key, first.json()),
        )  # fmt: skip
        assert mismatch.status_code == 401 and mismatch.json()["code"] == "WALLET_SIGNATURE_BODY_MISMATCH"
        response = await wallet.client.post(
            f"/auth/sessions/{session_id}/refresh",
            auth=wallet.auth,
            json=body,
            headers=signed_headers(wallet.key, first.json()),
        )
        assert response.status_code == 200, response.text
        fresh = response.json()
        assert fresh["id"] != session_id and fresh["type"] == "EMAIL_OTP"
        key = wallet.accept_session(fresh, client_key)
        assert p256.compressed_hex(key.public_key())  # a real key

    async def test_only_the_session_itself_signs_its_refresh(self, wallet) -> None:
        [session_id] = list(wallet.keys)
        credential = await _oauth_credential(wallet)
        other_key = new_key()
        other = wallet.accept_session(
            (await _oauth_verify(wallet, credential["id"], other_key)).json(), other_key
        )
        body = {"clientPublicKey": public_hex(new_key())}
        first = await wallet.client.post(f"/auth/sessions/{session_id}/refresh", auth=wallet.auth, json=body)
        response = await wallet.client.post(
            f"/auth/sessions/{session_id}/refresh",
            auth=wallet.auth,
            json=body,
            headers=signed_headers(other, first.json()),
        )
        assert response.status_code == 401

    async def test_an_expired_session_cannot_refresh(self, wallet) -> None:
        [session_id] = list(wallet.keys)
        clock.advance(timedelta(minutes=16))
        response = await wallet.client.post(
            f"/auth/sessions/{session_id}/refresh",
            auth=wallet.auth,
            json={"clientPublicKey": public_hex(new_key())},
        )
        assert response.status_code == 404

    async def test_revoking_answers_204_then_404(self, wallet) -> None:
        [session_id] = list(wallet.keys)
        first = await wallet.client.delete(f"/auth/sessions/{session_id}", auth=wallet.auth)
        assert first.status_code == 202 and first.json()["type"] == "EMAIL_OTP"
        done = await wallet.client.delete(
            f"/auth/sessions/{session_id}", auth=wallet.auth, headers=signed_headers(wallet.key, first.json())
        )
        assert done.status_code == 204
        again = await wallet.client.delete(f"/auth/sessions/{session_id}", auth=wallet.auth)
        assert again.status_code == 404
        never = await wallet.client.delete(
            "/auth/sessions/Session:019542f5-b3e7-7d02-8000-000000000003", auth=wallet.auth
        )
        assert never.status_code == 404

    async def test_sessions_expire(self, wallet, client, auth) -> None:
        clock.advance(timedelta(minutes=15, seconds=1))
        response = await client.get("/auth/sessions", auth=auth, params={"accountId": wallet.id})
        assert response.json() == {"data": []}


async def test_another_tenants_credentials_see_nothing_of_the_wallet(wallet, client, platform) -> None:
    production = platform["production"]
    [session_id] = list(wallet.keys)
    listed = await client.get("/auth/sessions", auth=production, params={"accountId": wallet.id})
    assert listed.json() == {"data": []}
    assert (await client.delete(f"/auth/sessions/{session_id}", auth=production)).status_code == 404
    refresh = await client.post(
        f"/auth/sessions/{session_id}/refresh",
        auth=production,
        json={"clientPublicKey": public_hex(new_key())},
    )
    assert refresh.status_code == 404
    credential = await wallet.email_otp_credential()
    challenge = await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=production, json={})
    assert challenge.status_code == 404
    body = {"type": "EMAIL_OTP", "encryptedOtpBundle": '{"encappedPublic":"04","ciphertext":"00"}'}
    verify = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=production, json=body)
    assert verify.status_code == 404
