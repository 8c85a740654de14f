"""The events domain's reads for the console: a resource's timeline (events, deliveries, attempts), a
delivery's request as sent, the deliveries list, the endpoints' health over the last day and the count of
failed deliveries; each a fixed number of statements, whatever the number of rows."""

from __future__ import annotations

import json
import socket

import pytest
from sqlalchemy import text

from platpay.events import service as events_service
from platpay.events.errors import DeliveryNotFound
from platpay.kit.crypto.webhook_signing import verify_header
from platpay.kit.pagination import PageParams
from tests.support.jobs import run_jobs_until
from tests.support.statements import count_statements


async def _hooked(client, auth, db, runner, receiver):
    """The tenant's id and its config once its webhooks go to the receiver (the TEST ping through)."""
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    async with db.read() as session:
        tenant_id = await session.scalar(
            text("SELECT id FROM tenants WHERE config_id = :c"), {"c": response.json()["id"]}
        )
    return tenant_id, response.json()


async def _emit(db, tenant_id, resource_id, event_type="CUSTOMER.KYC_APPROVED"):
    async with db.transaction() as session:
        return await events_service.emit(
            session,
            tenant_id=tenant_id,
            type=event_type,
            resource={"id": resource_id, "kycStatus": "APPROVED"},
        )


def _closed_port_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/hooks"


class TestTimelineForResource:
    async def test_each_event_with_its_deliveries_and_their_attempts(
        self, db, client, auth, runner, receiver
    ):
        tenant_id, _ = await _hooked(client, auth, db, runner, receiver)
        receiver.replies(500)
        first = await _emit(db, tenant_id, "Customer:1")
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 2)
        second = await _emit(db, tenant_id, "Customer:1", "CUSTOMER.KYC_REJECTED")
        await _emit(db, tenant_id, "Customer:2")
        await run_jobs_until(runner, lambda: len(receiver.received) == 5)
        await runner.run_until_idle()
        async with db.read() as session:
            timeline = await events_service.timeline_for_resource(
                session, tenant_id=tenant_id, resource_id="Customer:1"
            )
            foreign = await events_service.timeline_for_resource(
                session, tenant_id="Tenant:other", resource_id="Customer:1"
            )
            latest = await events_service.timeline_for_resource(
                session, tenant_id=tenant_id, resource_id="Customer:1", latest=1
            )
        assert foreign == []
        assert [e.id for e in latest] == [second]  # the latest events, when there are more
        assert [(e.id, e.type) for e in timeline] == [
            (first, "CUSTOMER.KYC_APPROVED"),
            (second, "CUSTOMER.KYC_REJECTED"),
        ]
        [delivery] = timeline[0].deliveries
        assert (delivery.status, delivery.url, delivery.attempt_count) == ("DELIVERED", receiver.url, 2)
        assert [a.response_status for a in delivery.attempts] == [500, 200]
        assert all(a.latency_ms >= 0 and a.attempted_at for a in delivery.attempts)
        assert timeline[0].data == {"id": "Customer:1", "kycStatus": "APPROVED"}
        assert [a.response_status for a in timeline[1].deliveries[0].attempts] == [200]

    async def test_three_statements_however_many_events_deliveries_and_attempts(
        self, db, client, auth, runner, receiver
    ):
        tenant_id, _ = await _hooked(client, auth, db, runner, receiver)
        counts = []
        for n in (1, 5):
            for _ in range(n):
                await _emit(db, tenant_id, f"Customer:n{n}")
            await runner.run_until_idle()
            async with db.read() as session:
                with count_statements(db) as statements:
                    timeline = await events_service.timeline_for_resource(
                        session, tenant_id=tenant_id, resource_id=f"Customer:n{n}"
                    )
            assert len(timeline) == n and all(len(e.deliveries[0].attempts) == 1 for e in timeline)
            counts.append(statements.count)
        assert counts == [3, 3]

    async def test_events_of_a_tenant_without_an_endpoint_have_no_deliveries(self, db, platform):
        async with db.read() as session:
            tenant_id = await session.scalar(text("SELECT id FROM tenants WHERE environment = 'sandbox'"))
        event_id = await _emit(db, tenant_id, "Customer:quiet")
        async with db.read() as session:
            [event] = await events_service.timeline_for_resource(
                session, tenant_id=tenant_id, resource_id="Customer:quiet"
            )
        assert (event.id, event.deliveries) == (event_id, ())


class TestDeliveryDetail:
    async def test_the_request_as_sent_with_a_signature_the_receiver_accepts(
        self, db, client, auth, runner, receiver, settings
    ):
        tenant_id, config = await _hooked(client, auth, db, runner, receiver)
        await _emit(db, tenant_id, "Customer:1")
        await run_jobs_until(runner, lambda: len(receiver.of_type("CUSTOMER.KYC_APPROVED")) == 1)
        await runner.run_until_idle()
        [sent] = receiver.of_type("CUSTOMER.KYC_APPROVED")
        async with db.read() as session:
            with count_statements(db) as statements:
                detail = await events_service.delivery_detail(
                    session, tenant_id=tenant_id, delivery_id=sent.json["id"], settings=settings
                )
            with pytest.raises(DeliveryNotFound):
                await events_service.delivery_detail(
                    session, tenant_id="Tenant:other", delivery_id=sent.json["id"], settings=settings
                )
        assert statements.count <= 3  # the delivery and its event, its attempts, the key once per process
        body = json.loads(detail.body)
        assert {k: body[k] for k in ("id", "type", "data")} == {
            k: sent.json[k] for k in ("id", "type", "data")
        }
        assert detail.headers["Content-Type"] == "application/json"
        assert detail.headers["User-Agent"] == sent.headers["user-agent"]
        assert verify_header(
            config["webhookPublicKey"], detail.headers["X-Svc-Signature"], detail.body.encode()
        )
        assert [a.response_status for a in detail.delivery.attempts] == [200]
        assert "PRIVATE" not in json.dumps(detail.headers)


