"""GET /transactions on a tenant with 100,000 transactions, half of them card transactions: p50/p99 of the
first page and of a page reached by cursor 500 pages deep, on SQLite and PostgreSQL, beside today's list
(before card transactions were listed: transactions only, by id) on the same data in the same run.

A benchmark, not a test: it prints figures and ratios and never fails on them.

For each database (a fresh SQLite file; a fresh PostgreSQL database platpay_bench_<random>, dropped
afterwards), in this process: migrate, create a platform and one customer through the API, then insert
`--rows` rows straight into the tables (half `transactions` — settled transfer-outs —, half
`card_transactions` of one card, interleaved in creation time, one millisecond apart), ANALYZE. Requests go
through the real app (routing, authentication, the service, rendering) over an in-process ASGI transport,
one at a time:

- platpay: `GET /transactions` as served: both tables merged by (createdAt, id), each read through its
  (tenant_id, created_at, id) index for `limit + 1` rows after the cursor, and the total counted;
- baseline: the list as it was before card transactions joined it (the code of main at 079f91f, mounted on
  the same app as `GET /bench/transactions-baseline`): `transactions` only (the card rows present, not
  listed), `kit.pagination.paginate` by id with its count, rendered by the same `to_schema`.

The deep page is reached by walking 500 pages with the cursors each list returns (limit 20). Each round
measures baseline and platpay alternately, `--requests` requests per page per list, after a warm-up; the
reported p50/p99 are the median over rounds, with the spread (min-max of the rounds' p50) beside them.

    .venv/bin/python bench/transactions_list.py                              # 100000 rows, both databases
    .venv/bin/python bench/transactions_list.py --rounds 3 --requests 200 --wait-quiet 30
    .venv/bin/python bench/transactions_list.py --rows 20000 --backends sqlite
"""

import argparse
import asyncio
import base64
import os
import secrets
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import DEFAULT_PG_ADMIN, machine_summary, pg_database, pg_reachable, wait_until_quiet

PAGE_LIMIT = 20
DEEP_PAGES = 500


def _baseline_route(app: Any) -> None:
    """GET /bench/transactions-baseline: main's GET /transactions (079f91f), transactions only."""
    from fastapi import Depends, Request

    from platpay import BASE_PATH
    from platpay.auth.principal import Principal
    from platpay.auth.principals import Viewer, get_db
    from platpay.kit.pagination import PageParams, paginate, sorted_page_params
    from platpay.payments import repository
    from platpay.payments import service as payments_service
    from platpay.payments.models import TransactionRow

    @app.get(f"{BASE_PATH}/bench/transactions-baseline")
    async def baseline(
        request: Request, params: PageParams = Depends(sorted_page_params), principal: Principal = Viewer
    ) -> dict:
        async with get_db(request).read() as session:
            stmt = repository.list_query(tenant_id=principal.tenant.id, customer_id=None, platform_only=False)
            page = await paginate(session, stmt, id_column=TransactionRow.id, params=params)
            items = [
                payments_service.to_schema(row, platform_id=principal.tenant.platform_id)
                for row in page.items
            ]
        return page.envelope([t.to_api() for t in items])


