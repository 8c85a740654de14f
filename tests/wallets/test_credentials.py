"""Credentials of a wallet (/auth/credentials…): the bootstrap EMAIL_OTP, listing, adding by signed retry,
the one-EMAIL_OTP and duplicate-passkey rules, revoking by another credential, the last one kept."""

from __future__ import annotations

import pytest

from platpay.kit.crypto import bundles, p256
from tests.support.wallets import (
    Authenticator,
    Wallet,
    credentials,
    new_key,
    oidc_token,
    public_hex,
    signed_headers,
    wallet_account,
)


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    return Wallet(client, auth, await wallet_account(client, auth))


async def _add_passkey(wallet: Wallet, authenticator: Authenticator, *, nickname: str = "Laptop") -> dict:
    options = await wallet.client.post(
        "/auth/credentials/passkey-challenges", auth=wallet.auth, json={"accountId": wallet.id}
    )
    assert options.status_code == 201, options.text
    assert options.json()["rpId"] == "localhost"
    body = {
        "type": "PASSKEY",
        "accountId": wallet.id,
        "nickname": nickname,
        "challenge": options.json()["challenge"],
        "attestation": authenticator.register(options.json()["challenge"]),
    }
    return (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()


class TestTheBootstrapCredential:
    async def test_a_new_wallet_has_one_email_otp_credential_for_the_customers_email(self, wallet) -> None:
        [credential] = await credentials(wallet.client, wallet.auth, wallet.id)
        assert credential["type"] == "EMAIL_OTP"
        assert credential["nickname"] == wallet.account["customer"]["email"]
        assert credential["accountId"] == wallet.id and credential["id"].startswith("AuthMethod:")
        assert set(credential) == {"id", "accountId", "type", "nickname", "createdAt", "updatedAt"}

    async def test_the_sandbox_otp_logs_in(self, wallet) -> None:
        session = await wallet.email_otp_login()
        assert session["type"] == "EMAIL_OTP" and session["id"].startswith("Session:")
        assert session["accountId"] == wallet.id

    async def test_any_other_otp_code_is_401_invalid_otp_code(self, wallet, client, auth) -> None:
        credential = await wallet.email_otp_credential()
        challenge = await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                challenge.json()["otpEncryptionTargetBundle"],
                otp_code="123456",
                public_key_hex=public_hex(new_key()),
            ),
        }
        response = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)
        assert response.status_code == 401
        assert response.json()["code"] == "UNAUTHORIZED" and response.json()["reason"] == "Invalid OTP code"

    async def test_an_otp_bundle_sealed_to_an_old_target_is_refused(self, wallet, client, auth) -> None:
        credential = await wallet.email_otp_credential()
        old = await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)
        await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                old.json()["otpEncryptionTargetBundle"],
                otp_code="000000",
                public_key_hex=public_hex(new_key()),
            ),
        }
        response = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)
        assert response.status_code == 401 and response.json()["code"] == "UNAUTHORIZED"

    async def test_the_retry_must_be_stamped_by_the_sealed_tek(self, wallet, client, auth) -> None:
        credential = await wallet.email_otp_credential()
        challenge = await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)
        tek = new_key()
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                challenge.json()["otpEncryptionTargetBundle"],
                otp_code="000000",
                public_key_hex=public_hex(tek),
            ),
        }
        first = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)
        assert first.status_code == 202 and first.json()["type"] == "EMAIL_OTP"
        assert first.json()["payloadToSign"].count(".") == 2  # the verificationToken, a compact JWS
        other = await client.post(
            f"/auth/credentials/{credential['id']}/verify",
            auth=auth,
            json=body,
            headers=signed_headers(new_key(), first.json()),
        )
        assert other.status_code == 401 and other.json()["code"] == "WALLET_SIGNATURE_INVALID"
        good = await client.post(
            f"/auth/credentials/{credential['id']}/verify",
            auth=auth,
            json=body,
            headers=signed_headers(tek, first.json()),
        )
        assert good.status_code == 200, good.text
        again = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)
        assert again.status_code == 401  # the OTP was single-use

    async def test_a_compressed_tek_is_accepted(self, wallet, client, auth) -> None:
        credential = await wallet.email_otp_credential()
        challenge = await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)
        tek = new_key()
        compressed = p256.compressed_hex(tek.public_key())
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                challenge.json()["otpEncryptionTargetBundle"], otp_code="000000", public_key_hex=compressed
            ),
        }
        first = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)
        retry = await client.post(
            f"/auth/credentials/{credential['id']}/verify",
            auth=auth,
            json=body,
            headers=signed_headers(tek, first.json()),
        )
        assert retry.status_code == 200, retry.text


