"""Onboarding: document upload throughput and the server's peak memory, and POST /verifications req/s.

A benchmark, not a test: it prints figures and never fails on them. Targets: the server's peak
memory does not grow with the file size beyond the streaming buffer; POST /verifications req/s on PostgreSQL.

What runs, all on 127.0.0.1 against one `platpay serve` process (embedded job runner on):

1. Uploads (SQLite, a fresh database): `--rounds` rounds of 8 concurrent `POST /documents` of a 1 MB and
   of a 10 MB PDF (10,000,000 bytes: under the 10 MiB limit), each file streamed from the client. Figures:
   MB/s (file bytes over wall time), and the server process's RSS sampled every 5 ms: before, peak, and
   the peak's growth over the baseline, per size. Peak growth that stays flat from 1 MB to 10 MB means the
   upload is streamed, never held whole.
2. Verifications (PostgreSQL, a fresh database platpay_bench_onboarding_<random>, dropped afterwards):
   `--customers` individuals without documents, then `POST /verifications` round-robin over them by
   `--concurrency` clients for `--seconds` (the RESOLVE_ERRORS path: every call reads the customer, its
   documents and its latest verification and computes what is missing). Figures: req/s, p50/p99.
3. Verifications through review (the same PostgreSQL database): `--review-customers` individuals with
   every field and both documents a review needs (a passport and a bank statement), then one
   `POST /verifications` each, by `--concurrency` clients (every call starts a review: IN_PROGRESS, its
   webhooks and its review job). Figures: req/s, p50/p99 of the submissions, then the time until the
   embedded job runner has decided every review (each verification polled until APPROVED).

    .venv/bin/python bench/documents.py
    .venv/bin/python bench/documents.py --rounds 2 --seconds 5      # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
import psutil
from _support import DEFAULT_PG_ADMIN, machine_summary, pg_database, pg_reachable, stop
from http_config import start_platpay

BASE_PATH = "/2025-10-13"
PERSON: dict[str, Any] = {
    "customerType": "INDIVIDUAL",
    "fullName": "Bench Person",
    "birthDate": "1990-04-12",
    "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
}
CONCURRENT_UPLOADS = 8
SIZES = {"1 MB": 1_000_000, "10 MB": 10_000_000}


class RssSampler:
    """The process's resident memory (itself and any children), sampled in a thread."""

    def __init__(self, pid: int, every: float = 0.005) -> None:
        self.process = psutil.Process(pid)
        self.every = every
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss(self) -> int:
        total = self.process.memory_info().rss
        for child in self.process.children(recursive=True):
            with contextlib.suppress(psutil.Error):
                total += child.memory_info().rss
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self.rss())
            time.sleep(self.every)

    def __enter__(self) -> RssSampler:
        self.peak = self.rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _pdf(size: int) -> bytes:
    head = b"%PDF-1.4\n"
    return head + b"0" * (size - len(head))


async def _upload(
    client: httpx.AsyncClient,
    auth: tuple[str, str],
    holder: str,
    content: bytes,
    document_type: str = "PASSPORT",
) -> None:
    response = await client.post(
        f"{BASE_PATH}/documents",
        auth=auth,
        data={"documentHolder": holder, "documentType": document_type, "country": "US"},
        files={"file": ("scan.pdf", content, "application/pdf")},
    )
    if response.status_code != 201:
        raise RuntimeError(f"upload: {response.status_code} {response.text[:300]}")


async def uploads(base: str, auth: tuple[str, str], pid: int, rounds: int) -> dict[str, dict[str, float]]:
    figures: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        created = await client.post(f"{BASE_PATH}/customers", auth=auth, json=PERSON)
        created.raise_for_status()
        holder = created.json()["id"]
        await _upload(client, auth, holder, _pdf(100_000))  # warm up
        for label, size in SIZES.items():
            content = _pdf(size)
            with RssSampler(pid) as sampler:
                baseline = sampler.peak
                started = time.perf_counter()
                for _ in range(rounds):
                    await asyncio.gather(
                        *(_upload(client, auth, holder, content) for _ in range(CONCURRENT_UPLOADS))
                    )
                elapsed = time.perf_counter() - started
            total = size * CONCURRENT_UPLOADS * rounds
            figures[label] = {
                "MB/s": total / elapsed / 1e6,
                "uploads": CONCURRENT_UPLOADS * rounds,
                "rss_before_MiB": baseline / 2**20,
                "rss_peak_MiB": sampler.peak / 2**20,
                "rss_growth_MiB": (sampler.peak - baseline) / 2**20,
            }
    return figures


async def verifications(
    base: str, auth: tuple[str, str], customers: int, concurrency: int, seconds: float
) -> dict[str, float]:
    async with httpx.AsyncClient(
        base_url=base, timeout=30, limits=httpx.Limits(max_connections=concurrency)
    ) as client:
        ids = []
        for index in range(customers):
            response = await client.post(
                f"{BASE_PATH}/customers", auth=auth, json={**PERSON, "platformCustomerId": f"bench-{index}"}
            )
            response.raise_for_status()
            ids.append(response.json()["id"])
        for customer_id in ids:  # each has its RESOLVE_ERRORS verification already
            (
                await client.post(f"{BASE_PATH}/verifications", auth=auth, json={"customerId": customer_id})
            ).raise_for_status()
        latencies: list[float] = []
        deadline = time.perf_counter() + seconds
        counter = iter(range(10**9))

        async def worker() -> None:
            while time.perf_counter() < deadline:
                customer_id = ids[next(counter) % len(ids)]
                started = time.perf_counter()
                response = await client.post(
                    f"{BASE_PATH}/verifications", auth=auth, json={"customerId": customer_id}
                )
                if response.status_code != 200:
                    raise RuntimeError(f"verification: {response.status_code} {response.text[:300]}")
                latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    latencies.sort()
    return {
        "requests": len(latencies),
        "req/s": len(latencies) / elapsed,
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[int(len(latencies) * 0.99) - 1] * 1000,
    }


