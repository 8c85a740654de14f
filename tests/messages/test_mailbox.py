"""GET /sandbox/mailbox: the sandbox's messages through the API, with filters and pagination."""

from __future__ import annotations

import pytest

from platpay.auth import service as auth_service
from platpay.messages import service
from tests.factories import create_platform


@pytest.fixture
async def sandbox_tenant(db, platform):
    client_id, secret = platform["sandbox"]
    async with db.read() as session:
        principal = await auth_service.authenticate(session, client_id=client_id, client_secret=secret)
    assert principal is not None
    return principal.tenant


async def _send_some(db, tenant):
    """Four messages, oldest first: two emails to Jane (one a verification), one to Bob, one SMS."""
    async with db.transaction() as session:
        ids = [
            await service.send_email(
                session,
                tenant=tenant,
                to="Jane@Example.com",
                subject="Code",
                text="111111",
                category="wallet.otp",
            ),
            await service.send_email(
                session,
                tenant=tenant,
                to="bob@example.com",
                subject="Code",
                text="222222",
                category="wallet.otp",
            ),
            await service.send_sms(
                session, tenant=tenant, to="+14155550123", text="333333", category="customer.verify_phone"
            ),
            await service.send_email(
                session,
                tenant=tenant,
                to="jane@example.com",
                subject="Verify your email",
                text="444444",
                html="<p>444444</p>",
                category="customer.verify_email",
            ),
        ]
    return ids


async def test_the_mailbox_lists_newest_first_with_filters(db, client, auth, runner, sandbox_tenant):
    ids = await _send_some(db, sandbox_tenant)
    queued = (await client.get("/sandbox/mailbox", auth=auth)).json()
    assert [item["status"] for item in queued["data"]] == ["QUEUED"] * 4
    assert all("sentAt" not in item for item in queued["data"])

    await runner.run_until_idle()  # the `none` email sender: recorded as sent
    body = (await client.get("/sandbox/mailbox", auth=auth)).json()
    assert body["totalCount"] == 4 and body["hasMore"] is False and "nextCursor" not in body
    assert [item["id"] for item in body["data"]] == ids[::-1]
    newest = body["data"][0]
    assert newest == {
        "id": ids[3],
        "channel": "EMAIL",
        "to": "jane@example.com",
        "subject": "Verify your email",
        "text": "444444",
        "html": "<p>444444</p>",
        "category": "customer.verify_email",
        "status": "SENT",
        "createdAt": newest["createdAt"],
        "sentAt": newest["sentAt"],
    }
    assert newest["createdAt"].endswith("Z") and newest["sentAt"] >= newest["createdAt"]

    async def listed(**params):
        response = await client.get("/sandbox/mailbox", auth=auth, params=params)
        assert response.status_code == 200, response.text
        return [item["text"] for item in response.json()["data"]]

    assert await listed(to="jane@example.com") == ["444444", "111111"]
    assert await listed(to="JANE@example.COM", category="wallet.otp") == ["111111"]
    assert await listed(channel="SMS") == ["333333"]
    assert await listed(channel="EMAIL", category="wallet.otp") == ["222222", "111111"]
    assert await listed(to="nobody@example.com") == []


async def test_the_mailbox_pages_with_cursors(db, client, auth, sandbox_tenant):
    ids = await _send_some(db, sandbox_tenant)
    seen, cursor = [], None
    while True:
        params = {"limit": 3, **({"cursor": cursor} if cursor else {})}
        page = (await client.get("/sandbox/mailbox", auth=auth, params=params)).json()
        assert page["totalCount"] == 4
        seen += [item["id"] for item in page["data"]]
        if not page["hasMore"]:
            break
        cursor = page["nextCursor"]
    assert seen == ids[::-1]

    filtered = (
        await client.get("/sandbox/mailbox", auth=auth, params={"limit": 1, "channel": "EMAIL"})
    ).json()
    assert filtered["totalCount"] == 3 and filtered["hasMore"] is True
    bad = await client.get("/sandbox/mailbox", auth=auth, params={"cursor": "not-a-cursor"})
    assert bad.status_code == 400 and bad.json()["code"] == "INVALID_INPUT"


@pytest.mark.parametrize(
    "params", [{"channel": "FAX"}, {"limit": 0}, {"limit": 101}, {"to": ""}, {"category": "x" * 65}]
)
async def test_bad_mailbox_queries_are_400(client, auth, params):
    response = await client.get("/sandbox/mailbox", auth=auth, params=params)
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "INVALID_INPUT"


async def test_production_credentials_get_403_and_no_tenant_sees_another(
    db, client, settings, platform, sandbox_tenant
):
    await _send_some(db, sandbox_tenant)
    response = await client.get("/sandbox/mailbox", auth=platform["production"])
    assert response.status_code == 403 and response.json()["code"] == "FORBIDDEN"
    assert (await client.get("/sandbox/mailbox")).status_code == 401
    other = await create_platform(db, settings)  # another platform's sandbox sees none of these
    body = (await client.get("/sandbox/mailbox", auth=other["sandbox"])).json()
    assert body["totalCount"] == 0 and body["data"] == []