async def _seed(db: Any, *, tenant_id: str, customer_id: str, platform_customer_id: str, rows: int) -> None:
    """`rows` rows, half transactions and half card transactions, interleaved one millisecond apart."""
    from sqlalchemy import insert

    from platpay.cards.models import CardRow, CardTransactionRow
    from platpay.kit.ids import new_id
    from platpay.payments.models import TransactionRow

    start = datetime(2026, 1, 1, tzinfo=UTC)
    card_id = new_id("Card")
    account_id, bank_id = new_id("InternalAccount"), new_id("ExternalAccount")
    async with db.transaction() as session:
        await session.execute(
            insert(CardRow).values(
                id=card_id, tenant_id=tenant_id, cardholder_id=customer_id, platform_card_id="bench",
                state="ACTIVE", form="VIRTUAL", currency="USD", created_at=start, updated_at=start,
            )
        )  # fmt: skip
    batch = 5_000
    for first in range(0, rows, batch):
        transactions, cards = [], []
        for n in range(first, min(first + batch, rows)):
            at = start + timedelta(milliseconds=n)
            if n % 2 == 0:
                transactions.append(
                    {
                        "id": new_id("Transaction"), "tenant_id": tenant_id, "type": "OUTGOING",
                        "kind": "TRANSFER_OUT", "status": "COMPLETED", "direction": "DEBIT",
                        "customer_id": customer_id, "platform_customer_id": platform_customer_id,
                        "source": {"sourceType": "ACCOUNT", "accountId": account_id, "currency": "USD"},
                        "destination": {"destinationType": "ACCOUNT", "accountId": bank_id, "currency": "USD",
                                        "paymentRail": "ACH"},
                        "sender_account_id": account_id, "receiver_account_id": bank_id,
                        "sent_amount": 1_000 + n, "sent_currency": "USD", "received_amount": 1_000 + n,
                        "received_currency": "USD", "fee_amount": 0, "rail": "ACH",
                        "rail_selection_mode": "AUTO", "settlement_timeline_seconds": 1,
                        "expected_settlement_at": at + timedelta(seconds=1), "outcome": "SUCCESS",
                        "extra": {}, "settled_at": at + timedelta(seconds=1), "created_at": at,
                        "updated_at": at + timedelta(seconds=1),
                    }
                )  # fmt: skip
            else:
                cards.append(
                    {
                        "id": new_id("CardTransaction"), "tenant_id": tenant_id, "card_id": card_id,
                        "customer_id": customer_id, "platform_customer_id": platform_customer_id,
                        "kind": "AUTHORIZATION", "status": "SETTLED", "issuer_transaction_token": f"tok_{n}",
                        "merchant": {"descriptor": "BLUE BOTTLE SF", "mcc": "5814", "country": "US"},
                        "currency": "USD", "account_id": account_id, "source_ids": [account_id],
                        "authorized_amount": 500, "requested_amount": 500, "requested_currency": "USD",
                        "settled_amount": 500, "refunded_amount": 0, "settlement_count": 1, "pull_count": 1,
                        "pull_amount": 500, "pull_pending": 0, "loss_amount": 0, "outcome": "APPROVE",
                        "authorized_at": at, "last_event_at": at, "created_at": at, "updated_at": at,
                    }
                )  # fmt: skip
        async with db.transaction() as session:
            if transactions:
                await session.execute(insert(TransactionRow), transactions)
            if cards:
                await session.execute(insert(CardTransactionRow), cards)


async def _deep_cursor(client: Any, path: str, pages: int) -> str:
    cursor = None
    for _ in range(pages - 1):
        params = {"limit": PAGE_LIMIT, **({"cursor": cursor} if cursor else {})}
        page = (await client.get(path, params=params)).json()
        cursor = page["nextCursor"]
    assert cursor is not None
    return cursor


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _measure(client: Any, path: str, params: dict[str, Any], requests: int) -> list[float]:
    timings = []
    for _ in range(requests):
        started = time.perf_counter()
        response = await client.get(path, params=params)
        timings.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return timings


