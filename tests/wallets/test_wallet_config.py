"""PlatformConfig.embeddedWalletConfig (GET/PATCH /config): partial updates merge, null clears, bounds hold;
its OTP settings shape production codes (sandbox codes are always 000000)."""

from __future__ import annotations

import dataclasses
import string
from datetime import UTC, datetime

from platpay.tenants.context import TenantContext
from platpay.wallets import otp


async def test_embedded_wallet_config_is_partial_and_validated(client, auth) -> None:
    assert "embeddedWalletConfig" not in (await client.get("/config", auth=auth)).json()
    first = await client.patch(
        "/config", auth=auth, json={"embeddedWalletConfig": {"appName": "Acme Wallet", "otpLength": 8}}
    )
    assert first.status_code == 200, first.text
    assert first.json()["embeddedWalletConfig"] == {"appName": "Acme Wallet", "otpLength": 8}
    second = await client.patch(
        "/config",
        auth=auth,
        json={"embeddedWalletConfig": {"alphanumeric": True, "sendFromEmailAddress": "noreply@acme.com"}},
    )
    assert second.json()["embeddedWalletConfig"] == {
        "appName": "Acme Wallet",
        "otpLength": 8,
        "alphanumeric": True,
        "sendFromEmailAddress": "noreply@acme.com",
    }
    assert (await client.get("/config", auth=auth)).json()["embeddedWalletConfig"] == second.json()[
        "embeddedWalletConfig"
    ]
    for bad in (
        {"otpLength": 3},
        {"otpLength": 13},
        {"expirationSeconds": 0},
        {"sendFromEmailAddress": "nope"},
    ):
        response = await client.patch("/config", auth=auth, json={"embeddedWalletConfig": bad})
        assert response.status_code == 400, bad
    cleared = await client.patch("/config", auth=auth, json={"embeddedWalletConfig": None})
    assert "embeddedWalletConfig" not in cleared.json()


def _tenant(environment: str, config: dict | None) -> TenantContext:
    now = datetime.now(UTC)
    return TenantContext(
        id="Tenant:t",
        platform_id="Platform:p",
        environment=environment,
        is_regulated=False,
        config_id="PlatformConfig:c",
        uma_domain="t.test",
        webhook_endpoint=None,
        supported_currencies=[],
        webhook_public_key_pem="",
        created_at=now,
        updated_at=now,
        embedded_wallet_config=config,
    )


def test_production_codes_follow_the_config_and_sandbox_codes_are_fixed() -> None:
    sandbox = _tenant("sandbox", {"otpLength": 9, "alphanumeric": True})
    assert {otp.draw_code(sandbox) for _ in range(20)} == {"000000"}
    default = _tenant("production", None)
    codes = {otp.draw_code(default) for _ in range(50)}
    assert all(len(code) == 6 and code.isdigit() for code in codes) and len(codes) > 40
    custom = dataclasses.replace(default, embedded_wallet_config={"otpLength": 10, "alphanumeric": True})
    codes = {otp.draw_code(custom) for _ in range(50)}
    assert all(len(code) == 10 and set(code) <= set(string.ascii_uppercase + string.digits) for code in codes)
    assert any(not code.isdigit() for code in codes)
