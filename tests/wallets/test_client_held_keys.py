"""The client-held session key (the reference since 2026-08): a compressed clientPublicKey
(66 hex: 02/03 + X) on an OAUTH or PASSKEY login or a refresh makes the client's own key the session's key —
no encryptedSessionSigningKey in the answer, and stamps by that key (and no other) sign the session's
retries. The uncompressed form keeps the legacy flow; a value that is no point of P-256 is a 400 naming
clientPublicKey. Real keys, real stamps, real HPKE throughout."""

from __future__ import annotations

from typing import Any

import pytest

from platpay.kit.crypto import p256
from tests.support.wallets import Authenticator, Wallet, new_key, oidc_token, public_hex, wallet_account


def compressed_hex(key) -> str:
    return p256.compressed_hex(key.public_key())


def off_curve(prefix: str = "02") -> str:
    """A 66-hex value of the right shape whose X is no point's (x³ - 3x + b has no square root mod p)."""
    for x in range(1, 1000):
        candidate = prefix + x.to_bytes(32, "big").hex()
        try:
            p256.public_key_from_hex(candidate)
        except ValueError:
            return candidate
    raise AssertionError("no off-curve X below 1000")


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    w = Wallet(client, auth, await wallet_account(client, auth))
    await w.email_otp_login()
    return w


async def oauth_credential(wallet: Wallet) -> dict[str, Any]:
    body = {"type": "OAUTH", "accountId": wallet.id, "oidcToken": oidc_token(client_public_key=None)}
    return (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()


async def oauth_verify(wallet: Wallet, credential_id: str, client_public_key: str):
    return await wallet.client.post(
        f"/auth/credentials/{credential_id}/verify",
        auth=wallet.auth,
        json={
            "type": "OAUTH",
            "oidcToken": oidc_token(client_public_key=client_public_key),
            "clientPublicKey": client_public_key,
        },
    )


def fields_of(response) -> list[str]:
    return [entry["field"] for entry in response.json()["details"]["fields"]]


class TestOauthWithACompressedKey:
    async def test_the_clients_key_is_the_session_key(self, wallet) -> None:
        credential = await oauth_credential(wallet)
        client_key = new_key()
        response = await oauth_verify(wallet, credential["id"], compressed_hex(client_key))
        assert response.status_code == 200, response.text
        session = response.json()
        assert session["type"] == "OAUTH" and "encryptedSessionSigningKey" not in session
        # the key the client kept all along signs the session's retries
        await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=client_key
        )
        listed = await wallet.client.get("/auth/sessions", auth=wallet.auth, params={"accountId": wallet.id})
        assert session["id"] in [s["id"] for s in listed.json()["data"]]

    async def test_a_stamp_by_any_other_key_is_refused(self, wallet) -> None:
        credential = await oauth_credential(wallet)
        await oauth_verify(wallet, credential["id"], compressed_hex(new_key()))
        refused = await wallet.signed(
            "PATCH",
            f"/internal-accounts/{wallet.id}",
            json_body={"privateEnabled": True},
            key=new_key(),
            expect=401,
        )
        assert refused.json()["code"] == "WALLET_SIGNATURE_INVALID"
        account = await wallet.client.get(
            "/customers/internal-accounts", auth=wallet.auth, params={"type": "EMBEDDED_WALLET"}
        )
        assert all(a["privateEnabled"] is False for a in account.json()["data"])

    async def test_either_y_parity_is_taken(self, wallet) -> None:
        credential = await oauth_credential(wallet)
        keys = {}
        while set(keys) != {"02", "03"}:
            key = new_key()
            keys.setdefault(compressed_hex(key)[:2], key)
        for key in keys.values():
            response = await oauth_verify(wallet, credential["id"], compressed_hex(key))
            assert response.status_code == 200 and "encryptedSessionSigningKey" not in response.json()
            await wallet.signed(
                "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=key
            )

    async def test_the_uncompressed_key_keeps_the_legacy_flow(self, wallet) -> None:
        credential = await oauth_credential(wallet)
        client_key = new_key()
        response = await oauth_verify(wallet, credential["id"], public_hex(client_key))
        assert response.status_code == 200 and response.json()["encryptedSessionSigningKey"]
        # the client's own key is not the session's: only the sealed one signs
        await wallet.signed(
            "PATCH",
            f"/internal-accounts/{wallet.id}",
            json_body={"privateEnabled": True},
            key=client_key,
            expect=401,
        )
        key = wallet.accept_session(response.json(), client_key)
        await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=key
        )


