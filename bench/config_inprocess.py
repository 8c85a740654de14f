"""Authenticated GET /config in-process: the ASGI app called directly (no server, no sockets), CPU µs per
request, on SQLite and on PostgreSQL; optionally a cProfile of the loop.

The figure is the app's own share of a served request (`http_config.py` adds uvicorn's ~100-130 µs):
what the middleware, FastAPI, authentication and the endpoint cost. Access log lines go to /dev/null
(rendered as a server renders them). Sequential requests, so `time.process_time` per request is the CPU.

    .venv/bin/python bench/config_inprocess.py --requests 4000 --rounds 3
    .venv/bin/python bench/config_inprocess.py --backends sqlite --profile 20   # top 20 by own time
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import os
import pstats
import sys
import time
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    DEFAULT_PG_ADMIN,
    asgi_lifespan,
    http_scope,
    inprocess_backends,
    stdout_to,
    use_uvloop,
)

BASE_PATH = "/2025-10-13"


async def _measure(
    url: str, client_id: str, secret: str, *, requests: int, rounds: int, profile: int
) -> None:
    os.environ["PLATPAY_DATABASE_URL"] = url
    from platpay.app import create_app
    from platpay.config import get_settings

    get_settings.cache_clear()
    settings = get_settings().model_copy(update={"run_embedded_worker": False})
    app = create_app(settings, embedded_worker=False)
    authorization = b"Basic " + base64.b64encode(f"{client_id}:{secret}".encode())
    path = f"{BASE_PATH}/config"
    statuses: list[int] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    def scope() -> dict[str, Any]:
        return http_scope("GET", path, [(b"authorization", authorization)])

    async with asgi_lifespan(app):
        for _ in range(300):  # warm-up: caches, the inline reader, the pools
            await app(scope(), receive, send)
        assert set(statuses) == {200}, statuses[:5]
        for number in range(rounds):
            statuses.clear()
            profiler = cProfile.Profile() if profile and number == rounds - 1 else None
            started = time.process_time()
            if profiler is not None:
                profiler.enable()
            for _ in range(requests):
                await app(scope(), receive, send)
            if profiler is not None:
                profiler.disable()
            cpu = time.process_time() - started
            assert set(statuses) == {200}, set(statuses)
            label = " (profiled)" if profiler is not None else ""
            print(
                f"  round {number + 1}: {cpu / requests * 1e6:7.1f} µs CPU per request{label}",
                file=sys.stderr,
                flush=True,
            )
            if profiler is not None:
                stats = pstats.Stats(profiler, stream=sys.stderr)
                stats.sort_stats("tottime").print_stats(profile)
                stats.sort_stats("cumulative").print_stats(profile * 2)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, help="profile the last round: print the top N")
    parser.add_argument(
        "--pg-admin-url", default=os.environ.get("PLATPAY_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN)
    )
    args = parser.parse_args()
    use_uvloop()
    devnull = open(os.devnull, "w")  # noqa: SIM115 (the access log's destination for the whole run)
    for backend, url, (client_id, secret) in inprocess_backends(
        args.backends, args.pg_admin_url, "pp-config-"
    ):
        print(f"{backend}: {args.requests} sequential GET /config per round", flush=True)
        with stdout_to(devnull):
            asyncio.run(
                _measure(
                    url, client_id, secret, requests=args.requests, rounds=args.rounds, profile=args.profile
                ),
            )


if __name__ == "__main__":
    main()
