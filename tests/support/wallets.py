"""The app side of an embedded wallet, in Python, for the tests: its keys, stamps and bundles (built with
kit/crypto, checked against independent implementations in test_wire_formats.py), a software WebAuthn
authenticator and OIDC tokens."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any

import cbor2
import httpx
import jwt
from cryptography.hazmat.primitives.asymmetric import ec

from platpay.kit.crypto import bundles, p256, stamps
from tests.factories import customer, internal_account

ORIGIN = "http://localhost"
RP_ID = "localhost"


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def new_key() -> ec.EllipticCurvePrivateKey:
    return p256.generate_private_key()


def public_hex(key: ec.EllipticCurvePrivateKey) -> str:
    return p256.uncompressed_hex(key.public_key())


def stamp(key: ec.EllipticCurvePrivateKey, payload: str) -> str:
    return stamps.make(key, payload)


def signed_headers(key: ec.EllipticCurvePrivateKey, challenge: dict[str, Any]) -> dict[str, str]:
    return {
        "Svc-Wallet-Signature": stamp(key, challenge["payloadToSign"]),
        "Request-Id": challenge["requestId"],
    }


async def wallet_account(
    client: httpx.AsyncClient, auth: tuple[str, str], **customer_fields: Any
) -> dict[str, Any]:
    """A new customer's EMBEDDED_WALLET (USDB) account."""
    person = await customer(client, auth, **customer_fields)
    account = await internal_account(client, auth, person["id"], "USDB", "EMBEDDED_WALLET")
    assert account["type"] == "EMBEDDED_WALLET"
    account["customer"] = person
    return account


async def credentials(
    client: httpx.AsyncClient, auth: tuple[str, str], account_id: str
) -> list[dict[str, Any]]:
    response = await client.get("/auth/credentials", auth=auth, params={"accountId": account_id})
    assert response.status_code == 200, response.text
    return response.json()["data"]


@dataclass
class Wallet:
    """One wallet as an app holds it: the account and the session keys it obtained."""

    client: httpx.AsyncClient
    auth: tuple[str, str]
    account: dict[str, Any]
    keys: dict[str, ec.EllipticCurvePrivateKey] = field(default_factory=dict)  # session id -> key

    @property
    def id(self) -> str:
        return self.account["id"]

    @property
    def key(self) -> ec.EllipticCurvePrivateKey:
        return next(reversed(self.keys.values()))

    async def email_otp_credential(self) -> dict[str, Any]:
        return next(c for c in await credentials(self.client, self.auth, self.id) if c["type"] == "EMAIL_OTP")

    async def email_otp_login(
        self, credential_id: str | None = None, *, code: str = "000000"
    ) -> dict[str, Any]:
        """Challenge, seal the OTP with a fresh TEK, verify (202), stamp with the TEK, retry (200)."""
        credential_id = credential_id or (await self.email_otp_credential())["id"]
        challenge = await self.client.post(
            f"/auth/credentials/{credential_id}/challenge", auth=self.auth, json={}
        )
        assert challenge.status_code == 200, challenge.text
        tek = new_key()
        body = {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                challenge.json()["otpEncryptionTargetBundle"], otp_code=code, public_key_hex=public_hex(tek)
            ),
        }
        first = await self.client.post(f"/auth/credentials/{credential_id}/verify", auth=self.auth, json=body)
        assert first.status_code == 202, first.text
        retry = await self.client.post(
            f"/auth/credentials/{credential_id}/verify",
            auth=self.auth,
            json=body,
            headers=signed_headers(tek, first.json()),
        )
        assert retry.status_code == 200, retry.text
        session = retry.json()
        assert "encryptedSessionSigningKey" not in session
        self.keys[session["id"]] = tek
        return session

    def accept_session(
        self, session: dict[str, Any], client_key: ec.EllipticCurvePrivateKey
    ) -> ec.EllipticCurvePrivateKey:
        """Open encryptedSessionSigningKey with the client key it was sealed to; keep the session key."""
        scalar = bundles.open_credential_bundle(session["encryptedSessionSigningKey"], client_key)
        key = p256.private_key_from_scalar(scalar)
        self.keys[session["id"]] = key
        return key

    async def signed(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        key: ec.EllipticCurvePrivateKey | None = None,
        expect: int = 200,
    ) -> httpx.Response:
        """A signed operation: the first call (202), then the retry stamped with `key` (this wallet's newest
        session key by default), which must answer `expect`."""
        first = await self.client.request(method, path, auth=self.auth, json=json_body)
        assert first.status_code == 202, first.text
        retry = await self.client.request(
            method,
            path,
            auth=self.auth,
            json=json_body,
            headers=signed_headers(key or self.key, first.json()),
        )
        assert retry.status_code == expect, retry.text
        return retry


