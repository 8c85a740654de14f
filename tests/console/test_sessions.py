"""Console sessions and their CSRF tokens (auth/sessions/service.py, console/web.py, console/signin.py):
signing in and out, what ends a session, the security headers, the sign-in limits, the CSRF rule."""

from __future__ import annotations

import asyncio

import pytest

from platpay.auth.sessions import service as sessions_service
from tests.support.console import console_client, csrf_of, sign_in, signed_in


def test_csrf_token_is_per_session_and_checked_in_constant_time() -> None:
    a, b = "secret-a", "secret-b"
    assert sessions_service.csrf_token(a) != sessions_service.csrf_token(b)
    assert sessions_service.csrf_matches(a, sessions_service.csrf_token(a))
    assert not sessions_service.csrf_matches(a, sessions_service.csrf_token(b))
    assert not sessions_service.csrf_matches(a, None)
    assert not sessions_service.csrf_matches(a, "")


async def test_pages_need_a_session(app) -> None:
    async with console_client(app) as client:
        answer = await client.get("/console?x=1")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/console/sign-in?next=%2Fconsole%3Fx%3D1"


async def test_sign_in_sets_a_strict_http_only_cookie_and_lands_on_next(app, auth) -> None:
    async with console_client(app) as client:
        answer = await sign_in(client, auth, next_path="/console/developers")
        assert answer.status_code == 303
        assert answer.headers["location"] == "/console/developers"
        cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith("platpay_console="))
        assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/console" in cookie
        assert "Secure" not in cookie  # plain http here; https sets it
        assert cookie.split("=", 1)[1].startswith("sandbox.")
        page = await client.get("/console")
        assert page.status_code == 200
        assert "Sandbox: test data" in page.text
        for name, value in {
            "x-frame-options": "DENY",
            "cache-control": "no-store",
            "x-content-type-options": "nosniff",
        }.items():
            assert page.headers[name] == value
        csp = page.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp


async def test_sign_in_over_https_marks_the_cookie_secure(app, auth) -> None:
    async with console_client(app, base_url="https://testserver") as client:
        answer = await sign_in(client, auth)
        cookie = next(h for h in answer.headers.get_list("set-cookie") if h.startswith("platpay_console="))
        assert "Secure" in cookie


async def test_production_pages_look_different(app, platform) -> None:
    async with console_client(app) as client:
        await signed_in(client, platform["production"])
        page = await client.get("/console")
        assert 'class="env-production"' in page.text and "Production: real customers" in page.text
        assert "/console/sandbox" not in page.text  # no sandbox tools in production


@pytest.mark.parametrize("which", ["client_id", "client_secret"])
async def test_wrong_credentials_get_one_generic_answer(app, auth, which) -> None:
    client_id, secret = auth
    wrong = (client_id + "x", secret) if which == "client_id" else (client_id, secret + "x")
    async with console_client(app) as client:
        answer = await sign_in(client, wrong)
        assert answer.status_code == 401
        assert "Those credentials were not accepted" in answer.text
        assert "platpay_console=" not in answer.headers.get("set-cookie", "")
        assert "secret" not in answer.text.split("Those credentials")[1].split("</div>")[0].replace(
            "client id and secret", ""
        )


async def test_the_two_wrong_halves_read_the_same(app, auth) -> None:
    client_id, secret = auth
    async with console_client(app) as client:
        a = await sign_in(client, (client_id + "x", secret))
        b = await sign_in(client, (client_id, secret + "x"))
    strip = lambda html: csrf_of(html) and html.replace(csrf_of(html), "")  # noqa: E731
    assert strip(a.text).replace(client_id + "x", "") == strip(b.text).replace(client_id, "")


async def test_sign_in_is_rate_limited_per_client_id(app, auth, settings) -> None:
    client_id, _secret = auth
    async with console_client(app) as client:
        for _ in range(settings.console_signin_per_client):
            assert (await sign_in(client, (client_id, "wrong"))).status_code == 401
        refused = await sign_in(client, (client_id, "wrong"))
        assert refused.status_code == 429
        assert int(refused.headers["retry-after"]) >= 1
        assert "Too many attempts" in refused.text
        # the right secret is refused too while the window lasts
        assert (await sign_in(client, auth)).status_code == 429


async def test_sign_in_is_rate_limited_per_address(app, platform, settings) -> None:
    settings.console_signin_per_address = 3
    async with console_client(app) as client:
        for index in range(3):
            assert (await sign_in(client, (f"unknown-{index}", "x"))).status_code == 401
        assert (await sign_in(client, (platform["sandbox"][0], platform["sandbox"][1]))).status_code == 429


async def test_sign_in_form_without_its_cookie_is_refused(app, auth) -> None:
    async with console_client(app) as client:
        page = await client.get("/console/sign-in")
        client.cookies.clear()
        answer = await client.post(
            "/console/sign-in",
            data={"csrf": csrf_of(page.text), "client_id": auth[0], "client_secret": auth[1]},
        )
        assert answer.status_code == 403
        assert "platpay_console=" not in answer.headers.get("set-cookie", "")


