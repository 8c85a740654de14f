"""Machine instructions per request, counted by valgrind (cachegrind, no cache simulation): POST /transfer-out
(platform), an agent's POST /agents/me/transfer-out and a simulated card authorization, the ASGI app called
in process as `money_inprocess.py` calls it, on PostgreSQL and on SQLite; optionally for several source
trees side by side.

CPU time per request moves 10-70 % between rounds on a shared 2-vCPU VM (bench/README.md), so a change worth
2-5 % cannot be seen in it; the number of instructions the server process executes for a request barely
moves with the machine's load (cachegrind counts what the process runs, not how long it waits or how warm
its caches are). It is a proxy for CPU, not CPU: a cache miss costs more than an instruction, and what
PostgreSQL runs is not counted (another process). Python's own work is most of a request's instructions.

Each figure is the difference of two runs of one configuration, one with `--requests` more requests than
the other (both after the same seed and warm-up), divided by `--requests`: the seed, the imports and the
warm-up cancel. Runs take ~1-2 min each under valgrind (~30-50x slower than native), `--jobs` at once (the
counts do not depend on the load, so runs may share the cores).

    .venv/bin/python bench/instructions.py                                   # platform, agent, card on PostgreSQL
    .venv/bin/python bench/instructions.py --kinds platform --backends postgres,sqlite --requests 1000
    git archive <commit> | tar -x -C /tmp/pp-old
    .venv/bin/python bench/instructions.py --trees old=/tmp/pp-old,new=.      # A/B: each tree's platpay package

Needs valgrind (Debian package `valgrind`; installed with apt-get when run as root, else it says how).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import concurrent.futures
import itertools
import json
import os
import random
import re
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    DEFAULT_PG_ADMIN,
    ROOT,
    asgi_lifespan,
    debian_tool,
    inprocess_backends,
    stdout_to,
    use_uvloop,
)

KINDS = ("platform", "agent", "card")
_REFS = re.compile(r"I\s+refs:\s+([\d,]+)")


# ---- one run (the child, under valgrind) ----------------------------------------------------------------


async def _requests(url: str, credentials: tuple[str, str], kind: str, warmup: int, count: int) -> None:
    import httpx
    import money_inprocess as money

    os.environ["PLATPAY_DATABASE_URL"] = url
    from platpay.app import create_app
    from platpay.config import get_settings

    get_settings.cache_clear()
    settings = get_settings().model_copy(update={"run_embedded_worker": False})
    app = create_app(settings, embedded_worker=False)
    async with asgi_lifespan(app):
        transport = httpx.ASGITransport(app=app)
        pairs = (await money._seed(money.BASE_URL, credentials, 16, transport))[:-1]
        tokens = await money._agents(money.BASE_URL, credentials, pairs, transport) if kind == "agent" else []
        cards = await money._cards(app, credentials, pairs, transport) if kind == "card" else []
        basic = b"Basic " + base64.b64encode(f"{credentials[0]}:{credentials[1]}".encode())
        caller = money._Caller(app)
        run = secrets.token_hex(4)
        for number in range(warmup + count):
            index = random.randrange(len(pairs))
            key = f"{run}-{number}"
            if kind == "card":
                path = f"{money.BASE_PATH}/sandbox/cards/{random.choice(cards)}/simulate/authorization"
                await caller.post(path, money.CARD_BODY, basic, key)
                continue
            body = json.dumps(
                {
                    "source": {"accountId": pairs[index].internal_id},
                    "destination": {"accountId": pairs[index].external_id},
                    "amount": random.randint(1, 1000),
                },
                separators=(",", ":"),
            ).encode()
            if kind == "platform":
                await caller.post(f"{money.BASE_PATH}/transfer-out", body, basic, key)
            else:
                bearer = f"Bearer {tokens[index]}".encode()
                await caller.post(f"{money.BASE_PATH}/agents/me/transfer-out", body, bearer, key)
        if set(caller.statuses) != {money.OK[kind]}:
            raise SystemExit(f"{kind}: unexpected statuses {sorted(set(caller.statuses))}")


def _child(args: argparse.Namespace) -> None:
    random.seed(1)  # the same accounts and amounts in both runs of a configuration
    use_uvloop()
    devnull = open(os.devnull, "w")  # noqa: SIM115 (the access log's destination for the whole run)
    for _, url, credentials in inprocess_backends(args.backends, args.pg_admin_url, "pp-instructions-"):
        with stdout_to(devnull):
            asyncio.run(_requests(url, credentials, args.kinds, args.warmup, args.requests))


# ---- the parent: configurations, runs, differences -------------------------------------------------------


def _count(
    valgrind: str, tree: Path, backend: str, kind: str, requests: int, args: argparse.Namespace
) -> int:
    env = {**os.environ, "PYTHONPATH": str(tree.resolve())}
    command = [
        valgrind,
        "--tool=cachegrind",
        "--cache-sim=no",
        "--cachegrind-out-file=/dev/null",
        sys.executable,
        str(Path(__file__).resolve()),
        "--child",
        f"--backends={backend}",
        f"--kinds={kind}",
        f"--requests={requests}",
        f"--warmup={args.warmup}",
        f"--pg-admin-url={args.pg_admin_url}",
    ]
    result = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = _REFS.search(result.stderr)
    if result.returncode != 0 or found is None:
        tail = "\n".join((result.stdout + result.stderr).splitlines()[-20:])
        raise RuntimeError(f"{' '.join(command[5:])} failed ({result.returncode}):\n{tail}")
    return int(found.group(1).replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--backends", default="postgres")
    parser.add_argument("--requests", type=int, default=600, help="the extra requests of the longer run")
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--trees", default=f"main={ROOT}", help="NAME=PATH,...: the platpay package of each")
    parser.add_argument("--jobs", type=int, default=2, help="runs under valgrind at once")
    parser.add_argument(
        "--pg-admin-url", default=os.environ.get("PLATPAY_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN)
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    valgrind = debian_tool("valgrind")
    trees = [(name, Path(path)) for name, path in (item.split("=", 1) for item in args.trees.split(","))]
    configurations = list(itertools.product(trees, args.backends.split(","), args.kinds.split(",")))
    runs = [(c, n) for c in configurations for n in (0, args.requests)]
    print(
        f"{len(runs)} runs under valgrind, {args.jobs} at once: {args.warmup} warm-up requests, then 0 or "
        f"{args.requests}",
        flush=True,
    )
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {(c, n): pool.submit(_count, valgrind, c[0][1], c[1], c[2], n, args) for c, n in runs}
        counts: dict[Any, int] = {}
        for (configuration, n), future in futures.items():
            counts[configuration, n] = future.result()
            (name, _), backend, kind = configuration
            print(f"  {name:<8} {backend:<9} {kind:<9} +{n:<5} {counts[configuration, n]:>16,}", flush=True)
    print("\ntree     backend   kind      instructions per request")
    first: dict[tuple[str, str], float] = {}
    for configuration in configurations:
        (name, _), backend, kind = configuration
        per = (counts[configuration, args.requests] - counts[configuration, 0]) / args.requests
        base = first.setdefault((backend, kind), per)
        relative = "" if base == per else f"  ({per / base - 1:+.1%} against {trees[0][0]})"
        print(f"{name:<8} {backend:<9} {kind:<9} {per:>12,.0f}{relative}")


if __name__ == "__main__":
    main()
