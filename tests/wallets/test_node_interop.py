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

from platpay.kit.crypto import bundles
from tests.wallets.support import Wallet, new_key, public_hex, wallet_account

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
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
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
        "session_refreshed",
        "export_opened",
        "session_revoked",
    ]
