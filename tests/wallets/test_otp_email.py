"""OTP emails for real: queued through the messages domain in the transaction that issues the code, sent over
SMTP by the job runner (a real aiosmtpd server here), readable in the sandbox mailbox. A production tenant's
code is random, shaped by embeddedWalletConfig, and logs a wallet in; the email carries the platform's
sender, reply-to and app name."""

from __future__ import annotations

import re

from platpay.kit.crypto import bundles
from tests.support.wallets import Wallet, new_key, public_hex, signed_headers, wallet_account


async def test_a_production_code_arrives_by_smtp_and_logs_in(client, platform, runner, smtp_server) -> None:
    auth = platform["production"]
    config = {
        "appName": "Acme Wallet",
        "otpLength": 8,
        "sendFromEmailAddress": "noreply@acme.example",
        "sendFromEmailSenderName": "Acme",
        "replyToEmailAddress": "help@acme.example",
    }
    assert (
        await client.patch("/config", auth=auth, json={"embeddedWalletConfig": config})
    ).status_code == 200
    wallet = Wallet(client, auth, await wallet_account(client, auth, email="prod.user@example.com"))
    credential = await wallet.email_otp_credential()
    challenge = await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth, json={})
    assert challenge.status_code == 200, challenge.text
    await runner.run_until_idle()
    mail = await smtp_server.wait_for(to="prod.user@example.com", timeout=10)
    assert mail.subject == "Your Acme Wallet verification code"
    assert "noreply@acme.example" in mail.from_ and "Acme" in mail.from_
    assert mail.reply_to is not None and "help@acme.example" in mail.reply_to
    [code] = re.findall(r"\b\d{8}\b", mail.text)
    assert code != "00000000" and code in (mail.html or "")
    tek = new_key()
    body = {
        "type": "EMAIL_OTP",
        "encryptedOtpBundle": bundles.seal_otp_attempt(
            challenge.json()["otpEncryptionTargetBundle"], otp_code=code, public_key_hex=public_hex(tek)
        ),
    }
    first = await client.post(f"/auth/credentials/{credential['id']}/verify", auth=auth, json=body)
    assert first.status_code == 202, first.text
    retry = await client.post(
        f"/auth/credentials/{credential['id']}/verify",
        auth=auth,
        json=body,
        headers=signed_headers(tek, first.json()),
    )
    assert retry.status_code == 200, retry.text


async def test_the_sandbox_otp_email_is_in_the_mailbox(client, auth) -> None:
    wallet = Wallet(client, auth, await wallet_account(client, auth, email="sandbox.user@example.com"))
    credential = await wallet.email_otp_credential()
    assert (
        await client.post(f"/auth/credentials/{credential['id']}/challenge", auth=auth)
    ).status_code == 200
    mailbox = await client.get("/sandbox/mailbox", auth=auth, params={"to": "sandbox.user@example.com"})
    assert mailbox.status_code == 200, mailbox.text
    [message] = mailbox.json()["data"]
    assert "000000" in str(message)
