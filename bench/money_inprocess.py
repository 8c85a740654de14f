"""POST /transfer-out (platform, Basic auth), POST /agents/me/transfer-out (agent, bearer token) and
POST /sandbox/cards/{id}/simulate/authorization (card, Basic auth) in-process: the ASGI app called directly (no
server, no sockets), sequential requests, CPU µs per request and Python function calls per request (cProfile's
count: a figure other work on the machine does not move), on PostgreSQL and on SQLite; optionally the top of a
cProfile.

It shows where the agent's request spends what the platform's does not (issue 33: agent >= 0.9 x platform),
where a card authorization's CPU goes, and what a change to the request path costs or saves without the noise
of a loaded machine. The cards (one per customer, its USD account the funding source) are provisioned by a
job runner of the app run until idle after seeding; no runner runs while requests are measured.

    .venv/bin/python bench/money_inprocess.py --requests 600 --rounds 3
    .venv/bin/python bench/money_inprocess.py --backends postgres --only agent --profile 25
    .venv/bin/python bench/money_inprocess.py --backends postgres --only card --profile 25
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import json
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

from _support import (
    DEFAULT_PG_ADMIN,
    asgi_lifespan,
    http_scope,
    inprocess_backends,
    stdout_to,
    use_uvloop,
)
from agent_transfer import _agents
from card_auth import INELIGIBLE_SUFFIXES
from transfer_out import BASE_PATH, Pair, _seed

BASE_URL = "http://127.0.0.1:8000"
KINDS = ("platform", "agent", "card")
OK = {"platform": 201, "agent": 201, "card": 202}  # a simulated authorization is accepted, then applied
CARD_BODY = b'{"amount":1,"currency":{"code":"USD"},"merchant":{"descriptor":"BENCH SHOP"}}'


class _Caller:
    """Calls the ASGI app the way a server would: one POST with a JSON body, the status kept."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.statuses: list[int] = []

    async def post(self, path: str, body: bytes, authorization: bytes, key: str) -> None:
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:
                await asyncio.sleep(3600)
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                self.statuses.append(message["status"])

        scope = http_scope(
            "POST",
            path,
            [
                (b"authorization", authorization),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"idempotency-key", key.encode()),
            ],
        )
        await self.app(scope, receive, send)


async def _cards(app: Any, credentials: tuple[str, str], pairs: list[Pair], transport: Any) -> list[str]:
    """One ACTIVE card per customer whose account the sandbox issuer accepts, funded by that account: the
    customer's KYC approved, the card issued, then a job runner of the app run until idle provisions them."""
    import httpx

    from platpay.jobs.runner import JobRunner

    made = []
    async with httpx.AsyncClient(
        base_url=BASE_URL + BASE_PATH, auth=credentials, timeout=60, trust_env=False, transport=transport
    ) as client:
        for n, pair in enumerate(pairs):
            if pair.internal_id.endswith(INELIGIBLE_SUFFIXES):
                continue
            approved = await client.post(
                f"/sandbox/customers/{pair.customer_id}/kyc", json={"kycStatus": "APPROVED"}
            )
            card = await client.post(
                "/cards",
                json={
                    "cardholderId": pair.customer_id,
                    "form": "VIRTUAL",
                    "fundingSources": [pair.internal_id],
                    "platformCardId": f"bench-card-{n}",
                },
            )
            if approved.status_code != 200 or card.status_code != 201:
                raise RuntimeError(f"seeding cards: {approved.status_code} {approved.text}; {card.text}")
            made.append(card.json()["id"])
        await JobRunner(app.state.db, app.state.settings, name="bench-cards", listen=False).run_until_idle()
        for card_id in made:
            state = (await client.get(f"/cards/{card_id}")).json()["state"]
            if state != "ACTIVE":
                raise RuntimeError(f"seeding cards: {card_id} is {state}")
    return made


