"""Abuse limits on verify and challenge (429 RATE_LIMITED with Retry-After), counted in the database so that
they hold across processes (here: two app instances on one database), per credential and per wallet; and
no secret in a log line or a list response."""

from __future__ import annotations

import logging
from datetime import timedelta

import httpx

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.kit import clock
from platpay.kit.crypto import bundles, p256
from tests.support.wallets import Authenticator, Wallet, new_key, public_hex, wallet_account


def _client(app) -> httpx.AsyncClient:  # type: ignore[no-untyped-def]
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app, raise_app_exceptions=False),
        base_url=f"http://testserver{BASE_PATH}",
    )


async def test_challenges_are_limited_per_credential_across_processes(settings, db, client, auth) -> None:
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    credential = await wallet.email_otp_credential()
    path = f"/auth/credentials/{credential['id']}/challenge"
    other_process = create_app(settings, database=db, embedded_worker=False)
    async with _client(other_process) as second:
        statuses = []
        for attempt in range(settings.wallet_challenge_limit + 1):
            chosen = client if attempt % 2 else second
            statuses.append((await chosen.post(path, auth=auth)).status_code)
    assert statuses[:-1] == [200] * settings.wallet_challenge_limit
    limited = await client.post(path, auth=auth)
    assert limited.status_code == 429 and limited.json()["code"] == "RATE_LIMITED"
    assert 1 <= int(limited.headers["Retry-After"]) <= settings.wallet_limit_window_seconds
    clock.advance(timedelta(seconds=settings.wallet_limit_window_seconds))
    assert (await client.post(path, auth=auth)).status_code == 200


async def test_wrong_otps_run_into_the_verify_limit(settings, client, auth) -> None:
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    credential = await wallet.email_otp_credential()
    challenge = (await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)).json()
    body = {
        "type": "EMAIL_OTP",
        "encryptedOtpBundle": bundles.seal_otp_attempt(
            challenge["otpEncryptionTargetBundle"], otp_code="999999", public_key_hex=public_hex(new_key())
        ),
    }
    codes = [
        (await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)).status_code
        for _ in range(settings.wallet_verify_limit + 1)
    ]
    assert codes == [401] * settings.wallet_verify_limit + [429]


async def test_no_secret_reaches_a_log_line_or_a_list(client, auth, caplog, capsys) -> None:
    caplog.set_level(logging.DEBUG)
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    session = await wallet.email_otp_login()
    client_key = new_key()
    exported = await wallet.signed(
        "POST",
        f"/internal-accounts/{wallet.id}/export",
        json_body={"clientPublicKey": public_hex(client_key)},
    )
    mnemonic = bundles.open_export_bundle(exported.json()["encryptedWalletCredentials"], client_key).decode()
    refresh_key = new_key()
    refreshed = await wallet.signed(
        "POST",
        f"/auth/sessions/{session['id']}/refresh",
        json_body={"clientPublicKey": public_hex(refresh_key)},
    )
    scalar = p256.scalar_bytes(wallet.accept_session(refreshed.json(), refresh_key)).hex()
    lists = (await client.get("/auth/sessions", auth=auth, params={"accountId": wallet.id})).text
    lists += (await client.get("/auth/credentials", auth=auth, params={"accountId": wallet.id})).text
    logged = (
        "\n".join(record.getMessage() for record in caplog.records) + caplog.text + capsys.readouterr().out
    )
    assert '"wallets.audit"' in logged and "WALLET_EXPORTED" in logged  # the log lines were captured
    for secret in (mnemonic, " ".join(mnemonic.split()[:3]), scalar, '"000000"'):
        assert secret not in logged and secret not in lists
    assert "encryptedSessionSigningKey" not in lists


async def test_the_wallet_limit_counts_every_credential_of_the_wallet(settings, db, client, auth) -> None:
    """Two credentials of one wallet share its limit (set here below the per-credential one)."""
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    await wallet.email_otp_login()
    options = (
        await client.post("/auth/credentials/passkey-challenges", auth=auth, json={"accountId": wallet.id})
    ).json()
    body = {"type": "PASSKEY", "accountId": wallet.id, "nickname": "Laptop", "challenge": options["challenge"],
            "attestation": Authenticator().register(options["challenge"])}  # fmt: skip
    passkey = (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()
    email_otp = await wallet.email_otp_credential()
    strict = create_app(
        settings.model_copy(update={"wallet_challenge_account_limit": 3, "wallet_challenge_limit": 5}),
        database=db,
        embedded_worker=False,
    )
    async with _client(strict) as limited_client:
        statuses = []
        for credential, payload in [
            (email_otp, {}),
            (passkey, {"clientPublicKey": public_hex(new_key())}),
        ] * 2:
            response = await limited_client.post(
                f"/auth/credentials/{credential['id']}/challenge", auth=auth, json=payload
            )
            statuses.append(response.status_code)
    assert statuses == [200, 200, 429, 429]  # the login before counted one challenge