def _percentiles(latencies: list[float]) -> tuple[float, float]:
    latencies = sorted(latencies)
    return statistics.median(latencies) * 1000, latencies[max(int(len(latencies) * 0.99) - 1, 0)] * 1000


async def reviews(base: str, auth: tuple[str, str], customers: int, concurrency: int) -> dict[str, float]:
    """One POST /verifications per customer ready for review, then every review decided by the job runner."""
    ready = {**PERSON, "email": "bench@example.com", "address": {**PERSON["address"], "city": "Springfield"}}
    async with httpx.AsyncClient(
        base_url=base, timeout=60, limits=httpx.Limits(max_connections=concurrency)
    ) as client:
        ids = []
        for index in range(customers):
            response = await client.post(
                f"{BASE_PATH}/customers", auth=auth, json={**ready, "platformCustomerId": f"review-{index}"}
            )
            response.raise_for_status()
            ids.append(response.json()["id"])
            await _upload(client, auth, ids[-1], _pdf(2_000))
            await _upload(client, auth, ids[-1], _pdf(2_000), "BANK_STATEMENT")
        queue = list(ids)
        latencies: list[float] = []
        verification_ids: list[str] = []

        async def submit() -> None:
            while queue:
                customer_id = queue.pop()
                started = time.perf_counter()
                response = await client.post(
                    f"{BASE_PATH}/verifications", auth=auth, json={"customerId": customer_id}
                )
                latencies.append(time.perf_counter() - started)
                body = response.json()
                if response.status_code != 200 or body.get("verificationStatus") != "IN_PROGRESS":
                    raise RuntimeError(f"verification: {response.status_code} {response.text[:300]}")
                verification_ids.append(body["id"])

        started = time.perf_counter()
        await asyncio.gather(*(submit() for _ in range(concurrency)))
        submitted = time.perf_counter() - started
        pending = set(verification_ids)
        while pending:
            for verification_id in list(pending):
                body = (await client.get(f"{BASE_PATH}/verifications/{verification_id}", auth=auth)).json()
                if body["verificationStatus"] == "APPROVED":
                    pending.discard(verification_id)
                elif body["verificationStatus"] != "IN_PROGRESS":
                    raise RuntimeError(f"review: {body}")
            if pending:
                await asyncio.sleep(0.2)
        decided = time.perf_counter() - started
    p50, p99 = _percentiles(latencies)
    return {
        "requests": len(latencies),
        "req/s": len(latencies) / submitted,
        "p50_ms": p50,
        "p99_ms": p99,
        "all_decided_s": decided,
        "decided/s": len(latencies) / decided,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--customers", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--review-customers", type=int, default=200)
    parser.add_argument("--pg-admin", default=DEFAULT_PG_ADMIN)
    args = parser.parse_args()
    print(machine_summary())
    quiet = {"PLATPAY_LOG_LEVEL": "WARNING"}
    with tempfile.TemporaryDirectory(prefix="platpay-bench-documents-") as tmp:
        workdir = Path(tmp)
        target = start_platpay("sqlite", f"sqlite+aiosqlite:///{workdir / 'bench.db'}", workdir, quiet)
        try:
            assert target.credentials is not None
            base = f"http://127.0.0.1:{target.port}"
            figures = asyncio.run(uploads(base, target.credentials, target.proc.pid, args.rounds))
        finally:
            stop(target.proc)
        print(
            f"\nUploads, {CONCURRENT_UPLOADS} concurrent, {args.rounds} rounds (SQLite, one server process):"
        )
        for label, row in figures.items():
            print(
                f"  {label:>6}: {row['MB/s']:7.1f} MB/s over {row['uploads']:.0f} uploads; server RSS "
                f"{row['rss_before_MiB']:.0f} -> peak {row['rss_peak_MiB']:.0f} MiB (+{row['rss_growth_MiB']:.1f} MiB)"
            )
        problem = pg_reachable(args.pg_admin)
        if problem is not None:
            print(f"\nPostgreSQL unreachable ({problem}): POST /verifications not measured")
            return
        with pg_database(args.pg_admin, prefix="platpay_bench_onboarding") as url:
            target = start_platpay("postgres", url, workdir, quiet)
            try:
                assert target.credentials is not None
                base = f"http://127.0.0.1:{target.port}"
                row = asyncio.run(
                    verifications(base, target.credentials, args.customers, args.concurrency, args.seconds)
                )
                review = asyncio.run(
                    reviews(base, target.credentials, args.review_customers, args.concurrency)
                )
            finally:
                stop(target.proc)
        print(
            f"\nPOST /verifications (PostgreSQL, RESOLVE_ERRORS path, {args.customers} customers, "
            f"{args.concurrency} clients, {args.seconds:.0f} s): {row['req/s']:.0f} req/s "
            f"(p50 {row['p50_ms']:.1f} ms, p99 {row['p99_ms']:.1f} ms, {row['requests']:.0f} requests)"
        )
        print(
            f"POST /verifications through review (PostgreSQL, {review['requests']:.0f} customers ready for "
            f"review, {args.concurrency} clients): {review['req/s']:.0f} req/s (p50 {review['p50_ms']:.1f} ms, "
            f"p99 {review['p99_ms']:.1f} ms); every review decided (APPROVED) {review['all_decided_s']:.1f} s "
            f"after the first submission ({review['decided/s']:.0f} reviews/s through the job runner)"
        )


if __name__ == "__main__":
    main()