async def bench(name: str, url: str, workdir: Path, args: argparse.Namespace) -> dict[str, Any]:
    import httpx
    from sqlalchemy import text

    from platpay import BASE_PATH
    from platpay.app import create_app
    from platpay.config import Settings
    from platpay.db import migrate
    from platpay.db.database import Database
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
    app = create_app(settings, database=db, embedded_worker=False)
    app.state.db = db
    _baseline_route(app)
    try:
        async with db.transaction() as session:
            created = await platforms_service.create_platform(
                session, name="Bench list", is_regulated=False, currency_codes=None, uma_domain=None,
                settings=settings,
            )  # fmt: skip
        auth = created.credentials["sandbox"]
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url=f"http://bench{BASE_PATH}", auth=auth, timeout=60
        ) as client:
            person = (await client.post("/customers", json={"customerType": "INDIVIDUAL"})).json()
            me = (await client.get("/config")).json()
            tenant_id = await _tenant_of(db, created.platform_id)
            seeded = time.perf_counter()
            await _seed(
                db, tenant_id=tenant_id, customer_id=person["id"],
                platform_customer_id=person["platformCustomerId"], rows=args.rows,
            )  # fmt: skip
            async with db.transaction() as session:
                await session.execute(text("ANALYZE"))
            print(f"  {name}: seeded {args.rows:,} rows in {time.perf_counter() - seeded:.1f} s", flush=True)
            del me
            lists = {"baseline": "/bench/transactions-baseline", "platpay": "/transactions"}
            first = {key: (await client.get(path)).json() for key, path in lists.items()}
            for key, page in first.items():
                assert "data" in page, (key, page)
            totals = {key: page.get("totalCount", "not sent") for key, page in first.items()}
            kinds = {key: sorted({t["type"] for t in page["data"]}) for key, page in first.items()}
            print(f"  {name}: totalCount {totals}, first page types {kinds}", flush=True)
            walked = time.perf_counter()
            deep = {key: await _deep_cursor(client, path, args.deep) for key, path in lists.items()}
            print(f"  {name}: walked {args.deep} pages of each list in {time.perf_counter() - walked:.1f} s")
            pages: dict[str, Any] = {"first page": {}, f"page {args.deep}": None}
            results: dict[tuple[str, str], list[tuple[float, float]]] = {}
            for _ in range(args.warmup):
                for key, path in lists.items():
                    await _measure(client, path, {}, 20)
                    await _measure(client, path, {"cursor": deep[key]}, 20)
            for round_no in range(1, args.rounds + 1):
                if args.wait_quiet:
                    foreign = wait_until_quiet(args.wait_quiet, threshold_cores=0.3, ours=[os.getpid()])
                    print(
                        f"  {name}: round {round_no}: other work on the machine {foreign} cores", flush=True
                    )
                for page_name in pages:
                    for key, path in lists.items():
                        params = {} if page_name == "first page" else {"cursor": deep[key]}
                        timings = await _measure(client, path, params, args.requests)
                        results.setdefault((page_name, key), []).append(
                            (_percentile(timings, 0.5), _percentile(timings, 0.99))
                        )
        rows = []
        for page_name in pages:
            base = results[(page_name, "baseline")]
            mine = results[(page_name, "platpay")]
            b50, b99 = statistics.median(r[0] for r in base), statistics.median(r[1] for r in base)
            m50, m99 = statistics.median(r[0] for r in mine), statistics.median(r[1] for r in mine)
            rows.append(
                {
                    "backend": name, "page": page_name, "baseline_p50": b50, "baseline_p99": b99,
                    "platpay_p50": m50, "platpay_p99": m99,
                    "baseline_p50_spread": (min(r[0] for r in base), max(r[0] for r in base)),
                    "platpay_p50_spread": (min(r[0] for r in mine), max(r[0] for r in mine)),
                }
            )  # fmt: skip
        return {"backend": name, "rows": rows}
    finally:
        await db.dispose()


async def _tenant_of(db: Any, platform_id: str) -> str:
    from platpay.tenants import service as tenants_service

    async with db.read() as session:
        tenant = await tenants_service.load_of_platform(
            session, platform_id=platform_id, environment="sandbox"
        )
    return tenant.id


def _report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        f"\nGET /transactions, {args.rows:,} rows (half card transactions), limit {PAGE_LIMIT}; "
        f"{args.rounds} round(s) x {args.requests} requests per list and page; ms, median over rounds "
        f"(p50 spread over rounds)\n"
    )
    print(
        "| database | page | baseline p50 | platpay p50 | p50 ratio | baseline p99 | platpay p99 | p99 ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for result in results:
        for row in result["rows"]:
            bs, ms = row["baseline_p50_spread"], row["platpay_p50_spread"]
            print(
                f"| {row['backend']} | {row['page']} | {row['baseline_p50']:.2f} ({bs[0]:.2f}-{bs[1]:.2f}) "
                f"| {row['platpay_p50']:.2f} ({ms[0]:.2f}-{ms[1]:.2f}) "
                f"| {row['platpay_p50'] / row['baseline_p50']:.2f} "
                f"| {row['baseline_p99']:.2f} | {row['platpay_p99']:.2f} "
                f"| {row['platpay_p99'] / row['baseline_p99']:.2f} |"
            )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rows", type=int, default=100_000, help="transactions, half of them card transactions"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deep", type=int, default=DEEP_PAGES, help="the deep page's number (limit 20)")
    parser.add_argument("--requests", type=int, default=200, help="requests per list, page and round")
    parser.add_argument(
        "--warmup", type=int, default=1, help="warm-up passes (20 requests per list and page)"
    )
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
    results = []
    with tempfile.TemporaryDirectory(prefix="platpay-bench-list-") as tmp:
        workdir = Path(tmp)
        if "sqlite" in backends:
            results.append(
                asyncio.run(bench("sqlite", f"sqlite+aiosqlite:///{workdir / 'bench.db'}", workdir, args))
            )
        if "postgres" in backends:
            reason = pg_reachable(DEFAULT_PG_ADMIN)
            if reason is not None:
                print(f"  postgres: skipped ({reason})")
            else:
                with pg_database() as url:
                    results.append(asyncio.run(bench("postgres", url, workdir, args)))
    _report(results, args)


if __name__ == "__main__":
    main()
