"""Round trips to PostgreSQL per request of an EMAIL_OTP login (issue 33: >= 200 logins/s on one process), a
budget each, counted as tests/db/test_round_trips.py counts the money path's: a private cluster logging every
statement, the lines a request adds are its round trips (authentication's read, BEGIN and COMMIT included),
in the steady state. The OTP email's send job runs in the job runner, not in these requests."""

from __future__ import annotations

from typing import Any

import pytest

from platpay.kit.crypto import bundles
from tests.db.test_round_trips import _Counter, apps, logging_cluster  # noqa: F401 (fixtures)
from tests.support.wallets import Wallet, new_key, public_hex, signed_headers, wallet_account

pytestmark = pytest.mark.e2e

# challenge: auth, BEGIN, the credential locked and counted, the OTP (its pending ones marked used), its
# email and job in one deferred statement, COMMIT; verify 202: auth, BEGIN, locked and counted with the OTP
# used up, the signed-retry challenge's INSERT, COMMIT; verify 200: auth, BEGIN, locked and counted with the
# challenge consumed, the session and its audit row, COMMIT.
BUDGET = {"challenge": 5, "verify 202": 5, "verify 200": 5}


async def test_an_email_otp_login_stays_within_its_round_trips(apps, logging_cluster) -> None:  # noqa: F811
    served, auth = apps
    api = served.api
    counter = _Counter(logging_cluster.log)
    wallet = Wallet(api, auth, await wallet_account(api, auth))
    credential_id = (await wallet.email_otp_credential())["id"]
    path = f"/auth/credentials/{credential_id}"

    async def login() -> dict[str, list[str]]:
        counted: dict[str, list[str]] = {}

        async def step(name: str, request: Any, status: int) -> Any:
            response, statements = await counter.round_trips(request)
            assert response.status_code == status, response.text
            counted[name] = statements
            return response.json()

        challenge = await step("challenge", lambda: api.post(f"{path}/challenge", auth=auth), 200)
        tek = new_key()
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                challenge["otpEncryptionTargetBundle"], otp_code="000000", public_key_hex=public_hex(tek)
            ),
        }
        token = await step("verify 202", lambda: api.post(f"{path}/verify", auth=auth, json=body), 202)
        headers = signed_headers(tek, token)
        await step(
            "verify 200", lambda: api.post(f"{path}/verify", auth=auth, json=body, headers=headers), 200
        )
        return counted

    for _ in range(2):  # every statement prepared on the pools' connections
        await login()
    counted = await login()
    over = {name: statements for name, statements in counted.items() if len(statements) > BUDGET[name]}
    assert not over, "\n".join(
        f"{name}: {len(statements)} round trips (budget {BUDGET[name]}):\n  " + "\n  ".join(statements)
        for name, statements in over.items()
    )