async def test_sign_out_needs_the_csrf_token_and_ends_the_session(app, auth) -> None:
    async with console_client(app) as client:
        csrf = await signed_in(client, auth)
        forged = await client.post("/console/sign-out", data={"csrf": "forged"})
        assert forged.status_code == 403 and "not sent by your console session" in forged.text
        assert (await client.get("/console")).status_code == 200  # still signed in
        cookie = client.cookies.get("platpay_console")
        out = await client.post("/console/sign-out", data={"csrf": csrf})
        assert out.status_code == 303 and out.headers["location"] == "/console/sign-in"
        client.cookies.set("platpay_console", cookie, path="/console")  # an old copy of the cookie
        assert (await client.get("/console")).status_code == 303


async def test_deleting_the_token_ends_its_sessions(app, client, auth, platform) -> None:
    created = await client.post(
        "/tokens", auth=auth, json={"name": "console user", "permissions": ["VIEW", "MANAGE"]}
    )
    assert created.status_code == 201, created.text
    token = created.json()
    async with console_client(app) as console:
        await signed_in(console, (token["clientId"], token["clientSecret"]))
        deleted = await client.delete(f"/tokens/{token['id']}", auth=auth)
        assert deleted.status_code in (200, 204), deleted.text
        assert (await console.get("/console")).status_code == 303


async def test_a_cookie_naming_another_environment_goes_to_sign_in(app, auth) -> None:
    async with console_client(app) as client:
        await signed_in(client, auth)
        cookie = client.cookies.get("platpay_console")
        assert cookie.startswith("sandbox.")
        client.cookies.set("platpay_console", "production." + cookie.split(".", 1)[1], path="/console")
        assert (await client.get("/console")).status_code == 303
        client.cookies.set("platpay_console", "sandbox.not-a-session", path="/console")
        assert (await client.get("/console")).status_code == 303


async def test_a_session_expires(app, auth, settings) -> None:
    settings.console_session_seconds = 60
    async with console_client(app) as client:
        await signed_in(client, auth)
        from platpay.kit import clock

        clock.advance(__import__("datetime").timedelta(seconds=61))  # the process clock (tests only)
        assert (await client.get("/console")).status_code == 303


async def test_sessions_use_wall_time_not_the_sandbox_clock(app, client, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        moved = await client.post("/sandbox/clock/advance", auth=auth, json={"seconds": 86400 * 30})
        assert moved.status_code in (200, 201), moved.text
        assert (await console.get("/console")).status_code == 200


async def test_sign_in_and_out_are_in_the_trail(app, db, auth, platform) -> None:
    async with console_client(app) as client:
        csrf = await signed_in(client, auth)
        await client.post("/console/sign-out", data={"csrf": csrf})
    async with db.read() as session:
        from sqlalchemy import select

        from platpay.auth.sessions.models import ConsoleActionRow

        rows = (await session.scalars(select(ConsoleActionRow).order_by(ConsoleActionRow.sequence))).all()
        assert [r.action for r in rows] == ["SIGNED_IN", "SIGNED_OUT"]
        check = await sessions_service.verify_trail(session, tenant_id=rows[0].tenant_id)
        assert check.problem is None and check.records == 2


async def test_concurrent_actions_keep_one_chain(app, db, auth) -> None:
    async with console_client(app) as a, console_client(app) as b:
        await asyncio.gather(signed_in(a, auth), signed_in(b, auth))
    async with db.read() as session:
        from sqlalchemy import select

        from platpay.auth.sessions.models import ConsoleActionRow

        rows = (await session.scalars(select(ConsoleActionRow))).all()
        check = await sessions_service.verify_trail(session, tenant_id=rows[0].tenant_id)
        assert check.problem is None and check.records == 2


async def test_an_edited_or_removed_record_breaks_the_trail(app, db, auth) -> None:
    async with console_client(app) as client:
        csrf = await signed_in(client, auth)
        await client.post("/console/sign-out", data={"csrf": csrf})
    from sqlalchemy import select, text

    from platpay.auth.sessions.models import ConsoleActionRow

    async with db.read() as session:
        rows = (await session.scalars(select(ConsoleActionRow).order_by(ConsoleActionRow.sequence))).all()
    tenant_id, first, last = rows[0].tenant_id, rows[0].id, rows[-1].id
    async with db.transaction() as session:
        await session.execute(
            text("UPDATE console_actions SET action = 'SIGNED_OUT' WHERE id = :id"), {"id": first}
        )
    async with db.read() as session:
        check = await sessions_service.verify_trail(session, tenant_id=tenant_id)
    assert check.problem is not None and first in check.problem and "hash" in check.problem
    async with db.transaction() as session:
        await session.execute(
            text("UPDATE console_actions SET action = 'SIGNED_IN' WHERE id = :id"), {"id": first}
        )
        await session.execute(text("DELETE FROM console_actions WHERE id = :id"), {"id": last})
    async with db.read() as session:
        check = await sessions_service.verify_trail(session, tenant_id=tenant_id)
    assert check.problem is not None and "removed" in check.problem
