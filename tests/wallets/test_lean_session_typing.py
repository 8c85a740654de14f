"""An EMAIL_OTP login (challenge, verify 202, verify 200) and its OTP email's send job run in `LeanTransaction`s
(no ORM session, PostgreSQL): every function one is passed to says so, declaring a `LeanSession`
(db/unit_of_work.py), never an `AsyncSession` it is not. Read from the calls themselves, as
tests/cards/test_lean_session_typing.py does for a card authorization."""

from __future__ import annotations

from platpay.kit.crypto import bundles, p256, stamps
from tests.support.lean_typing import ON_POSTGRESQL, backend, lean_receivers, misdeclared  # noqa: F401 (backend: the fixture)
from tests.support.wallets import Wallet, wallet_account

pytestmark = ON_POSTGRESQL


async def test_every_function_given_a_lean_transaction_declares_a_lean_session(client, auth, runner) -> None:
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    credential_id = (await wallet.email_otp_credential())["id"]
    tek = p256.generate_private_key()
    with lean_receivers() as received:
        challenge = await client.post(f"/auth/credentials/{credential_id}/challenge", auth=auth, json={})
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                challenge.json()["otpEncryptionTargetBundle"],
                otp_code="000000",
                public_key_hex=p256.uncompressed_hex(tek.public_key()),
            ),
        }
        first = await client.post(f"/auth/credentials/{credential_id}/verify", auth=auth, json=body)
        retry = await client.post(
            f"/auth/credentials/{credential_id}/verify",
            auth=auth,
            json=body,
            headers={
                "Svc-Wallet-Signature": stamps.make(tek, first.json()["payloadToSign"]),
                "Request-Id": first.json()["requestId"],
            },
        )
        wrong = await client.post(f"/auth/credentials/{credential_id}/verify", auth=auth, json=body)
        await runner.run_until_idle()  # the OTP email's send job
    assert (challenge.status_code, first.status_code, retry.status_code) == (200, 202, 200), retry.text
    assert wrong.status_code == 401  # the OTP was used: a refused attempt, counted in a lean transaction
    assert received, "the login never ran in a LeanTransaction"
    names = {name for _, _, name, _ in received}
    assert {"reissue_challenge", "check_attempt", "issue_for_key", "record_sent"} <= names, names
    undeclared = misdeclared(received)
    assert not undeclared, "given a LeanTransaction, declared otherwise:\n" + "\n".join(undeclared)
