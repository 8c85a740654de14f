"""Keepalives at work, where a user-space proxy cannot show them: run inside a network namespace of its own
(`unshare -n`, root), whose loopback drops every packet on demand (`tc qdisc ... blackhole`), so that the
peer's kernel stops answering too (a proxy's kernel would keep acknowledging). PostgreSQL is reached
through a Unix socket the caller forwards to it (Unix sockets cross network namespaces), behind a TCP
forwarder on this namespace's 127.0.0.1.

    unshare -n python -m tests.support.netns_probe UNIX_SOCKET DATABASE

Prints one JSON object of what it measured (tests/db/test_half_open.py asserts on it):

- `idle_found_dead_s`: how long a pooled connection, idle, took to be found dead by the kernel's
  keepalives once its packets were dropped (`idle_closed`: whether it was);
- `next_read_s`, `next_read`: the next read once packets flow again (a new connection, not the dead one);
- `in_flight_s`, `in_flight`: a read sent on a live connection whose packets are dropped: given up by
  TCP_USER_TIMEOUT, long before the (deliberately long) command timeout.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

from sqlalchemy import literal, select

from platpay.db.connect import ConnectionPolicy
from platpay.db.database import Database
from platpay.db.faults import DatabaseUnavailable
from platpay.db.lean import Lean

POLICY = ConnectionPolicy(
    timeout=2.0,
    statement_timeout=30.0,  # long: what ends the waits here is the kernel, not the command timeout
    keepalive_idle=1,
    keepalive_interval=1,
    keepalive_count=1,
)


def drop_packets(on: bool) -> None:
    args = ["add", "dev", "lo", "root", "blackhole"] if on else ["del", "dev", "lo", "root"]
    subprocess.run(["tc", "qdisc", *args], check=True)


async def forwarder(unix_path: str) -> tuple[int, asyncio.Server]:
    async def pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_unix_connection(unix_path)
        await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer))

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server.sockets[0].getsockname()[1], server


async def main(unix_path: str, database: str) -> dict[str, Any]:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    port, server = await forwarder(unix_path)
    db = Database(f"postgresql+asyncpg://postgres@127.0.0.1:{port}/{database}", pool_size=4, policy=POLICY)
    query = Lean(select(literal(1)))
    found: dict[str, Any] = {"dead_after_s": POLICY.dead_after_seconds}
    try:
        await db.fetch_first(query, {})  # a lean pooled connection, idle from now on
        [idle] = list(db._pg_lean_pool()._idle)
        drop_packets(True)
        started = time.monotonic()
        while not idle.is_closed() and time.monotonic() - started < 20:
            await asyncio.sleep(0.05)
        found["idle_found_dead_s"] = round(time.monotonic() - started, 2)
        found["idle_closed"] = idle.is_closed()
        drop_packets(False)
        started = time.monotonic()
        found["next_read"] = list(await db.fetch_first(query, {}) or ())
        found["next_read_s"] = round(time.monotonic() - started, 2)

        drop_packets(True)  # the connection just used is alive and idle for less than keepalive_idle
        started = time.monotonic()
        try:
            found["in_flight"] = f"answered {await db.fetch_first(query, {})}"
        except DatabaseUnavailable as error:
            found["in_flight"] = error.reason
        found["in_flight_s"] = round(time.monotonic() - started, 2)
        drop_packets(False)
    finally:
        await db.dispose()
        server.close()
    return found


if __name__ == "__main__":
    print(json.dumps(asyncio.run(main(sys.argv[1], sys.argv[2]))))
