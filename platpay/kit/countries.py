"""ISO 3166-1 alpha-2 country codes (the officially assigned set, names from CLDR)."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources


@cache
def catalog() -> dict[str, str]:
    raw = resources.files("platpay.kit").joinpath("data/countries.json").read_text("utf-8")
    countries: dict[str, str] = json.loads(raw)["countries"]
    return countries


def is_country(code: object) -> bool:
    return isinstance(code, str) and code in catalog()
