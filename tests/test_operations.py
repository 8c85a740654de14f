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


def _json_lines(output: str) -> list[dict]:
    """Every non-empty line of `output`, each of which must be one JSON object."""
    import json

    lines = [line for line in output.splitlines() if line.strip()]
    parsed = []
    for line in lines:
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"a log line is not JSON: {line!r}") from None
    return parsed


class TestLibraryLogs:
    def test_library_loggers_write_json_lines_and_httpx_request_lines_are_silenced(self, capsys):
        import logging

        from platpay.logging import configure

        configure("INFO")
        logging.getLogger("httpx").info(
            'HTTP Request: POST http://127.0.0.1:18212/h?apikey=topsecret "HTTP/1.0 200 OK"'
        )
        logging.getLogger("httpcore.connection").debug("connect_tcp.started host='127.0.0.1'")
        logging.getLogger("uvicorn.error").warning("Invalid HTTP request received.")
        logging.getLogger("some.library").error(
            "gave up on %s", "https://user:hunter2@hooks.example.com/in?apikey=topsecret#frag"
        )
        try:
            raise RuntimeError("POST http://127.0.0.1:18212/h?apikey=topsecret failed")
        except RuntimeError:
            logging.getLogger("asyncio").exception("task exception was never retrieved")

        output = capsys.readouterr().out
        lines = _json_lines(output)
        assert "topsecret" not in output and "hunter2" not in output
        assert not any("HTTP Request" in line["event"] for line in lines)
        by_logger = {line["logger"]: line for line in lines}
        assert set(by_logger) == {"uvicorn.error", "some.library", "asyncio"}
        assert by_logger["uvicorn.error"]["level"] == "warning"
        assert by_logger["some.library"]["event"] == (
            "gave up on https://[redacted]@hooks.example.com/in?[redacted]"
        )
        assert "RuntimeError" in by_logger["asyncio"]["exception"]
        assert "http://127.0.0.1:18212/h?[redacted]" in by_logger["asyncio"]["exception"]

    def test_our_own_log_lines_never_carry_a_url_query_string(self, capsys):
        import structlog

        from platpay.logging import configure

        configure("INFO")
        structlog.get_logger("platpay.test").warning(
            "delivery.failed", endpoint="http://127.0.0.1:1/h?apikey=topsecret", error="ok"
        )
        [line] = _json_lines(capsys.readouterr().out)
        assert line["endpoint"] == "http://127.0.0.1:1/h?[redacted]"

    def test_configuring_again_keeps_one_handler(self):
        import logging

        from platpay.logging import StdoutHandler, configure

        configure("INFO")
        configure("DEBUG")
        root = logging.getLogger()
        assert sum(isinstance(handler, StdoutHandler) for handler in root.handlers) == 1
        assert logging.getLogger("httpx").getEffectiveLevel() == logging.WARNING
        configure("INFO")


async def test_webhook_delivery_logs_no_plain_text_and_no_endpoint_query(
    client, auth, runner, receiver, capsys
):
    from tests.support.jobs import run_jobs_until

    url = receiver.url + "?apikey=topsecret"
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": url})
    assert response.status_code == 200, response.text
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    assert (await client.post("/sandbox/webhooks/test", auth=auth)).status_code == 200
    receiver.replies(500)
    assert (await client.post("/sandbox/webhooks/test", auth=auth)).status_code == 400

    output = capsys.readouterr().out
    lines = _json_lines(output)
    assert any(line.get("event") == "request" for line in lines)
    assert "topsecret" not in output
    assert "HTTP Request" not in output