async def _measure(url: str, credentials: tuple[str, str], args: argparse.Namespace) -> dict[str, Any]:
    import httpx

    os.environ["PLATPAY_DATABASE_URL"] = url
    from platpay.app import create_app
    from platpay.config import get_settings

    get_settings.cache_clear()
    settings = get_settings().model_copy(update={"run_embedded_worker": False})
    app = create_app(settings, embedded_worker=False)
    results: dict[str, Any] = {}
    async with asgi_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        pairs: list[Pair] = (await _seed(BASE_URL, credentials, args.customers, transport))[:-1]
        tokens = await _agents(BASE_URL, credentials, pairs, transport)
        cards = await _cards(app, credentials, pairs, transport) if args.only in ("", "card") else []
        basic = b"Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode())
        caller = _Caller(app)
        run = secrets.token_hex(4)
        counter = 0

        async def one(kind: str) -> None:
            nonlocal counter
            counter += 1
            index = random.randrange(len(pairs))
            pair = pairs[index]
            body = json.dumps(
                {
                    "source": {"accountId": pair.internal_id},
                    "destination": {"accountId": pair.external_id},
                    "amount": random.randint(1, 1000),
                },
                separators=(",", ":"),
            ).encode()
            if kind == "card":
                card = random.choice(cards)
                path = f"{BASE_PATH}/sandbox/cards/{card}/simulate/authorization"
                await caller.post(path, CARD_BODY, basic, f"{run}-{counter}")
            elif kind == "platform":
                await caller.post(f"{BASE_PATH}/transfer-out", body, basic, f"{run}-{counter}")
            else:
                bearer = f"Bearer {tokens[index]}".encode()
                await caller.post(f"{BASE_PATH}/agents/me/transfer-out", body, bearer, f"{run}-{counter}")

        kinds = [k for k in KINDS if args.only in ("", k)]
        for kind in kinds:  # warm-up: caches, the pools, the kept credentials
            for _ in range(args.warmup):
                await one(kind)
            assert set(caller.statuses) == {OK[kind]}, caller.statuses[:5]
            caller.statuses.clear()
        cpu: dict[str, list[float]] = {k: [] for k in kinds}
        calls: dict[str, int] = {}
        for number in range(args.rounds):
            for kind in kinds:
                caller.statuses.clear()
                began = time.process_time()
                for _ in range(args.requests):
                    await one(kind)
                cpu[kind].append((time.process_time() - began) / args.requests * 1e6)
                assert set(caller.statuses) == {OK[kind]}, set(caller.statuses)
                print(
                    f"  round {number + 1} {kind:<8} {cpu[kind][-1]:7.0f} µs CPU per request",
                    file=sys.stderr,
                    flush=True,
                )
        for kind in kinds:  # function calls: one profiled pass each (cProfile's own cost is not counted)
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(args.requests):
                await one(kind)
            profiler.disable()
            stats = pstats.Stats(profiler)
            calls[kind] = round(stats.total_calls / args.requests)  # type: ignore[attr-defined]
            if args.dump_stats:
                Path(args.dump_stats).mkdir(parents=True, exist_ok=True)
                backend = "postgres" if url.startswith("postgresql") else "sqlite"
                stats.dump_stats(str(Path(args.dump_stats) / f"{backend}-{kind}.pstats"))
            if args.profile:
                print(
                    f"\n  profile of {args.requests} {kind} requests (top {args.profile} by own time):",
                    file=sys.stderr,
                )
                stats.stream = sys.stderr  # type: ignore[attr-defined]
                stats.sort_stats("tottime").print_stats(args.profile)
                stats.sort_stats("cumulative").print_stats(args.profile * 2)
        for kind in kinds:
            results[kind] = {
                "cpu_us": statistics.median(cpu[kind]),
                "spread": cpu[kind],
                "calls": calls[kind],
            }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="postgres,sqlite")
    parser.add_argument("--requests", type=int, default=600, help="requests per measured round and kind")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--customers", type=int, default=16)
    parser.add_argument("--only", default="", choices=["", *KINDS])
    parser.add_argument("--profile", type=int, default=0, help="print the top N of each kind's profile")
    parser.add_argument(
        "--dump-stats",
        default="",
        metavar="DIR",
        help="write each kind's profile to DIR/<backend>-<kind>.pstats (compare two with bench/pstats_diff.py)",
    )
    parser.add_argument(
        "--pg-admin-url", default=os.environ.get("PLATPAY_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN)
    )
    args = parser.parse_args()
    use_uvloop()
    devnull = open(os.devnull, "w")  # noqa: SIM115 (the access log's destination for the whole run)
    summary: list[str] = []
    for backend, url, credentials in inprocess_backends(args.backends, args.pg_admin_url, "pp-money-"):
        print(f"{backend}: {args.requests} sequential requests per round and kind", flush=True)
        with stdout_to(devnull):
            results = asyncio.run(_measure(url, credentials, args))
        for kind, figures in results.items():
            spread = "-".join(f"{v:.0f}" for v in (min(figures["spread"]), max(figures["spread"])))
            summary.append(
                f"{backend:<9} {kind:<9} {figures['cpu_us']:8.0f} µs ({spread}) {figures['calls']:8,} calls"
            )
        if "platform" in results and "agent" in results:
            ratio = results["platform"]["cpu_us"] / results["agent"]["cpu_us"]
            summary.append(f"{backend:<9} platform / agent CPU per request: {ratio:.2f}")
    print("\nbackend   kind      CPU per request (spread)   function calls per request")
    print("\n".join(summary))


if __name__ == "__main__":
    main()
