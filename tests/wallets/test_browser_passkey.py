"""One real WebAuthn ceremony: Debian's Chromium (Playwright, tests/support/browser.py) with a CDP virtual
authenticator runs navigator.credentials.create() and .get() on a page served by the test on
http://localhost (a secure context); platpay verifies both with py_webauthn and issues a session whose key
opens and signs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from platpay import BASE_PATH
from platpay.app import create_app
from tests.support.browser import browser  # noqa: F401  (the shared fixture)
from tests.support.wallets import Wallet, new_key, public_hex, wallet_account

PAGE = b"""<!doctype html><html><head><meta charset="utf-8"><title>passkey</title></head><body>
<script>
const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf)))
  .replace(/\\+/g, "-").replace(/\\//g, "_").replace(/=+$/, "");
const fromB64url = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
window.register = async (o) => {
  const cred = await navigator.credentials.create({publicKey: {
    challenge: fromB64url(o.challenge), rp: {id: o.rpId, name: o.rpName},
    user: {id: fromB64url(o.userId), name: o.userName, displayName: o.userName},
    pubKeyCredParams: [{type: "public-key", alg: -7}], authenticatorSelection: {userVerification: "preferred"},
    attestation: "none"}});
  return {credentialId: b64url(cred.rawId), clientDataJson: b64url(cred.response.clientDataJSON),
          attestationObject: b64url(cred.response.attestationObject), transports: cred.response.getTransports()};
};
window.authenticate = async (challengeHex, credentialId) => {
  const cred = await navigator.credentials.get({publicKey: {
    challenge: new TextEncoder().encode(challengeHex), rpId: "localhost",
    allowCredentials: [{type: "public-key", id: fromB64url(credentialId)}], userVerification: "preferred"}});
  const r = cred.response;
  return {credentialId: b64url(cred.rawId), clientDataJson: b64url(r.clientDataJSON),
          authenticatorData: b64url(r.authenticatorData), signature: b64url(r.signature),
          userHandle: r.userHandle ? b64url(r.userHandle) : undefined};
};
</script></body></html>"""


@pytest.fixture
def page_server() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://localhost:{server.server_port}"
    finally:
        server.shutdown()


# What this checks (client libraries, a browser, an HTTP key fetch) does not depend on the database: one backend.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_a_real_passkey_registers_and_logs_in(browser, page_server, settings, db, auth) -> None:  # noqa: F811
    app = create_app(
        settings.model_copy(update={"webauthn_rp_id": "localhost", "webauthn_origins": [page_server]}),
        database=db,
        embedded_worker=False,
    )
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
        wallet = Wallet(client, auth, await wallet_account(client, auth))
        await wallet.email_otp_login()
        context = await browser.new_context()
        page = await context.new_page()
        cdp = await context.new_cdp_session(page)
        await cdp.send("WebAuthn.enable")
        await cdp.send(
            "WebAuthn.addVirtualAuthenticator",
            {
                "options": {
                    "protocol": "ctap2",
                    "transport": "internal",
                    "hasResidentKey": True,
                    "hasUserVerification": True,
                    "isUserVerified": True,
                    "automaticPresenceSimulation": True,
                }
            },
        )
        await page.goto(page_server)

        options = (
            await client.post(
                "/auth/credentials/passkey-challenges", auth=auth, json={"accountId": wallet.id}
            )
        ).json()
        attestation = await page.evaluate("(o) => window.register(o)", options)
        body = {
            "type": "PASSKEY",
            "accountId": wallet.id,
            "nickname": "Chromium virtual authenticator",
            "challenge": options["challenge"],
            "attestation": attestation,
        }
        passkey = (await wallet.signed("POST", "/auth/credentials", json_body=body, expect=201)).json()
        assert passkey["credentialId"] == attestation["credentialId"]

        client_key = new_key()
        challenge = (
            await client.post(
                f"/auth/credentials/{passkey['id']}/challenge",
                auth=auth,
                json={"clientPublicKey": public_hex(client_key)},
            )
        ).json()
        assertion = await page.evaluate(
            "([c, id]) => window.authenticate(c, id)", [challenge["challenge"], challenge["credentialId"]]
        )
        assertion = {k: v for k, v in assertion.items() if v is not None}
        login = await client.post(
            f"/auth/credentials/{passkey['id']}/verify",
            auth=auth,
            json={"type": "PASSKEY", "assertion": assertion},
            headers={"Request-Id": challenge["requestId"]},
        )
        assert login.status_code == 200, login.text
        key = wallet.accept_session(login.json(), client_key)
        await wallet.signed(
            "PATCH", f"/internal-accounts/{wallet.id}", json_body={"privateEnabled": True}, key=key
        )
        await context.close()
