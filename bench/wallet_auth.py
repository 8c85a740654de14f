"""Embedded-wallet authentication: server CPU per signed retry next to the same operation unsigned, and
complete EMAIL_OTP logins per second end to end on one server process, on SQLite and PostgreSQL.

A benchmark, not a test: it prints figures and never fails on them. Targets: verifying a stamp
adds <= 1 ms of server CPU; >= 200 complete EMAIL_OTP logins/s on one process on PostgreSQL (issue 33; it
was >= 100). The bench's clients share the machine (~0.9 ms of their CPU per login on raw kept-alive
HTTP/1.1 connections; httpx took ~4.5 ms, which left the server about one core of the two) — read the
server CPU per login.

What runs, per database (a fresh SQLite file; a fresh PostgreSQL database platpay_bench_wallet_<random>,
dropped afterwards), all on 127.0.0.1:

1. In process (no HTTP, the real services on the real database): the wallet-privacy update of an
   EMBEDDED_WALLET account, `--ops` times each way —
     unsigned  the operation alone in a transaction (wallets.accounts.update, what the signed retry runs);
     signed    the retry of the same operation: signed_retry.execute with a stamped retry of a stored
               challenge (challenge read, signer session lookup, stamp parse and ECDSA verify, single-use
               consume, then the same update);
     202       the first call (signed_retry.execute without headers: the challenge stored);
   and the stamp check alone (kit.crypto.stamps.parse + verify). Figures: CPU ms per operation
   (time.process_time of this process, the database's own CPU not counted on PostgreSQL, shown apart).
2. End to end: one `platpay serve` process (embedded job runner on), `--wallets` customers (each with
   its EMBEDDED_WALLET), then `--logins` complete EMAIL_OTP logins by `--concurrency` concurrent clients:
   POST …/challenge (target bundle), seal {otp_code: 000000, public_key: a fresh TEK} with HPKE, POST
   …/verify (202, the verificationToken), stamp it with the TEK, POST …/verify again (200, the session);
   each client on one kept-alive HTTP/1.1 connection of its own (`_Connection`, warmed up before the clock
   starts).
   Figures: logins/s (wall clock), p50/p99 of one login, server process CPU ms per login — counted until
   the OTP emails' send jobs still queued when the last login answers have run (their CPU is part of the
   logins'; the split is printed) —, PostgreSQL backend CPU ms per login, the client's own CPU (it shares
   the machine), the idle server's CPU per second (its job runner polling), and for scale the same server's
   CPU per authenticated GET /config, measured once it is idle (on a busy shared machine CPU times inflate:
   the ratio holds better). The wallet limits are raised for the run (PLATPAY_WALLET_*_LIMIT) so that the
   limiter counts every attempt without refusing them.

    .venv/bin/python bench/wallet_auth.py                                   # both databases
    .venv/bin/python bench/wallet_auth.py --backends postgres --logins 3000 --concurrency 16
    .venv/bin/python bench/wallet_auth.py --ops 200 --logins 100 --wallets 20   # a quick check
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from _support import (
    DEFAULT_PG_ADMIN,
    cpu_seconds,
    machine_summary,
    pg_backend_pids,
    pg_cpu_delta,
    pg_cpu_snapshot,
    pg_database,
    pg_reachable,
    stop,
)
from http_config import start_platpay

if TYPE_CHECKING:
    from platpay.customers.types import CustomerDraft

BASE_PATH = "/2025-10-13"
PERSON = {
    "customerType": "INDIVIDUAL",
    "fullName": "Bench Person",
    "birthDate": "1990-04-12",
    "address": {"line1": "1 Main St", "postalCode": "62701", "country": "US"},
}
RAISED_LIMITS = {
    "PLATPAY_WALLET_VERIFY_LIMIT": "1000000",
    "PLATPAY_WALLET_VERIFY_ACCOUNT_LIMIT": "1000000",
    "PLATPAY_WALLET_CHALLENGE_LIMIT": "1000000",
    "PLATPAY_WALLET_CHALLENGE_ACCOUNT_LIMIT": "1000000",
    "PLATPAY_LOG_LEVEL": "WARNING",
}


# ---- 1. in process -----------------------------------------------------------------------------------


async def _in_process(database_url: str, workdir: Path, ops: int) -> dict[str, float]:
    os.environ.setdefault(
        "PLATPAY_MASTER_KEY", base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
    )
    from platpay import domains
    from platpay.config import get_settings
    from platpay.db import migrate
    from platpay.db.database import Database
    from platpay.kit.crypto import p256, stamps
    from platpay.kit.wallet_signature import WalletSignature
    from platpay.logging import configure as configure_logging
    from platpay.platforms import service as platforms_service
    from platpay.tenants import service as tenants_service
    from platpay.wallets import accounts as wallet_accounts
    from platpay.wallets import repository, sessions
    from platpay.wallets.models import CredentialRow
    from platpay.wallets.signed import retry as signed_retry

    configure_logging("WARNING")  # the audit log's info lines are not what is measured
    settings = get_settings().model_copy(update={"database_url": database_url, "var_dir": workdir / "var"})
    await asyncio.to_thread(migrate.upgrade, database_url)
    db = Database(database_url, pool_size=5)
    domains.start(settings)
    try:
        async with db.transaction() as session:
            created = await platforms_service.create_platform(
                session,
                name="bench",
                is_regulated=True,
                currency_codes=None,
                uma_domain=None,
                settings=settings,
            )
        async with db.transaction() as session:
            from sqlalchemy import text

            tenant_id = (
                await session.execute(
                    text("SELECT id FROM tenants WHERE platform_id = :p AND environment = 'sandbox'"),
                    {"p": created.platform_id},
                )
            ).scalar_one()
            tenant = await tenants_service.load(session, tenant_id=tenant_id)
            from platpay.customers import service as customers_service

            person = await customers_service.create_customer(
                session,
                tenant=tenant,
                draft=cast("CustomerDraft", {**_draft(), "email": "bench@example.com"}),
                settings=settings,
            )
            account_id = (
                await session.execute(
                    text(
                        "SELECT id FROM internal_accounts WHERE customer_id = :c AND type = 'EMBEDDED_WALLET'"
                    ),
                    {"c": person.id},
                )
            ).scalar_one()
            [credential] = await repository.credentials_of(
                session, tenant_id=tenant.id, account_id=account_id
            )
            assert isinstance(credential, CredentialRow)
            key = p256.generate_private_key()
            await sessions.issue_for_key(
                session, tenant=tenant, credential=credential, public_key=key.public_key(), settings=settings
            )

        async def prepare(s: Any, first: bool) -> Any:
            return await wallet_accounts.update_intent(
                s, tenant=tenant, account_id=account_id, private_enabled=True
            )

        async def then(s: Any, proof: Any) -> Any:
            return await wallet_accounts.update(
                s, tenant=tenant, account_id=account_id, private_enabled=True, signed=proof
            )

        async def unsigned() -> None:
            async with db.transaction() as s:
                await wallet_accounts.update(
                    s, tenant=tenant, account_id=account_id, private_enabled=True, signed=None
                )

        async def first_call() -> dict[str, Any]:
            response = await signed_retry.execute(
                db, tenant=tenant, signature=WalletSignature(), prepare=prepare, then=then, settings=settings
            )
            import json

            return json.loads(bytes(response.body))

        challenges = [await first_call() for _ in range(ops + 10)]
        headers = [WalletSignature(stamps.make(key, c["payloadToSign"]), c["requestId"]) for c in challenges]

        async def signed(index: int) -> None:
            response = await signed_retry.execute(
                db, tenant=tenant, signature=headers[index], prepare=prepare, then=then, settings=settings
            )
            assert response.status_code == 200, response.body

        for i in range(10):  # warm-up
            await unsigned()
            await signed(ops + i)
        figures: dict[str, float] = {}
        start = time.process_time()
        for _ in range(ops):
            await unsigned()
        figures["unsigned_ms"] = (time.process_time() - start) * 1000 / ops
        start = time.process_time()
        for i in range(ops):
            await signed(i)
        figures["signed_retry_ms"] = (time.process_time() - start) * 1000 / ops
        start = time.process_time()
        for _ in range(ops):
            await first_call()
        figures["first_call_ms"] = (time.process_time() - start) * 1000 / ops
        header, payload = headers[0].signature, challenges[0]["payloadToSign"]
        start = time.process_time()
        for _ in range(ops * 5):
            assert stamps.parse(header or "").verifies(payload)
        figures["stamp_check_ms"] = (time.process_time() - start) * 1000 / (ops * 5)
        return figures
    finally:
        await db.dispose()


def _draft() -> dict[str, Any]:
    return {
        "customer_type": "INDIVIDUAL",
        "full_name": "Bench Person",
        "birth_date": "1990-04-12",
        "address": {"line1": "1 Main St", "postal_code": "62701", "country": "US"},
    }


# ---- 2. end to end -----------------------------------------------------------------------------------


async def _login(client: httpx.AsyncClient, auth: tuple[str, str], credential_id: str) -> float:
    from platpay.kit.crypto import bundles, p256, stamps

    started = time.perf_counter()
    challenge = await client.post(f"/auth/credentials/{credential_id}/challenge", auth=auth, json={})
    challenge.raise_for_status()
    tek = p256.generate_private_key()
    body = {
        "type": "EMAIL_OTP",
        "encryptedOtpBundle": bundles.seal_otp_attempt(
            challenge.json()["otpEncryptionTargetBundle"],
            otp_code="000000",
            public_key_hex=p256.uncompressed_hex(tek.public_key()),
        ),
    }
    first = await client.post(f"/auth/credentials/{credential_id}/verify", auth=auth, json=body)
    if first.status_code != 202:
        raise RuntimeError(f"verify: {first.status_code} {first.text}")
    token = first.json()
    retry = await client.post(
        f"/auth/credentials/{credential_id}/verify",
        auth=auth,
        json=body,
        headers={
            "Svc-Wallet-Signature": stamps.make(tek, token["payloadToSign"]),
            "Request-Id": token["requestId"],
        },
    )
    if retry.status_code != 200:
        raise RuntimeError(f"verify retry: {retry.status_code} {retry.text}")
    return time.perf_counter() - started


class _Connection:
    """One kept-alive HTTP/1.1 connection, as lean as a load client can be while doing what a real one must
    (the same requests: JSON bodies, Basic authentication, the wallet headers; each answer's status and JSON
    read). httpx cost ~1.2 ms of CPU per request here — about as much as the server's share of a login
    request — on the same 2 vCPUs, so the clients' own CPU capped the rate the bench could show; this costs
    ~0.1 ms. Answers must carry Content-Length (platpay's JSON answers do)."""

    def __init__(self, host: str, port: int, base_path: str, auth: tuple[str, str]) -> None:
        self.host, self.port, self.base_path = host, port, base_path
        token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        self.fixed = (
            f"Host: {host}:{port}\r\nAuthorization: Basic {token}\r\nContent-Type: application/json\r\n"
            "Accept: application/json\r\n"
        )
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes, headers: str = "") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(self.host, self.port)
        assert self.reader is not None
        self.writer.write(
            f"POST {self.base_path}{path} HTTP/1.1\r\n{self.fixed}{headers}Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = None
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        if length is None:
            raise RuntimeError(f"an answer without Content-Length: {head!r}")
        return status, await self.reader.readexactly(length)

    async def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            with contextlib.suppress(Exception):
                await self.writer.wait_closed()


async def _lean_login(connection: _Connection, credential_id: str) -> float:
    """`_login` over a `_Connection`: the same three requests, the same crypto (a fresh P-256 TEK, the HPKE
    seal, the stamp)."""
    from platpay.kit.crypto import bundles, p256, stamps

    started = time.perf_counter()
    status, answer = await connection.post(f"/auth/credentials/{credential_id}/challenge", b"{}")
    if status != 200:
        raise RuntimeError(f"challenge: {status} {answer!r}")
    tek = p256.generate_private_key()
    body = json.dumps(
        {
            "type": "EMAIL_OTP",
            "encryptedOtpBundle": bundles.seal_otp_attempt(
                json.loads(answer)["otpEncryptionTargetBundle"],
                otp_code="000000",
                public_key_hex=p256.uncompressed_hex(tek.public_key()),
            ),
        }
    ).encode()
    path = f"/auth/credentials/{credential_id}/verify"
    status, answer = await connection.post(path, body)
    if status != 202:
        raise RuntimeError(f"verify: {status} {answer!r}")
    token = json.loads(answer)
    stamp = stamps.make(tek, token["payloadToSign"])
    status, answer = await connection.post(
        path, body, f"Svc-Wallet-Signature: {stamp}\r\nRequest-Id: {token['requestId']}\r\n"
    )
    if status != 200:
        raise RuntimeError(f"verify retry: {status} {answer!r}")
    json.loads(answer)  # the session, as a client reads it
    return time.perf_counter() - started


async def _pending_sends(database_url: str) -> int:
    """Send jobs (the OTP emails) not yet finished, read straight from the server's database."""
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine
    from sqlalchemy.pool import NullPool

    engine = create_async_engine(database_url, poolclass=NullPool)
    try:
        async with engine.connect() as connection:
            return int(
                (
                    await connection.execute(
                        text(
                            "SELECT count(*) FROM jobs WHERE kind = 'messages.send' AND state IN ('QUEUED', 'RUNNING')"
                        )
                    )
                ).scalar_one()
            )
    finally:
        await engine.dispose()


async def _end_to_end(base_url: str, auth: tuple[str, str], *, wallets: int, logins: int, concurrency: int,
                      server_pid: int, pg: tuple[str, str] | None, database_url: str) -> dict[str, float]:  # fmt: skip
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url + BASE_PATH, limits=limits, timeout=30) as client:
        credential_ids = []
        for index in range(wallets):
            person = await client.post(
                "/customers", auth=auth, json={**PERSON, "email": f"bench{index}@example.com"}
            )
            person.raise_for_status()
            accounts = await client.get(
                "/customers/internal-accounts",
                auth=auth,
                params={"customerId": person.json()["id"], "type": "EMBEDDED_WALLET"},
            )
            account_id = accounts.json()["data"][0]["id"]
            found = await client.get("/auth/credentials", auth=auth, params={"accountId": account_id})
            credential_ids.append(found.json()["data"][0]["id"])
        for credential_id in credential_ids[: min(10, wallets)]:  # warm-up
            await _login(client, auth, credential_id)

        queue: asyncio.Queue[str] = asyncio.Queue()
        for index in range(logins):
            queue.put_nowait(credential_ids[index % wallets])
        durations: list[float] = []
        host, port = base_url.removeprefix("http://").split(":")
        connections = [_Connection(host, int(port), BASE_PATH, auth) for _ in range(concurrency)]
        for connection in connections:  # connected and warm before the clock starts, as httpx's pool was
            await _lean_login(connection, credential_ids[0])
        while await _pending_sends(database_url):  # the warm-up's OTP emails are not the measured logins'
            await asyncio.sleep(0.05)

        async def worker(connection: _Connection) -> None:
            while True:
                try:
                    credential_id = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                durations.append(await _lean_login(connection, credential_id))

        pg_pids = await asyncio.to_thread(pg_backend_pids, *pg) if pg else set()
        pg_before = pg_cpu_snapshot(pg_pids) if pg else {}
        server_before = cpu_seconds(server_pid) or 0.0
        client_before = time.process_time()
        started = time.perf_counter()
        await asyncio.gather(*(worker(connection) for connection in connections))
        elapsed = time.perf_counter() - started
        client_cpu = time.process_time() - client_before
        for connection in connections:
            await connection.close()
        during_cpu = (cpu_seconds(server_pid) or 0.0) - server_before
        # The OTP emails' send jobs still queued when the last login answers run now, in the same process:
        # their CPU is part of the logins' (measured until no send job is left, less the idle runner's).
        drain_started = time.perf_counter()
        while await _pending_sends(database_url):
            await asyncio.sleep(0.05)
        drain_s = time.perf_counter() - drain_started
        server_cpu = (cpu_seconds(server_pid) or 0.0) - server_before
        pg_cpu = pg_cpu_delta(pg_before, pg_cpu_snapshot(pg_pids)) if pg else 0.0
        idle_before, idle_started = cpu_seconds(server_pid) or 0.0, time.perf_counter()
        await asyncio.sleep(2)  # the idle server's own CPU (the embedded job runner polling), for reference
        idle_cpu_per_s = ((cpu_seconds(server_pid) or 0.0) - idle_before) / (
            time.perf_counter() - idle_started
        )
        # the same server's CPU for an authenticated GET /config, for scale (a shared machine inflates CPU
        # times), now that it has nothing else to do
        config_before = cpu_seconds(server_pid) or 0.0
        for _ in range(min(logins, 200)):
            (await client.get("/config", auth=auth)).raise_for_status()
        config_cpu = ((cpu_seconds(server_pid) or 0.0) - config_before) / min(logins, 200)
    durations.sort()
    return {
        "config_cpu_ms": config_cpu * 1000,
        "during_cpu_ms_per_login": during_cpu * 1000 / logins,
        "drain_s": drain_s,
        "idle_cpu_ms_per_s": idle_cpu_per_s * 1000,
        "logins_per_s": logins / elapsed,
        "p50_ms": statistics.median(durations) * 1000,
        "p99_ms": durations[min(len(durations) - 1, int(len(durations) * 0.99))] * 1000,
        "server_cpu_ms_per_login": server_cpu * 1000 / logins,
        "pg_cpu_ms_per_login": pg_cpu * 1000 / logins,
        "client_cpu_ms_per_login": client_cpu * 1000 / logins,
    }