class TestPasskeyWithACompressedKey:
    async def test_the_challenge_binds_the_key_and_the_session_is_the_clients(self, wallet) -> None:
        authenticator = Authenticator()
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
        credential = (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()
        client_key = new_key()
        challenge = await wallet.client.post(
            f"/auth/credentials/{credential['id']}/challenge",
            auth=wallet.auth,
            json={"clientPublicKey": compressed_hex(client_key)},
        )
        assert challenge.status_code == 200, challenge.text
        response = await wallet.client.post(
            f"/auth/credentials/{credential['id']}/verify",
            auth=wallet.auth,
            json={"type": "PASSKEY", "assertion": authenticator.assert_(challenge.json()["challenge"])},
            headers={"Request-Id": challenge.json()["requestId"]},
        )
        assert response.status_code == 200, response.text
        assert "encryptedSessionSigningKey" not in response.json()
        # an export, signed by the client's key, sealed to a fresh (uncompressed) export key
        export_key = new_key()
        exported = await wallet.signed(
            "POST",
            f"/internal-accounts/{wallet.id}/export",
            json_body={"clientPublicKey": public_hex(export_key)},
            key=client_key,
        )
        assert exported.json()["encryptedWalletCredentials"]


class TestRefreshWithACompressedKey:
    async def test_the_refreshed_session_is_the_new_client_key(self, wallet) -> None:
        [session_id] = list(wallet.keys)
        new_client_key = new_key()
        body = {"clientPublicKey": compressed_hex(new_client_key)}
        fresh = await wallet.signed("POST", f"/auth/sessions/{session_id}/refresh", json_body=body)
        assert "encryptedSessionSigningKey" not in fresh.json() and fresh.json()["id"] != session_id
        await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=new_client_key
        )


class TestValidation:
    @pytest.mark.parametrize(
        "value",
        [
            off_curve("02"),
            off_curve("03"),
            "04" + "00" * 64,  # an uncompressed shape that is no point either
            "05" + "11" * 32,  # no SEC1 prefix
            "04" + "11" * 32,  # 66 characters, uncompressed prefix
            "02" + "11" * 31,  # 64 characters
            "02" + "zz" * 32,
        ],
    )
    async def test_a_value_that_is_not_a_p256_point_is_a_400_naming_it(self, wallet, value) -> None:
        credential = await oauth_credential(wallet)
        response = await oauth_verify(wallet, credential["id"], value)
        assert response.status_code == 400, response.text
        assert response.json()["code"] == "INVALID_INPUT"
        # the verify body is a oneOf by type: the path names the variant (app-wide rendering of unions)
        assert fields_of(response) == ["OAUTH.clientPublicKey"]
        [session_id] = list(wallet.keys)
        refresh = await wallet.client.post(
            f"/auth/sessions/{session_id}/refresh", auth=wallet.auth, json={"clientPublicKey": value}
        )
        assert refresh.status_code == 400 and fields_of(refresh) == ["clientPublicKey"]
        challenge = await wallet.client.post(
            f"/auth/credentials/{credential['id']}/challenge",
            auth=wallet.auth,
            json={"clientPublicKey": value},
        )
        assert challenge.status_code == 400 and fields_of(challenge) == ["clientPublicKey"]

    async def test_an_export_still_takes_only_the_uncompressed_key(self, wallet) -> None:
        """The reference's export request keeps the uncompressed form (the mnemonic is sealed to it)."""
        response = await wallet.client.post(
            f"/internal-accounts/{wallet.id}/export",
            auth=wallet.auth,
            json={"clientPublicKey": compressed_hex(new_key())},
        )
        assert response.status_code == 400 and fields_of(response) == ["clientPublicKey"]
        off = await wallet.client.post(
            f"/internal-accounts/{wallet.id}/export",
            auth=wallet.auth,
            json={"clientPublicKey": "04" + "00" * 64},
        )
        assert off.status_code == 400 and fields_of(off) == ["clientPublicKey"]
