"""Wallet custody and export: a real BIP-39 mnemonic per wallet, sealed at rest under the master key, out
only as an export bundle sealed to the client's key; wallet privacy."""

from __future__ import annotations

import json

import pytest
from mnemonic import Mnemonic
from sqlalchemy import text

from platpay.kit.crypto import bundles, sealing
from platpay.wallets.errors import CustodyError
from platpay.wallets.sandbox import EnvelopeCustody
from tests.support.wallets import Wallet, new_key, public_hex, signed_headers, wallet_account


@pytest.fixture
async def wallet(client, auth) -> Wallet:
    w = Wallet(client, auth, await wallet_account(client, auth))
    await w.email_otp_login()
    return w


async def _export(wallet: Wallet, client_key) -> str:
    response = await wallet.signed(
        "POST",
        f"/internal-accounts/{wallet.id}/export",
        json_body={"clientPublicKey": public_hex(client_key)},
    )
    body = response.json()
    assert body["id"] == wallet.id
    return body["encryptedWalletCredentials"]


class TestExport:
    async def test_the_export_opens_to_a_valid_mnemonic_that_stays_the_same(self, wallet) -> None:
        key = new_key()
        bundle = await _export(wallet, key)
        envelope = json.loads(bundle)
        assert envelope["version"] == "v1.0.0"
        assert envelope["dataSignature"] == "" and envelope["enclaveQuorumPublic"] == ""  # sandbox
        data = json.loads(bytes.fromhex(envelope["data"]))
        assert set(data) == {"encappedPublic", "ciphertext", "organizationId"}
        mnemonic = bundles.open_export_bundle(bundle, key).decode()
        assert len(mnemonic.split()) == 24 and Mnemonic("english").check(mnemonic)
        again_key = new_key()
        assert bundles.open_export_bundle(await _export(wallet, again_key), again_key).decode() == mnemonic

    async def test_a_retry_with_another_client_key_is_401(self, wallet) -> None:
        first = await wallet.client.post(
            f"/internal-accounts/{wallet.id}/export",
            auth=wallet.auth,
            json={"clientPublicKey": public_hex(new_key())},
        )
        response = await wallet.client.post(
            f"/internal-accounts/{wallet.id}/export",
            auth=wallet.auth,
            json={"clientPublicKey": public_hex(new_key())},
            headers=signed_headers(wallet.key, first.json()),
        )
        assert response.status_code == 401 and response.json()["code"] == "WALLET_SIGNATURE_BODY_MISMATCH"

    async def test_a_bad_client_key_is_400(self, wallet) -> None:
        response = await wallet.client.post(
            f"/internal-accounts/{wallet.id}/export",
            auth=wallet.auth,
            json={"clientPublicKey": "04" + "zz" * 64},
        )
        assert response.status_code == 400

    async def test_wallets_have_different_mnemonics(self, wallet, client, auth) -> None:
        other = Wallet(client, auth, await wallet_account(client, auth, email="bob@example.com"))
        await other.email_otp_login()
        k1, k2 = new_key(), new_key()
        assert bundles.open_export_bundle(await _export(wallet, k1), k1) != bundles.open_export_bundle(
            await _export(other, k2), k2
        )


class TestAtRest:
    async def test_the_stored_secret_reveals_nothing_without_the_master_key(self, wallet, db) -> None:
        key = new_key()
        mnemonic = bundles.open_export_bundle(await _export(wallet, key), key).decode()
        async with db.read() as session:
            sealed = (
                await session.execute(
                    text("SELECT sealed_secret FROM wallets WHERE account_id = :a"), {"a": wallet.id}
                )
            ).scalar_one()
        assert mnemonic not in sealed and not any(
            word in sealed for word in mnemonic.split() if len(word) > 5
        )
        with pytest.raises(CustodyError):
            await EnvelopeCustody(sealing.Sealer(b"x" * 32)).reveal_secret(sealed, account_id=wallet.id)
        with pytest.raises(CustodyError):  # nor as another account's
            await EnvelopeCustody(sealing.Sealer(b"k" * 32)).reveal_secret(
                sealed, account_id="InternalAccount:other"
            )
        assert (
            await EnvelopeCustody(sealing.Sealer(b"k" * 32)).reveal_secret(sealed, account_id=wallet.id)
            == mnemonic
        )


class TestPrivacy:
    async def test_private_enabled_defaults_to_false_and_toggles_by_signed_retry(self, wallet) -> None:
        assert wallet.account["privateEnabled"] is False
        on = await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}
        )
        assert on.json()["privateEnabled"] is True and on.json()["type"] == "EMBEDDED_WALLET"
        off = await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": False}
        )
        assert off.json()["privateEnabled"] is False
