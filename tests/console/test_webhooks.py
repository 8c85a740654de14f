"""The console's webhooks pages (console/pages/webhooks.py) over HTTP, on both backends, against a real
receiver and the real job runner: endpoint health, the delivery log (filter, pages, statements), a delivery's
request and attempts, redelivery and the TEST event, the trail, the refusals."""

from __future__ import annotations

import json
import re

import httpx

from platpay.events import service as events_service
from platpay.kit.crypto.webhook_signing import verify_header
from tests.factories import create_platform
from tests.support.console import console_client, csrf_of, signed_in
from tests.support.jobs import run_jobs_until
from tests.support.statements import count_statements


async def _set_endpoint(client: httpx.AsyncClient, auth, url: str) -> dict:
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": url})
    assert response.status_code == 200, response.text
    return response.json()


async def _tenant_id(client, auth, db) -> str:
    from sqlalchemy import text

    config_id = (await client.get("/config", auth=auth)).json()["id"]
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE config_id = :c"), {"c": config_id})


async def _emit(db, tenant_id: str, n: int = 1) -> None:
    async with db.transaction() as session:
        for index in range(n):
            await events_service.emit(
                session,
                tenant_id=tenant_id,
                type="CUSTOMER.KYC_APPROVED",
                resource={"id": f"Customer:{index}", "kycStatus": "APPROVED"},
            )


async def _delivered(client, auth, db, runner, receiver, n: int = 1) -> list[dict]:
    """n KYC_APPROVED deliveries made (after the endpoint's TEST), delivered to the receiver."""
    await _set_endpoint(client, auth, receiver.url)
    await _emit(db, await _tenant_id(client, auth, db), n)
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == n)
    listed = (
        await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
    ).json()
    return listed["data"]


async def test_page_shows_endpoint_health_and_deliveries(
    app, client, auth, db, runner, receiver, settings
) -> None:
    settings.webhook_retry_base_seconds = 600  # the failed attempt's retry waits
    await _set_endpoint(client, auth, receiver.url)
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    receiver.replies(500)
    await _emit(db, await _tenant_id(client, auth, db))
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
    delivery_id = receiver.of_type("CUSTOMER.KYC_APPROVED")[0].json["id"]
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get("/console/webhooks")
    assert page.status_code == 200
    html = page.text
    assert receiver.url in html and "configured" in html and "ACTIVE" in html
    assert "1 failure in a row" in html
    health_row = html.split('class="webhooks-health"')[1].split("</table>")[0]
    assert [int(n) for n in re.findall(r'<td class="num">(\d+)</td>', health_row)] == [
        2,
        1,
        0,
        1,
    ]  # of the latest 2: 1 delivered (its TEST event), 0 failed; 1 pending
    assert delivery_id in html and "CUSTOMER.KYC_APPROVED" in html and ">TEST<" in html
    assert "2 deliveries" in html
    assert "Send a test event" in html
    assert html.count("<h1>") == 1


async def test_page_without_an_endpoint(app, auth) -> None:
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get("/console/webhooks")
    assert page.status_code == 200 and "No webhook endpoint is configured" in page.text
    assert "0 deliveries" in page.text


async def test_filter_by_status_and_bad_filter(app, client, auth, db, runner, receiver, settings) -> None:
    settings.webhook_retry_base_seconds = 600  # the failed attempt's retry waits: the delivery stays PENDING
    await _set_endpoint(client, auth, receiver.url)
    await run_jobs_until(runner, lambda: len(receiver.received) == 1)
    receiver.replies(500)
    await _emit(db, await _tenant_id(client, auth, db))
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
    async with console_client(app) as console:
        await signed_in(console, auth)
        pending = await console.get("/console/webhooks", params={"status": "PENDING"})
        assert pending.status_code == 200 and "CUSTOMER.KYC_APPROVED" in pending.text
        assert "1 delivery with status PENDING" in pending.text
        assert '<option value="PENDING" selected>' in pending.text
        delivered = await console.get("/console/webhooks", params={"status": "DELIVERED"})
        assert "1 delivery with status DELIVERED" in delivered.text
        assert ">CUSTOMER.KYC_APPROVED<" not in delivered.text
        bad = await console.get("/console/webhooks", params={"status": "LOST"})
        assert bad.status_code == 400 and "status" in bad.text and "PENDING" in bad.text


