"""The console's developers page (console/pages/developers.py) over HTTP, on both backends: API tokens (list,
create with the secret shown once, delete), the webhook endpoint and the configuration, the trail, the
refusals (CSRF, permission, escalation, the last MANAGE token, another tenant's token)."""

from __future__ import annotations

import re

import httpx

from platpay.auth.sessions import service as sessions_service
from tests.factories import create_platform
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.statements import count_statements

_KEY = re.compile(r'name="key" value="([^"]+)"')


async def _token(client: httpx.AsyncClient, auth, name: str, permissions: list[str]) -> dict:
    created = await client.post("/tokens", auth=auth, json={"name": name, "permissions": permissions})
    assert created.status_code == 201, created.text
    return created.json()


async def _create_form(console: httpx.AsyncClient) -> dict[str, str]:
    page = await console.get("/console/developers")
    assert page.status_code == 200, page.text
    found = _KEY.search(page.text)
    assert found is not None, "no create form"
    return {"csrf": csrf_of(page.text), "key": found.group(1)}


async def test_page_lists_tokens_config_and_endpoint(app, client, auth) -> None:
    await _token(client, auth, "ci pipeline", ["VIEW", "TRANSACT"])
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get("/console/developers")
    assert page.status_code == 200
    html = page.text
    assert "ci pipeline" in html and "VIEW, TRANSACT" in html
    config = (await client.get("/config", auth=auth)).json()
    assert config["umaDomain"] in html and "webhookPublicKey" in html
    assert 'action="/console/developers/tokens"' in html and "data-confirm=" in html
    assert html.count("<h1>") == 1
    assert page.headers["cache-control"] == "no-store"


