"""Fault injection (Svc-Sandbox-Fault): the failure answered without the operation being performed; sandbox
credentials only."""

from __future__ import annotations

from tests.factories import FULL_PERSON

HEADER = "Svc-Sandbox-Fault"


async def _create(client, auth, fault: str | None = None, key: str | None = None):
    headers = {}
    if fault is not None:
        headers[HEADER] = fault
    if key is not None:
        headers["Idempotency-Key"] = key
    return await client.post("/customers", auth=auth, json=FULL_PERSON, headers=headers)


async def _count(client, auth) -> int:
    return len((await client.get("/customers", auth=auth)).json()["data"])


async def test_failures_are_answered_without_the_operation(client, auth):
    unavailable = await _create(client, auth, "status=503")
    assert unavailable.status_code == 503 and unavailable.json()["code"] == "SERVICE_UNAVAILABLE"
    limited = await _create(client, auth, "status=429;retryAfter=2")
    assert limited.status_code == 429 and limited.headers["Retry-After"] == "2"
    assert limited.json()["code"] == "RATE_LIMITED"
    broken = await _create(client, auth, "status=500")
    assert broken.status_code == 500 and broken.json()["code"] == "INTERNAL_ERROR"
    conflict = await _create(client, auth, "inFlightConflict", key="k-1")
    assert conflict.status_code == 409 and conflict.json()["code"] == "IDEMPOTENCY_KEY_IN_USE"
    assert await _count(client, auth) == 0
    # the key was not used: the retry without the fault creates the customer, once
    first = await _create(client, auth, key="k-1")
    replay = await _create(client, auth, key="k-1")
    assert first.status_code == 201 and replay.json()["id"] == first.json()["id"]
    assert await _count(client, auth) == 1


async def test_delay_performs_the_operation(client, auth):
    delayed = await _create(client, auth, "delayMs=50")
    assert delayed.status_code == 201
    assert await _count(client, auth) == 1


async def test_bad_values_name_the_header(client, auth):
    for value in ("status=404", "delayMs=-1", "retryAfter=2", "bogus", "status=503;inFlightConflict"):
        response = await _create(client, auth, value)
        assert response.status_code == 400, (value, response.text)
        assert response.json()["details"]["fields"][0]["field"] == HEADER
    assert await _count(client, auth) == 0


async def test_production_credentials_ignore_it(client, platform):
    production = platform["production"]
    created = await _create(client, production, "status=503")
    assert created.status_code == 201