async def test_delivery_page_shows_request_signature_and_attempts(
    app, client, auth, db, runner, receiver
) -> None:
    config = await _set_endpoint(client, auth, receiver.url)
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    receiver.replies(503)
    await _emit(db, await _tenant_id(client, auth, db))
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
    delivery_id = receiver.of_type("CUSTOMER.KYC_APPROVED")[0].json["id"]
    async with console_client(app) as console:
        await signed_in(console, auth)
        page = await console.get(f"/console/webhooks/deliveries/{delivery_id}")
    assert page.status_code == 200, page.text
    html = page.text
    assert "DELIVERED" in html and "503" in html and "200" in html and " ms<" in html
    assert (
        "&#34;kycStatus&#34;: &#34;APPROVED&#34;" in html
        or "&quot;kycStatus&quot;: &quot;APPROVED&quot;" in html
    )
    import html as html_lib

    signature = re.search(r"<td>X-Svc-Signature</td><td><code>([^<]+)</code>", html, re.IGNORECASE)
    raw = re.search(r'<code id="raw-body">([^<]+)</code>', html)
    assert signature is not None and raw is not None
    signed = html_lib.unescape(raw.group(1)).encode()
    sent = json.loads(signed)
    assert sent["id"] == delivery_id and sent["data"] == {"id": "Customer:0", "kycStatus": "APPROVED"}
    # the shown signature verifies under the environment's public key, over the bytes shown
    assert verify_header(config["webhookPublicKey"], html_lib.unescape(signature.group(1)), signed)


async def test_redeliver_makes_a_new_attempt_at_the_receiver(app, client, auth, db, runner, receiver) -> None:
    (delivery,) = await _delivered(client, auth, db, runner, receiver)
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        page = await console.get(f"/console/webhooks/deliveries/{delivery['id']}")
        assert "Redeliver" in page.text
        answer = await console.post(
            f"/console/webhooks/deliveries/{delivery['id']}/redeliver", data={"csrf": csrf_of(page.text)}
        )
        assert answer.status_code == 303
        assert answer.headers["location"] == f"/console/webhooks/deliveries/{delivery['id']}"
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
        assert {r.json["id"] for r in receiver.of_type("CUSTOMER.KYC_APPROVED")} == {delivery["id"]}
        page = await console.get(answer.headers["location"])
        assert "WEBHOOK_REDELIVERED" in page.text and csrf
    detail = (await client.get(f"/webhooks/deliveries/{delivery['id']}", auth=auth)).json()
    assert detail["attemptCount"] == 2 and len(detail["attempts"]) == 2 and detail["status"] == "DELIVERED"


async def test_send_a_test_event(app, client, auth, receiver) -> None:
    await _set_endpoint(client, auth, receiver.url)
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        answer = await console.post("/console/webhooks/test", data={"csrf": csrf})
        assert answer.status_code == 303
        location = answer.headers["location"]
        delivery_id = location.rsplit("/", 1)[1]
        assert delivery_id.startswith("Webhook:")
        assert [r.json["id"] for r in receiver.of_type("TEST")][-1] == delivery_id  # sent synchronously
        page = await console.get(location)
        assert page.status_code == 200 and "WEBHOOK_TEST_SENT" in page.text and "DELIVERED" in page.text
        receiver.replies(500)
        failed = await console.post("/console/webhooks/test", data={"csrf": csrf})
        assert failed.status_code == 303  # the endpoint's failure is shown on the delivery's page
        page = await console.get(failed.headers["location"])
        assert "FAILED" in page.text and "500" in page.text and "WEBHOOK_TEST_SENT" in page.text
    detail = (await client.get(f"/webhooks/deliveries/{delivery_id}", auth=auth)).json()
    assert detail["type"] == "TEST" and detail["status"] == "DELIVERED"


async def test_test_event_without_an_endpoint_and_in_production(app, auth, platform) -> None:
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        answer = await console.post("/console/webhooks/test", data={"csrf": csrf})
        assert answer.status_code == 400 and "webhookEndpoint" in answer.text
    async with console_client(app) as console:
        csrf = await signed_in(console, platform["production"])
        page = await console.get("/console/webhooks")
        assert "Send a test event" not in page.text
        answer = await console.post("/console/webhooks/test", data={"csrf": csrf})
        assert answer.status_code == 403 and "sandbox" in answer.text


async def test_view_token_sees_no_buttons_and_its_posts_are_403(
    app, client, auth, db, runner, receiver
) -> None:
    (delivery,) = await _delivered(client, auth, db, runner, receiver)
    viewer = (await client.post("/tokens", auth=auth, json={"name": "v", "permissions": ["VIEW"]})).json()
    async with console_client(app) as console:
        csrf = await signed_in(console, (viewer["clientId"], viewer["clientSecret"]))
        page = await console.get(f"/console/webhooks/deliveries/{delivery['id']}")
        assert page.status_code == 200 and "Redeliver" not in page.text
        assert "Send a test event" not in (await console.get("/console/webhooks")).text
        for path in (f"/console/webhooks/deliveries/{delivery['id']}/redeliver", "/console/webhooks/test"):
            answer = await console.post(path, data={"csrf": csrf})
            assert answer.status_code == 403 and "lacks the MANAGE permission" in answer.text
    await runner.run_until_idle()
    assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1 and len(receiver.of_type("TEST")) == 1


