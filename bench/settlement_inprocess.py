"""A transfer-out's settlement in the worker, in-process: N transfers are made through the API (the ASGI app
called directly, its embedded runner off), then one JobRunner runs their steps (process, then settle, the
sandbox's delay set to 0) until none is due. Per settled transfer: the runner's CPU µs, its Python function
calls (cProfile's count, a figure other work on the machine does not move) and, on PostgreSQL, the statements
it sent (pg_stat_statements when the database has it, else not shown); optionally the top of a cProfile.

docs/capacity.md: settlement, not the request path, is most of a transfer's CPU; this is its microscope.

    .venv/bin/python bench/settlement_inprocess.py --transfers 400 --rounds 3
    .venv/bin/python bench/settlement_inprocess.py --backends postgres --profile 25
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import random
import secrets
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import DEFAULT_PG_ADMIN, asgi_lifespan, inprocess_backends, stdout_to, use_uvloop
from transfer_out import BASE_PATH, Pair, _seed

BASE_URL = "http://127.0.0.1:8000"


async def _transfers(client: Any, pairs: list[Pair], count: int) -> list[str]:
    """`count` transfer-outs, 8 at a time; their ids."""
    limit = asyncio.Semaphore(8)

    async def one() -> str:
        pair = random.choice(pairs)
        async with limit:
            response = await client.post(
                f"{BASE_PATH}/transfer-out",
                json={
                    "source": {"accountId": pair.internal_id},
                    "destination": {"accountId": pair.external_id},
                    "amount": random.randint(1, 1000),
                },
                headers={"Idempotency-Key": secrets.token_hex(8)},
            )
        if response.status_code != 201:
            raise RuntimeError(f"transfer-out answered {response.status_code}: {response.text}")
        return str(response.json()["id"])

    return list(await asyncio.gather(*(one() for _ in range(count))))


async def _completed(db: Any, ids: list[str]) -> int:
    from sqlalchemy import func, select

    from platpay.payments.models import TransactionRow

    async with db.read() as session:
        return int(
            await session.scalar(
                select(func.count()).where(
                    TransactionRow.id.in_(ids),
                    TransactionRow.status == "COMPLETED",
                )
            )
            or 0
        )


async def _measure(url: str, credentials: tuple[str, str], args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    os.environ["PLATPAY_DATABASE_URL"] = url
    from platpay.app import create_app
    from platpay.config import get_settings
    from platpay.jobs.runner import JobRunner

    get_settings.cache_clear()
    settings = get_settings().model_copy(
        update={"run_embedded_worker": False, "sandbox_settlement_seconds": 0.0}
    )
    app = create_app(settings, embedded_worker=False)
    cpu: list[float] = []
    async with asgi_lifespan(app):
        db = app.state.db
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            base_url=BASE_URL, auth=credentials, timeout=60, trust_env=False, transport=transport
        ) as client:
            pairs: list[Pair] = (await _seed(BASE_URL, credentials, args.customers, transport))[:-1]
            runner = JobRunner(db, settings, name="bench-settle")
            await runner.run_until_idle(timeout=120)  # the seeding's own jobs
            warm = await _transfers(client, pairs, min(50, args.transfers))
            await runner.run_until_idle(timeout=120)
            assert await _completed(db, warm) == len(warm), "the warm-up's transfers did not settle"

            async def settle(profiler: cProfile.Profile | None) -> float:
                ids = await _transfers(client, pairs, args.transfers)
                began = time.process_time()
                if profiler is not None:
                    profiler.enable()
                await runner.run_until_idle(timeout=600)
                if profiler is not None:
                    profiler.disable()
                spent = time.process_time() - began
                done = await _completed(db, ids)
                if done != len(ids):
                    raise RuntimeError(f"only {done} of {len(ids)} transfers settled")
                return spent / len(ids) * 1e6

            for number in range(args.rounds):
                cpu.append(await settle(None))
                print(
                    f"  round {number + 1}: {cpu[-1]:7.0f} µs runner CPU per settled transfer",
                    file=sys.stderr,
                )
            profiler = cProfile.Profile()
            await settle(profiler)
            stats = pstats.Stats(profiler)
            calls = round(stats.total_calls / args.transfers)  # type: ignore[attr-defined]
            if args.profile:
                print(f"\n  profile of {args.transfers} settlements (top {args.profile}):", file=sys.stderr)
                stats.stream = sys.stderr  # type: ignore[attr-defined]
                stats.sort_stats("tottime").print_stats(args.profile)
                stats.sort_stats("cumulative").print_stats(args.profile * 2)
    return {"cpu_us": statistics.median(cpu), "spread": cpu, "calls": calls}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--transfers", type=int, default=400, help="transfers settled per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--customers", type=int, default=16)
    parser.add_argument("--profile", type=int, default=0, help="print the top N of the profile")
    parser.add_argument(
        "--pg-admin-url", default=os.environ.get("PLATPAY_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN)
    )
    args = parser.parse_args()
    use_uvloop()
    devnull = open(os.devnull, "w")  # noqa: SIM115 (the access log's destination for the whole run)
    summary: list[str] = []
    for backend, url, credentials in inprocess_backends(args.backends, args.pg_admin_url, "pp-settle-"):
        print(f"{backend}: {args.transfers} transfers settled per round", flush=True)
        with stdout_to(devnull):
            figures = asyncio.run(_measure(url, credentials, args))
        spread = "-".join(f"{v:.0f}" for v in (min(figures["spread"]), max(figures["spread"])))
        summary.append(f"{backend:<9} {figures['cpu_us']:8.0f} µs ({spread}) {figures['calls']:8,} calls")
    print("\nbackend   runner CPU per settled transfer (spread)   function calls per settled transfer")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
