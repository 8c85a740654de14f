"""Database growth per money operation, before and after retention prunes (docs/operations.md, Retention).

A measurement, not a test: it prints figures and never fails on them.

For each database (a fresh SQLite file; a fresh PostgreSQL database platpay_bench_<random>, dropped
afterwards), in this process: migrate, create a platform whose sandbox has a webhook endpoint (bench/receiver.py,
a real HTTP receiver answering 200, started as a process and stopped by its pid), one customer with a funded
USD internal account and an external bank account that settles. A warm-up of `--warmup` transfers, then the
tables' sizes; then `--transfers` POST /transfer-out (through the real app over an in-process ASGI transport),
each settled by the job runner (hold, PROCESSING, COMPLETED) with every webhook delivered, and
`--emails` sandbox emails (the mailbox keeps their bodies), then the sizes again. Then one maintenance pass
after another at an instant past every retention (`JobRunner.maintain(now=...)`, the runner's own code, with
its batch bound) until a pass prunes nothing, and the sizes a third time.

Sizes are of compacted tables, so that they count the rows and not the free space a DELETE leaves (which new
rows reuse): PostgreSQL `VACUUM FULL` then `pg_total_relation_size` (heap, TOAST and indexes) per table;
SQLite `VACUUM` then the `dbstat` virtual table (the pages of each table and of its indexes). Per transfer:
(size after - size before) / transfers, by table, before and after pruning; the emails' growth is reported
per email (the mailbox's messages table only).

    .venv/bin/python bench/retention_growth.py                        # 500 transfers, 200 emails, both
    .venv/bin/python bench/retention_growth.py --transfers 200 --backends sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import os
import secrets
import subprocess
import sys
import tempfile
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _support import DEFAULT_PG_ADMIN, free_port, machine_summary, pg_database, pg_reachable, stop, wait_http

HERE = Path(__file__).resolve().parent
# What retention prunes in each table (the rest of every table is kept forever).
PRUNABLE = {
    "webhook_attempts": "every row, after PLATPAY_WEBHOOK_ATTEMPT_RETENTION_DAYS",
    "jobs": "DONE rows after PLATPAY_JOB_RETENTION_DAYS (DEAD ones after PLATPAY_DEAD_JOB_RETENTION_DAYS)",
    "messages": "bodies after PLATPAY_MESSAGE_BODY_RETENTION_DAYS (the row stays)",
    "idempotency_keys": "every row, after PLATPAY_IDEMPOTENCY_RETENTION_HOURS",
}


async def _sizes(db: Any) -> dict[str, int]:
    """Bytes per table (its indexes and TOAST included), of compacted tables."""
    from sqlalchemy import text

    if db.is_sqlite:
        async with db.engine.connect() as connection:
            raw = await connection.get_raw_connection()
            await raw.driver_connection.execute("VACUUM")
        async with db.read() as session:
            rows = await session.execute(
                text(
                    "SELECT m.tbl_name, SUM(s.pgsize) FROM dbstat s JOIN sqlite_master m ON m.name = s.name "
                    "WHERE m.tbl_name NOT LIKE 'sqlite_%' GROUP BY m.tbl_name"
                )
            )
            return {name: int(size) for name, size in rows}
    async with db.engine.connect() as connection:
        connection = await connection.execution_options(isolation_level="AUTOCOMMIT")
        await connection.execute(text("VACUUM FULL"))
        rows = await connection.execute(
            text("SELECT relname, pg_total_relation_size(relid) FROM pg_stat_user_tables")
        )
        return {name: int(size) for name, size in rows}


async def _counts(db: Any, tables: list[str]) -> dict[str, int]:
    from sqlalchemy import text

    async with db.read() as session:
        return {t: int(await session.scalar(text(f"SELECT count(*) FROM {t}")) or 0) for t in tables}


async def _settle(db: Any, runner: Any, expected: int) -> None:
    """Run jobs until `expected` transactions are COMPLETED and no delivery or message is pending."""
    from sqlalchemy import text

    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        await runner.run_until_idle(timeout=300)
        async with db.read() as session:
            done = await session.scalar(text("SELECT count(*) FROM transactions WHERE status = 'COMPLETED'"))
            pending = await session.scalar(
                text(
                    "SELECT (SELECT count(*) FROM webhook_deliveries WHERE status = 'PENDING')"
                    " + (SELECT count(*) FROM messages WHERE status = 'QUEUED')"
                )
            )
        if done == expected and pending == 0:
            return
        await asyncio.sleep(0.05)
    raise TimeoutError("transfers or webhooks did not finish")


async def _prune_all(runner: Any, settings: Any) -> list[tuple[dict[str, int], float]]:
    """Maintenance passes at an instant past every retention, until one prunes nothing: (pruned, seconds)
    per pass."""
    from platpay.kit import clock

    longest = max(
        settings.webhook_attempt_retention_days, settings.message_body_retention_days,
        settings.job_retention_days, settings.dead_job_retention_days,
    )  # fmt: skip
    at = clock.real_now() + timedelta(days=longest + 1)
    passes: list[tuple[dict[str, int], float]] = []
    while True:
        began = time.perf_counter()
        pruned = await runner.maintain(now=at)
        passes.append((pruned, time.perf_counter() - began))
        if not any(pruned.values()):
            return passes


async def bench(name: str, url: str, workdir: Path, receiver_url: str, args: argparse.Namespace) -> dict:
    import httpx

    from platpay import BASE_PATH
    from platpay.app import create_app
    from platpay.auth import service as auth_service
    from platpay.config import Settings
    from platpay.db import migrate
    from platpay.db.database import Database
    from platpay.events.delivery import close_clients
    from platpay.jobs.runner import JobRunner
    from platpay.logging import configure as configure_logging
    from platpay.messages import service as messages_service
    from platpay.platforms import service as platforms_service

    settings = Settings(
        database_url=url,
        var_dir=workdir / f"var-{name}",
        master_key=base64.urlsafe_b64encode(secrets.token_bytes(32)).rstrip(b"=").decode(),
        log_level="WARNING",
        sandbox_settlement_seconds=0.0,
        run_embedded_worker=False,
    )
    configure_logging(settings.log_level, json_output=True)
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url, pool_size=settings.db_pool_size)
    app = create_app(settings, database=db, embedded_worker=False)
    runner = JobRunner(db, settings, name="bench")
    try:
        async with db.transaction() as session:
            created = await platforms_service.create_platform(
                session, name="Bench retention", is_regulated=False, currency_codes=None, uma_domain=None,
                settings=settings,
            )  # fmt: skip
        auth = created.credentials["sandbox"]
        async with db.read() as session:
            principal = await auth_service.authenticate(session, client_id=auth[0], client_secret=auth[1])
        assert principal is not None
        tenant = principal.tenant
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url=f"http://bench{BASE_PATH}", auth=auth, timeout=60
        ) as client:
            answer = await client.patch("/config", json={"webhookEndpoint": receiver_url})
            assert answer.status_code == 200, answer.text
            person = await client.post(
                "/customers",
                json={
                    "customerType": "INDIVIDUAL", "fullName": "Jane Doe", "birthDate": "1990-04-12",
                    "email": "jane@example.com",
                    "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
                },
            )  # fmt: skip
            assert person.status_code == 201, person.text
            customer_id = person.json()["id"]
            accounts = (
                await client.get(
                    "/customers/internal-accounts", params={"customerId": customer_id, "currency": "USD"}
                )
            ).json()["data"]
            [account] = [a["id"] for a in accounts if a["type"] != "EMBEDDED_WALLET"]
            funded = await client.post(f"/sandbox/internal-accounts/{account}/fund", json={"amount": 10**10})
            assert funded.status_code == 200, funded.text
            bank = await client.post(
                "/customers/external-accounts",
                json={
                    "customerId": customer_id, "currency": "USD",
                    "accountInfo": {"accountType": "USD_ACCOUNT", "accountNumber": "123456000",
                                    "routingNumber": "011000015",
                                    "beneficiary": {"beneficiaryType": "INDIVIDUAL", "fullName": "Jane Doe"}},
                },
            )  # fmt: skip
            assert bank.status_code == 201, bank.text
            bank_id = bank.json()["id"]

            async def transfers(count: int, key: str) -> None:
                for n in range(count):
                    response = await client.post(
                        "/transfer-out",
                        headers={"Idempotency-Key": f"{key}-{n}"},
                        json={"source": {"accountId": account}, "destination": {"accountId": bank_id},
                              "amount": 1_000 + n},
                    )  # fmt: skip
                    assert response.status_code == 201, response.text
                    if n % 50 == 49:
                        await runner.run_until_idle(timeout=300)

            await transfers(args.warmup, "warmup")
            await _settle(db, runner, args.warmup)
            await _prune_all(runner, settings)  # the baseline keeps nothing prunable either
            before = await _sizes(db)
            started = time.perf_counter()
            await transfers(args.transfers, "measured")
            await _settle(db, runner, args.warmup + args.transfers)
            took = time.perf_counter() - started
            after = await _sizes(db)
            for n in range(args.emails):
                async with db.transaction() as session:
                    await messages_service.send_email(
                        session, tenant=tenant, to=f"user{n}@example.com", subject="Your code",
                        text=f"Your code is {n:06d}. It expires in 10 minutes.",
                        html=f"<p>Your code is <b>{n:06d}</b>. It expires in 10 minutes.</p>",
                        category="wallet.otp",
                    )  # fmt: skip
            await _settle(db, runner, args.warmup + args.transfers)
            with_emails = await _sizes(db)
            counted = ["transactions", "events", "webhook_deliveries", "webhook_attempts", "jobs", "messages"]
            counts_before_prune = await _counts(db, counted)

        passes = await _prune_all(runner, settings)

        pruned_sizes = await _sizes(db)
        counts_after_prune = await _counts(db, counted)
        return {
            "backend": name, "before": before, "after": after, "with_emails": with_emails,
            "pruned": pruned_sizes, "passes": passes, "took": took,
            "counts_before_prune": counts_before_prune, "counts_after_prune": counts_after_prune,
        }  # fmt: skip
    finally:
        await close_clients()
        await db.dispose()


def report(result: dict, args: argparse.Namespace) -> None:
    n, emails = args.transfers, args.emails
    before, after, with_emails, pruned = (result[k] for k in ("before", "after", "with_emails", "pruned"))
    print(f"\n== {result['backend']}: {n} transfers settled with their webhooks in {result['took']:.1f} s")
    print(f"   rows before pruning: {result['counts_before_prune']}")
    print(f"   rows after pruning:  {result['counts_after_prune']}")
    for number, (counts, seconds) in enumerate(result["passes"], 1):
        print(f"   pass {number}: {seconds * 1000:.0f} ms, pruned {counts}")
    # Transfers: growth between `before` and `after`, and what of it pruning leaves (`pruned`; the baseline
    # was pruned too). The messages table grew with the emails only: reported per email.
    rows = []
    for table in sorted((set(after) | set(pruned)) - {"messages"}):
        grown = after.get(table, 0) - before.get(table, 0)
        left = pruned.get(table, 0) - before.get(table, 0)
        if grown or left:
            rows.append((table, grown / n, left / n))
    rows.sort(key=lambda r: -r[1])
    print(f"   {'table':<28}{'bytes/transfer':>16}{'after pruning':>16}  pruned")
    for table, grown, left in rows:
        print(f"   {table:<28}{grown:>16.0f}{left:>16.0f}  {PRUNABLE.get(table, 'never')}")
    total_grown = sum(r[1] for r in rows)
    total_left = sum(r[2] for r in rows)
    print(f"   {'total':<28}{total_grown:>16.0f}{total_left:>16.0f}")
    if emails:
        grown = with_emails.get("messages", 0) - after.get("messages", 0)
        left = pruned.get("messages", 0) - after.get("messages", 0)
        print(
            f"   sandbox email (messages): {grown / emails:.0f} bytes/email, {left / emails:.0f} after pruning"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transfers", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--emails", type=int, default=200)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--pg-admin-url", default=os.environ.get("PLATPAY_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN)
    )
    args = parser.parse_args()
    print(f"machine: {machine_summary()}")
    port = free_port()
    receiver = subprocess.Popen([sys.executable, str(HERE / "receiver.py"), "--port", str(port)])
    try:
        wait_http(f"http://127.0.0.1:{port}/count", proc=receiver)
        receiver_url = f"http://127.0.0.1:{port}/hooks"
        with tempfile.TemporaryDirectory(prefix="pp-retention-") as tmp:
            workdir = Path(tmp)
            for backend in args.backends.split(","):
                if backend == "sqlite":
                    url = f"sqlite+aiosqlite:///{workdir / 'bench.db'}"
                    report(asyncio.run(bench("sqlite", url, workdir, receiver_url, args)), args)
                elif backend == "postgres":
                    problem = pg_reachable(args.pg_admin_url)
                    if problem:
                        print(f"postgres skipped: {problem}")
                        continue
                    with pg_database(args.pg_admin_url) as url:
                        report(asyncio.run(bench("postgres", url, workdir, receiver_url, args)), args)
    finally:
        stop(receiver)


if __name__ == "__main__":
    main()
