"""Signed webhook delivery through the outbox and the job runner, against a real HTTP receiver."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

from sqlalchemy import text

from platpay.events import delivery as delivery_module
from platpay.events import service as events_service
from platpay.events.delivery import retry_delay
from platpay.kit.crypto.webhook_signing import verify_header
from tests.factories import create_platform
from tests.support.jobs import run_jobs_until
from tests.support.receiver import Reply


async def _set_endpoint(client, auth, url):
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": url})
    assert response.status_code == 200, response.text
    return response.json()


async def _emit(db, tenant_id, event_type="CUSTOMER.KYC_APPROVED", data=None):
    async with db.transaction() as session:
        return await events_service.emit(
            session, tenant_id=tenant_id, type=event_type, resource=data or {"id": "Customer:x"}
        )


async def _tenant_id(client, auth, db):
    from sqlalchemy import text

    config_id = (await client.get("/config", auth=auth)).json()["id"]
    async with db.read() as session:
        return await session.scalar(text("SELECT id FROM tenants WHERE config_id = :c"), {"c": config_id})


class TestDelivery:
    async def test_receiver_failing_twice_then_succeeding_gets_one_event_three_attempts(
        self, client, auth, db, runner, receiver
    ):
        config = await _set_endpoint(client, auth, receiver.url)
        await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
        tenant_id = await _tenant_id(client, auth, db)
        receiver.replies(500, 503)
        await _emit(db, tenant_id, data={"id": "Customer:1", "kycStatus": "APPROVED"})
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 3)

        requests = receiver.of_type("CUSTOMER.KYC_APPROVED")
        ids = {r.json["id"] for r in requests}
        assert len(ids) == 1 and next(iter(ids)).startswith("Webhook:")
        for r in requests:
            assert verify_header(config["webhookPublicKey"], r.headers["x-svc-signature"], r.body)
            assert json.loads(r.headers["x-svc-signature"])["v"] == "1"
            assert r.json["data"] == {"id": "Customer:1", "kycStatus": "APPROVED"}
            assert r.headers["content-type"] == "application/json"
        delivery = (await client.get(f"/webhooks/deliveries/{ids.pop()}", auth=auth)).json()
        assert delivery["status"] == "DELIVERED"
        assert [a["responseStatus"] for a in delivery["attempts"]] == [500, 503, 200]
        assert all(a["latencyMs"] >= 0 for a in delivery["attempts"])
        assert delivery["attemptCount"] == 3

    async def test_signature_fails_for_a_tampered_body(self, client, auth, db, runner, receiver):
        config = await _set_endpoint(client, auth, receiver.url)
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        r = receiver.received[0]
        assert verify_header(config["webhookPublicKey"], r.headers["x-svc-signature"], r.body)
        assert not verify_header(config["webhookPublicKey"], r.headers["x-svc-signature"], r.body + b" ")

    async def test_timeouts_and_connection_errors_are_retried_and_recorded(
        self, client, auth, db, runner, receiver, settings
    ):
        settings.webhook_timeout_seconds = 0.3
        await _set_endpoint(client, auth, receiver.url)
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        tenant_id = await _tenant_id(client, auth, db)
        receiver.replies(Reply(status=200, delay=1.0))
        await _emit(db, tenant_id)
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
        listed = (
            await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
        ).json()
        delivery = (await client.get(f"/webhooks/deliveries/{listed['data'][0]['id']}", auth=auth)).json()
        await run_jobs_until(runner, lambda: True)
        delivery = (await client.get(f"/webhooks/deliveries/{listed['data'][0]['id']}", auth=auth)).json()
        assert "timed out" in delivery["attempts"][0]["error"]
        assert "responseStatus" not in delivery["attempts"][0]
        assert delivery["status"] == "DELIVERED"

    async def test_a_409_reply_is_not_retried(self, client, auth, db, runner, receiver):
        await _set_endpoint(client, auth, receiver.url)
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        receiver.replies(409)
        await _emit(db, await _tenant_id(client, auth, db))
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
        await runner.run_until_idle()
        listed = (await client.get("/webhooks/deliveries", auth=auth, params={"status": "FAILED"})).json()
        assert [d["lastResponseStatus"] for d in listed["data"]] == [409]
        assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1

    async def test_test_events_are_not_retried(self, client, auth, runner, receiver):
        receiver.replies(500)
        await _set_endpoint(client, auth, receiver.url)
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        await runner.run_until_idle()
        listed = (await client.get("/webhooks/deliveries", auth=auth)).json()["data"]
        assert [(d["type"], d["status"], d["attemptCount"]) for d in listed] == [("TEST", "FAILED", 1)]

    async def test_gives_up_after_the_maximum_age(self, client, auth, db, runner, receiver, settings):
        settings.webhook_retry_max_age_seconds = 0.4
        receiver.default = Reply(status=500)
        await _set_endpoint(client, auth, receiver.url)
        await _emit(db, await _tenant_id(client, auth, db))
        delivery_status = {}

        async def settled():
            listed = (
                await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
            ).json()
            delivery_status["d"] = listed["data"][0]
            return listed["data"][0]["status"] == "FAILED"

        for _ in range(200):
            await runner.run_until_idle()
            if await settled():
                break
            import asyncio

            await asyncio.sleep(0.02)
        d = delivery_status["d"]
        assert d["status"] == "FAILED" and d["attemptCount"] >= 2
        assert "nextAttemptAt" not in d

    async def test_redeliver_sends_the_same_id_again(self, client, auth, db, runner, receiver):
        await _set_endpoint(client, auth, receiver.url)
        await _emit(db, await _tenant_id(client, auth, db))
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
        delivery_id = receiver.of_type("CUSTOMER.KYC_APPROVED")[0].json["id"]
        response = await client.post(f"/webhooks/deliveries/{delivery_id}/redeliver", auth=auth)
        assert response.status_code == 202 and response.json()["status"] == "PENDING"
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
        assert {r.json["id"] for r in receiver.of_type("CUSTOMER.KYC_APPROVED")} == {delivery_id}
        detail = (await client.get(f"/webhooks/deliveries/{delivery_id}", auth=auth)).json()
        assert detail["attemptCount"] == 2 and detail["status"] == "DELIVERED"

    async def test_redeliver_of_a_pending_retry_does_not_send_twice(
        self, client, auth, db, runner, receiver, settings
    ):
        settings.webhook_retry_base_seconds = 60  # the scheduled retry is far away
        await _set_endpoint(client, auth, receiver.url)
        await run_jobs_until(runner, lambda: len(receiver.received) == 1)
        receiver.replies(500)
        await _emit(db, await _tenant_id(client, auth, db))
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
        delivery_id = receiver.of_type("CUSTOMER.KYC_APPROVED")[0].json["id"]
        await client.post(f"/webhooks/deliveries/{delivery_id}/redeliver", auth=auth)
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
        from platpay.kit import clock

        clock.advance(timedelta(minutes=5))  # the superseded retry becomes due and must do nothing
        await runner.run_until_idle()
        assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2

    async def test_events_without_an_endpoint_are_recorded_but_not_delivered(self, client, auth, db, runner):
        await _emit(db, await _tenant_id(client, auth, db))
        assert await runner.run_until_idle() == 0
        assert (await client.get("/webhooks/deliveries", auth=auth)).json()["totalCount"] == 0


class TestDeliveryApi:
    async def test_unknown_or_foreign_delivery_is_404(self, client, auth, db, settings, runner, receiver):
        other = await create_platform(db, settings, name="Other")
        await _set_endpoint(client, other["sandbox"], receiver.url)
        theirs = (await client.get("/webhooks/deliveries", auth=other["sandbox"])).json()["data"][0]["id"]
        assert (await client.get(f"/webhooks/deliveries/{theirs}", auth=auth)).status_code == 404
        assert (await client.post(f"/webhooks/deliveries/{theirs}/redeliver", auth=auth)).status_code == 404
        assert (await client.get("/webhooks/deliveries", auth=auth)).json()["totalCount"] == 0
        missing = await client.get("/webhooks/deliveries/Webhook:nope", auth=auth)
        assert missing.status_code == 404 and missing.json()["code"] == "WEBHOOK_DELIVERY_NOT_FOUND"


class TestRetryPolicy:
    def test_first_retry_within_base_doubling_and_capped(self, settings):
        settings.webhook_retry_base_seconds = 5
        settings.webhook_retry_max_interval_seconds = 1800
        for attempt, ceiling in [(1, 5), (2, 10), (3, 20), (4, 40), (12, 1800), (30, 1800)]:
            delays = [retry_delay(attempt, settings).total_seconds() for _ in range(200)]
            assert max(delays) <= ceiling and min(delays) >= ceiling / 2


async def test_a_long_chain_records_its_successes_while_it_runs(
    client, auth, db, runner, receiver, settings, monkeypatch
):
    """A chain to a slow endpoint does not keep its successes unrecorded until its end: they are recorded
    whenever RECORD_EVERY_SECONDS passed since the last recording, so the API shows them DELIVERED while the
    chain still runs (and a worker dying then would send again only those sent since)."""
    monkeypatch.setattr(delivery_module, "RECORD_EVERY_SECONDS", 0.3)
    claimed = await _chain_of(client, auth, db, runner, receiver, settings, 8)
    receiver.default = Reply(delay=0.25)  # the last three alone take >= 0.75 s after a recording

    async def delivered() -> int:
        listed = await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
        return sum(1 for d in listed.json()["data"] if d["status"] == "DELIVERED")

    chain = asyncio.create_task(runner.execute_chain(claimed))
    recorded_before_the_last_was_sent = 0
    while not chain.done():
        sent_before = len(receiver.of_type("CUSTOMER.KYC_APPROVED"))
        found = await delivered()
        if sent_before < 8 and len(receiver.of_type("CUSTOMER.KYC_APPROVED")) < 8:  # still sending meanwhile
            recorded_before_the_last_was_sent = max(recorded_before_the_last_was_sent, found)
        await asyncio.sleep(0.05)
    await chain
    assert recorded_before_the_last_was_sent > 0  # recorded while the chain still had deliveries to send
    assert await delivered() == 8
    assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 8  # each sent once


async def test_a_chain_to_one_endpoint_records_its_successes_and_stops_at_its_first_failure(
    client, auth, db, runner, receiver, settings
):
    """Deliveries due together to one endpoint go as one chain per in-flight slot (webhook_batch_size):
    each its own envelope and signature; the successes are recorded, the first failure is recorded with its
    attempt and ends the chain, and the deliveries not yet sent wait in the queue with no attempt spent."""
    config = await _set_endpoint(client, auth, receiver.url)
    await run_jobs_until(runner, lambda: len(receiver.received) == 1)  # its TEST event
    tenant_id = await _tenant_id(client, auth, db)
    async with db.transaction() as session:
        for n in range(6):
            await events_service.emit(
                session, tenant_id=tenant_id, type="CUSTOMER.KYC_APPROVED", resource={"id": f"Customer:{n}"}
            )
    receiver.replies(200, 200, 500)
    claimed = await runner.claim(1, lane="webhooks", chain=settings.webhook_batch_size)
    assert len(claimed) == 6 and len({token for _, token in claimed}) == 1  # one chain
    await runner.execute_chain(claimed)
    sent = receiver.of_type("CUSTOMER.KYC_APPROVED")
    assert len(sent) == 3
    for request in sent:  # each signed over its own body
        assert verify_header(config["webhookPublicKey"], request.headers["x-svc-signature"], request.body)
    assert len({request.json["id"] for request in sent}) == 3
    listed = (
        await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
    ).json()["data"]
    by_id = {delivery["id"]: delivery for delivery in listed}
    outcomes = [(by_id[r.json["id"]]["status"], by_id[r.json["id"]]["attemptCount"]) for r in sent]
    assert outcomes == [("DELIVERED", 1), ("DELIVERED", 1), ("PENDING", 1)]
    unsent = [d for d in listed if d["id"] not in {r.json["id"] for r in sent}]
    assert [(d["status"], d["attemptCount"]) for d in unsent] == [("PENDING", 0)] * 3
    async with db.read() as session:  # their jobs back in the queue together: no lease, no attempt spent
        queued = (
            await session.execute(
                text(
                    "SELECT j.state, j.attempts, j.lease_token IS NULL, j.last_error FROM jobs j"
                    " JOIN webhook_deliveries d ON d.job_id = j.id WHERE d.id IN (:a, :b, :c)"
                ),
                dict(zip("abc", [d["id"] for d in unsent], strict=True)),
            )
        ).all()
    assert [tuple(row) for row in queued] == [
        ("QUEUED", 0, True, "not sent: an earlier delivery to its endpoint failed")
    ] * 3
    async with db.read() as session:  # each sent one's attempt stored, the successes' together
        stored = (
            await session.execute(
                text(
                    "SELECT d.id, d.first_attempt_at = a.attempted_at, d.delivered_at IS NOT NULL, d.job_id IS NULL,"
                    " a.response_status, a.error, a.tenant_id FROM webhook_attempts a"
                    " JOIN webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_type = 'CUSTOMER.KYC_APPROVED'"
                )
            )
        ).all()
    assert sorted((row[0], *map(bool, row[1:4]), *row[4:]) for row in stored) == sorted(
        (r.json["id"], True, status == 200, status == 200, status, None, tenant_id)
        for r, status in zip(sent, (200, 200, 500), strict=True)
    )
    [endpoint] = (await client.get("/webhooks/endpoints", auth=auth)).json()["data"]
    assert (
        endpoint["status"] == "ACTIVE" and endpoint["consecutiveFailures"] == 1
    )  # counted after the successes
    # the 3 unsent, and the failed one's retry
    await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) >= 7)
    await runner.run_until_idle()
    listed = (
        await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
    ).json()["data"]
    assert sorted((d["status"], d["attemptCount"]) for d in listed) == [("DELIVERED", 1)] * 5 + [
        ("DELIVERED", 2)
    ]
    assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 7
    [endpoint] = (await client.get("/webhooks/endpoints", auth=auth)).json()["data"]
    assert endpoint["consecutiveFailures"] == 0


async def _chain_of(client, auth, db, runner, receiver, settings, count):
    """`count` events due to the tenant's endpoint (its TEST event delivered first), claimed as one chain."""
    await _set_endpoint(client, auth, receiver.url)
    await run_jobs_until(runner, lambda: len(receiver.received) == 1)
    tenant_id = await _tenant_id(client, auth, db)
    for n in range(count):
        await _emit(db, tenant_id, data={"id": f"Customer:{n}"})
    if not count:
        return []
    claimed = await runner.claim(1, lane="webhooks", chain=settings.webhook_batch_size)
    assert len(claimed) == count and len({token for _, token in claimed}) == 1
    return claimed