def _run_backend(
    name: str, database_url: str, workdir: Path, args: argparse.Namespace, pg_admin: str | None
) -> None:
    print(f"\n== {name} ==")
    home = workdir / name
    home.mkdir(parents=True, exist_ok=True)
    figures = asyncio.run(
        _in_process(
            database_url if name == "postgres" else f"sqlite+aiosqlite:///{home}/inproc.db", home, args.ops
        )
    )
    print(
        f"in process, per operation (CPU ms): unsigned {figures['unsigned_ms']:.3f}   signed retry "
        f"{figures['signed_retry_ms']:.3f}   (+{figures['signed_retry_ms'] - figures['unsigned_ms']:.3f})   "
        f"first call (202) {figures['first_call_ms']:.3f}   stamp parse+verify alone {figures['stamp_check_ms']:.3f}"
    )
    server_db = database_url if name == "postgres" else f"sqlite+aiosqlite:///{home}/server.db"
    if name == "postgres":
        # the in-process part used this database: the server gets a fresh one
        with pg_database(pg_admin or DEFAULT_PG_ADMIN, prefix="platpay_bench_wallet") as fresh:
            _serve_and_load(name, fresh, home, args, (pg_admin or DEFAULT_PG_ADMIN, fresh))
        return
    _serve_and_load(name, server_db, home, args, None)


