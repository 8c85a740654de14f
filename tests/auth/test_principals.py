"""One Principal type, resolved by one dependency from the request's Authorization scheme: a new kind of
credential is one registered resolver, and every endpoint accepts it unchanged."""

from __future__ import annotations

import dataclasses

import pytest
from fastapi import Request

from platpay.auth import principals
from platpay.auth import service as auth_service
from platpay.auth.principal import Principal, PrincipalKind


@pytest.fixture
def bearer_scheme():
    """Registers a stand-in Bearer resolver for the test, putting back the one it replaced (the agents
    domain's) afterwards."""
    previous = principals._RESOLVERS.get("bearer")
    yield principals.resolver
    principals._RESOLVERS.pop("bearer", None)
    if previous is not None:
        principals._RESOLVERS["bearer"] = previous


async def test_an_unregistered_scheme_is_missing_credentials(client, auth) -> None:
    response = await client.get("/config", headers={"Authorization": "Digest abc"})
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    assert "missing credentials" in response.json()["message"]


async def test_a_registered_resolver_serves_every_endpoint_unchanged(client, auth, db, bearer_scheme) -> None:
    """A stand-in kind: its resolver maps the bearer value to the platform token's principal with fewer
    permissions; the endpoints' permission checks apply to it."""
    async with db.transaction() as session:
        token = await auth_service.authenticate(session, client_id=auth[0], client_secret=auth[1])
    assert token is not None and token.kind is PrincipalKind.PLATFORM_TOKEN

    @bearer_scheme("Bearer")
    async def _bearer(request: Request) -> Principal:
        assert request.headers["Authorization"] == "Bearer view-only"
        return dataclasses.replace(token, id="agent-1", permissions=frozenset({"VIEW"}))

    headers = {"Authorization": "Bearer view-only"}
    assert (await client.get("/config", headers=headers)).status_code == 200
    refused = await client.post("/tokens", headers=headers, json={"name": "x", "permissions": ["VIEW"]})
    assert refused.status_code == 403
    assert refused.json()["details"]["requiredPermission"] == "MANAGE"