def wallet_session_key(client: httpx.Client, wallet_id: str) -> ec.EllipticCurvePrivateKey:
    """Over real HTTP (a sync client with platform credentials): an EMAIL_OTP login of the wallet (the
    sandbox's code is 000000); the session's key (the TEK)."""
    listed = client.get("/auth/credentials", params={"accountId": wallet_id})
    assert listed.status_code == 200, listed.text
    credential = next(c for c in listed.json()["data"] if c["type"] == "EMAIL_OTP")
    challenge = client.post(f"/auth/credentials/{credential['id']}/challenge", json={})
    assert challenge.status_code == 200, challenge.text
    tek = new_key()
    body = {
        "type": "EMAIL_OTP",
        "encryptedOtpBundle": bundles.seal_otp_attempt(
            challenge.json()["otpEncryptionTargetBundle"], otp_code="000000", public_key_hex=public_hex(tek)
        ),
    }
    path = f"/auth/credentials/{credential['id']}/verify"
    first = client.post(path, json=body)
    assert first.status_code == 202, first.text
    retry = client.post(path, json=body, headers=signed_headers(tek, first.json()))
    assert retry.status_code == 200, retry.text
    return tek


# OIDC


def oidc_token(
    *,
    client_public_key: str | None,
    iss: str = "https://accounts.google.com",
    aud: Any = "platpay-test.apps.googleusercontent.com",
    sub: str = "110169484474386276334",
    email: str = "jane@example.com",
    iat: float | str | None = None,
    exp: float | None = None,
    signing_key: Any = None,
    kid: str = "test-key",
    **claims: Any,
) -> str:
    """An ID token: signed with `signing_key` (a cryptography RSA/EC private key) when given, else with a
    dummy signature (what the sandbox accepts)."""
    now = iat if isinstance(iat, int | float) else time.time()
    payload: dict[str, Any] = {
        "iss": iss,
        "aud": aud,
        "sub": sub,
        "email": email,
        "iat": iat if isinstance(iat, str) else int(now),
        "exp": int(exp if exp is not None else now + 3600),
        **claims,
    }
    if client_public_key is not None and "nonce" not in claims:
        payload["nonce"] = hashlib.sha256(client_public_key.encode()).hexdigest()
    if signing_key is None:
        header = b64url(json.dumps({"alg": "RS256", "kid": kid, "typ": "JWT"}).encode())
        body = b64url(json.dumps(payload).encode())
        return f"{header}.{body}.{b64url(b'dummy-signature')}"
    algorithm = "ES256" if isinstance(signing_key, ec.EllipticCurvePrivateKey) else "RS256"
    return jwt.encode(payload, signing_key, algorithm=algorithm, headers={"kid": kid})


# A software WebAuthn authenticator (packed: none attestation, ES256)


@dataclass
class Authenticator:
    rp_id: str = RP_ID
    origin: str = ORIGIN
    key: ec.EllipticCurvePrivateKey = field(default_factory=new_key)
    credential_id: bytes = field(
        default_factory=lambda: hashlib.sha256(str(time.time_ns()).encode()).digest()
    )
    sign_count: int = 0
    user_present: bool = True

    def _auth_data(self, *, attested: bool) -> bytes:
        flags = (0x01 if self.user_present else 0) | (0x04) | (0x40 if attested else 0)
        data = (
            hashlib.sha256(self.rp_id.encode()).digest() + bytes([flags]) + self.sign_count.to_bytes(4, "big")
        )
        if attested:
            numbers = self.key.public_key().public_numbers()
            cose = cbor2.dumps(
                {1: 2, 3: -7, -1: 1, -2: numbers.x.to_bytes(32, "big"), -3: numbers.y.to_bytes(32, "big")}
            )
            data += bytes(16) + len(self.credential_id).to_bytes(2, "big") + self.credential_id + cose
        return data

    def _client_data(self, kind: str, challenge: bytes, origin: str | None) -> bytes:
        return json.dumps(
            {
                "type": kind,
                "challenge": b64url(challenge),
                "origin": origin or self.origin,
                "crossOrigin": False,
            }
        ).encode()

    def register(self, challenge_b64url: str, *, origin: str | None = None) -> dict[str, Any]:
        """navigator.credentials.create(): the attestation for POST /auth/credentials."""
        client_data = self._client_data("webauthn.create", b64url_decode(challenge_b64url), origin)
        attestation = cbor2.dumps({"fmt": "none", "attStmt": {}, "authData": self._auth_data(attested=True)})
        return {
            "credentialId": b64url(self.credential_id),
            "clientDataJson": b64url(client_data),
            "attestationObject": b64url(attestation),
            "transports": ["internal"],
        }

    def assert_(
        self, challenge_text: str, *, origin: str | None = None, count_step: int = 1
    ) -> dict[str, Any]:
        """navigator.credentials.get() with the challenge's UTF-8 bytes: the assertion for verify."""
        self.sign_count += count_step
        client_data = self._client_data("webauthn.get", challenge_text.encode(), origin)
        auth_data = self._auth_data(attested=False)
        signature = p256.sign_der(self.key, auth_data + hashlib.sha256(client_data).digest())
        return {
            "credentialId": b64url(self.credential_id),
            "clientDataJson": b64url(client_data),
            "authenticatorData": b64url(auth_data),
            "signature": b64url(signature),
        }
