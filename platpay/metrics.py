"""Prometheus metrics, added up over every platpay process on the machine.

Two kinds of metric:

- Events, counted by the process that saw them: HTTP requests and their latency, webhook attempts, job
  runs, and the live processes themselves. The CLI (`serve`, `worker`) runs every process in
  prometheus_client's multiprocess mode: each process writes its values to its own files in one directory
  (`PLATPAY_METRICS_DIR`, default `<var dir>/metrics`), and /metrics, whichever server process answers it,
  merges the files of every process: uvicorn's server processes and any separate `platpay worker`. Counters
  of processes that have exited stay counted (a total never goes backwards) until the next `serve` start
  clears the files of processes no longer running; `platpay_processes` counts live processes only.
- State read from the database at scrape time (job queue depth and age, deliveries by status): computed
  once by the process answering the scrape, never stored per process, so never summed.

An app built in-process without the CLI (tests, embedding) keeps its own in-memory registry, so apps
built side by side never see each other's counts.
"""

from __future__ import annotations

import asyncio
import bisect
import contextvars
import glob
import os
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, values
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from platpay.loops import running_loop

if TYPE_CHECKING:
    from platpay.config import Settings

MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_PID_IN_FILE_NAME = re.compile(r"_(\d+)\.db$")


class Metrics:
    """One set of the event metrics. `registry` is None in multiprocess mode, where values live in files."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.registry = registry
        self.http_requests = Counter(
            "platpay_http_requests_total",
            "HTTP requests by route template and status",
            ["method", "route", "status"],
            registry=registry,
        )
        self.http_latency = Histogram(
            "platpay_http_request_duration_seconds",
            "HTTP request latency by route template",
            ["method", "route"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.webhook_attempts = Counter(
            "platpay_webhook_attempts_total",
            "webhook delivery attempts by outcome (delivered, retry, failed, gave_up)",
            ["outcome"],
            registry=registry,
        )
        self.message_attempts = Counter(
            "platpay_message_attempts_total",
            "outbound email and SMS send attempts by channel, category and outcome (sent, retry, failed)",
            ["channel", "category", "outcome"],
            registry=registry,
        )
        self.card_authorizations_raced = Counter(
            "platpay_card_authorizations_raced_total",
            "card authorizations whose fast path found what it decided on changed by a concurrent "
            "transaction before its writes (the funding source spent, the card changed): rolled back and "
            "decided again under the locks",
            registry=registry,
        )
        self.db_replica_reads = Counter(
            "platpay_db_replica_reads_total",
            "reads offered to the read replica (PLATPAY_DATABASE_READ_URL) by where they went: replica, or why "
            "the primary served them (wrote, lagging, down, unknown, failed)",
            ["choice"],
            registry=registry,
        )
        self.job_runs = Counter(
            "platpay_job_runs_total",
            "job runs by kind and outcome (done, retry, failed, dead, lease_lost)",
            ["kind", "outcome"],
            registry=registry,
        )
        self.processes = Gauge(
            "platpay_processes",
            "live platpay processes recording metrics, by role (server, worker)",
            ["role"],
            multiprocess_mode="livesum",  # a process that exits (or is killed) stops counting
            registry=registry,
        )

        self.requests = RequestTally(self)

    def collectors(self) -> Iterable[Any]:
        """What a scrape reads the event metrics from: every process's files, or this set's registry."""
        self.requests.flush()  # this process's latest requests, as the scrape is itself one
        directory = multiprocess_dir()
        if directory is not None:
            forget_dead_processes(directory)
            return [MultiProcessCollector(None, path=str(directory))]
        assert self.registry is not None
        return [self.registry]


class RequestTally:
    """HTTP request counts and latencies, tallied in memory per request and added to the Prometheus
    metrics at most FLUSH_SECONDS later (and before every scrape this process answers).

    Recording each request into the metrics directly costs three locked, pid-checked writes to the
    multiprocess files plus two label lookups (~5% of a small request's CPU); a tally is a few dict and
    list updates, and its flush writes each series once however many requests it covers. The price: the
    other processes' latest FLUSH_SECONDS of requests reach a scrape one flush later."""

    FLUSH_SECONDS = 0.5

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._counts: dict[tuple[str, str, str], int] = {}
        # (method, route) -> [count per LATENCY_BUCKETS bucket, then +Inf], and the sum of latencies
        self._latencies: dict[tuple[str, str], tuple[list[int], list[float]]] = {}
        self._flush_loop: asyncio.AbstractEventLoop | None = None  # where a flush is scheduled

    def record(self, method: str, route: str, status: int, seconds: float) -> None:
        key = (method, route, str(status))
        self._counts[key] = self._counts.get(key, 0) + 1
        series = self._latencies.get((method, route))
        if series is None:
            series = self._latencies[(method, route)] = ([0] * (len(LATENCY_BUCKETS) + 1), [0.0])
        series[0][bisect.bisect_left(LATENCY_BUCKETS, seconds)] += 1  # the first bound >= seconds
        series[1][0] += seconds
        try:
            loop = running_loop()
        except RuntimeError:
            self.flush()
            return
        if self._flush_loop is not loop:  # none scheduled (or on a loop that has since gone)
            self._flush_loop = loop
            loop.call_later(self.FLUSH_SECONDS, self.flush)

    def flush(self) -> None:
        self._flush_loop = None
        counts, self._counts = self._counts, {}
        latencies, self._latencies = self._latencies, {}
        for labels, count in counts.items():
            self._metrics.http_requests.labels(*labels).inc(count)
        for route, (buckets, total) in latencies.items():
            child = self._metrics.http_latency.labels(*route)
            # What Histogram.observe does per observation, for a bucket's observations at once.
            child._sum.inc(total[0])
            for index, count in enumerate(buckets):
                if count:
                    child._buckets[index].inc(count)


# ---- multiprocess mode ----------------------------------------------------------------------------------


def directory_for(settings: Settings) -> Path:
    return settings.metrics_dir or settings.var_dir / "metrics"


def multiprocess_dir() -> Path | None:
    value = os.environ.get(MULTIPROCESS_ENV)
    return Path(value) if value else None


def enable_multiprocess(directory: Path, *, clear_dead: bool) -> None:
    """Record every metric of this process, and of the processes it starts, in files under `directory`.

    Call before any metric is recorded. `clear_dead` (the `serve` parent, at startup) removes the files
    of processes no longer running, so a restarted deployment starts from zero while a separate worker that
    is still running keeps its counts."""
    global _process_metrics
    directory.mkdir(parents=True, exist_ok=True)
    if clear_dead:
        for path in glob.glob(str(directory / "*.db")):
            pid = _pid_of(path)
            if pid is None or not _alive(pid):
                Path(path).unlink(missing_ok=True)
    os.environ[MULTIPROCESS_ENV] = str(directory)  # inherited by uvicorn's server processes
    if not getattr(values.ValueClass, "_multiprocess", False):
        # prometheus_client picks its value class when first imported, which may have been before this.
        values.ValueClass = values.MultiProcessValue()
    _process_metrics = None


def forget_dead_processes(directory: Path) -> None:
    """Drop the live gauges of processes that exited without saying so (killed): the scrape's view of
    `platpay_processes` is then always the processes running now."""
    for path in glob.glob(str(directory / "gauge_live*.db")):
        pid = _pid_of(path)
        if pid is not None and not _alive(pid):
            mark_process_dead(pid, str(directory))


def process_exiting() -> None:
    """A process in multiprocess mode stops counting as live (its counters stay counted)."""
    directory = multiprocess_dir()
    if directory is not None:
        mark_process_dead(os.getpid(), str(directory))


def _pid_of(path: str) -> int | None:
    match = _PID_IN_FILE_NAME.search(path)
    return int(match[1]) if match else None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


# ---- which set of metrics records -----------------------------------------------------------------------

_process_metrics: Metrics | None = None
_current: contextvars.ContextVar[Metrics | None] = contextvars.ContextVar("platpay_metrics", default=None)


def process_metrics() -> Metrics:
    """The process's own set: the one every process uses in multiprocess mode, and what code running
    outside any app (a standalone job runner) records to otherwise."""
    global _process_metrics
    if _process_metrics is None:
        registry = None if multiprocess_dir() is not None else CollectorRegistry(auto_describe=True)
        _process_metrics = Metrics(registry)
    return _process_metrics


def metrics_for_app() -> Metrics:
    """In multiprocess mode the process's set (one app per process); otherwise a set of the app's own."""
    if multiprocess_dir() is not None:
        return process_metrics()
    return Metrics(CollectorRegistry(auto_describe=True))


def bind(metrics: Metrics) -> contextvars.Token[Metrics | None]:
    """Record to `metrics` in this context and the tasks it starts (an app's requests and job runner)."""
    return _current.set(metrics)


def unbind(token: contextvars.Token[Metrics | None]) -> None:
    _current.reset(token)


def current() -> Metrics:
    return _current.get() or process_metrics()


class _CurrentMetric:
    """Stands for one metric of whichever set records in the current context."""

    def __init__(self, attribute: str) -> None:
        self._attribute = attribute

    def labels(self, *label_values: str, **label_kwargs: str) -> Any:
        return getattr(current(), self._attribute).labels(*label_values, **label_kwargs)

    def inc(self, amount: float = 1) -> None:  # a metric without labels
        getattr(current(), self._attribute).inc(amount)


def record_request(method: str, route: str, status: int, seconds: float) -> None:
    current().requests.record(method, route, status, seconds)


WEBHOOK_ATTEMPTS = _CurrentMetric("webhook_attempts")
JOB_RUNS = _CurrentMetric("job_runs")
MESSAGE_ATTEMPTS = _CurrentMetric("message_attempts")
CARD_AUTHORIZATIONS_RACED = _CurrentMetric("card_authorizations_raced")
DB_REPLICA_READS = _CurrentMetric("db_replica_reads")


# ---- scrape ---------------------------------------------------------------------------------------------


def database_families(
    *,
    jobs_by_state: dict[str, int],
    oldest_due_age_seconds_by_lane: dict[str, float],
    deliveries_by_status: dict[str, int],
    endpoints_by_status: dict[str, int],
) -> list[Metric]:
    jobs = GaugeMetricFamily("platpay_jobs", "jobs by state (DONE excluded)", labels=["state"])
    for state in ("QUEUED", "RUNNING", "DEAD"):
        jobs.add_metric([state], jobs_by_state.get(state, 0))
    oldest = GaugeMetricFamily(
        "platpay_jobs_oldest_due_age_seconds",
        "how long the oldest due job of each lane has waited (webhooks: deliveries to a FAILING endpoint wait)",
        labels=["lane"],
    )
    for lane, age in sorted(oldest_due_age_seconds_by_lane.items()):
        oldest.add_metric([lane], age)
    deliveries = GaugeMetricFamily(
        "platpay_webhook_deliveries", "webhook deliveries by status (all processes)", labels=["status"]
    )
    for status in ("PENDING", "DELIVERED", "FAILED"):
        deliveries.add_metric([status], deliveries_by_status.get(status, 0))
    endpoints = GaugeMetricFamily(
        "platpay_webhook_endpoints",
        "webhook endpoints that have failed at least once, by breaker status (FAILING: waiting for a probe)",
        labels=["status"],
    )
    for status in ("ACTIVE", "FAILING"):
        endpoints.add_metric([status], endpoints_by_status.get(status, 0))
    return [jobs, oldest, deliveries, endpoints]


class Scrape:
    """What one /metrics answer shows: the event metrics plus `extra` families computed for it."""

    def __init__(self, metrics: Metrics, extra: list[Metric]) -> None:
        self.metrics = metrics
        self.extra = extra

    def collect(self) -> Iterator[Metric]:
        for collector in self.metrics.collectors():
            yield from collector.collect()
        yield from self.extra
