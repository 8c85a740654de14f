"""The request tally adds up to exactly what recording each request in the metrics would."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry, generate_latest

from platpay.metrics import LATENCY_BUCKETS, Metrics

# On and next to every bucket bound, below the first and above the last.
SAMPLES = [0.0, 0.0004, *LATENCY_BUCKETS, *(bound * 1.001 for bound in LATENCY_BUCKETS), 99.0]


def _exposition(metrics: Metrics) -> list[str]:
    assert metrics.registry is not None
    text = generate_latest(metrics.registry).decode()
    return sorted(
        line for line in text.splitlines() if line.startswith("platpay_http") and "_created" not in line
    )


def test_a_flushed_tally_equals_observing_each_request() -> None:
    tallied, observed = Metrics(CollectorRegistry()), Metrics(CollectorRegistry())
    for index, seconds in enumerate(SAMPLES):
        status = 200 if index % 3 else 404
        tallied.requests.record("GET", "/config", status, seconds)  # no event loop: flushed at once
        observed.http_requests.labels("GET", "/config", str(status)).inc()
        observed.http_latency.labels("GET", "/config").observe(seconds)
    assert _exposition(tallied) == _exposition(observed)
    [total] = [line for line in _exposition(tallied) if "_bucket" in line and 'le="+Inf"' in line]
    assert float(total.rsplit(" ", 1)[1]) == len(SAMPLES)


async def test_within_a_loop_requests_reach_the_metrics_one_flush_later_or_at_a_scrape() -> None:
    metrics = Metrics(CollectorRegistry())
    for seconds in (0.002, 0.2, 3.0):
        metrics.requests.record("POST", "/tokens", 201, seconds)
    counter = metrics.http_requests.labels("POST", "/tokens", "201")
    assert counter._value.get() == 0  # tallied, not yet written
    await asyncio.sleep(metrics.requests.FLUSH_SECONDS + 0.2)
    assert counter._value.get() == 3
    metrics.requests.record("POST", "/tokens", 201, 0.01)
    list(metrics.collectors())  # a scrape flushes first
    assert counter._value.get() == 4
