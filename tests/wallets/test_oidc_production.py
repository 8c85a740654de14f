"""OAUTH on a production tenant: the ID token's signature is checked against its issuer's JWKS, fetched over
HTTP from the URL the settings name (here a real server on 127.0.0.1 serving keys made for the test) and
cached; a dummy signature, or a key the issuer does not publish, is 401."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from platpay import BASE_PATH
from platpay.app import create_app
from platpay.wallets import oidc
from tests.support.wallets import Wallet, new_key, oidc_token, public_hex, wallet_account

ISSUER = "https://accounts.google.com"


class _Jwks:
    def __init__(self) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.requests = 0
        jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
        self.body = json.dumps({"keys": [{**jwk, "kid": "test-key", "alg": "RS256", "use": "sig"}]}).encode()


@pytest.fixture
def jwks_server() -> Iterator[tuple[str, _Jwks]]:
    jwks = _Jwks()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            jwks.requests += 1
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(jwks.body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    oidc.JWKS.clear()
    try:
        yield f"http://127.0.0.1:{server.server_port}/oauth2/v3/certs", jwks
    finally:
        server.shutdown()
        oidc.JWKS.clear()


@pytest.fixture
async def production_client(settings, db, jwks_server) -> Any:
    url, _ = jwks_server
    app = create_app(
        settings.model_copy(update={"oidc_issuers": {ISSUER: url}}), database=db, embedded_worker=False
    )
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
        yield client


# What this checks (client libraries, a browser, an HTTP key fetch) does not depend on the database: one backend.
@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_production_tokens_are_checked_against_the_issuers_jwks(
    production_client, platform, jwks_server
) -> None:
    _, jwks = jwks_server
    auth = platform["production"]
    wallet = Wallet(production_client, auth, await wallet_account(production_client, auth))
    # no verified credential yet: the first OAUTH credential is added at once, its token's signature checked
    dummy = oidc_token(client_public_key=None)
    refused = await production_client.post(
        "/auth/credentials", auth=auth, json={"type": "OAUTH", "accountId": wallet.id, "oidcToken": dummy}
    )
    assert refused.status_code == 401 and refused.json()["code"] == "UNAUTHORIZED", refused.text
    signed_token = oidc_token(client_public_key=None, signing_key=jwks.key)
    added = await production_client.post(
        "/auth/credentials",
        auth=auth,
        json={"type": "OAUTH", "accountId": wallet.id, "oidcToken": signed_token},
    )
    assert added.status_code == 201, added.text
    credential_id = added.json()["id"]

    client_key = new_key()
    login = await production_client.post(
        f"/auth/credentials/{credential_id}/verify",
        auth=auth,
        json={
            "type": "OAUTH",
            "oidcToken": oidc_token(client_public_key=public_hex(client_key), signing_key=jwks.key),
            "clientPublicKey": public_hex(client_key),
        },
    )
    assert login.status_code == 200, login.text
    wallet.accept_session(login.json(), client_key)
    assert jwks.requests == 1  # cached between the two checks

    other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = await production_client.post(
        f"/auth/credentials/{credential_id}/verify",
        auth=auth,
        json={
            "type": "OAUTH",
            "oidcToken": oidc_token(client_public_key=public_hex(client_key), signing_key=other_key),
            "clientPublicKey": public_hex(client_key),
        },
    )
    assert forged.status_code == 401
    unknown_kid = await production_client.post(
        f"/auth/credentials/{credential_id}/verify",
        auth=auth,
        json={
            "type": "OAUTH",
            "oidcToken": oidc_token(
                client_public_key=public_hex(client_key), signing_key=jwks.key, kid="rotated"
            ),
            "clientPublicKey": public_hex(client_key),
        },
    )
    assert unknown_kid.status_code == 401
    assert jwks.requests == 1  # an unknown kid refetches at most once a minute: not right after a fetch


async def test_an_unreachable_jwks_is_503_not_a_crash(settings, db, platform) -> None:
    app = create_app(
        settings.model_copy(update={"oidc_issuers": {ISSUER: "http://127.0.0.1:9/certs"}}),
        database=db,
        embedded_worker=False,
    )
    oidc.JWKS.clear()
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=f"http://testserver{BASE_PATH}") as client:
        auth = platform["production"]
        wallet = await wallet_account(client, auth)
        response = await client.post(
            "/auth/credentials",
            auth=auth,
            json={
                "type": "OAUTH",
                "accountId": wallet["id"],
                "oidcToken": oidc_token(client_public_key=None),
            },
        )
    assert response.status_code == 503 and response.headers["Retry-After"]
