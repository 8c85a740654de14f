"""Interoperability with the public client libraries an end-user app uses (@turnkey/api-key-stamper,
@turnkey/crypto, exact versions pinned in tests/interop/wallet/package-lock.json): a Node script drives a live
platpay (this test's app, served over HTTP on 127.0.0.1 by uvicorn) through a wallet's life — seal the OTP
bundle, stamp signed retries, open encryptedSessionSigningKey and encryptedWalletCredentials — with the
libraries' own code. Skipped, saying so, only where node and npm are absent."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
import uvicorn

from platpay.kit.crypto import bundles, p256, stamps
from tests.support.wallets import Wallet, new_key, public_hex, wallet_account

INTEROP = Path(__file__).resolve().parents[1] / "interop" / "wallet"
STAMP = INTEROP / "node_modules" / ".platpay-lock.sha256"


@pytest.fixture(scope="session")
def node_modules() -> Path:
    """`npm ci` in tests/interop/wallet once per lock file (skipped when node_modules matches it)."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip("node and npm are needed for the client-library interop suite (Debian: nodejs, npm)")
    lock = hashlib.sha256((INTEROP / "package-lock.json").read_bytes()).hexdigest()
    if not STAMP.exists() or STAMP.read_text().strip() != lock:
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=INTEROP, check=True, timeout=600
        )
        STAMP.write_text(lock)
    return INTEROP / "node_modules"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# What this checks (client libraries, a browser, an HTTP key fetch) does not depend on the database: one backend.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_the_turnkey_libraries_drive_a_wallets_life(node_modules, app, client, auth) -> None:
    wallet = Wallet(client, auth, await wallet_account(client, auth))
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", log_config=None, lifespan="off")
    )
    serving = asyncio.create_task(server.serve())
    try:
        while not server.started:
            await asyncio.sleep(0.02)
        process = await asyncio.create_subprocess_exec(
            "node",
            str(INTEROP / "wallet_life.mjs"),
            cwd=INTEROP,
            env={
                **os.environ,
                "PLATPAY_URL": f"http://127.0.0.1:{port}/2025-10-13",
                "PLATPAY_CLIENT_ID": auth[0],
                "PLATPAY_CLIENT_SECRET": auth[1],
                "PLATPAY_ACCOUNT_ID": wallet.id,
            },
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
    finally:
        server.should_exit = True
        await serving
    assert process.returncode == 0, f"node failed:\n{stdout.decode()}\n{stderr.decode()}"
    report = json.loads(stdout.decode().strip().splitlines()[-1])
    # what Node decrypted is the wallet's secret: export it again here, with our own key
    await wallet.email_otp_login()
    key = new_key()
    exported = await wallet.signed(
        "POST", f"/internal-accounts/{wallet.id}/export", json_body={"clientPublicKey": public_hex(key)}
    )
    mnemonic = bundles.open_export_bundle(exported.json()["encryptedWalletCredentials"], key).decode()
    assert report["mnemonic"] == mnemonic
    assert report["steps"] == [
        "email_otp_login",
        "privacy_on",
        "oauth_added",
        "oauth_login",
        "oauth_login_client_held_key",
        "session_refreshed",
        "export_opened",
        "session_revoked",
    ]


def test_the_libraries_read_and_write_our_byte_formats(node_modules) -> None:
    """Every §6 format across implementations: a production (signed) export bundle and a session-key bundle
    made here, opened by decryptExportBundle (which checks dataSignature against the pinned enclave key) and
    decryptCredentialBundle; an OTP attempt sealed by encryptOtpCodeToBundle (which checks the target
    bundle's signature) opened here; stamps from @turnkey/api-key-stamper verified here (high and low S)."""
    enclave, export_key, session_scalar, client_key = new_key(), new_key(), new_key(), new_key()
    stamp_key, target, tek = new_key(), new_key(), new_key()
    mnemonic = "abandon ability able about above absent absorb abstract absurd abuse access accident"
    payload = '{"organizationId":"Tenant:x","parameters":{"privateEnabled":true},"type":"ACTIVITY"}'
    given = {
        "exportBundle": bundles.export_bundle(
            export_key.public_key(), mnemonic.encode(), organization_id="Tenant:x", signer=enclave
        ),
        "exportKey": p256.scalar_bytes(export_key).hex(),
        "organizationId": "Tenant:x",
        "enclaveKey": p256.uncompressed_hex(enclave.public_key()),
        "credentialBundle": bundles.credential_bundle(
            client_key.public_key(), p256.scalar_bytes(session_scalar)
        ),
        "credentialKey": p256.scalar_bytes(client_key).hex(),
        "targetBundle": bundles.target_bundle(
            target.public_key(), signer=enclave, organization_id="Tenant:x"
        ),
        "tekPublic": public_hex(tek),
        "payload": payload,
        "stampKey": p256.scalar_bytes(stamp_key).hex(),
    }
    result = subprocess.run(
        ["node", str(INTEROP / "formats.mjs")],
        input=json.dumps(given),
        capture_output=True,
        text=True,
        cwd=INTEROP,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    produced = json.loads(result.stdout.strip().splitlines()[-1])
    assert produced["mnemonic"] == mnemonic
    assert produced["sessionKey"] == p256.scalar_bytes(session_scalar).hex()
    attempt = bundles.open_otp_attempt(bundles.parse_sealed(produced["encryptedOtpBundle"]), target)
    assert attempt.otp_code == "000000"
    assert p256.compressed_hex(attempt.public_key) == p256.compressed_hex(tek.public_key())
    for header in produced["stamps"]:
        parsed = stamps.parse(header)
        assert parsed.public_key_hex == p256.compressed_hex(stamp_key.public_key()) and parsed.verifies(
            payload
        )