async def test_create_token_shows_the_secret_once_and_it_works(app, client, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        form = await _create_form(console)
        answer = await console.post(
            "/console/developers/tokens",
            data={**form, "name": "from the console", "permissions": ["VIEW", "TRANSACT"]},
        )
        assert answer.status_code == 200, (
            answer.text
        )  # the answer itself, no redirect to a page that shows it
        assert answer.headers["cache-control"] == "no-store"
        client_id = re.search(r'id="client-id">([^<]+)<', answer.text).group(1)
        secret = re.search(r'id="client-secret">([^<]+)<', answer.text).group(1)
        # the secret works against the API
        tokens = await client.get("/tokens", auth=(client_id, secret))
        assert tokens.status_code == 200
        created = next(t for t in tokens.json()["data"] if t["clientId"] == client_id)
        assert created["name"] == "from the console" and created["permissions"] == ["VIEW", "TRANSACT"]
        # never shown again: not on the list, not on a second sending of the same form (no second token)
        page = await console.get("/console/developers")
        assert secret not in page.text and "from the console" in page.text and "TOKEN_CREATED" in page.text
        again = await console.post(
            "/console/developers/tokens",
            data={**form, "name": "from the console", "permissions": ["VIEW", "TRANSACT"]},
        )
        assert again.status_code == 200 and secret not in again.text and client_id in again.text
        assert "already been sent" in again.text
    listed = (await client.get("/tokens", auth=auth, params={"name": "from the console"})).json()
    assert listed["totalCount"] == 1


async def test_a_token_may_not_grant_what_the_session_lacks(app, client, auth) -> None:
    transact = await _token(client, auth, "transact only", ["VIEW", "TRANSACT"])
    manager = await _token(client, auth, "manager", ["VIEW", "MANAGE"])
    async with console_client(app) as console:
        await signed_in(console, (manager["clientId"], manager["clientSecret"]))
        form = await _create_form(console)
        refused = await console.post(
            "/console/developers/tokens", data={**form, "name": "escalate", "permissions": ["TRANSACT"]}
        )
        assert refused.status_code == 403 and "cannot grant TRANSACT" in refused.text
    assert transact  # (exists; the refusal is about the session's token, not the environment's)
    assert (await client.get("/tokens", auth=auth, params={"name": "escalate"})).json()["totalCount"] == 0


async def test_bad_create_input_is_a_400_page_naming_the_field(app, client, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        form = await _create_form(console)
        no_perm = await console.post("/console/developers/tokens", data={**form, "name": "x"})
        assert no_perm.status_code == 400 and "permissions" in no_perm.text
        bad = await console.post(
            "/console/developers/tokens", data={**form, "name": "x", "permissions": ["ROOT"]}
        )
        assert bad.status_code == 400 and "permissions" in bad.text
        no_name = await console.post("/console/developers/tokens", data={**form, "permissions": ["VIEW"]})
        assert no_name.status_code == 400 and "name is required" in no_name.text
    assert (await client.get("/tokens", auth=auth)).json()["totalCount"] == 1


async def test_delete_a_token(app, client, auth) -> None:
    other = await _token(client, auth, "to delete", ["VIEW"])
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        answer = await console.post(f"/console/developers/tokens/{other['id']}/delete", data={"csrf": csrf})
        assert answer.status_code == 303 and answer.headers["location"] == "/console/developers"
        page = await console.get("/console/developers")
        assert "TOKEN_DELETED" in page.text and other["id"] in page.text
    assert (await client.get(f"/tokens/{other['id']}", auth=auth)).status_code == 404
    assert (await client.get("/tokens", auth=(other["clientId"], other["clientSecret"]))).status_code == 401


async def test_deleting_the_sessions_own_token_signs_out(app, client, auth) -> None:
    mine = await _token(client, auth, "my console token", ["VIEW", "MANAGE"])
    async with console_client(app) as console:
        csrf = await signed_in(console, (mine["clientId"], mine["clientSecret"]))
        answer = await console.post(f"/console/developers/tokens/{mine['id']}/delete", data={"csrf": csrf})
        assert answer.status_code == 200 and "Signed out" in answer.text and "my console token" in answer.text
        assert "platpay_console=" in answer.headers.get("set-cookie", "")  # the cookie is removed
        assert (await console.get("/console/developers")).status_code == 303  # to sign-in
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get("/console/developers")
        assert "TOKEN_DELETED" in page.text and mine["id"] in page.text


async def test_the_last_manage_token_cannot_be_deleted(app, client, auth, platform) -> None:
    tokens = (await client.get("/tokens", auth=auth)).json()["data"]
    (only,) = [t for t in tokens if "MANAGE" in t["permissions"]]
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        refused = await console.post(f"/console/developers/tokens/{only['id']}/delete", data={"csrf": csrf})
        assert refused.status_code == 409 and "last token with MANAGE" in refused.text
        assert (
            "<h1>" in refused.text and "TOKEN_DELETED" not in (await console.get("/console/developers")).text
        )
    assert (await client.get(f"/tokens/{only['id']}", auth=auth)).status_code == 200


async def test_another_tenants_or_unknown_token_is_a_404_page(app, client, auth, db, settings) -> None:
    other = await create_platform(db, settings, name="Other")
    theirs = (await client.get("/tokens", auth=other["sandbox"])).json()["data"][0]
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        for token_id in (theirs["id"], "Token:nope"):
            answer = await console.post(f"/console/developers/tokens/{token_id}/delete", data={"csrf": csrf})
            assert answer.status_code == 404 and "Not found" in answer.text
    assert (await client.get(f"/tokens/{theirs['id']}", auth=other["sandbox"])).status_code == 200


async def test_view_token_sees_no_buttons_and_its_posts_are_403(app, client, auth) -> None:
    viewer = await _token(client, auth, "viewer", ["VIEW"])
    victim = await _token(client, auth, "victim", ["VIEW"])
    async with console_client(app) as console:
        csrf = await signed_in(console, (viewer["clientId"], viewer["clientSecret"]))
        page = await console.get("/console/developers")
        assert page.status_code == 200 and "victim" in page.text
        assert (
            "Create token" not in page.text and "Delete" not in page.text and "Save endpoint" not in page.text
        )
        for path, data in (
            ("/console/developers/tokens", {"name": "x", "permissions": ["VIEW"], "key": "k" * 20}),
            (f"/console/developers/tokens/{victim['id']}/delete", {}),
            ("/console/developers/config", {"webhook_endpoint": "https://example.com/x"}),
        ):
            answer = await console.post(path, data={"csrf": csrf, **data})
            assert answer.status_code == 403 and "lacks the MANAGE permission" in answer.text
    assert (await client.get(f"/tokens/{victim['id']}", auth=auth)).status_code == 200
    assert "webhookEndpoint" not in (await client.get("/config", auth=auth)).json()


async def test_forged_csrf_is_refused(app, client, auth) -> None:
    victim = await _token(client, auth, "victim", ["VIEW"])
    async with console_client(app) as console:
        await signed_in(console, auth)
        form = await _create_form(console)
        for path, data in (
            ("/console/developers/tokens", {"name": "x", "permissions": ["VIEW"], "key": form["key"]}),
            (f"/console/developers/tokens/{victim['id']}/delete", {}),
            ("/console/developers/config", {"webhook_endpoint": "https://example.com/x"}),
        ):
            answer = await console.post(path, data={"csrf": "forged", **data})
            assert answer.status_code == 403 and "not sent by your console session" in answer.text
    assert (await client.get("/tokens", auth=auth)).json()["totalCount"] == 2
    assert "webhookEndpoint" not in (await client.get("/config", auth=auth)).json()


async def test_change_webhook_endpoint_and_configuration(app, client, auth, runner, receiver) -> None:
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        answer = await console.post(
            "/console/developers/config", data={"csrf": csrf, "webhook_endpoint": receiver.url}
        )
        assert answer.status_code == 303 and answer.headers["location"] == "/console/developers"
        config = (await client.get("/config", auth=auth)).json()
        assert config["webhookEndpoint"] == receiver.url
        await runner.run_until_idle()
        assert len(receiver.of_type("TEST")) == 1  # a new endpoint gets a TEST event, as PATCH /config does
        changed = await console.post(
            "/console/developers/config",
            data={"csrf": csrf, "uma_domain": "renamed.example.com", "end_user_terms_required": "on"},
        )
        assert changed.status_code == 303
        config = (await client.get("/config", auth=auth)).json()
        assert config["umaDomain"] == "renamed.example.com" and config["endUserTermsRequired"] is True
        assert config["webhookEndpoint"] == receiver.url  # untouched by the other form
        page = await console.get("/console/developers")
        assert page.text.count("CONFIG_UPDATED") == 2 and "renamed.example.com" in page.text
        removed = await console.post(
            "/console/developers/config", data={"csrf": csrf, "webhook_endpoint": ""}
        )
        assert removed.status_code == 303
        assert "webhookEndpoint" not in (await client.get("/config", auth=auth)).json()
        bad = await console.post(
            "/console/developers/config", data={"csrf": csrf, "webhook_endpoint": "not a url"}
        )
        assert bad.status_code == 400 and "webhookEndpoint" in bad.text


async def test_the_trail_records_the_changes(app, client, auth, db) -> None:
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        form = await _create_form(console)
        await console.post("/console/developers/tokens", data={**form, "name": "t", "permissions": ["VIEW"]})
        await console.post("/console/developers/config", data={"csrf": csrf, "uma_domain": "x.example.com"})
    config_id = (await client.get("/config", auth=auth)).json()["id"]
    async with db.read() as session:
        from sqlalchemy import select

        from platpay.auth.sessions.models import ConsoleActionRow

        rows = (await session.scalars(select(ConsoleActionRow).order_by(ConsoleActionRow.sequence))).all()
        assert [r.action for r in rows] == ["SIGNED_IN", "TOKEN_CREATED", "CONFIG_UPDATED"]
        assert rows[2].subject_id == config_id and rows[2].data == {"umaDomain": "x.example.com"}
        tenant_id = rows[0].tenant_id
        kinds = await sessions_service.actions_of_kind(session, tenant_id=tenant_id, subject_type="ApiToken")
        assert [r.action for r in kinds] == ["TOKEN_CREATED", "SIGNED_IN"]  # newest first
        check = await sessions_service.verify_trail(session, tenant_id=tenant_id)
        assert check.problem is None and check.records == 3


async def test_tokens_list_is_paginated_and_runs_a_fixed_number_of_statements(app, client, auth, db) -> None:
    async def statements_for(n: int) -> int:
        async with console_client(app) as console:
            await signed_in(console, auth)
            with count_statements(db) as seen:
                page = await console.get("/console/developers", params={"limit": 100})
            assert page.status_code == 200
            assert page.text.count('action="/console/developers/tokens/Token:') == n + 1
        return seen.count

    for index in range(3):
        await _token(client, auth, f"t{index}", ["VIEW"])
    three = await statements_for(3)
    for index in range(3, 30):
        await _token(client, auth, f"t{index}", ["VIEW"])
    assert await statements_for(30) == three

    async with console_client(app) as console:
        await signed_in(console, auth)
        first = await console.get("/console/developers", params={"limit": 20})
        next_url = re.search(r'<a href="([^"]+)" rel="next">', first.text).group(1).replace("&amp;", "&")
        second = await console.get(next_url)
        assert second.status_code == 200
        names = lambda html: set(re.findall(r"<td>(t\d+)", html))  # noqa: E731
        assert names(first.text) and names(second.text) and not names(first.text) & names(second.text)
        assert len(names(first.text) | names(second.text)) == 30
        bad = await console.get("/console/developers", params={"limit": "lots"})
        assert bad.status_code == 400 and "limit" in bad.text
