"""A small in-process rate cache for GET /exchange-rates and receiver lookups (about 5 minutes).

Only a speed-up and a published freshness (`updatedAt`): nothing depends on it for correctness. Quotes
read the provider directly, since their rate is locked in the database for the quote's lifetime. Each
process keeps its own cache, so two processes may show different `updatedAt` values for the same rate.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from platpay.fx.providers import RATES, RateQuote
from platpay.kit import clock


@dataclass(frozen=True, slots=True)
class CachedRate:
    rate: RateQuote
    fetched_at: datetime


_entries: dict[tuple[str, str, str], CachedRate] = {}
_MAX_ENTRIES = 50_000  # every pair of 170 currencies is ~29k; a bound against surprises, not a policy


def get(source_currency: str, destination_currency: str, *, ttl_seconds: float) -> CachedRate:
    """The provider's rate for the pair, fetched at most `ttl_seconds` ago."""
    provider = RATES.get()
    key = (provider.name, source_currency, destination_currency)
    now = clock.now()
    cached = _entries.get(key)
    # An entry from the future (a test clock moved back) is as stale as an old one.
    if cached is not None and cached.fetched_at <= now < cached.fetched_at + timedelta(seconds=ttl_seconds):
        return cached
    if len(_entries) >= _MAX_ENTRIES:
        _entries.clear()
    fresh = CachedRate(provider.rate(source_currency, destination_currency), now)
    _entries[key] = fresh
    return fresh


def clear() -> None:
    _entries.clear()
