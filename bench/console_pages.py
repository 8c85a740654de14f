"""The console's pages on a big tenant: p50/p99 of each list page, a deep page, a customer's page and a
transaction's timeline, on SQLite and PostgreSQL, beside the API's own GET of the same lists in the same run.

A benchmark, not a test: it prints figures and ratios and never fails on them (issue target: every page
p99 <= 100 ms on a tenant with 100,000 transactions, 10,000 customers and 50,000 webhook deliveries).

For each database (a fresh SQLite file; a fresh PostgreSQL database platpay_bench_<random>, dropped
afterwards), in this process: migrate, create a platform, point its webhook endpoint at bench/receiver.py (a
subprocess on 127.0.0.1), and through the API open a customer with a bank account, fund it and send a few
transfers (real ledger entries, events, deliveries and attempts: the job runner delivers them). Then it
inserts straight into the tables: `--transactions` rows (half transfer-outs, half card transactions, as
bench/transactions_list.py does), `--customers` copies of the customer, and `--deliveries` copies of the
real events with their deliveries and attempts, spread over the seeded transactions; ANALYZE.

Requests go through the real app (routing, the console's session, the services, the templates) over an
in-process ASGI transport, one at a time, signed in through the console's sign-in form. Each round measures
every page `--requests` times, pages interleaved; p50/p99 are the median over rounds, with the spread of the
rounds' p99 beside them. The API column is the JSON list of the same data (GET /customers, /transactions,
/webhooks...): what the page costs over the data it shows.

    .venv/bin/python bench/console_pages.py                                 # both databases
    .venv/bin/python bench/console_pages.py --rounds 3 --requests 100 --wait-quiet 30
    .venv/bin/python bench/console_pages.py --backends sqlite --transactions 20000 --customers 2000
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import (
    DEFAULT_PG_ADMIN,
    free_port,
    machine_summary,
    pg_database,
    pg_reachable,
    stop,
    wait_http,
    wait_until_quiet,
)
from transactions_list import _percentile, _seed, _tenant_of

TARGET_P99_MS = 100.0
_CSRF = re.compile(r'name="csrf" value="([^"]+)"')


async def _clone(
    db: Any, table: Any, template: dict[str, Any], count: int, change: Any, batch: int = 5_000
) -> None:
    """`count` copies of the row `template`, each changed by `change(n, row)`, inserted in batches."""
    from sqlalchemy import insert

    for first in range(0, count, batch):
        rows = []
        for n in range(first, min(first + batch, count)):
            row = dict(template)
            change(n, row)
            rows.append(row)
        async with db.transaction() as session:
            await session.execute(insert(table), rows)


async def _one(db: Any, table: Any, **where: Any) -> dict[str, Any]:
    from sqlalchemy import select

    async with db.read() as session:
        stmt = select(table)
        for column, value in where.items():
            stmt = stmt.where(table.c[column] == value)
        row = (await session.execute(stmt.limit(1))).mappings().first()
    assert row is not None, (table.name, where)
    return dict(row)


async def _rows(db: Any, table: Any, **where: Any) -> list[dict[str, Any]]:
    from sqlalchemy import select

    async with db.read() as session:
        stmt = select(table)
        for column, value in where.items():
            stmt = stmt.where(table.c[column] == value)
        return [dict(row) for row in (await session.execute(stmt)).mappings().all()]


async def _seed_tenant(
    db: Any, client: Any, runner: Any, *, tenant_id: str, args: argparse.Namespace
) -> dict[str, str]:
    """The real data (through the API) and the copies (straight into the tables); returns ids to open."""
    from platpay.db.base import Base
    from platpay.kit.ids import new_id

    person = {
        "customerType": "INDIVIDUAL",
        "fullName": "Jane Doe",
        "birthDate": "1990-04-12",
        "email": "jane@example.com",
        "platformCustomerId": "bench-holder",
        "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
    }
    customer = (await client.post("/customers", json=person)).json()
    accounts = (
        await client.get(
            "/customers/internal-accounts", params={"customerId": customer["id"], "currency": "USD"}
        )
    ).json()
    account_id = accounts["data"][0]["id"]
    bank = (
        await client.post(
            "/customers/external-accounts",
            json={
                "customerId": customer["id"],
                "currency": "USD",
                "accountInfo": {
                    "accountType": "USD_ACCOUNT",
                    "accountNumber": "70000000",
                    "routingNumber": "011000015",
                    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"},
                },
            },
        )
    ).json()
    funded = await client.post(f"/sandbox/internal-accounts/{account_id}/fund", json={"amount": 10_000_000})
    assert funded.status_code in (200, 201), funded.text
    transfer_ids = []
    for n in range(5):
        sent = await client.post(
            "/transfer-out",
            json={
                "source": {"accountId": account_id},
                "destination": {"accountId": bank["id"]},
                "amount": 1_000 + n,
            },
        )
        assert sent.status_code in (200, 201), sent.text
        transfer_ids.append(sent.json()["id"])
    await runner.run_until_idle(timeout=60)

    started = time.perf_counter()
    await _seed(
        db,
        tenant_id=tenant_id,
        customer_id=customer["id"],
        platform_customer_id=customer["platformCustomerId"],
        rows=args.transactions,
    )
    tables = Base.metadata.tables
    template = await _one(db, tables["customers"], id=customer["id"])

    def customer_copy(n: int, row: dict[str, Any]) -> None:
        row.update(
            id=new_id("Customer"),
            platform_customer_id=f"clone-{n}",
            uma_address=f"$clone{n}@bench.example",
            email=f"clone{n}@example.com",
            full_name=f"Clone Person {n}",
        )

    await _clone(db, tables["customers"], template, args.customers, customer_copy)

    events = await _rows(db, tables["events"], tenant_id=tenant_id)
    deliveries = await _rows(db, tables["webhook_deliveries"], tenant_id=tenant_id)
    attempts = await _rows(db, tables["webhook_attempts"], tenant_id=tenant_id)
    assert events and deliveries and attempts, "the real transfers made no events, deliveries or attempts"
    # Each copied event is about one of the seeded transactions (its resource), as a real tenant's events are
    # spread over its resources: the real transfers keep their own few events.
    from sqlalchemy import select

    async with db.read() as session:
        seeded = (
            await session.scalars(
                select(tables["transactions"].c.id)
                .where(
                    tables["transactions"].c.tenant_id == tenant_id,
                    tables["transactions"].c.id.not_in(transfer_ids),
                )
                .limit(args.deliveries)
            )
        ).all()
    by_event = {d["event_id"]: d for d in deliveries}
    pairs = [(e, by_event[e["id"]]) for e in events if e["id"] in by_event]
    attempt_of = {a["delivery_id"]: a for a in attempts}
    new_events, new_deliveries, new_attempts = [], [], []
    for n in range(args.deliveries):
        event, delivery = pairs[n % len(pairs)]
        event_id, delivery_id = new_id("Event"), new_id("Webhook")
        resource = seeded[n % len(seeded)]
        new_events.append(
            {**event, "id": event_id, "resource_id": resource, "data": {**event["data"], "id": resource}}
        )
        new_deliveries.append({**delivery, "id": delivery_id, "event_id": event_id, "job_id": None})
        attempt = attempt_of.get(delivery["id"])
        if attempt is not None:
            new_attempts.append({**attempt, "id": new_id("WebhookAttempt"), "delivery_id": delivery_id})
    from sqlalchemy import insert

    for first in range(0, len(new_events), 5_000):
        async with db.transaction() as session:
            await session.execute(insert(tables["events"]), new_events[first : first + 5_000])
            await session.execute(insert(tables["webhook_deliveries"]), new_deliveries[first : first + 5_000])
            chunk = [a for a in new_attempts[first : first + 5_000]]
            if chunk:
                await session.execute(insert(tables["webhook_attempts"]), chunk)
    print(
        f"  seeded {args.transactions:,} transactions, {args.customers:,} customers, {args.deliveries:,} "
        f"deliveries in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    return {
        "customer_id": customer["id"],
        "transaction_id": transfer_ids[-1],
        "delivery_id": deliveries[0]["id"],
        "account_id": account_id,
    }


def _pages(ids: dict[str, str], ledger_account: str | None) -> dict[str, tuple[str, str | None]]:
    """page name -> (console path, the API list of the same data or None)."""
    pages: dict[str, tuple[str, str | None]] = {
        "overview": ("/console", None),
        "customers": ("/console/customers", "/customers"),
        "customers search": ("/console/customers?q=Clone+Person+4242", None),
        "customer": (f"/console/customers/{ids['customer_id']}", f"/customers/{ids['customer_id']}"),
        "transactions": ("/console/transactions", "/transactions"),
        "transactions filtered": ("/console/transactions?status=COMPLETED", "/transactions?status=COMPLETED"),
        "transaction timeline": (
            f"/console/transactions/{ids['transaction_id']}",
            f"/transactions/{ids['transaction_id']}",
        ),
        "webhooks": ("/console/webhooks", None),
        "delivery": (f"/console/webhooks/deliveries/{ids['delivery_id']}", None),
        "ledger": ("/console/ledger", None),
        "agents": ("/console/agents", None),
        "cards": ("/console/cards", None),
        "developers": ("/console/developers", "/tokens"),
    }
    if ledger_account:
        pages["account statement"] = (f"/console/ledger/accounts/{ledger_account}", None)
    return pages


async def _deep(console: Any, path: str, pages: int) -> str | None:
    """The URL of page `pages` of a console list, following its Next links."""
    url: str | None = path
    for _ in range(pages - 1):
        html = (await console.get(url)).text
        found = re.search(r'href="([^"]+)" rel="next"', html)
        if found is None:
            return None
        url = found.group(1).replace("&amp;", "&")
    return url


async def _measure(client: Any, path: str, requests: int) -> list[float]:
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        response = await client.get(path)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, (path, response.status_code, response.text[:300])
    return timings


async def bench(
    name: str, url: str, workdir: Path, args: argparse.Namespace, receiver_url: str
) -> dict[str, Any]:
    import httpx
    from sqlalchemy import text

    from platpay import BASE_PATH
    from platpay.app import create_app
    from platpay.config import Settings
    from platpay.db import migrate
    from platpay.db.database import Database
    from platpay.jobs.runner import JobRunner
    from platpay.logging import configure as configure_logging
    from platpay.platforms import service as platforms_service

    settings = Settings(
        database_url=url,
        var_dir=workdir / f"var-{name}",
        master_key=base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode(),
        log_level="WARNING",
    )
    configure_logging(settings.log_level, json_output=True)
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url, pool_size=settings.db_pool_size)
    from platpay import domains

    domains.start(settings)
    app = create_app(settings, database=db, embedded_worker=False)
    app.state.db = db
    runner = JobRunner(db, settings, name="bench")
    try:
        async with db.transaction() as session:
            created = await platforms_service.create_platform(
                session, name="Bench console", is_regulated=False, currency_codes=None, uma_domain=None,
                settings=settings,
            )  # fmt: skip
        auth = created.credentials["sandbox"]
        transport = httpx.ASGITransport(app=app)
        async with (
            httpx.AsyncClient(
                transport=transport, base_url=f"http://bench{BASE_PATH}", auth=auth, timeout=120
            ) as api,
            httpx.AsyncClient(transport=transport, base_url="http://bench", timeout=120) as console,
        ):
            patched = await api.patch("/config", json={"webhookEndpoint": receiver_url})
            assert patched.status_code == 200, patched.text
            tenant_id = await _tenant_of(db, created.platform_id)
            ids = await _seed_tenant(db, api, runner, tenant_id=tenant_id, args=args)
            async with db.transaction() as session:
                await session.execute(text("ANALYZE"))
            form = await console.get("/console/sign-in")
            csrf = _CSRF.search(form.text)
            assert csrf is not None
            signed = await console.post(
                "/console/sign-in",
                data={"csrf": csrf.group(1), "client_id": auth[0], "client_secret": auth[1]},
            )
            assert signed.status_code == 303, signed.text
            ledger_page = (await console.get("/console/ledger")).text
            account = re.search(r'href="/console/ledger/accounts/([^"?]+)"', ledger_page)
            pages = _pages(ids, account.group(1) if account else None)
            served: dict[str, tuple[str, str | None]] = {}
            for page, (path, api_path) in pages.items():
                answer = await console.get(path)
                if answer.status_code != 200:
                    print(f"  {name}: {page} ({path}) answers {answer.status_code}: not measured", flush=True)
                    continue
                served[page] = (path, api_path)
            deep = await _deep(console, "/console/transactions", args.deep)
            if deep is not None:
                served[f"transactions page {args.deep}"] = (deep, None)
            results: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for _ in range(args.warmup):
                for path, api_path in served.values():
                    await _measure(console, path, 10)
                    if api_path:
                        await _measure(api, api_path, 10)
            for round_no in range(1, args.rounds + 1):
                if args.wait_quiet:
                    foreign = wait_until_quiet(args.wait_quiet, threshold_cores=0.3, ours=[os.getpid()])
                    print(
                        f"  {name}: round {round_no}: other work on the machine {foreign} cores", flush=True
                    )
                for page, (path, api_path) in served.items():
                    timings = await _measure(console, path, args.requests)
                    results.setdefault((page, "console"), []).append(
                        (_percentile(timings, 0.5), _percentile(timings, 0.99))
                    )
                    if api_path:
                        timings = await _measure(api, api_path, args.requests)
                        results.setdefault((page, "api"), []).append(
                            (_percentile(timings, 0.5), _percentile(timings, 0.99))
                        )
        rows = []
        for page in served:
            mine = results[(page, "console")]
            other = results.get((page, "api"))
            rows.append(
                {
                    "backend": name,
                    "page": page,
                    "p50": statistics.median(r[0] for r in mine),
                    "p99": statistics.median(r[1] for r in mine),
                    "p99_spread": (min(r[1] for r in mine), max(r[1] for r in mine)),
                    "api_p50": statistics.median(r[0] for r in other) if other else None,
                    "api_p99": statistics.median(r[1] for r in other) if other else None,
                }
            )
        return {"backend": name, "rows": rows}
    finally:
        from platpay.events.delivery import close_clients

        await close_clients()
        await db.dispose()


def _report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\nConsole pages, {args.transactions:,} transactions, {args.customers:,} customers, "
        f"{args.deliveries:,} webhook deliveries; {args.rounds} round(s) x {args.requests} requests per page; "
        f"ms, median over rounds (p99 spread over rounds); target p99 <= {TARGET_P99_MS:.0f} ms\n"
    )
    print("| database | page | p50 | p99 (spread) | meets | API p50 | API p99 |")
    print("|---|---|---|---|---|---|---|")
    for result in results:
        for row in result["rows"]:
            low, high = row["p99_spread"]
            api50 = f"{row['api_p50']:.2f}" if row["api_p50"] is not None else "—"
            api99 = f"{row['api_p99']:.2f}" if row["api_p99"] is not None else "—"
            meets = "yes" if row["p99"] <= TARGET_P99_MS else "NO"
            print(
                f"| {row['backend']} | {row['page']} | {row['p50']:.2f} | {row['p99']:.2f} ({low:.2f}-{high:.2f}) "
                f"| {meets} | {api50} | {api99} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--transactions", type=int, default=100_000, help="half of them card transactions")
    parser.add_argument("--customers", type=int, default=10_000)
    parser.add_argument("--deliveries", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=100, help="requests per page and round")
    parser.add_argument(
        "--deep", type=int, default=50, help="the deep page's number of /console/transactions"
    )
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="before each round, wait up to this long for other work on the machine to drop under 0.3 cores",
    )
    args = parser.parse_args()
    print(machine_summary(), flush=True)
    backends = [name.strip() for name in args.backends.split(",") if name.strip()]
    port = free_port()
    receiver = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve().parent / "receiver.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    results = []
    try:
        wait_http(f"http://127.0.0.1:{port}/count", proc=receiver)
        receiver_url = f"http://127.0.0.1:{port}/hooks"
        with tempfile.TemporaryDirectory(prefix="platpay-bench-console-") as tmp:
            workdir = Path(tmp)
            if "sqlite" in backends:
                url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
                results.append(asyncio.run(bench("sqlite", url, workdir, args, receiver_url)))
            if "postgres" in backends:
                reason = pg_reachable(DEFAULT_PG_ADMIN)
                if reason is not None:
                    print(f"  postgres: skipped ({reason})")
                else:
                    with pg_database() as url:
                        results.append(asyncio.run(bench("postgres", url, workdir, args, receiver_url)))
    finally:
        stop(receiver)
    _report(results, args)


if __name__ == "__main__":
    main()
