"""JSON column values as the database gets them: serialized by orjson (~10x faster than the standard library
on an event's ~700-byte payload, and a money request writes 7-11 of them), else by `json.dumps` for what
orjson refuses, so that every value the standard library serializes is stored, and what it refuses is still
refused (a TypeError).

The text only carries values: PostgreSQL's jsonb keeps none of its formatting, and SQLite's JSON columns
are read back through a parser. orjson writes compact UTF-8 where `json.dumps` writes `", "`, `": "` and
`\\uXXXX` escapes: the same values. Passed through to `json.dumps` (and so refused as before): datetimes and
dataclasses, and integers beyond 64 bits (orjson refuses them; the standard library keeps them exact).
Reading stays with the standard library: orjson reads an integer beyond 64 bits as a float."""

from __future__ import annotations

import json
from typing import Any

import orjson

_OPTIONS = orjson.OPT_NON_STR_KEYS | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS


def dumps(value: Any) -> str:
    """`value` as JSON text (see the module)."""
    try:
        return orjson.dumps(value, option=_OPTIONS).decode()
    except TypeError:  # (orjson.JSONEncodeError is one)
        return json.dumps(value)