class TestListing:
    async def test_a_malformed_account_id_is_400(self, client, auth) -> None:
        response = await client.get("/auth/credentials", auth=auth, params={"accountId": "Customer:1"})
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT"

    async def test_the_account_id_is_required(self, client, auth) -> None:
        response = await client.get("/auth/credentials", auth=auth)
        assert response.status_code == 400

    async def test_an_unknown_account_has_no_credentials(self, client, auth) -> None:
        response = await client.get(
            "/auth/credentials",
            auth=auth,
            params={"accountId": "InternalAccount:019542f5-b3e7-7d02-8000-000000000002"},
        )
        assert response.status_code == 200 and response.json() == {"data": []}

    async def test_another_tenants_wallet_shows_nothing(self, wallet, client, platform) -> None:
        response = await client.get(
            "/auth/credentials", auth=platform["production"], params={"accountId": wallet.id}
        )
        assert response.json() == {"data": []}


class TestAdding:
    async def test_passkeys_and_oauth_are_added_by_signed_retry(self, wallet) -> None:
        await wallet.email_otp_login()
        passkey = await _add_passkey(wallet, Authenticator())
        assert passkey["type"] == "PASSKEY" and passkey["nickname"] == "Laptop" and passkey["credentialId"]
        second = await _add_passkey(wallet, Authenticator(), nickname="Phone (work)")
        assert second["id"] != passkey["id"]
        client_key = new_key()
        oauth = await wallet.signed(
            "POST",
            "/auth/credentials",
            json_body={
                "type": "OAUTH",
                "accountId": wallet.id,
                "oidcToken": oidc_token(client_public_key=None),
            },
            expect=201,
        )
        assert oauth.json()["type"] == "OAUTH" and oauth.json()["nickname"] == "jane@example.com"
        kinds = sorted(c["type"] for c in await credentials(wallet.client, wallet.auth, wallet.id))
        assert kinds == ["EMAIL_OTP", "OAUTH", "PASSKEY", "PASSKEY"]
        assert client_key  # the OAUTH login is tested in test_sessions

    async def test_the_same_passkey_twice_is_refused(self, wallet) -> None:
        await wallet.email_otp_login()
        authenticator = Authenticator()
        await _add_passkey(wallet, authenticator)
        options = await wallet.client.post(
            "/auth/credentials/passkey-challenges", auth=wallet.auth, json={"accountId": wallet.id}
        )
        body = {
            "type": "PASSKEY",
            "accountId": wallet.id,
            "nickname": "again",
            "challenge": options.json()["challenge"],
            "attestation": authenticator.register(options.json()["challenge"]),
        }
        response = await wallet.client.post("/auth/credentials", auth=wallet.auth, json=body)
        assert response.status_code == 400 and response.json()["code"] == "PASSKEY_CREDENTIAL_ALREADY_EXISTS"

    async def test_a_second_email_otp_is_refused(self, wallet) -> None:
        await wallet.email_otp_login()
        response = await wallet.client.post(
            "/auth/credentials", auth=wallet.auth, json={"type": "EMAIL_OTP", "accountId": wallet.id}
        )
        assert (
            response.status_code == 400 and response.json()["code"] == "EMAIL_OTP_CREDENTIAL_ALREADY_EXISTS"
        )

    async def test_a_registration_challenge_is_single_use(self, wallet) -> None:
        await wallet.email_otp_login()
        options = await wallet.client.post(
            "/auth/credentials/passkey-challenges", auth=wallet.auth, json={"accountId": wallet.id}
        )
        challenge = options.json()["challenge"]
        body = {"type": "PASSKEY", "accountId": wallet.id, "nickname": "one", "challenge": challenge,
                "attestation": Authenticator().register(challenge)}  # fmt: skip
        await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)
        body2 = {**body, "attestation": Authenticator().register(challenge), "nickname": "two"}
        response = await wallet.client.post("/auth/credentials", auth=wallet.auth, json=body2)
        assert response.status_code == 401 and response.json()["code"] == "UNAUTHORIZED"

    async def test_an_attestation_for_another_challenge_or_origin_is_refused(self, wallet) -> None:
        await wallet.email_otp_login()
        options = await wallet.client.post(
            "/auth/credentials/passkey-challenges", auth=wallet.auth, json={"accountId": wallet.id}
        )
        challenge = options.json()["challenge"]
        wrong_challenge = {"type": "PASSKEY", "accountId": wallet.id, "nickname": "x", "challenge": challenge,
                           "attestation": Authenticator().register("AAAA" + challenge[4:])}  # fmt: skip
        wrong_origin = {
            **wrong_challenge,
            "attestation": Authenticator().register(challenge, origin="https://evil.example"),
        }
        for body in (wrong_challenge, wrong_origin):
            response = await wallet.client.post("/auth/credentials", auth=wallet.auth, json=body)
            assert response.status_code == 401, response.text

    async def test_an_unsupported_oidc_issuer_is_400(self, wallet) -> None:
        await wallet.email_otp_login()
        token = oidc_token(client_public_key=None, iss="https://login.example.com")
        response = await wallet.client.post(
            "/auth/credentials",
            auth=wallet.auth,
            json={"type": "OAUTH", "accountId": wallet.id, "oidcToken": token},
        )
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT"

    async def test_a_wallet_nothing_can_sign_for_adds_its_first_credential_at_once(
        self, client, auth
    ) -> None:
        wallet = Wallet(client, auth, await wallet_account(client, auth))  # its EMAIL_OTP never verified
        response = await client.post(
            "/auth/credentials",
            auth=auth,
            json={"type": "OAUTH", "accountId": wallet.id, "oidcToken": oidc_token(client_public_key=None)},
        )
        assert response.status_code == 201, response.text

    async def test_another_tenant_cannot_add_to_the_wallet(self, wallet, client, platform) -> None:
        response = await client.post(
            "/auth/credentials",
            auth=platform["production"],
            json={"type": "OAUTH", "accountId": wallet.id, "oidcToken": oidc_token(client_public_key=None)},
        )
        assert response.status_code == 404


