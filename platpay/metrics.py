"""Prometheus metrics. Request metrics are per process; queue and webhook gauges are read from the
database at scrape time, so any process answers them for the whole deployment."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

HTTP_REQUESTS = Counter(
    "platpay_http_requests_total",
    "HTTP requests by route template and status",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_LATENCY = Histogram(
    "platpay_http_request_duration_seconds",
    "HTTP request latency by route template",
    ["method", "route"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
    registry=REGISTRY,
)
JOBS_QUEUE_DEPTH = Gauge("platpay_jobs", "jobs by state (DONE excluded)", ["state"], registry=REGISTRY)
JOBS_OLDEST_DUE_AGE = Gauge(
    "platpay_jobs_oldest_due_age_seconds", "how long the oldest due job has waited", registry=REGISTRY
)
WEBHOOK_ATTEMPTS = Counter(
    "platpay_webhook_attempts_total",
    "webhook delivery attempts made by this process, by outcome",
    ["outcome"],
    registry=REGISTRY,
)
WEBHOOK_DELIVERIES = Gauge(
    "platpay_webhook_deliveries",
    "webhook deliveries by status (all processes)",
    ["status"],
    registry=REGISTRY,
)