async def test_forged_csrf_is_refused(app, client, auth, db, runner, receiver) -> None:
    (delivery,) = await _delivered(client, auth, db, runner, receiver)
    async with console_client(app) as console:
        await signed_in(console, auth)
        for path in (f"/console/webhooks/deliveries/{delivery['id']}/redeliver", "/console/webhooks/test"):
            answer = await console.post(path, data={"csrf": "forged"})
            assert answer.status_code == 403 and "not sent by your console session" in answer.text
    await runner.run_until_idle()
    assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1 and len(receiver.of_type("TEST")) == 1


async def test_unknown_and_other_tenants_deliveries_are_404(
    app, client, auth, db, settings, runner, receiver
) -> None:
    other = await create_platform(db, settings, name="Other")
    await _set_endpoint(client, other["sandbox"], receiver.url)
    theirs = (await client.get("/webhooks/deliveries", auth=other["sandbox"])).json()["data"][0]["id"]
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        for delivery_id in (theirs, "Webhook:nope"):
            page = await console.get(f"/console/webhooks/deliveries/{delivery_id}")
            assert page.status_code == 404 and "Not found" in page.text
            answer = await console.post(
                f"/console/webhooks/deliveries/{delivery_id}/redeliver", data={"csrf": csrf}
            )
            assert answer.status_code == 404
        assert theirs not in (await console.get("/console/webhooks")).text


async def test_delivery_log_is_paginated_and_runs_a_fixed_number_of_statements(
    app, client, auth, db, runner, receiver
) -> None:
    await _set_endpoint(client, auth, receiver.url)
    tenant_id = await _tenant_id(client, auth, db)

    async def statements_for(total: int) -> int:
        async with console_client(app) as console:
            await signed_in(console, auth)
            with count_statements(db) as seen:
                page = await console.get("/console/webhooks", params={"limit": 100})
            assert page.status_code == 200
            assert page.text.count('<a href="/console/webhooks/deliveries/') == total
        return seen.count

    await _emit(db, tenant_id, 2)  # with the endpoint's TEST: 3 deliveries
    await runner.run_until_idle()
    three = await statements_for(3)
    await _emit(db, tenant_id, 27)
    await runner.run_until_idle()
    assert await statements_for(30) == three

    async with console_client(app) as console:
        await signed_in(console, auth)
        first = await console.get("/console/webhooks", params={"limit": 20})
        link = re.search(r'<a href="([^"]+)" rel="next">', first.text).group(1).replace("&amp;", "&")
        second = await console.get(link)
        ids = lambda html: set(re.findall(r'/console/webhooks/deliveries/(Webhook:[^"]+)"', html))  # noqa: E731
        assert len(ids(first.text)) == 20 and len(ids(second.text)) == 10
        assert not ids(first.text) & ids(second.text)
        assert 'rel="next"' not in second.text


async def test_delivery_page_runs_a_fixed_number_of_statements(
    app, client, auth, db, runner, receiver, settings
) -> None:
    settings.webhook_retry_base_seconds = 600  # the failed attempt's own retry waits
    await _set_endpoint(client, auth, receiver.url)
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    receiver.replies(500)
    (delivery,) = await _delivered(client, auth, db, runner, receiver)
    async with console_client(app) as console:
        await signed_in(console, auth)
        path = f"/console/webhooks/deliveries/{delivery['id']}"
        await console.get(path)  # the signing key is read once per process
        with count_statements(db) as one:
            page = await console.get(path)
        assert page.text.count(" ms</td>") == 1
        for _ in range(2):
            csrf = csrf_of((await console.get(path)).text)
            assert (await console.post(f"{path}/redeliver", data={"csrf": csrf})).status_code == 303
            await runner.run_until_idle()
        with count_statements(db) as three:
            page = await console.get(path)
        assert page.text.count(" ms</td>") == 3
    assert three.count == one.count


async def test_odd_ids_and_cursors_are_4xx(app, auth) -> None:
    async with console_client(app) as console:
        csrf = await signed_in(console, auth)
        long_id = await console.get("/console/webhooks/deliveries/" + "x" * 300)
        assert long_id.status_code == 404 and "Not found" in long_id.text
        # a NUL in the URL is refused before routing (the app's middleware: the API's JSON 400), never a 500
        assert (await console.get("/console/webhooks/deliveries/%00x")).status_code == 400
        for path in ("/console/developers/tokens/%00x/delete", "/console/webhooks/deliveries/%00x/redeliver"):
            assert (await console.post(path, data={"csrf": csrf})).status_code == 400
        assert (await console.get("/console/webhooks", params={"cursor": "garbage"})).status_code == 400
        assert (await console.get("/console/developers", params={"cursor": "garbage"})).status_code == 400