class TestListDeliveriesPage:
    async def test_filtered_by_status_and_url_paged_with_the_cursor_in_two_statements(
        self, db, client, auth, runner, receiver
    ):
        tenant_id, _ = await _hooked(client, auth, db, runner, receiver)
        receiver.replies(409, 409)  # refused for good: FAILED
        for n in range(5):
            await _emit(db, tenant_id, f"Customer:{n}")
        await runner.run_until_idle()
        seen, params = [], PageParams(limit=2, after_id=None)
        async with db.read() as session:
            while True:
                with count_statements(db) as statements:
                    page = await events_service.list_deliveries_page(
                        session, tenant_id=tenant_id, params=params, status="DELIVERED", url=receiver.url
                    )
                assert statements.count == 2 and page.total_count == 4  # 3 events and the TEST ping
                seen += page.items
                if not page.has_more:
                    break
                params = PageParams(limit=2, after_id=page.items[-1].id)
            failed = await events_service.list_deliveries_page(
                session, tenant_id=tenant_id, params=PageParams(limit=10, after_id=None), status="FAILED"
            )
            elsewhere = await events_service.list_deliveries_page(
                session, tenant_id=tenant_id, params=PageParams(limit=10, after_id=None), url="http://x.test/"
            )
        assert len(seen) == 4 and [d.id for d in seen] == sorted((d.id for d in seen), reverse=True)
        assert len(failed.items) == 2 and {d.last_response_status for d in failed.items} == {409}
        assert elsewhere.items == []


class TestEndpointHealthSummary:
    async def test_breaker_state_and_the_last_days_outcomes_per_url(self, db, client, auth, runner, receiver):
        tenant_id, _ = await _hooked(client, auth, db, runner, receiver)
        receiver.replies(409)
        await _emit(db, tenant_id, "Customer:refused")
        await _emit(db, tenant_id, "Customer:ok")
        await runner.run_until_idle()
        dead = _closed_port_url()
        response = await client.patch("/config", auth=auth, json={"webhookEndpoint": dead})
        assert response.status_code == 200, response.text
        await _emit(db, tenant_id, "Customer:lost")
        await runner.run_until_idle()
        async with db.read() as session:
            with count_statements(db) as statements:
                health = {
                    h.url: h
                    for h in await events_service.endpoint_health_summary(session, tenant_id=tenant_id)
                }
                failed = await events_service.count_failed_deliveries(session, tenant_id=tenant_id)
        assert (
            statements.count == 5
        )  # the configured URL, breakers, pending, the window's outcomes; the count
        assert next(iter(health)) == dead and health[dead].configured
        assert health[dead].pending >= 1 and health[dead].last_failure_at is not None
        assert health[dead].last_error
        ok = health[receiver.url]
        assert (ok.configured, ok.status, ok.delivered, ok.failed, ok.pending) == (False, "ACTIVE", 2, 1, 0)
        assert ok.last_success_at is not None and ok.next_probe_at is None
        assert health[dead].failed == 1  # its TEST ping: never retried
        assert failed == 2
        async with db.read() as session:
            assert await events_service.count_failed_deliveries(session, tenant_id="Tenant:other") == 0

    async def test_the_outcomes_and_the_backlog_are_counted_up_to_a_bound(
        self, db, client, auth, runner, receiver, monkeypatch
    ):
        """The summary reads the latest HEALTH_SAMPLE deliveries and counts PENDING up to PENDING_COUNTED:
        its cost does not grow with the traffic (the console's webhooks page on a busy tenant)."""
        tenant_id, _ = await _hooked(client, auth, db, runner, receiver)
        for n in range(4):
            await _emit(db, tenant_id, f"Customer:sent-{n}")
        await runner.run_until_idle()
        dead = _closed_port_url()
        assert (await client.patch("/config", auth=auth, json={"webhookEndpoint": dead})).status_code == 200
        for n in range(3):
            await _emit(db, tenant_id, f"Customer:queued-{n}")
        monkeypatch.setattr(events_service, "HEALTH_SAMPLE", 2)
        monkeypatch.setattr(events_service, "PENDING_COUNTED", 2)
        async with db.read() as session:
            health = await events_service.endpoint_health_summary(session, tenant_id=tenant_id)
        assert sum(h.sampled for h in health) == 2
        assert sum(h.pending for h in health) == 3  # PENDING_COUNTED + 1 read: enough to say "more than 2"
        assert all(h.pending_at_least for h in health)
        monkeypatch.setattr(events_service, "HEALTH_SAMPLE", 1_000)
        monkeypatch.setattr(events_service, "PENDING_COUNTED", 10_000)
        async with db.read() as session:
            health = await events_service.endpoint_health_summary(session, tenant_id=tenant_id)
        assert not any(h.pending_at_least for h in health)
        assert sum(h.pending for h in health) >= 3