class TestRevoking:
    async def test_revocation_is_signed_by_another_credential_and_ends_its_sessions(self, wallet) -> None:
        await wallet.email_otp_login()
        authenticator = Authenticator()
        passkey = await _add_passkey(wallet, authenticator)
        email_otp = await wallet.email_otp_credential()
        # a session of the EMAIL_OTP credential cannot revoke that credential itself
        first = await wallet.client.delete(f"/auth/credentials/{email_otp['id']}", auth=wallet.auth)
        assert first.status_code == 202 and first.json()["type"] == "EMAIL_OTP"
        own = await wallet.client.delete(
            f"/auth/credentials/{email_otp['id']}",
            auth=wallet.auth,
            headers=signed_headers(wallet.key, first.json()),
        )
        assert own.status_code == 401 and own.json()["code"] == "WALLET_SIGNATURE_INVALID"
        # revoking the passkey, signed by the EMAIL_OTP session
        await wallet.signed("DELETE", f"/auth/credentials/{passkey['id']}", expect=204)
        remaining = await credentials(wallet.client, wallet.auth, wallet.id)
        assert [c["id"] for c in remaining] == [email_otp["id"]]

    async def test_the_last_credential_cannot_be_revoked(self, wallet) -> None:
        [credential] = await credentials(wallet.client, wallet.auth, wallet.id)
        response = await wallet.client.delete(f"/auth/credentials/{credential['id']}", auth=wallet.auth)
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT"

    async def test_an_unknown_credential_is_404(self, client, auth) -> None:
        response = await client.delete(
            "/auth/credentials/AuthMethod:019542f5-b3e7-7d02-8000-000000000001", auth=auth
        )
        assert response.status_code == 404 and response.json()["code"] == "REFERENCE_NOT_FOUND"
