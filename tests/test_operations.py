"""/healthz, /readyz, /metrics, request ids and logs without secrets."""

from __future__ import annotations

import httpx

from platpay.db.database import Database


async def test_healthz(app):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        response = await c.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


async def test_readyz_reports_ready_at_head(app):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        response = await c.get("/readyz")
    assert response.status_code == 200 and response.json()["status"] == "ready"


async def test_readyz_is_503_on_an_unmigrated_database(settings, tmp_path):
    from platpay.app import create_app

    empty = Database(f"sqlite+aiosqlite:///{tmp_path / 'empty.db'}")
    try:
        app = create_app(settings, database=empty, embedded_worker=False)
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
            response = await c.get("/readyz")
        assert response.status_code == 503 and response.json()["code"] == "SERVICE_UNAVAILABLE"
    finally:
        await empty.dispose()


async def test_metrics_expose_requests_jobs_and_webhooks(client, auth, app):
    await client.get("/config", auth=auth)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        text = (await c.get("/metrics")).text
    assert 'platpay_http_requests_total{method="GET",route="/config",status="200"}' in text
    assert "platpay_http_request_duration_seconds_bucket" in text
    assert 'platpay_jobs{state="QUEUED"}' in text
    assert "platpay_jobs_oldest_due_age_seconds" in text
    assert 'platpay_webhook_deliveries{status="DELIVERED"}' in text


async def test_request_id_is_returned_and_propagated(client, auth):
    generated = await client.get("/config", auth=auth)
    assert len(generated.headers["x-request-id"]) == 32
    echoed = await client.get("/config", auth=auth, headers={"X-Request-Id": "abc-123"})
    assert echoed.headers["x-request-id"] == "abc-123"
    unsafe = await client.get("/config", auth=auth, headers={"X-Request-Id": "bad id;drop"})
    assert unsafe.headers["x-request-id"] != "bad id;drop"


async def test_access_logs_are_json_with_request_id_and_never_carry_secrets(client, auth, capsys):
    import json

    created = (await client.post("/tokens", auth=auth, json={"name": "x", "permissions": ["VIEW"]})).json()
    await client.get("/config", auth=(created["clientId"], created["clientSecret"]))
    await client.get("/config", auth=(created["clientId"], "wrong-secret"))
    output = capsys.readouterr().out
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    requests = [line for line in lines if line.get("event") == "request"]
    assert len(requests) >= 3 and all(len(line["request_id"]) == 32 for line in requests)
    assert {line["status"] for line in requests} >= {201, 200, 401}
    for secret in (created["clientSecret"], auth[1], "wrong-secret"):
        assert secret not in output
