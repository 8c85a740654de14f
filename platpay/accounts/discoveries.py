"""The catalog of receiving institutions behind GET /discoveries, and the bankName look-up corridors use.

Each institution is {bankName, displayName, country, currency}: bankName is the stable code a client
passes when creating an external account; displayName is for people. A bankName given by a client
resolves when it equals a code, or a display name, of an institution in the corridor (case, accents and
spacing aside), so "BDO Unibank" and "BDO_UNIBANK" name the same bank and both are stored as the code.
"""

from __future__ import annotations

import json
import re
import unicodedata
from functools import cache
from importlib import resources

from platpay.errors import invalid_field

_COUNTRY_FORMAT = re.compile(r"[A-Z]{2}")
_CURRENCY_FORMAT = re.compile(r"[A-Z]{3,4}")


@cache
def _catalog() -> tuple[dict[str, str], ...]:
    text = resources.files("platpay.accounts").joinpath("data/discoveries.json").read_text("utf-8")
    institutions = json.loads(text)["institutions"]
    return tuple(sorted(institutions, key=lambda item: (item["country"], item["currency"], item["bankName"])))


def _matching(country: str | None, currency: str | None) -> list[dict[str, str]]:
    return [
        item
        for item in _catalog()
        if (country is None or item["country"] == country)
        and (currency is None or item["currency"] == currency)
    ]


def list_institutions(*, country: str | None, currency: str | None) -> list[dict[str, str]]:
    """Institutions in a country and/or currency (all of them without filters), ordered by country,
    currency and code. A malformed code is a 400; a well-formed code nobody serves is an empty list."""
    if country is not None and not _COUNTRY_FORMAT.fullmatch(country):
        raise invalid_field(
            "country", f"must be an ISO 3166-1 alpha-2 code in upper case such as PH, got {country!r}"
        )
    if currency is not None and not _CURRENCY_FORMAT.fullmatch(currency):
        raise invalid_field(
            "currency", f"must be a currency code in upper case such as PHP, got {currency!r}"
        )
    return [dict(item) for item in _matching(country, currency)]


def _comparable(name: str) -> str:
    """Case, accents, underscores and runs of spaces aside: "Banco Cuscatlan" names "Banco Cuscatlán"."""
    decomposed = unicodedata.normalize("NFKD", name)
    unaccented = "".join(char for char in decomposed if not unicodedata.combining(char))
    return re.sub(r"[\s_]+", " ", unaccented).strip().casefold()


def resolve_bank_name(*, bank_name: str, country: str | None, currency: str | None) -> str | None:
    """The catalog code for a client's bankName within a corridor, or None when no institution matches."""
    wanted = _comparable(bank_name)
    for item in _matching(country, currency):
        if wanted in (_comparable(item["bankName"]), _comparable(item["displayName"])):
            return item["bankName"]
    return None


def is_known_bank(*, bank_name: str, country: str | None, currency: str | None) -> bool:
    return resolve_bank_name(bank_name=bank_name, country=country, currency=currency) is not None
