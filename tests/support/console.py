"""Driving the console (/console) over HTTP in tests: a client with a cookie jar, signing in the way a
browser does (the sign-in form's own CSRF value), and reading a page's CSRF token for its forms."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx

_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def csrf_of(html: str) -> str:
    found = _CSRF.search(html)
    assert found is not None, "the page has no form with a CSRF token"
    return found.group(1)


@asynccontextmanager
async def console_client(app: Any, base_url: str = "http://testserver") -> AsyncIterator[httpx.AsyncClient]:
    """A client for the console pages of `app` (cookies kept, redirects not followed)."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
        yield client


async def sign_in(
    client: httpx.AsyncClient, credentials: tuple[str, str], *, next_path: str | None = None
) -> httpx.Response:
    """Load the sign-in form and send it; returns the POST's answer (303 to the console when accepted)."""
    form_page = await client.get("/console/sign-in", params={"next": next_path} if next_path else None)
    assert form_page.status_code == 200, form_page.text
    client_id, secret = credentials
    data = {"csrf": csrf_of(form_page.text), "client_id": client_id, "client_secret": secret}
    if next_path:
        data["next"] = next_path
    return await client.post("/console/sign-in", data=data)


async def signed_in(client: httpx.AsyncClient, credentials: tuple[str, str]) -> str:
    """Sign in (asserting it worked) and return a CSRF token for the session's forms."""
    answer = await sign_in(client, credentials)
    assert answer.status_code == 303, answer.text
    page = await client.get("/console")
    assert page.status_code == 200, page.text
    return csrf_of(page.text)
