"""/healthz, /readyz, /metrics, request ids and logs without secrets."""

from __future__ import annotations

import os

import httpx

from platpay import package_version
from platpay.db.database import Database


async def test_healthz(app):
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
        response = await c.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok", "version": package_version()}


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


def samples(text: str) -> dict[tuple[str, frozenset], float]:
    """Every sample of a /metrics answer: (name, labels) -> value; fails on a sample given twice."""
    from prometheus_client.parser import text_string_to_metric_families

    found: dict[tuple[str, frozenset], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = (sample.name, frozenset(sample.labels.items()))
            assert key not in found, f"{key} given twice"
            found[key] = sample.value
    return found


def requests_to(found: dict, route_suffix: str, status: str = "200") -> float:
    return sum(
        value
        for (name, labels), value in found.items()
        if name == "platpay_http_requests_total"
        and dict(labels)["route"].endswith(route_suffix)
        and dict(labels)["status"] == status
    )


async def _scrape(app) -> dict:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        response = await c.get("/metrics")
    assert response.status_code == 200
    return samples(response.text)


class TestMetrics:
    async def test_each_app_counts_only_its_own_requests(self, client, auth, app, settings, db):
        from platpay import BASE_PATH
        from platpay.app import create_app

        other = create_app(settings, database=db, embedded_worker=False)
        transport = httpx.ASGITransport(app=other)
        async with httpx.AsyncClient(transport=transport, base_url=f"http://t{BASE_PATH}") as other_client:
            assert (await other_client.get("/config", auth=auth)).status_code == 200
        for _ in range(2):
            assert (await client.get("/config", auth=auth)).status_code == 200

        assert requests_to(await _scrape(app), "/config") == 2
        assert requests_to(await _scrape(other), "/config") == 1

    async def test_database_gauges_are_read_at_scrape_time_once(
        self, client, auth, app, db, runner, receiver
    ):
        from tests.support.jobs import run_jobs_until

        assert (
            await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
        ).status_code == 200
        before = await _scrape(app)
        assert before[("platpay_webhook_deliveries", frozenset({("status", "PENDING")}))] == 1
        assert before[("platpay_jobs", frozenset({("state", "QUEUED")}))] == 1
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        after = await _scrape(app)
        assert after[("platpay_webhook_deliveries", frozenset({("status", "PENDING")}))] == 0
        assert after[("platpay_webhook_deliveries", frozenset({("status", "DELIVERED")}))] == 1
        assert after[("platpay_jobs", frozenset({("state", "QUEUED")}))] == 0
        for lane in ("default", "webhooks"):
            assert ("platpay_jobs_oldest_due_age_seconds", frozenset({("lane", lane)})) in after

    async def test_the_embedded_runner_counts_webhook_attempts_and_job_runs_in_its_app(
        self, client, auth, settings, db, receiver
    ):
        from platpay.app import create_app

        embedded = create_app(settings, database=db, embedded_worker=True)
        async with running_lifespan(embedded):
            assert (await _scrape(embedded))[("platpay_processes", frozenset({("role", "server")}))] == 1
            transport = httpx.ASGITransport(app=embedded)
            async with httpx.AsyncClient(transport=transport, base_url=str(client.base_url)) as c:
                response = await c.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
                assert response.status_code == 200
            # The job run is counted once the delivery's transaction committed, after its attempt.
            found = await _wait_for_sample(
                embedded,
                ("platpay_job_runs_total", frozenset({("kind", "webhook.deliver"), ("outcome", "done")})),
                1,
            )
        assert found[("platpay_webhook_attempts_total", frozenset({("outcome", "delivered")}))] == 1


async def _wait_for_sample(app, key, value, timeout: float = 10.0) -> dict:
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while True:
        found = await _scrape(app)
        if found.get(key) == value:
            return found
        assert time.monotonic() < deadline, f"{key} never reached {value}: {found.get(key)}"
        await asyncio.sleep(0.05)


class running_lifespan:
    """Runs an app's lifespan the way a server does: through the app's whole middleware stack."""

    def __init__(self, app) -> None:
        import asyncio

        self.app = app
        self.to_app: asyncio.Queue = asyncio.Queue()
        self.from_app: asyncio.Queue = asyncio.Queue()

    async def __aenter__(self) -> None:
        import asyncio

        self.task = asyncio.create_task(
            self.app(
                {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                self.to_app.get,
                self.from_app.put,
            )
        )
        await self.to_app.put({"type": "lifespan.startup"})
        assert (await asyncio.wait_for(self.from_app.get(), 10))["type"] == "lifespan.startup.complete"

    async def __aexit__(self, *exc_info) -> None:
        import asyncio

        await self.to_app.put({"type": "lifespan.shutdown"})
        assert (await asyncio.wait_for(self.from_app.get(), 30))["type"] == "lifespan.shutdown.complete"
        await self.task


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


_RECORD = """
import os, sys, time
from pathlib import Path
from platpay import metrics
directory, role, requests, ending = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4]
metrics.enable_multiprocess(directory, clear_dead=False)
recorded = metrics.process_metrics()
recorded.processes.labels(role).set(1)
recorded.http_requests.labels("GET", "/config", "200").inc(requests)
recorded.webhook_attempts.labels("delivered").inc()
print("recorded", flush=True)
if ending == "graceful":
    recorded.processes.labels(role).set(0)
    metrics.process_exiting()
elif ending == "stay":
    time.sleep(60)
# "crash": gone without a word, as after kill -9
"""

_SCRAPE = """
import sys
from pathlib import Path
from prometheus_client import generate_latest
from platpay import metrics
metrics.enable_multiprocess(Path(sys.argv[1]), clear_dead=sys.argv[2] == "clear")
print(generate_latest(metrics.Scrape(metrics.process_metrics(), [])).decode())
"""


class TestMultiprocessMetrics:
    """The CLI's mode, each process a real one: what /metrics shows is the sum over processes."""

    @staticmethod
    def _python(code: str, *args: str):
        import subprocess
        import sys

        return subprocess.run(
            [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60, check=True
        ).stdout

    def _scrape(self, directory, *, clear: bool = False) -> dict:
        return samples(self._python(_SCRAPE, str(directory), "clear" if clear else "keep"))

    def test_counters_add_up_over_processes_and_only_live_processes_count_as_live(self, tmp_path):
        import subprocess
        import sys

        directory = tmp_path / "metrics"
        self._python(_RECORD, str(directory), "server", "2", "graceful")
        self._python(_RECORD, str(directory), "worker", "3", "crash")
        staying = subprocess.Popen(
            [sys.executable, "-c", _RECORD, str(directory), "server", "5", "stay"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert staying.stdout.readline().strip() == "recorded"
            found = self._scrape(directory)
            assert requests_to(found, "/config") == 2 + 3 + 5
            assert found[("platpay_webhook_attempts_total", frozenset({("outcome", "delivered")}))] == 3
            # The crashed worker left its gauge behind: the scrape sees it is gone.
            assert found[("platpay_processes", frozenset({("role", "server")}))] == 1
            assert found.get(("platpay_processes", frozenset({("role", "worker")})), 0) == 0
        finally:
            staying.kill()
            staying.wait()
        found = self._scrape(directory)
        assert requests_to(found, "/config") == 10  # exited processes stay counted
        assert found.get(("platpay_processes", frozenset({("role", "server")})), 0) == 0

    def test_serve_starting_clears_what_processes_no_longer_running_left(self, tmp_path):
        import subprocess
        import sys

        directory = tmp_path / "metrics"
        self._python(_RECORD, str(directory), "server", "2", "graceful")
        staying = subprocess.Popen(
            [sys.executable, "-c", _RECORD, str(directory), "worker", "4", "stay"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert staying.stdout.readline().strip() == "recorded"
            found = self._scrape(directory, clear=True)
            # The running worker keeps its counts; the exited server's are gone.
            assert requests_to(found, "/config") == 4
            assert found[("platpay_processes", frozenset({("role", "worker")}))] == 1
        finally:
            staying.kill()
            staying.wait()


def test_generated_request_ids_are_unique_and_a_forked_process_draws_its_own() -> None:
    from platpay.middleware import _new_request_id

    ids = [_new_request_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(len(value) == 32 and int(value, 16) >= 0 for value in ids)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # the child: report one id and leave at once
        os.write(write, _new_request_id().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(child, 0)
    from_child = os.read(read, 64).decode()
    os.close(read)
    assert len(from_child) == 32
    assert from_child[:16] != ids[0][:16]  # another process, another random prefix