async def test_a_chain_whose_events_have_a_reply_hook_records_them_through_it_once(
    client, auth, db, runner, receiver, settings, monkeypatch
):
    """The chain's successes are recorded leanly unless an event has a reply hook (which runs in an ORM
    session): then the lean transaction gives way and the careful one records them, each hook run once with
    its answer, nothing sent twice."""
    from platpay.events import delivery

    answered: list[tuple[str, int | None]] = []

    async def hook(session, delivery_row, event, result):
        answered.append((delivery_row.id, result.status))

    monkeypatch.setitem(delivery._reply_hooks, "CUSTOMER.KYC_APPROVED", hook)
    claimed = await _chain_of(client, auth, db, runner, receiver, settings, 3)
    await runner.execute_chain(claimed)
    sent = receiver.of_type("CUSTOMER.KYC_APPROVED")
    assert len(sent) == 3  # once each: the lean attempt gave way before anything was written
    assert sorted(answered) == sorted((request.json["id"], 200) for request in sent)
    listed = (
        await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
    ).json()
    assert [(d["status"], d["attemptCount"]) for d in listed["data"]] == [("DELIVERED", 1)] * 3
    assert await runner.run_until_idle() == 0  # every job of the chain finished


async def test_a_chain_to_an_endpoint_with_failures_counted_clears_them_once(
    client, auth, db, runner, receiver, settings
):
    """Successes to an endpoint whose breaker had counted a failure close it through the careful attempt (its
    backlog hastened): the count back to zero, each delivery recorded once, nothing sent twice."""
    settings.webhook_retry_base_seconds = 600  # the failed delivery's retry stays out of the chain
    receiver.replies(200, 500)  # the TEST event, then the first of the chain
    await _chain_of(client, auth, db, runner, receiver, settings, 0)
    tenant_id = await _tenant_id(client, auth, db)
    await _emit(db, tenant_id, data={"id": "Customer:failed"})
    await runner.execute_chain(await runner.claim(1, lane="webhooks", chain=settings.webhook_batch_size))
    [endpoint] = (await client.get("/webhooks/endpoints", auth=auth)).json()["data"]
    assert endpoint["status"] == "ACTIVE" and endpoint["consecutiveFailures"] == 1
    for n in range(3):
        await _emit(db, tenant_id, data={"id": f"Customer:{n}"})
    claimed = await runner.claim(1, lane="webhooks", chain=settings.webhook_batch_size)
    assert len(claimed) == 3 and len({token for _, token in claimed}) == 1  # (the failed one waits)
    await runner.execute_chain(claimed)
    assert len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 4
    [endpoint] = (await client.get("/webhooks/endpoints", auth=auth)).json()["data"]
    assert endpoint["status"] == "ACTIVE" and endpoint["consecutiveFailures"] == 0
    listed = (
        await client.get("/webhooks/deliveries", auth=auth, params={"type": "CUSTOMER.KYC_APPROVED"})
    ).json()
    assert sorted((d["status"], d["attemptCount"]) for d in listed["data"]) == [("DELIVERED", 1)] * 3 + [
        ("PENDING", 1)
    ]
