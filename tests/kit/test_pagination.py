"""Cursors are bound to the list that returned them: a cursor from another list, for the other sort order,
or edited in any way is a 400 naming `cursor`; a genuine one keeps keyset semantics."""

from __future__ import annotations

import base64
import json

import httpx
import pytest

from platpay import BASE_PATH
from platpay.app import create_app


def assert_bad_cursor(response: httpx.Response, message: str | None = None) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "INVALID_INPUT"
    [field] = body["details"]["fields"]
    assert (field["field"], field["location"]) == ("cursor", "query")
    if message is not None:
        assert field["message"] == message


async def _create_tokens(client, auth, count: int) -> list[str]:
    ids = []
    for index in range(count):
        response = await client.post(
            "/tokens", auth=auth, json={"name": f"t{index}", "permissions": ["VIEW"]}
        )
        assert response.status_code == 201, response.text
        ids.append(response.json()["id"])
    return ids


async def _tokens_cursor(client, auth) -> str:
    page = (await client.get("/tokens", auth=auth, params={"limit": 1})).json()
    assert page["hasMore"], page
    return page["nextCursor"]


def _payload(cursor: str) -> dict:
    payload_part = cursor.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(payload_part + "=" * (-len(payload_part) % 4)))


def _with_payload(cursor: str, payload: dict) -> str:
    raw = json.dumps(payload, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode() + "." + cursor.split(".")[1]


class TestForeignCursors:
    @pytest.mark.parametrize(
        "other_list", ["/webhooks/deliveries", "/customers", "/customers/external-accounts", "/transactions"]
    )
    async def test_a_tokens_cursor_on_another_list_is_400_naming_cursor(self, client, auth, other_list):
        await _create_tokens(client, auth, 2)
        cursor = await _tokens_cursor(client, auth)
        response = await client.get(other_list, auth=auth, params={"cursor": cursor})
        assert_bad_cursor(response, "cursor was returned by another list")

    async def test_a_cursor_for_the_other_sort_order_is_400(self, client, auth):
        await _create_tokens(client, auth, 2)
        response = await client.get("/uma-providers", auth=auth, params={"limit": 1, "sortOrder": "asc"})
        cursor = response.json()["nextCursor"]
        response = await client.get(
            "/uma-providers", auth=auth, params={"sortOrder": "desc", "cursor": cursor}
        )
        assert_bad_cursor(response, "cursor was made for the other sortOrder")


class TestTamperedCursors:
    async def test_a_cursor_with_an_edited_id_is_400(self, client, auth):
        ids = await _create_tokens(client, auth, 3)
        cursor = await _tokens_cursor(client, auth)
        edited = _with_payload(cursor, {**_payload(cursor), "a": ids[0]})
        assert_bad_cursor(await client.get("/tokens", auth=auth, params={"cursor": edited}))

    async def test_a_cursor_relabelled_for_another_list_is_400(self, client, auth):
        await _create_tokens(client, auth, 2)
        tokens_cursor = await _tokens_cursor(client, auth)
        other = await client.get("/webhooks/deliveries", auth=auth, params={"cursor": tokens_cursor})
        assert other.status_code == 400
        # Claim to be a deliveries cursor: the list name is signed with everything else.
        relabelled = _with_payload(tokens_cursor, {**_payload(tokens_cursor), "l": "0000000000"})
        assert_bad_cursor(await client.get("/webhooks/deliveries", auth=auth, params={"cursor": relabelled}))

    @pytest.mark.parametrize(
        "make_cursor",
        [
            lambda cursor: cursor[:-2] + ("AA" if cursor[-2:] != "AA" else "BB"),  # signature changed
            lambda cursor: cursor.split(".")[0],  # signature removed
            lambda cursor: cursor + ".x",
            # The old unsigned format: {"after": id, "desc": true}
            lambda cursor: base64.urlsafe_b64encode(
                json.dumps({"after": _payload(cursor)["a"], "desc": True}).encode()
            ).decode(),
        ],
    )
    async def test_a_cursor_not_made_by_this_service_is_400(self, client, auth, make_cursor):
        await _create_tokens(client, auth, 2)
        cursor = await _tokens_cursor(client, auth)
        assert_bad_cursor(await client.get("/tokens", auth=auth, params={"cursor": make_cursor(cursor)}))


class TestGenuineCursors:
    async def test_paging_returns_every_item_once_in_order_despite_inserts(self, client, auth):
        await _create_tokens(client, auth, 4)
        everything = [item["id"] for item in (await client.get("/tokens", auth=auth)).json()["data"]]
        seen, params = [], {"limit": 2}
        while True:
            page = (await client.get("/tokens", auth=auth, params=params)).json()
            seen.extend(item["id"] for item in page["data"])
            if not page["hasMore"]:
                break
            await _create_tokens(client, auth, 1)  # newer than every cursor: never shows up on later pages
            params = {"limit": 2, "cursor": page["nextCursor"]}
        assert seen == everything

    async def test_another_process_with_the_same_master_key_accepts_the_cursor(
        self, client, auth, settings, db
    ):
        await _create_tokens(client, auth, 3)
        cursor = await _tokens_cursor(client, auth)
        expected = (await client.get("/tokens", auth=auth, params={"cursor": cursor})).json()
        other_app = create_app(settings, database=db, embedded_worker=False)
        transport = httpx.ASGITransport(app=other_app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://other{BASE_PATH}") as other:
            response = await other.get("/tokens", auth=auth, params={"cursor": cursor})
            assert response.status_code == 200 and response.json() == expected

    async def test_a_deployment_with_another_master_key_refuses_the_cursor(self, client, auth, settings, db):
        await _create_tokens(client, auth, 3)
        cursor = await _tokens_cursor(client, auth)
        other_key = base64.urlsafe_b64encode(b"o" * 32).rstrip(b"=").decode()
        other_app = create_app(settings.model_copy(update={"master_key": other_key}), database=db)
        transport = httpx.ASGITransport(app=other_app)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://other{BASE_PATH}") as other:
            assert_bad_cursor(await other.get("/tokens", auth=auth, params={"cursor": cursor}))
