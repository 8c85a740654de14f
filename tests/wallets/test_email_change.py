"""A customer's email change while their wallets log in by EMAIL_OTP (SPEC §4.4): 202 binding the fields and
the tied credentials; the signed retry updates the customer and every tied credential together; a changed
credential set is 409; other PATCHes stay 200 at once."""

from __future__ import annotations

import pytest

from tests.factories import FULL_PERSON, internal_account
from tests.support.wallets import (
    Authenticator,
    Wallet,
    credentials,
    new_key,
    public_hex,
    signed_headers,
    wallet_account,
)

PATCH = {"customerType": "INDIVIDUAL", "email": "jane.new@example.com"}


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    w = Wallet(client, auth, await wallet_account(client, auth))
    await w.email_otp_login()
    return w


async def _customer(client, auth, customer_id: str) -> dict:
    return (await client.get(f"/customers/{customer_id}", auth=auth)).json()


class TestEmailChange:
    async def test_the_signed_retry_changes_the_customer_and_the_credential_together(
        self, wallet, client, auth
    ) -> None:
        customer_id = wallet.account["customer"]["id"]
        first = await client.patch(f"/customers/{customer_id}", auth=auth, json=PATCH)
        assert first.status_code == 202, first.text
        assert set(first.json()) == {"payloadToSign", "requestId", "expiresAt"}
        assert (await _customer(client, auth, customer_id))["email"] == "jane@example.com"  # not yet
        retry = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json=PATCH,
            headers=signed_headers(wallet.key, first.json()),
        )
        assert retry.status_code == 200, retry.text
        assert retry.json()["email"] == "jane.new@example.com"
        [credential] = await credentials(client, auth, wallet.id)
        assert credential["nickname"] == "jane.new@example.com"

    async def test_a_retry_with_other_fields_changes_nothing(self, wallet, client, auth) -> None:
        customer_id = wallet.account["customer"]["id"]
        first = await client.patch(f"/customers/{customer_id}", auth=auth, json=PATCH)
        other = {**PATCH, "email": "mallory@example.com"}
        retry = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json=other,
            headers=signed_headers(wallet.key, first.json()),
        )
        assert retry.status_code == 401 and retry.json()["code"] == "WALLET_SIGNATURE_BODY_MISMATCH"
        assert (await _customer(client, auth, customer_id))["email"] == "jane@example.com"

    async def test_a_changed_credential_set_is_409_and_changes_nothing(self, wallet, client, auth) -> None:
        customer_id = wallet.account["customer"]["id"]
        first = await client.patch(f"/customers/{customer_id}", auth=auth, json=PATCH)
        assert first.status_code == 202
        # meanwhile the EMAIL_OTP credential is replaced: a passkey is added and logs in, revokes it, and
        # adds EMAIL_OTP back (a new credential id)
        authenticator = Authenticator()
        options = (
            await client.post(
                "/auth/credentials/passkey-challenges", auth=auth, json={"accountId": wallet.id}
            )
        ).json()
        body = {"type": "PASSKEY", "accountId": wallet.id, "nickname": "Laptop", "challenge": options["challenge"],
                "attestation": authenticator.register(options["challenge"])}  # fmt: skip
        passkey = (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()
        client_key = new_key()
        challenge = (
            await client.post(
                f"/auth/credentials/{passkey['id']}/challenge",
                auth=auth,
                json={"clientPublicKey": public_hex(client_key)},
            )
        ).json()
        login = await client.post(
            f"/auth/credentials/{passkey['id']}/verify",
            auth=auth,
            json={"type": "PASSKEY", "assertion": authenticator.assert_(challenge["challenge"])},
            headers={"Request-Id": challenge["requestId"]},
        )
        passkey_key = wallet.accept_session(login.json(), client_key)
        old = await wallet.email_otp_credential()
        await wallet.signed("DELETE", f"/auth/credentials/{old['id']}", key=passkey_key, expect=204)
        added = await wallet.signed(
            "POST",
            "/auth/credentials",
            json_body={"type": "EMAIL_OTP", "accountId": wallet.id},
            key=passkey_key,
            expect=201,
        )
        assert added.json()["otpEncryptionTargetBundle"]
        retry = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json=PATCH,
            headers=signed_headers(passkey_key, first.json()),
        )
        assert retry.status_code == 409, retry.text
        assert retry.json()["code"] == "EMAIL_OTP_CREDENTIAL_SET_CHANGED"
        assert (await _customer(client, auth, customer_id))["email"] == "jane@example.com"
        assert (await wallet.email_otp_credential())["nickname"] == "jane@example.com"

    async def test_the_retry_must_be_signed_by_a_tied_wallet(self, wallet, client, auth) -> None:
        customer_id = wallet.account["customer"]["id"]
        stranger = Wallet(client, auth, await wallet_account(client, auth, email="eve@example.com"))
        await stranger.email_otp_login()
        first = await client.patch(f"/customers/{customer_id}", auth=auth, json=PATCH)
        retry = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json=PATCH,
            headers=signed_headers(stranger.key, first.json()),
        )
        assert retry.status_code == 401 and retry.json()["code"] == "WALLET_SIGNATURE_INVALID"

    async def test_other_patches_answer_200_at_once(self, wallet, client, auth) -> None:
        customer_id = wallet.account["customer"]["id"]
        response = await client.patch(
            f"/customers/{customer_id}",
            auth=auth,
            json={"customerType": "INDIVIDUAL", "fullName": "Jane Q Doe"},
        )
        assert response.status_code == 200 and response.json()["fullName"] == "Jane Q Doe"

    async def test_a_wallet_without_credentials_gets_one_when_the_email_is_set(self, client, auth) -> None:
        body = {key: value for key, value in FULL_PERSON.items() if key != "email"}
        person = (await client.post("/customers", auth=auth, json=body)).json()
        wallet = Wallet(
            client, auth, await internal_account(client, auth, person["id"], "USDB", "EMBEDDED_WALLET")
        )
        assert await credentials(client, auth, wallet.id) == []
        response = await client.patch(f"/customers/{person['id']}", auth=auth, json=PATCH)
        assert response.status_code == 200, response.text
        [credential] = await credentials(client, auth, wallet.id)
        assert credential["type"] == "EMAIL_OTP" and credential["nickname"] == PATCH["email"]
        await wallet.email_otp_login(credential["id"])
