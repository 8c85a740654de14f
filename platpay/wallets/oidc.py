"""OIDC ID tokens for OAUTH credentials (INTERFACE-FACTS §6.5): every claim check, and in production the
signature against the issuer's JWKS.

`parse` reads the token (400 INVALID_INPUT when it is not a JWT, or its issuer is not one of
PLATPAY_OIDC_ISSUERS). `check` applies the claim rules: `aud` a non-empty string or one-element array, `sub`
non-empty, numeric `iat` less than 60 s before now (5 s of clock skew allowed both ways), numeric `exp` in
the future, and when a client key is given, `nonce` = lowercase hex SHA-256 of that key's hex text; every
failure is 401 UNAUTHORIZED naming the claim. `verify_signature` (production tenants; sandbox tokens may
carry a dummy signature) fetches the issuer's JWKS over HTTP outside any database transaction, keeps it
PLATPAY_OIDC_JWKS_CACHE_SECONDS, refetches once when a token names an unknown `kid` (key rotation), and
verifies with PyJWT.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import jwt

from platpay.config import Settings
from platpay.errors import ServiceUnavailable, invalid_field
from platpay.wallets.errors import VerificationFailed

_SIGNATURE_ALGORITHMS = frozenset({"RS256", "RS384", "RS512", "ES256", "ES384", "PS256"})


@dataclass(frozen=True, slots=True)
class IdToken:
    raw: str
    header: dict[str, Any]
    claims: dict[str, Any]

    @property
    def issuer(self) -> str:
        return str(self.claims["iss"])

    @property
    def audience(self) -> str:
        aud = self.claims.get("aud")
        return aud[0] if isinstance(aud, list) else str(aud)

    @property
    def subject(self) -> str:
        return str(self.claims.get("sub"))

    @property
    def email(self) -> str | None:
        email = self.claims.get("email")
        return email if isinstance(email, str) and email else None


def _segment(part: str, what: str) -> dict[str, Any]:
    try:
        decoded = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise invalid_field("oidcToken", f"the token's {what} is not base64url JSON") from None
    if not isinstance(decoded, dict):
        raise invalid_field("oidcToken", f"the token's {what} is not a JSON object")
    return decoded


def same_issuer(a: str, b: str) -> bool:
    """Google names itself with and without the scheme: one issuer."""
    return a.removeprefix("https://") == b.removeprefix("https://")


def parse(token: str, *, settings: Settings) -> IdToken:
    parts = token.split(".")
    if len(parts) != 3 or not all(parts[:2]):
        raise invalid_field("oidcToken", "is not a JWT (three base64url segments separated by dots)")
    header, claims = _segment(parts[0], "header"), _segment(parts[1], "payload")
    issuer = claims.get("iss")
    if not isinstance(issuer, str) or not any(same_issuer(issuer, known) for known in settings.oidc_issuers):
        raise invalid_field(
            "oidcToken",
            f"issuer {str(issuer)[:200]!r} is not supported",
            supportedIssuers=sorted(settings.oidc_issuers),
        )
    return IdToken(token, header, claims)


def nonce_for(client_public_key: str) -> str:
    return hashlib.sha256(client_public_key.encode()).hexdigest()


def _numeric(claims: dict[str, Any], name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise VerificationFailed(f"the OIDC token's {name} is not a number")
    return float(value)


def check(token: IdToken, *, settings: Settings, now: datetime, client_public_key: str | None) -> None:
    """The claim rules (see the module); `client_public_key` None skips the nonce (registration)."""
    claims = token.claims
    aud = claims.get("aud")
    if isinstance(aud, list):
        aud = aud[0] if len(aud) == 1 else None
    if not isinstance(aud, str) or not aud:
        raise VerificationFailed("the OIDC token's aud must be a non-empty string (or a one-element array)")
    sub = claims.get("sub")
    if not isinstance(sub, str) or not sub:
        raise VerificationFailed("the OIDC token has no sub")
    skew, instant = settings.oidc_clock_skew_seconds, now.timestamp()
    iat = _numeric(claims, "iat")
    if iat > instant + skew:
        raise VerificationFailed("the OIDC token's iat is in the future")
    if instant - iat >= settings.oidc_max_token_age_seconds + skew:
        raise VerificationFailed(
            f"the OIDC token is too old: iat must be less than {settings.oidc_max_token_age_seconds} s before "
            "the request; get a fresh token"
        )
    if _numeric(claims, "exp") + skew <= instant:
        raise VerificationFailed("the OIDC token has expired")
    if client_public_key is not None and claims.get("nonce") != nonce_for(client_public_key):
        raise VerificationFailed("the OIDC token's nonce is not the SHA-256 (hex) of clientPublicKey")


class JwksCache:
    """Each issuer's JWKS, fetched over HTTP and kept for a while (a cache: every process fetches its own)."""

    def __init__(self) -> None:
        self._keys: dict[str, tuple[float, dict[str, Any]]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def clear(self) -> None:
        self._keys.clear()

    async def _fetch(self, url: str, settings: Settings) -> dict[str, Any]:
        try:
            async with httpx.AsyncClient(timeout=settings.oidc_jwks_timeout_seconds) as client:
                response = await client.get(url, headers={"Accept": "application/json"})
                response.raise_for_status()
                jwks = response.json()
        except (httpx.HTTPError, ValueError) as error:
            raise ServiceUnavailable(
                "the OIDC issuer's signing keys could not be fetched; retry shortly",
                headers={"Retry-After": "5"},
                details={"dependency": "oidc-jwks", "error": type(error).__name__},
            ) from None
        if not isinstance(jwks, dict) or not isinstance(jwks.get("keys"), list):
            raise ServiceUnavailable(
                "the OIDC issuer's JWKS is not a key set",
                headers={"Retry-After": "5"},
                details={"dependency": "oidc-jwks"},
            )
        return jwks

    async def keys(self, url: str, settings: Settings, *, refresh: bool = False) -> dict[str, Any]:
        cached = self._keys.get(url)
        fresh = cached is not None and time.monotonic() - cached[0] < settings.oidc_jwks_cache_seconds
        if fresh and not refresh:
            return cached[1]  # type: ignore[index]
        lock = self._locks.setdefault(url, asyncio.Lock())
        async with lock:
            cached = self._keys.get(url)
            # A refetch for an unknown kid happens at most once a minute per issuer.
            recent = cached is not None and time.monotonic() - cached[0] < (
                60 if refresh else settings.oidc_jwks_cache_seconds
            )
            if recent:
                return cached[1]  # type: ignore[index]
            jwks = await self._fetch(url, settings)
            self._keys[url] = (time.monotonic(), jwks)
            return jwks


JWKS = JwksCache()


def _jwk_for(jwks: dict[str, Any], kid: Any) -> dict[str, Any] | None:
    for key in jwks.get("keys", []):
        if isinstance(key, dict) and (kid is None or key.get("kid") == kid):
            return key
    return None


async def verify_signature(token: IdToken, *, settings: Settings) -> None:
    """The token's signature against its issuer's JWKS; 401 when it does not verify."""
    url = next(url for issuer, url in settings.oidc_issuers.items() if same_issuer(issuer, token.issuer))
    algorithm, kid = token.header.get("alg"), token.header.get("kid")
    if algorithm not in _SIGNATURE_ALGORITHMS:
        raise VerificationFailed(
            f"the OIDC token's alg {str(algorithm)[:20]!r} is not an accepted signature algorithm"
        )
    jwk = _jwk_for(await JWKS.keys(url, settings), kid)
    if jwk is None:
        jwk = _jwk_for(await JWKS.keys(url, settings, refresh=True), kid)
    if jwk is None:
        raise VerificationFailed("the OIDC token is signed by a key its issuer does not publish")
    try:
        key = jwt.PyJWK(jwk, algorithm=algorithm)
        jwt.decode(
            token.raw,
            key=key.key,
            algorithms=[algorithm],
            options={
                "verify_aud": False,
                "verify_exp": False,
                "verify_iat": False,
                "verify_nbf": False,
                "verify_iss": False,
            },
        )
    except jwt.PyJWTError:
        raise VerificationFailed(
            "the OIDC token's signature does not verify against its issuer's keys"
        ) from None