def _serve_and_load(
    name: str, database_url: str, home: Path, args: argparse.Namespace, pg: tuple[str, str] | None
) -> None:
    target = start_platpay(f"{name}-serve", database_url, home, dict(RAISED_LIMITS))
    try:
        assert target.credentials is not None
        result = asyncio.run(
            _end_to_end(
                f"http://127.0.0.1:{target.port}",
                target.credentials,
                wallets=args.wallets,
                logins=args.logins,
                concurrency=args.concurrency,
                server_pid=target.proc.pid,
                pg=pg,
                database_url=database_url,
            )
        )
    finally:
        stop(target.proc)
    print(
        f"EMAIL_OTP logins end to end: {result['logins_per_s']:.1f}/s   p50 {result['p50_ms']:.1f} ms   "
        f"p99 {result['p99_ms']:.1f} ms   server CPU {result['server_cpu_ms_per_login']:.2f} ms/login "
        f"({result['during_cpu_ms_per_login']:.2f} while the logins ran, the rest the OTP emails' send jobs left "
        f"queued, drained in {result['drain_s']:.1f} s)   PostgreSQL CPU {result['pg_cpu_ms_per_login']:.2f} "
        f"ms/login   client CPU {result['client_cpu_ms_per_login']:.2f} ms/login"
    )
    print(
        f"for scale, the same server once idle ({result['idle_cpu_ms_per_s']:.1f} ms CPU/s idle): GET /config "
        f"{result['config_cpu_ms']:.2f} ms CPU per request; a login costs "
        f"{result['server_cpu_ms_per_login'] / max(result['config_cpu_ms'], 1e-9):.1f} of them"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--ops", type=int, default=1000, help="operations per in-process figure")
    parser.add_argument("--wallets", type=int, default=100)
    parser.add_argument("--logins", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument(
        "--pg-admin-url", default=os.environ.get("PLATPAY_BENCH_PG_ADMIN_URL", DEFAULT_PG_ADMIN)
    )
    args = parser.parse_args()
    print(f"wallet_auth: {machine_summary()}")
    backends = [b for b in args.backends.split(",") if b]
    with tempfile.TemporaryDirectory(prefix="platpay-bench-wallet-") as tmp:
        workdir = Path(tmp)
        if "sqlite" in backends:
            _run_backend("sqlite", "", workdir, args, None)
        if "postgres" in backends:
            problem = pg_reachable(args.pg_admin_url)
            if problem:
                print(f"\n== postgres == skipped: {problem}")
            else:
                with (
                    pg_database(args.pg_admin_url, prefix="platpay_bench_wallet") as url,
                    contextlib.suppress(KeyboardInterrupt),
                ):
                    _run_backend("postgres", url, workdir, args, args.pg_admin_url)


if __name__ == "__main__":
    main()
