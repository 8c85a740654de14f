"""events/state.py: a webhook delivery's status and an endpoint's breaker as tables, each the API's enum,
and a settled delivery that is sent an answer again refuses it."""

from __future__ import annotations

from typing import get_args

import pytest
from sqlalchemy import select

from platpay.events import delivery, schemas
from platpay.events.models import EventRow, WebhookDeliveryRow
from platpay.events.state import DELIVERY, ENDPOINT, DeliveryStatus, EndpointStatus
from platpay.kit import clock
from platpay.kit.states import IllegalTransition
from tests.support.jobs import run_jobs_until

D = DeliveryStatus


def test_the_statuses_are_the_apis():
    assert set(get_args(schemas.DeliveryStatus)) == set(DeliveryStatus)
    endpoint_status = schemas.WebhookEndpointHealth.model_fields["status"].annotation
    assert set(get_args(endpoint_status)) == set(EndpointStatus)


def test_a_delivery_is_sent_until_it_settles_and_any_may_be_sent_again():
    assert DELIVERY.reachable() == DELIVERY.states == set(DeliveryStatus)
    assert DELIVERY.initial == {D.PENDING}
    assert DELIVERY.terminal == frozenset()  # redelivery reopens a settled one
    assert DELIVERY.targets(D.PENDING) == {D.PENDING, D.DELIVERED, D.FAILED}
    assert DELIVERY.targets(D.DELIVERED) == DELIVERY.targets(D.FAILED) == {D.PENDING}


def test_the_breaker_opens_and_closes():
    assert ENDPOINT.reachable() == ENDPOINT.states == set(EndpointStatus)
    assert ENDPOINT.targets(EndpointStatus.ACTIVE) == {EndpointStatus.FAILING}
    assert ENDPOINT.targets(EndpointStatus.FAILING) == {EndpointStatus.ACTIVE}
    assert ENDPOINT.terminal == frozenset()


async def test_a_delivered_delivery_takes_no_second_answer(client, auth, db, runner, receiver, settings):
    response = await client.patch("/config", auth=auth, json={"webhookEndpoint": receiver.url})
    assert response.status_code == 200, response.text
    await run_jobs_until(runner, lambda: len(receiver.of_type("TEST")) == 1)
    delivery_id = receiver.of_type("TEST")[0].json["id"]
    before = (await client.get(f"/webhooks/deliveries/{delivery_id}", auth=auth)).json()
    assert before["status"] == "DELIVERED"
    for status in (200, 500):
        # raised inside the transaction recording the answer, which rolls back with it
        with pytest.raises(IllegalTransition, match=f"webhook delivery {delivery_id}: no move from"):
            async with db.transaction() as session:
                row = await session.scalar(
                    select(WebhookDeliveryRow).where(WebhookDeliveryRow.id == delivery_id)
                )
                assert row is not None
                event = await session.get(EventRow, row.event_id)
                assert event is not None
                await delivery.record_attempt(
                    session,
                    delivery=row,
                    event=event,
                    result=delivery.AttemptResult(status, "", 1, None),
                    at=clock.now(),
                    settings=settings,
                )
    assert (await client.get(f"/webhooks/deliveries/{delivery_id}", auth=auth)).json() == before
    redelivered = await client.post(f"/webhooks/deliveries/{delivery_id}/redeliver", auth=auth)
    assert redelivered.status_code == 202 and redelivered.json()["status"] == "PENDING"
