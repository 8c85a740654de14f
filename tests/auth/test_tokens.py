"""API tokens: secrets shown once, permissions enforced, tenant isolation, idempotent create."""

from __future__ import annotations

import pytest

from tests.factories import create_platform


async def _create(client, auth, name="t", permissions=("VIEW",), key=None):
    headers = {"Idempotency-Key": key} if key else {}
    return await client.post(
        "/tokens", auth=auth, json={"name": name, "permissions": list(permissions)}, headers=headers
    )


async def _all_ids(client, auth, limit=1):
    ids, cursor = [], None
    while True:
        params = {"limit": limit, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/tokens", auth=auth, params=params)).json()
        ids += [t["id"] for t in page["data"]]
        if not page["hasMore"]:
            assert "nextCursor" not in page
            return ids, page["totalCount"]
        cursor = page["nextCursor"]


class TestCreateToken:
    async def test_secret_is_only_in_the_create_response(self, client, auth):
        created = await _create(client, auth, permissions=["VIEW", "TRANSACT"])
        assert created.status_code == 201
        body = created.json()
        assert body["id"].startswith("Token:") and len(body["clientSecret"]) == 64
        fetched = (await client.get(f"/tokens/{body['id']}", auth=auth)).json()
        assert "clientSecret" not in fetched and fetched["clientId"] == body["clientId"]
        listed = (await client.get("/tokens", auth=auth)).json()["data"]
        assert all("clientSecret" not in t for t in listed)

    async def test_new_token_authenticates(self, client, auth):
        body = (await _create(client, auth)).json()
        assert (await client.get("/config", auth=(body["clientId"], body["clientSecret"]))).status_code == 200

    async def test_secret_is_stored_only_hashed(self, client, auth, db):
        from sqlalchemy import text

        secret = (await _create(client, auth, key="k-secret")).json()["clientSecret"]
        async with db.read() as session:
            tokens = (await session.execute(text("SELECT * FROM api_tokens"))).all()
            keys = (await session.execute(text("SELECT * FROM idempotency_keys"))).all()
        assert secret not in repr(tokens) and secret not in repr(keys)

    async def test_replay_with_same_key_returns_identical_response_and_creates_one_token(self, client, auth):
        first = await _create(client, auth, name="ci", key="key-1")
        second = await _create(client, auth, name="ci", key="key-1")
        assert first.status_code == second.status_code == 201
        assert first.content == second.content
        assert second.headers.get("Idempotent-Replayed") == "true"
        _, total = await _all_ids(client, auth)
        assert total == 2  # bootstrap + one

    async def test_same_key_with_different_body_is_refused_and_changes_nothing(self, client, auth):
        await _create(client, auth, name="ci", key="key-2")
        other = await _create(client, auth, name="other", key="key-2")
        assert other.status_code == 400
        assert other.json()["code"] == "INVALID_INPUT"
        assert other.json()["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"
        _, total = await _all_ids(client, auth)
        assert total == 2

    async def test_refused_request_is_replayed_as_refused(self, client, auth, platform, settings, db):
        view_only = (await _create(client, auth, permissions=["VIEW", "MANAGE"])).json()
        creds = (view_only["clientId"], view_only["clientSecret"])
        first = await _create(client, creds, permissions=["TRANSACT"], key="esc")
        again = await _create(client, creds, permissions=["TRANSACT"], key="esc")
        assert first.status_code == again.status_code == 403
        assert first.content == again.content

    async def test_another_tokens_key_is_not_replayed_to_it(self, client, auth):
        """A replay would hand the first caller's token secret to a caller that may not hold its
        permissions: keys are scoped to the calling token."""
        manage_only = (await _create(client, auth, permissions=["MANAGE"])).json()
        weaker = (manage_only["clientId"], manage_only["clientSecret"])
        first = await _create(client, auth, name="txn", permissions=["TRANSACT", "VIEW"], key="shared")
        assert first.status_code == 201
        other = await _create(client, weaker, name="txn", permissions=["TRANSACT", "VIEW"], key="shared")
        assert other.status_code == 400 and other.json()["code"] == "INVALID_INPUT"
        assert other.json()["details"]["reason"] == "IDEMPOTENCY_KEY_REUSED"
        assert first.json()["clientSecret"] not in other.text
        _, total = await _all_ids(client, auth)
        assert total == 3  # bootstrap, manage_only, txn

    @pytest.mark.parametrize(
        ("body", "field"),
        [
            ({"name": "", "permissions": ["VIEW"]}, "name"),
            ({"name": "x", "permissions": []}, "permissions"),
            ({"name": "x", "permissions": ["ROOT"]}, "permissions.0"),
            ({"name": "x", "permissions": ["VIEW", "VIEW"]}, "permissions"),
            ({"permissions": ["VIEW"]}, "name"),
            ({"name": "x", "permissions": ["VIEW"], "admin": True}, "admin"),
        ],
    )
    async def test_invalid_bodies_name_the_field_and_create_nothing(self, client, auth, body, field):
        response = await client.post("/tokens", auth=auth, json=body)
        assert response.status_code == 400
        error = response.json()
        assert error["code"] == "INVALID_INPUT" and error["status"] == 400
        assert field in [f["field"] for f in error["details"]["fields"]]
        _, total = await _all_ids(client, auth)
        assert total == 1

    async def test_invalid_idempotency_key_is_rejected(self, client, auth):
        response = await _create(client, auth, key="x" * 300)
        assert response.status_code == 400
        assert response.json()["details"]["fields"][0]["field"] == "Idempotency-Key"


class TestPermissions:
    async def test_view_token_cannot_create_or_delete(self, client, auth):
        view = (await _create(client, auth, permissions=["VIEW"])).json()
        creds = (view["clientId"], view["clientSecret"])
        assert (await client.get("/tokens", auth=creds)).status_code == 200
        denied = await _create(client, creds)
        assert denied.status_code == 403 and denied.json()["code"] == "FORBIDDEN"
        assert (await client.delete(f"/tokens/{view['id']}", auth=creds)).status_code == 403
        assert (
            await client.patch("/config", auth=creds, json={"umaDomain": "x.example.com"})
        ).status_code == 403

    async def test_token_cannot_grant_permissions_it_lacks(self, client, auth):
        manager = (await _create(client, auth, permissions=["MANAGE"])).json()
        creds = (manager["clientId"], manager["clientSecret"])
        refused = await _create(client, creds, permissions=["TRANSACT"])
        assert refused.status_code == 403
        assert refused.json()["details"]["missingPermissions"] == ["TRANSACT"]
        assert (await _create(client, creds, permissions=["VIEW", "MANAGE"])).status_code == 201


class TestListTokens:
    async def test_limit_one_pages_through_every_token_exactly_once(self, client, auth):
        for i in range(5):
            await _create(client, auth, name=f"t{i}")
        ids, total = await _all_ids(client, auth, limit=1)
        assert len(ids) == len(set(ids)) == total == 6

    async def test_pages_neither_repeat_nor_skip_while_tokens_are_inserted(self, client, auth):
        for i in range(6):
            await _create(client, auth, name=f"before{i}")
        seen, cursor = [], None
        while True:
            params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = (await client.get("/tokens", auth=auth, params=params)).json()
            seen += [t["id"] for t in page["data"]]
            await _create(client, auth, name="during")  # inserted between pages
            if not page["hasMore"]:
                break
            cursor = page["nextCursor"]
        assert len(seen) == len(set(seen)) == 7  # everything present when paging began, once

    async def test_filters(self, client, auth):
        from platpay.kit import clock

        await _create(client, auth, name="alpha")
        midpoint = clock.isoformat(clock.now())
        await _create(client, auth, name="beta")
        named = (await client.get("/tokens", auth=auth, params={"name": "alpha"})).json()
        assert [t["name"] for t in named["data"]] == ["alpha"] and named["totalCount"] == 1
        after = (await client.get("/tokens", auth=auth, params={"createdAfter": midpoint})).json()
        assert [t["name"] for t in after["data"]] == ["beta"]
        before = (await client.get("/tokens", auth=auth, params={"createdBefore": midpoint})).json()
        assert "beta" not in [t["name"] for t in before["data"]]

    @pytest.mark.parametrize("params", [{"limit": 0}, {"limit": 101}, {"limit": "x"}, {"cursor": "garbage"}])
    async def test_bad_paging_parameters_are_400(self, client, auth, params):
        response = await client.get("/tokens", auth=auth, params=params)
        assert response.status_code == 400 and response.json()["code"] == "INVALID_INPUT"


class TestDeleteToken:
    async def test_deleted_token_stops_authenticating_immediately(self, client, auth):
        body = (await _create(client, auth)).json()
        creds = (body["clientId"], body["clientSecret"])
        assert (await client.get("/config", auth=creds)).status_code == 200
        assert (await client.delete(f"/tokens/{body['id']}", auth=auth)).status_code == 204
        denied = await client.get("/config", auth=creds)
        assert denied.status_code == 401 and denied.json()["code"] == "UNAUTHORIZED"
        assert (await client.get(f"/tokens/{body['id']}", auth=auth)).status_code == 404
        assert (await client.delete(f"/tokens/{body['id']}", auth=auth)).status_code == 404

    async def test_last_manage_token_cannot_be_deleted(self, client, auth):
        bootstrap_id = (await client.get("/tokens", auth=auth)).json()["data"][0]["id"]
        refused = await client.delete(f"/tokens/{bootstrap_id}", auth=auth)
        assert refused.status_code == 409
        assert (await client.get("/config", auth=auth)).status_code == 200


class TestTenantIsolation:
    async def test_other_tenants_tokens_are_invisible(self, client, auth, db, settings, platform):
        other = await create_platform(db, settings, name="Other")
        mine = (await _create(client, auth, name="mine")).json()
        theirs = (await _create(client, other["sandbox"], name="theirs")).json()
        assert (await client.get(f"/tokens/{theirs['id']}", auth=auth)).status_code == 404
        assert (await client.delete(f"/tokens/{theirs['id']}", auth=auth)).status_code == 404
        listed = (await client.get("/tokens", auth=auth)).json()
        assert theirs["id"] not in [t["id"] for t in listed["data"]] and listed["totalCount"] == 2
        # sandbox and production of the same platform are separate tenants too
        prod = await client.get(f"/tokens/{mine['id']}", auth=platform["production"])
        assert prod.status_code == 404

    async def test_same_idempotency_key_in_two_tenants_are_independent(self, client, auth, db, settings):
        other = await create_platform(db, settings, name="Other")
        a = await _create(client, auth, name="a", key="shared")
        b = await _create(client, other["sandbox"], name="b", key="shared")
        assert a.status_code == b.status_code == 201 and a.json()["id"] != b.json()["id"]


class TestAuthentication:
    @pytest.mark.parametrize(
        "headers",
        [
            {},
            {"Authorization": "Bearer abc"},
            {"Authorization": "Basic !!!notbase64"},
            {"Authorization": "Basic " + "eA=="},
        ],
    )
    async def test_missing_or_malformed_credentials_are_401_with_challenge(self, client, headers):
        response = await client.get("/config", headers=headers)
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Basic")
        assert set(response.json()) == {"status", "code", "message", "details"}

    async def test_wrong_secret_is_401(self, client, auth):
        response = await client.get("/config", auth=(auth[0], "0" * 64))
        assert response.status_code == 401 and response.json()["code"] == "UNAUTHORIZED"
