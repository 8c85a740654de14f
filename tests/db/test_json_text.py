"""Compact JSON text (platpay/db/json_text.py): orjson writes it, the standard library where orjson
refuses; an answer's bytes are what the standard library's compact form would be; JSON column values read
back as the same values, on both databases and through both paths (the ORM's and a lean statement's)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

import pytest

from platpay.db.json_text import compact_text as dumps
from platpay.events.models import EventRow
from platpay.kit.idempotency import render
from tests.support.lean import first_tenant_id, new_event, read_both_ways, write_both_ways


class Colour(StrEnum):
    RED = "RED"


@dataclass
class Point:
    x: int


VALUES = [
    {"amount": 1234, "note": "é ✓ 𝄞", "nested": {"list": [1, 2.5, None, True, "x"]}},
    {"big": 2**64 + 1, "negative": -(2**70)},  # beyond 64 bits: the standard library keeps them exact
    {1: "an int key", "status": Colour.RED},  # an int key becomes "1", as json.dumps writes it
    [],
    "plain",
]


@pytest.mark.parametrize("value", VALUES)
def test_what_is_written_reads_back_as_json_dumps_would_have_it(value):
    assert json.loads(dumps(value)) == json.loads(json.dumps(value))


def test_an_answer_is_the_standard_librarys_compact_json():
    body = {"id": "Transaction:1", "amount": 1234, "rate": 0.0512, "name": "Zoë ✓", "tags": [], "x": None}
    assert render(body) == json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    assert json.loads(render({"rate": 1e-05})) == {"rate": 1e-05}  # (written 1e-5: the same number)


@pytest.mark.parametrize("value", [datetime.now(UTC), Point(1), {"when": datetime.now(UTC)}, object()])
def test_what_the_standard_library_refuses_is_still_refused(value):
    with pytest.raises(TypeError):
        json.dumps(value)
    with pytest.raises(TypeError):
        dumps(value)


async def test_values_round_trip_through_both_databases_and_both_paths(db, settings):
    tenant_id = await first_tenant_id(db, settings)
    data = {"amount": 2**64 + 1, "note": "é ✓ 𝄞", "nested": [{"k": 1.5}, None]}
    lean_event, orm_event = new_event(tenant_id) | {"data": data}, new_event(tenant_id) | {"data": data}
    await write_both_ways(db, lean_event, orm_event)
    for event in (lean_event, orm_event):
        assert await read_both_ways(db, EventRow.data, event["id"]) == (data, data)
